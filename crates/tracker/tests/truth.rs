//! B1 of the tracker trial: a server that leaves its master's list is still probed for
//! `session_gap_secs`, so it is seen going down (events, sessions closed, uptime counted); a
//! server neither listed nor answering leaves the live list at once and its page says "not
//! listed"; a master that is down is shown as such, and its servers are still probed and
//! seen coming back. Emulated servers and masters on real loopback sockets; the pages and
//! the API over real HTTP.

mod support;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use fragstat::core::registry::{EmuMaster, EmuServer};
use fragstat::core::serve::run;
use fragstat::core::service::{Outbox, Service};
use fragstat::core::{Transport, UdpTransport};
use fragstat_tracker::config::{Config, Source};
use fragstat_tracker::Tracker;
use tokio::sync::watch;

/// An emulator that can be switched off (it then ignores every datagram, like a server that
/// stopped, its port kept so nothing else takes it) and on again.
struct Switchable {
    inner: Box<dyn Service>,
    off: Arc<AtomicBool>,
}

impl Service for Switchable {
    fn start(&mut self, now: Instant, out: &mut Outbox) {
        self.inner.start(now, out);
    }
    fn handle(&mut self, now: Instant, from: SocketAddr, datagram: &[u8], out: &mut Outbox) {
        if !self.off.load(Ordering::SeqCst) {
            self.inner.handle(now, from, datagram, out);
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.inner.poll_timeout()
    }
    fn handle_timeout(&mut self, now: Instant, out: &mut Outbox) {
        self.inner.handle_timeout(now, out);
    }
}

/// Emulators on loopback, each with its switch; stopped when dropped.
struct Farm {
    stop: watch::Sender<bool>,
}

impl Drop for Farm {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

impl Farm {
    fn new() -> Farm {
        Farm {
            stop: watch::channel(false).0,
        }
    }

    /// Runs `service` on a new loopback socket: its address and its switch.
    fn spawn(&self, service: Box<dyn Service>) -> (SocketAddr, Arc<AtomicBool>) {
        let socket: Arc<dyn Transport> =
            Arc::new(UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap());
        let addr = socket.local_addr().unwrap();
        let off = Arc::new(AtomicBool::new(false));
        let mut rx = self.stop.subscribe();
        tokio::spawn(run(
            socket,
            Box::new(Switchable {
                inner: service,
                off: off.clone(),
            }),
            async move {
                while !*rx.borrow() {
                    if rx.changed().await.is_err() {
                        break;
                    }
                }
            },
        ));
        (addr, off)
    }

    fn server(
        &self,
        game: &str,
        name: &str,
        map: &str,
        players: usize,
    ) -> (SocketAddr, Arc<AtomicBool>) {
        let g = fragstat::game(game).unwrap();
        let c = EmuServer::new(name.as_bytes().to_vec(), map, players).with_seed(7);
        self.spawn(g.emulator().unwrap().emulated_server(&c).unwrap())
    }
}

fn config(dir: &tempfile::TempDir) -> Config {
    Config {
        database: dir.path().join("t.db").display().to_string(),
        listen: "127.0.0.1:0".parse().unwrap(),
        interval_secs: 0.2,
        timeout_ms: 300,
        retries: 1,
        ..Config::default()
    }
}

/// The tracker's web side on loopback: its base URL (stopped with the returned sender).
async fn web(tracker: &Tracker) -> (String, watch::Sender<bool>) {
    let support::Web {
        base,
        stop: tx,
        task: _,
    } = support::serve(tracker.state()).await;
    (base, tx)
}

async fn json(url: &str) -> serde_json::Value {
    let r = reqwest::get(url).await.expect(url);
    assert_eq!(r.status(), 200, "{url}");
    r.json().await.expect(url)
}

async fn text(url: &str) -> String {
    let r = reqwest::get(url).await.expect(url);
    assert_eq!(r.status(), 200, "{url}");
    r.text().await.expect(url)
}

/// The addresses `/api/servers` lists (with `query`).
async fn listed(base: &str, query: &str) -> Vec<serde_json::Value> {
    json(&format!("{base}/api/servers{query}")).await["servers"]
        .as_array()
        .expect("servers")
        .clone()
}

fn find<'a>(rows: &'a [serde_json::Value], addr: &SocketAddr) -> Option<&'a serde_json::Value> {
    rows.iter().find(|s| s["addr"] == addr.to_string())
}

/// The events sent since the last call: (kind, server).
fn drain(
    rx: &mut tokio::sync::broadcast::Receiver<Arc<fragstat_tracker::events::Published>>,
) -> Vec<(String, String)> {
    let mut got = Vec::new();
    while let Ok(p) = rx.try_recv() {
        got.push((p.event.kind.name().to_string(), p.event.server.clone()));
    }
    got
}

/// A DDNet HTTP list drops a server, which then stops (what DDNet 16 does at shutdown): the
/// next round probes it anyway, sees it down (server_down, its players' sessions closed,
/// uptime below 100 %), and the live list and the API leave it out while its page says it is
/// not listed and down. The server that stays listed is untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_dropped_from_a_ddnet_list_that_stops_is_seen_down_within_one_round() {
    let farm = Farm::new();
    let (stays, _) = farm.server("ddnet", "Stays", "Tutorial", 2);
    let (ghost, ghost_off) = farm.server("ddnet", "Ghost Town", "Kobra", 3);
    let entry = |addr: SocketAddr, name: &str| {
        serde_json::json!({
            "addresses": [format!("tw-0.6+udp://{addr}")],
            "location": "eu:de",
            "info": {"max_clients": 16, "max_players": 16, "passworded": false,
                     "game_type": "DDraceNetwork", "name": name,
                     "map": {"name": "x"}, "version": "0.6.4, 16.4", "clients": []}
        })
    };
    let list = Arc::new(Mutex::new(
        serde_json::json!({"servers": [entry(stays, "Stays"), entry(ghost, "Ghost Town")]})
            .to_string(),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let http = listener.local_addr().unwrap();
    let body = list.clone();
    let app = axum::Router::new().route(
        "/servers.json",
        axum::routing::get(move || {
            let body = body.lock().unwrap().clone();
            async move { body }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });

    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&dir);
    c.sources.push(Source {
        game: "ddnet".into(),
        masters: vec![format!("http://{http}/servers.json")],
        servers: Vec::new(),
        ext: false,
    });
    let tracker = Tracker::open(c).await.unwrap();
    let (base, _web) = web(&tracker).await;
    let mut events = tracker.events().hub().subscribe();

    let r = tracker.round().await.unwrap();
    assert!(
        r.data.unlisted.is_empty(),
        "both listed: {:?}",
        r.data.unlisted
    );
    let rows = listed(&base, "").await;
    assert_eq!(find(&rows, &ghost).unwrap()["status"], "online");
    assert_eq!(find(&rows, &ghost).unwrap()["num_players"], 3);
    assert_eq!(
        tracker
            .store()
            .players_on(&ghost.to_string())
            .await
            .unwrap()
            .len(),
        3
    );

    // The list drops Ghost Town and it shuts down.
    *list.lock().unwrap() = serde_json::json!({"servers": [entry(stays, "Stays")]}).to_string();
    ghost_off.store(true, Ordering::SeqCst);
    let r = tracker.round().await.unwrap();
    assert!(
        r.data.unlisted.contains(&ghost.to_string()),
        "probed though not listed: {:?}",
        r.data.unlisted
    );
    let got = drain(&mut events);
    assert!(
        got.contains(&("server_down".into(), ghost.to_string())),
        "server_down sent: {got:?}"
    );
    assert!(
        !got.iter().any(|(_, s)| *s == stays.to_string()),
        "nothing about the listed server: {got:?}"
    );
    // Gone from the live list and the API at once; with ?unlisted=1 it is down, unlisted,
    // and shows no player count.
    let rows = listed(&base, "").await;
    assert!(find(&rows, &ghost).is_none(), "{rows:?}");
    assert_eq!(find(&rows, &stays).unwrap()["status"], "online");
    let all = listed(&base, "?unlisted=1").await;
    let g = find(&all, &ghost).expect("still known");
    assert_ne!(g["status"], "online");
    assert_eq!(g["unlisted_since"], r.data.at);
    assert!(g["num_players"].is_null(), "no stale count: {g}");
    assert!(find(&all, &stays).unwrap()["unlisted_since"].is_null());
    let page = text(&format!("{base}/server/{ghost}")).await;
    assert!(page.contains("not listed"), "{page}");
    assert!(!page.contains("up since"), "{page}");
    let home = text(&format!("{base}/")).await;
    assert!(!home.contains(&ghost.to_string()), "not in the live list");
    // Its players' sessions closed (only the listed server's two stay open); its page
    // shows them as when it last answered; its uptime counts the round it was down.
    assert_eq!(tracker.store().counts().await.unwrap().open_sessions, 2);
    assert!(page.contains("Players when it last answered"), "{page}");
    let up = tracker.store().uptime(&ghost.to_string(), 0).await.unwrap();
    assert_eq!(up.fraction, Some(0.5), "{up:?}");
}

/// A UDP master goes down with its servers: the masters are shown down (page, /api/masters,
/// /metrics), their servers are still probed and seen down (server_down, out of the live
/// list); when they come back, server_up is sent and they are listed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_down_with_its_servers_is_shown_down_and_they_are_seen_coming_back() {
    let farm = Farm::new();
    let (a, a_off) = farm.server("q3", "Alpha", "q3dm17", 2);
    let (b, b_off) = farm.server("q3", "Bravo", "q3dm6", 1);
    let q3 = fragstat::game("q3").unwrap();
    let (master, master_off) = farm.spawn(
        q3.emulator()
            .unwrap()
            .emulated_master(&EmuMaster::new(vec![a, b]))
            .unwrap(),
    );
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&dir);
    c.sources.push(Source {
        game: "q3".into(),
        masters: vec![master.to_string()],
        servers: Vec::new(),
        ext: false,
    });
    let tracker = Tracker::open(c).await.unwrap();
    let (base, _web) = web(&tracker).await;
    let mut events = tracker.events().hub().subscribe();

    let r = tracker.round().await.unwrap();
    assert_eq!(r.masters[0].servers, Some(2));
    assert_eq!(listed(&base, "?online=1").await.len(), 2);
    let masters = json(&format!("{base}/api/masters")).await;
    assert_eq!(masters["masters"][0]["up"], true, "{masters}");

    // The master and its servers go down.
    for off in [&master_off, &a_off, &b_off] {
        off.store(true, Ordering::SeqCst);
    }
    let down = tracker.round().await.unwrap();
    assert_eq!(down.masters[0].servers, None);
    assert_eq!(down.data.records.len(), 2, "both still probed");
    let got = drain(&mut events);
    for s in [a, b] {
        assert!(
            got.contains(&("server_down".into(), s.to_string())),
            "{got:?}"
        );
    }
    assert!(listed(&base, "").await.is_empty(), "out of the live list");
    let masters = json(&format!("{base}/api/masters")).await;
    assert_eq!(masters["masters"][0]["up"], false, "{masters}");
    assert_eq!(
        masters["masters"][0]["down_since"], down.data.at,
        "{masters}"
    );
    let home = text(&format!("{base}/")).await;
    assert!(home.contains("is down"), "{home}");
    let metrics = text(&format!("{base}/metrics")).await;
    assert!(
        metrics.contains(&format!(
            "fragstat_tracker_master_up{{game=\"q3\",master=\"{master}\"}} 0"
        )),
        "{metrics}"
    );
    let up = tracker.store().uptime(&a.to_string(), 0).await.unwrap();
    assert_eq!(up.fraction, Some(0.5), "{up:?}");

    // Back: the servers first (the master still down): they are probed, seen up, and shown
    // although not listed (they answer).
    a_off.store(false, Ordering::SeqCst);
    b_off.store(false, Ordering::SeqCst);
    tracker.round().await.unwrap();
    let got = drain(&mut events);
    for s in [a, b] {
        assert!(
            got.contains(&("server_up".into(), s.to_string())),
            "{got:?}"
        );
    }
    let rows = listed(&base, "").await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows
        .iter()
        .all(|s| s["status"] == "online" && !s["unlisted_since"].is_null()));
    // Then the master: listed again.
    master_off.store(false, Ordering::SeqCst);
    let back = tracker.round().await.unwrap();
    assert_eq!(back.masters[0].servers, Some(2));
    let rows = listed(&base, "").await;
    assert!(
        rows.iter().all(|s| s["unlisted_since"].is_null()),
        "{rows:?}"
    );
    let masters = json(&format!("{base}/api/masters")).await;
    assert_eq!(masters["masters"][0]["up"], true, "{masters}");
    assert!(masters["masters"][0]["down_since"].is_null());
    let metrics = text(&format!("{base}/metrics")).await;
    assert!(metrics.contains(&format!(
        "fragstat_tracker_master_up{{game=\"q3\",master=\"{master}\"}} 1"
    )));
}
