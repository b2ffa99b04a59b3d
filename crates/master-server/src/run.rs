//! The master on real sockets: a single loop that owns the [`Master`] and polls one receive
//! per listening socket, the timers, periodic snapshots to a state file (written atomically:
//! a temporary file, fsync, rename) and, optionally, Prometheus metrics over HTTP.

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fragstat_core::service::{Outbox, Service};
use fragstat_core::{Transport, UdpTransport};
use futures_util::stream::{FuturesUnordered, StreamExt};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tracing::{debug, info, warn};

use crate::batch::{BatchSocket, RecvBatch};
use crate::{Master, Snapshot, Stats};

/// Where and how the master runs.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Addresses to listen on (one UDP socket each; IPv6 sockets are IPv6-only).
    pub listen: Vec<SocketAddr>,
    /// The state file: loaded at start, written every `snapshot_every` and at shutdown.
    pub state: Option<PathBuf>,
    /// How often the state file is written.
    pub snapshot_every: Duration,
    /// Serve Prometheus metrics at `http://ADDR/metrics`.
    pub metrics: Option<SocketAddr>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            listen: vec![SocketAddr::from(([0, 0, 0, 0], 27950))],
            state: None,
            snapshot_every: Duration::from_secs(60),
            metrics: None,
        }
    }
}

/// Datagrams handled per wake-up at most, so timers and other sockets get their turn.
const DRAIN: usize = 64;

type Received = (usize, RecvBatch, std::io::Result<usize>);

/// Receives a batch of datagrams on socket `i` (after `delay`, when backing off errors).
fn recv_one(
    i: usize,
    sock: Arc<BatchSocket>,
    mut batch: RecvBatch,
    delay: Duration,
) -> std::pin::Pin<Box<dyn Future<Output = Received> + Send>> {
    Box::pin(async move {
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let r = sock.recv(&mut batch).await;
        (i, batch, r)
    })
}

/// Sends `out`, each datagram from the socket `pick` chooses, runs for one socket batched.
async fn send_out(
    sockets: &[Arc<BatchSocket>],
    out: &Outbox,
    pick: impl Fn(SocketAddr) -> Option<usize>,
) {
    let mut start = 0;
    while let Some((to, _)) = out.get(start) {
        let k = pick(*to);
        let mut end = start + 1;
        while out.get(end).is_some_and(|(t, _)| pick(*t) == k) {
            end += 1;
        }
        if let (Some(sock), Some(run)) = (k.and_then(|k| sockets.get(k)), out.get(start..end)) {
            sock.send_all(run).await;
        }
        start = end;
    }
}

/// Reads a state file (`Ok(None)` when there is none).
pub fn load_state(path: &Path) -> std::io::Result<Option<Snapshot>> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}: not a master state file: {e}", path.display()),
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes a state file atomically (temporary file in the same directory, fsync, rename).
pub fn save_state(path: &Path, snapshot: &Snapshot) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&serde_json::to_vec_pretty(snapshot).map_err(std::io::Error::other)?)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// What the metrics endpoint shows, refreshed by the loop.
#[derive(Debug, Default, Clone)]
struct View {
    stats: Stats,
    by_game: Vec<(String, usize)>,
    pending: usize,
}

fn render(v: &View) -> String {
    let mut reg = Registry::default();
    let servers = Family::<Vec<(String, String)>, Gauge>::default();
    for (g, n) in &v.by_game {
        servers
            .get_or_create(&vec![("game".into(), g.clone())])
            .set(i64::try_from(*n).unwrap_or(i64::MAX));
    }
    reg.register(
        "fragstat_master_servers",
        "Servers listed, by game",
        servers,
    );
    let counter = |n: u64| {
        let c = Counter::<u64>::default();
        c.inc_by(n);
        c
    };
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
    let pending = Gauge::<i64>::default();
    pending.set(i64::try_from(v.pending).unwrap_or(i64::MAX));
    reg.register(
        "fragstat_master_pending_challenges",
        "Challenges outstanding",
        pending,
    );
    let mut out = String::new();
    if encode(&mut out, &reg).is_err() {
        out.clear();
    }
    out
}

async fn serve_metrics(
    listener: tokio::net::TcpListener,
    view: Arc<Mutex<View>>,
) -> std::io::Result<()> {
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let view = Arc::clone(&view);
            async move {
                let v = view.lock().map(|v| v.clone()).unwrap_or_default();
                (
                    [(
                        "content-type",
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    render(&v),
                )
            }
        }),
    );
    if let Ok(addr) = listener.local_addr() {
        info!(%addr, "metrics at /metrics");
    }
    axum::serve(listener, app).await
}

/// The master's sockets (and metrics listener), bound and ready to [`Bound::run`].
#[derive(Debug)]
pub struct Bound {
    config: RunConfig,
    sockets: Vec<Arc<UdpTransport>>,
    metrics: Option<tokio::net::TcpListener>,
}

/// Binds every listening socket and the metrics listener, so bad addresses fail before
/// anything runs.
pub async fn bind(config: RunConfig) -> std::io::Result<Bound> {
    bind_with(config, Vec::new()).await
}

/// [`bind`], also listening on `inherited`: UDP sockets bound by whoever started the
/// master (systemd socket activation, `LISTEN_FDS`), served like the ones it binds.
pub async fn bind_with(
    config: RunConfig,
    inherited: Vec<std::net::UdpSocket>,
) -> std::io::Result<Bound> {
    let mut sockets: Vec<Arc<UdpTransport>> = Vec::new();
    for socket in inherited {
        sockets.push(Arc::new(UdpTransport::from_std(socket)?));
    }
    for addr in &config.listen {
        let t = UdpTransport::bind(*addr)
            .map_err(|e| std::io::Error::new(e.kind(), format!("binding {addr}: {e}")))?;
        sockets.push(Arc::new(t));
    }
    let metrics = match config.metrics {
        Some(addr) => Some(
            tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| std::io::Error::new(e.kind(), format!("binding {addr}: {e}")))?,
        ),
        None => None,
    };
    Ok(Bound {
        config,
        sockets,
        metrics,
    })
}

impl Bound {
    /// The UDP addresses the master listens on.
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.sockets
            .iter()
            .filter_map(|s| s.local_addr().ok())
            .collect()
    }

    /// The metrics address, when serving metrics.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// Runs `master` until `shutdown` completes, then writes the state file. A state file
    /// given in the configuration is loaded first: its servers are listed at once and
    /// re-verified.
    pub async fn run(
        self,
        mut master: Master,
        shutdown: impl Future<Output = ()>,
    ) -> std::io::Result<()> {
        let Bound {
            config,
            sockets,
            metrics,
        } = self;
        if let Some(path) = &config.state {
            if let Some(snap) = load_state(path)? {
                info!(servers = snap.servers.len(), path = %path.display(), "restored; re-verifying");
                master.restore(snap, std::time::Instant::now());
            }
        }
        for s in &sockets {
            if let Ok(a) = s.local_addr() {
                info!(addr = %a, "listening");
            }
        }
        let view = Arc::new(Mutex::new(View::default()));
        let metrics = metrics.map(|l| tokio::spawn(serve_metrics(l, Arc::clone(&view))));
        run_loop(master, config, sockets, view, metrics, shutdown).await
    }
}

/// Binds and runs (see [`bind`] and [`Bound::run`]).
pub async fn run(
    master: Master,
    config: RunConfig,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    bind(config).await?.run(master, shutdown).await
}

async fn run_loop(
    mut master: Master,
    config: RunConfig,
    sockets: Vec<Arc<UdpTransport>>,
    view: Arc<Mutex<View>>,
    metrics: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    // One receive in flight per socket, polled by this loop itself: no queue between
    // receiving and handling, so a burst waits in the kernel's socket buffer, not in ours.
    let sockets: Vec<Arc<BatchSocket>> = sockets
        .into_iter()
        .map(|t| BatchSocket::new(t).map(Arc::new))
        .collect::<std::io::Result<_>>()?;
    let mut recvs = FuturesUnordered::new();
    for (i, sock) in sockets.iter().enumerate() {
        recvs.push(recv_one(
            i,
            Arc::clone(sock),
            RecvBatch::new(),
            Duration::ZERO,
        ));
    }
    let mut errors = vec![0u32; sockets.len()];
    // Each socket's family, looked up once (not a getsockname per datagram).
    let families: Vec<bool> = sockets
        .iter()
        .map(|s| s.local_addr().is_ok_and(|a| a.is_ipv4()))
        .collect();
    let pick = |from_socket: Option<usize>, to: SocketAddr| -> Option<usize> {
        from_socket
            .filter(|&i| families.get(i) == Some(&to.is_ipv4()))
            .or_else(|| families.iter().position(|&v4| v4 == to.is_ipv4()))
    };
    tokio::pin!(shutdown);
    let mut snapshot_timer =
        tokio::time::interval(config.snapshot_every.max(Duration::from_secs(1)));
    snapshot_timer.tick().await;
    let mut view_timer = tokio::time::interval(Duration::from_secs(1));
    // One timer, moved only when the master's next deadline changes (not a new timer per
    // datagram).
    let far = || tokio::time::Instant::now() + Duration::from_secs(86_400);
    let sleep = tokio::time::sleep_until(far());
    tokio::pin!(sleep);
    let mut armed: Option<std::time::Instant> = None;
    loop {
        let wake = master.poll_timeout();
        if wake != armed {
            armed = wake;
            sleep
                .as_mut()
                .reset(wake.map_or_else(far, tokio::time::Instant::from_std));
        }
        tokio::select! {
            () = &mut shutdown => break,
            Some((i, mut batch, r)) = recvs.next() => {
                let mut delay = Duration::ZERO;
                match r {
                    Ok(_) => {
                        if let Some(e) = errors.get_mut(i) {
                            *e = 0;
                        }
                        let mut out = Outbox::new();
                        let now = std::time::Instant::now();
                        let mut handled = 0;
                        for (from, d) in batch.datagrams() {
                            master.handle(now, from, d, &mut out);
                            handled += 1;
                        }
                        // Drain what else is waiting on this socket before sleeping again.
                        if let Some(sock) = sockets.get(i) {
                            while handled < DRAIN && sock.try_recv(&mut batch).is_ok_and(|n| n > 0) {
                                for (from, d) in batch.datagrams() {
                                    master.handle(now, from, d, &mut out);
                                    handled += 1;
                                }
                            }
                        }
                        send_out(&sockets, &out, |to| pick(Some(i), to)).await;
                    }
                    Err(e) => {
                        debug!(error = %e, "receive error");
                        // ICMP errors (a bounced datagram) are one-offs; anything else that
                        // repeats is waited out, 1 ms doubling to 256 ms.
                        if let Some(n) = errors.get_mut(i) {
                            *n = n.saturating_add(1);
                            if !matches!(e.kind(), std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::ConnectionReset) {
                                delay = Duration::from_millis(1 << (*n).min(8));
                            }
                        }
                    }
                }
                if let Some(sock) = sockets.get(i) {
                    recvs.push(recv_one(i, Arc::clone(sock), batch, delay));
                }
            }
            () = &mut sleep => {
                armed = None;
                let mut out = Outbox::new();
                master.handle_timeout(std::time::Instant::now(), &mut out);
                send_out(&sockets, &out, |to| pick(None, to)).await;
            }
            _ = snapshot_timer.tick() => {
                if let Some(path) = &config.state {
                    if let Err(e) = save_state(path, &master.snapshot()) {
                        warn!(path = %path.display(), error = %e, "state not saved");
                    }
                }
            }
            _ = view_timer.tick() => {
                if let Ok(mut v) = view.lock() {
                    v.stats = master.stats().clone();
                    let mut g: Vec<(String, usize)> = master.by_game().into_iter().collect();
                    g.sort();
                    v.by_game = g;
                    v.pending = master.pending();
                }
            }
        }
    }
    if let Some(m) = metrics {
        m.abort();
    }
    if let Some(path) = &config.state {
        save_state(path, &master.snapshot())?;
        info!(servers = master.len(), path = %path.display(), "state saved");
    }
    Ok(())
}
