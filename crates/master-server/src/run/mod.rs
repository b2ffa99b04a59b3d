//! The master on real sockets: a loop that owns the [`Master`] and polls one receive per
//! listening socket, the timers and periodic snapshots to a state file (written atomically:
//! a temporary file, fsync, rename, off the loop), on a thread and runtime of its own, so
//! nothing served over HTTP (TLS handshakes, JSON, metrics) can stall a list; and,
//! optionally, Prometheus metrics over HTTP on the caller's runtime.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fragstat_core::service::{Outbox, Service};
use fragstat_core::UdpTransport;
use futures_util::stream::{FuturesUnordered, StreamExt};
use tracing::{debug, info, warn};

use crate::batch::{BatchSocket, RecvBatch};
use crate::http::DdnetMetrics;
use crate::Master;

mod metrics;
mod state;

use metrics::{serve_metrics, View};
pub use state::{check_state_path, load_or_move_aside, load_state, save_state};

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
    /// Timeouts and caps of the metrics listener.
    pub metrics_limits: fragstat_http_guard::Limits,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            listen: vec![SocketAddr::from(([0, 0, 0, 0], 27950))],
            state: None,
            snapshot_every: Duration::from_secs(60),
            metrics: None,
            metrics_limits: fragstat_http_guard::Limits {
                max_connections: 64,
                max_per_ip: 8,
                ..fragstat_http_guard::Limits::default()
            },
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

/// The master's sockets (and metrics listener), bound and ready to [`Bound::run`].
#[derive(Debug)]
pub struct Bound {
    config: RunConfig,
    sockets: Vec<std::net::UdpSocket>,
    metrics: Option<tokio::net::TcpListener>,
    ddnet: Option<DdnetMetrics>,
}

/// Binds every listening socket and the metrics listener, so bad addresses fail before
/// anything runs.
pub async fn bind(config: RunConfig) -> std::io::Result<Bound> {
    bind_with(config, Vec::new()).await
}

/// The receive buffer the master asks for: room for a burst of about 4,000 heartbeats or
/// challenge replies while a list is being sent (the kernel grants at most
/// `net.core.rmem_max`; Linux defaults to 208 KiB, about 400 small datagrams on loopback).
pub const RECV_BUFFER: usize = 4 << 20;

/// A UDP socket on `addr` (IPv6 sockets IPv6-only, buffers of [`RECV_BUFFER`]), blocking
/// until the master's thread takes it.
fn bind_udp(addr: SocketAddr) -> std::io::Result<std::net::UdpSocket> {
    fragstat_core::udp_socket(addr, RECV_BUFFER)
}

/// [`bind`], also listening on `inherited`: UDP sockets bound by whoever started the
/// master (systemd socket activation, `LISTEN_FDS`), served like the ones it binds.
pub async fn bind_with(
    config: RunConfig,
    inherited: Vec<std::net::UdpSocket>,
) -> std::io::Result<Bound> {
    let mut sockets = inherited;
    for addr in &config.listen {
        let t = bind_udp(*addr)
            .map_err(|e| std::io::Error::new(e.kind(), format!("binding {addr}: {e}")))?;
        sockets.push(t);
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
        ddnet: None,
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

    /// Shows the DDNet master's registry and listener in the metrics too.
    pub fn with_ddnet_metrics(mut self, ddnet: DdnetMetrics) -> Self {
        self.ddnet = Some(ddnet);
        self
    }

    /// Runs `master` until `shutdown` completes, then writes the state file. A state file
    /// given in the configuration is loaded first (one that cannot be used is moved aside and
    /// the master starts empty): its servers are listed at once and re-verified. The UDP loop
    /// runs on a thread and runtime of its own; the metrics on the caller's runtime.
    pub async fn run(
        self,
        mut master: Master,
        shutdown: impl Future<Output = ()>,
    ) -> std::io::Result<()> {
        let Bound {
            config,
            sockets,
            metrics,
            ddnet,
        } = self;
        if let Some(path) = &config.state {
            if let Some(snap) = load_or_move_aside(path)? {
                let saved = snap.servers.len();
                let r = master.restore(snap, std::time::Instant::now());
                info!(servers = r.listed, skipped = r.skipped, saved, path = %path.display(), "restored; re-verifying");
            }
        }
        for s in &sockets {
            if let Ok(a) = s.local_addr() {
                info!(addr = %a, "listening");
            }
        }
        let view = Arc::new(Mutex::new(View::default()));
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
            let _ = rx.wait_for(|s| *s).await;
        };
        let metrics = metrics.map(|l| {
            tokio::spawn(serve_metrics(
                l,
                config.metrics_limits,
                Arc::clone(&view),
                ddnet,
                stopped(stop_rx.clone()),
            ))
        });
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        let loop_view = Arc::clone(&view);
        let loop_stop = stop_rx.clone();
        std::thread::Builder::new()
            .name("fragstat-master-udp".into())
            .spawn(move || {
                let r = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .and_then(|rt| {
                        rt.block_on(async move {
                            let sockets = sockets
                                .into_iter()
                                .map(|s| UdpTransport::from_std(s).map(Arc::new))
                                .collect::<std::io::Result<Vec<_>>>()?;
                            run_loop(master, config, sockets, loop_view, stopped(loop_stop)).await
                        })
                    });
                let _ = done_tx.send(r);
            })?;
        tokio::pin!(done_rx);
        let result = tokio::select! {
            () = shutdown => {
                let _ = stop_tx.send(true);
                (&mut done_rx).await
            }
            r = &mut done_rx => r,
        };
        let _ = stop_tx.send(true);
        if let Some(m) = metrics {
            let _ = m.await;
        }
        result.unwrap_or_else(|_| Err(std::io::Error::other("the master's thread ended")))
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
    // A save in progress (on the blocking pool): the next waits for it.
    let mut saving: Option<tokio::task::JoinHandle<()>> = None;
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
                    if saving.as_ref().is_none_or(|h| h.is_finished()) {
                        let snap = master.snapshot();
                        let path = path.clone();
                        saving = Some(tokio::task::spawn_blocking(move || {
                            if let Err(e) = save_state(&path, &snap) {
                                warn!(path = %path.display(), error = %e, "state not saved");
                            }
                        }));
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
                    v.tracked = master.limits().tracked();
                    v.names = master.names_in_use();
                }
            }
        }
    }
    if let Some(h) = saving {
        let _ = h.await;
    }
    if let Some(path) = &config.state {
        save_state(path, &master.snapshot())
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        info!(servers = master.len(), path = %path.display(), "state saved");
    }
    Ok(())
}
