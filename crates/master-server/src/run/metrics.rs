//! Prometheus metrics over HTTP: what the loop last saw, rendered on request.

use std::future::Future;
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::http::DdnetMetrics;
use crate::Stats;

/// What the metrics endpoint shows, refreshed by the loop.
#[derive(Debug, Default, Clone)]
pub(super) struct View {
    pub(super) stats: Stats,
    pub(super) by_game: Vec<(String, usize)>,
    pub(super) pending: usize,
    pub(super) tracked: usize,
    pub(super) names: usize,
}

/// Games shown by name in the metrics; the rest are summed as `other` (a label per
/// attacker-made game would be unbounded).
const MAX_GAME_LABELS: usize = 100;

fn gauge(n: u64) -> Gauge {
    let g = Gauge::<i64>::default();
    g.set(i64::try_from(n).unwrap_or(i64::MAX));
    g
}

fn counter(n: u64) -> Counter {
    let c = Counter::<u64>::default();
    c.inc_by(n);
    c
}

fn register_http(reg: &mut Registry, prefix: &str, what: &str, s: &fragstat_http_guard::Stats) {
    for (name, help, v) in s.values() {
        let full = format!("{prefix}_{name}");
        let help = format!("{what}: {help}");
        if name == "open" {
            reg.register(full, help, gauge(v));
        } else {
            reg.register(full, help, counter(v));
        }
    }
}

fn render(v: &View, http: &fragstat_http_guard::Stats, ddnet: Option<&DdnetMetrics>) -> String {
    let mut reg = Registry::default();
    let servers = Family::<Vec<(String, String)>, Gauge>::default();
    let mut games = v.by_game.clone();
    games.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let other: usize = games.iter().skip(MAX_GAME_LABELS).map(|g| g.1).sum();
    for (g, n) in games.iter().take(MAX_GAME_LABELS) {
        servers
            .get_or_create(&vec![("game".into(), g.clone())])
            .set(i64::try_from(*n).unwrap_or(i64::MAX));
    }
    if other > 0 {
        servers
            .get_or_create(&vec![("game".into(), "other".into())])
            .set(i64::try_from(other).unwrap_or(i64::MAX));
    }
    reg.register(
        "fragstat_master_servers",
        "Servers listed, by game (the 100 largest; the rest as other)",
        servers,
    );
    let s = &v.stats;
    let requests = Family::<Vec<(String, String)>, Counter>::default();
    for (kind, n) in [
        ("datagram", s.datagrams),
        ("heartbeat", s.heartbeats),
        ("getservers", s.requests),
    ] {
        requests
            .get_or_create(&vec![("kind".into(), kind.into())])
            .inc_by(n);
    }
    reg.register(
        "fragstat_master_received",
        "Datagrams received, by kind",
        requests,
    );
    let drops = Family::<Vec<(String, String)>, Counter>::default();
    for (why, n) in &s.drops {
        drops
            .get_or_create(&vec![("reason".into(), why.label().into())])
            .inc_by(*n);
    }
    reg.register(
        "fragstat_master_dropped",
        "Datagrams dropped, by reason",
        drops,
    );
    reg.register("fragstat_master_lists", "Lists sent", counter(s.lists));
    reg.register(
        "fragstat_master_list_bytes",
        "Bytes of lists sent",
        counter(s.bytes_sent),
    );
    reg.register(
        "fragstat_master_lists_built",
        "Lists built (a scan and an encode); the others came from the cache",
        counter(s.lists_built),
    );
    reg.register(
        "fragstat_master_lists_reserve",
        "Lists sent from the reserve (to networks not served recently, the main budget spent)",
        counter(s.lists_reserve),
    );
    reg.register(
        "fragstat_master_lists_truncated",
        "Lists cut to the reply cap (--max-reply-kib)",
        counter(s.lists_truncated),
    );
    reg.register(
        "fragstat_master_lists_stale",
        "Lists sent stale from the cache (the bound on builds a second was hit)",
        counter(s.lists_stale),
    );
    reg.register(
        "fragstat_master_challenges",
        "Challenges sent",
        counter(s.challenges),
    );
    reg.register(
        "fragstat_master_registrations",
        "Servers listed after a verified challenge",
        counter(s.registrations),
    );
    reg.register(
        "fragstat_master_verifications",
        "Listed servers that answered a challenge again (re-verified)",
        counter(s.verifications),
    );
    reg.register(
        "fragstat_master_removals",
        "Listed servers removed after unanswered challenges",
        counter(s.removals),
    );
    reg.register(
        "fragstat_master_expirations",
        "Listed servers expired",
        counter(s.expirations),
    );
    reg.register(
        "fragstat_master_displaced",
        "Listed servers displaced by a newcomer from another network when the list was full",
        counter(s.displaced),
    );
    reg.register(
        "fragstat_master_pending_challenges",
        "Challenges with a retry schedule",
        gauge(v.pending as u64),
    );
    reg.register(
        "fragstat_master_tracked_sources",
        "Source hosts and destination networks whose limits are tracked",
        gauge(v.tracked as u64),
    );
    reg.register(
        "fragstat_master_names",
        "Distinct game names and game types in use",
        gauge(v.names as u64),
    );
    register_http(
        &mut reg,
        "fragstat_metrics_http",
        "The metrics listener",
        http,
    );
    if let Some(d) = ddnet {
        if let Ok(m) = d.master.lock() {
            reg.register(
                "fragstat_ddnet_servers",
                "DDNet servers registered",
                gauge(m.len() as u64),
            );
            reg.register(
                "fragstat_ddnet_info_bytes",
                "Bytes of DDNet server info stored",
                gauge(m.stored_bytes() as u64),
            );
            let st = m.stats();
            reg.register(
                "fragstat_ddnet_servers_json_builds",
                "servers.json documents built (at most one a second)",
                counter(st.rebuilds),
            );
            reg.register(
                "fragstat_ddnet_bodies_parsed",
                "Register bodies parsed (only after the address was proven)",
                counter(st.bodies_parsed),
            );
            for (name, help, v) in [
                (
                    "fragstat_ddnet_servers_refused",
                    "DDNet servers refused: their network held its share, or the master was full and their network held the most",
                    st.servers_refused,
                ),
                (
                    "fragstat_ddnet_servers_displaced",
                    "DDNet servers displaced by a newcomer from a network holding less",
                    st.servers_displaced,
                ),
                (
                    "fragstat_ddnet_infos_refused",
                    "DDNet infos refused: their network held its share of bytes, or the master was full",
                    st.infos_refused,
                ),
                (
                    "fragstat_ddnet_infos_displaced",
                    "DDNet infos displaced by a newcomer's (the server is asked for it again)",
                    st.infos_displaced,
                ),
            ] {
                reg.register(name, help, counter(v));
            }
            reg.register(
                "fragstat_ddnet_list_bytes",
                "Size of the last servers.json",
                gauge(st.list_bytes),
            );
            reg.register(
                "fragstat_ddnet_list_left_out",
                "Servers with an info left out of the last servers.json (over its size cap)",
                gauge(st.list_left_out),
            );
        }
        register_http(
            &mut reg,
            "fragstat_ddnet_http",
            "The DDNet HTTP master's listener",
            &d.http,
        );
        if let Some(list) = &d.list_http {
            register_http(
                &mut reg,
                "fragstat_ddnet_list_http",
                "The DDNet servers.json listener",
                list,
            );
        }
    }
    let mut out = String::new();
    if encode(&mut out, &reg).is_err() {
        out.clear();
    }
    out
}

pub(super) async fn serve_metrics(
    listener: tokio::net::TcpListener,
    limits: fragstat_http_guard::Limits,
    view: Arc<Mutex<View>>,
    ddnet: Option<DdnetMetrics>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let stats: Arc<fragstat_http_guard::Stats> = Arc::default();
    let shown = Arc::clone(&stats);
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let view = Arc::clone(&view);
            let stats = Arc::clone(&shown);
            let ddnet = ddnet.clone();
            async move {
                let v = view.lock().map(|v| v.clone()).unwrap_or_default();
                (
                    [(
                        "content-type",
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    render(&v, &stats, ddnet.as_ref()),
                )
            }
        }),
    );
    if let Ok(addr) = listener.local_addr() {
        fragstat_http_guard::log_listening("metrics at /metrics", addr, false, &limits);
    }
    fragstat_http_guard::Server {
        listener,
        tls: None,
        limits,
        client_ip: fragstat_http_guard::ClientIp::default(),
        stats,
    }
    .serve(app, shutdown)
    .await
}
