//! One connection: admission into the table, the idle deadlines, the per-request checks
//! (client address, request rate) and the busy/idle marks the table's eviction relies on.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{watch, Notify};
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;
use tracing::debug;

use crate::client_ip::canonical;
use crate::table::{Id, Refused, Table};
use crate::{ClientAddr, ClientIp, Limits, Stats};
use fragstat_core::fair::RateTable;

/// What every connection of one listener shares.
pub(crate) struct Shared {
    pub limits: Limits,
    pub client_ip: ClientIp,
    pub stats: Arc<Stats>,
    table: Mutex<Table<Arc<Track>>>,
    rates: Mutex<RateTable>,
    /// Connections whose task still runs (evicted ones included), for the shutdown.
    pub running: watch::Sender<usize>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    pub fn new(limits: Limits, client_ip: ClientIp, stats: Arc<Stats>) -> Self {
        Shared {
            table: Mutex::new(Table::new(limits.caps(), limits.max_connections)),
            rates: Mutex::new(RateTable::new(
                limits.request_rate,
                limits.net_request_rate,
                std::time::Instant::now(),
            )),
            running: watch::channel(0).0,
            limits,
            client_ip,
            stats,
        }
    }

    /// Takes in a connection from `peer`, closing an idle one if need be; `None`: refused
    /// (counted).
    pub fn admit(self: &Arc<Self>, peer: SocketAddr) -> Option<Slot> {
        let ip = canonical(peer.ip());
        let capped = !self.client_ip.trusts(ip);
        let track = Arc::new(Track::new());
        let now = std::time::Instant::now();
        let r = lock(&self.table).admit(ip, capped, now, Arc::clone(&track));
        let s = &self.stats;
        match r {
            Ok(a) => {
                if let Some(victim) = a.evicted {
                    victim.close.notify_one();
                    s.evicted_idle.fetch_add(1, Ordering::Relaxed);
                }
                s.accepted.fetch_add(1, Ordering::Relaxed);
                s.open.fetch_add(1, Ordering::Relaxed);
                self.running.send_modify(|n| *n += 1);
                Some(Slot {
                    id: a.id,
                    track,
                    shared: Arc::clone(self),
                })
            }
            Err(why) => {
                let counter = match why {
                    Refused::Full => &s.refused_full,
                    Refused::Host => &s.refused_per_ip,
                    Refused::Prefix(_) => &s.refused_per_prefix,
                };
                counter.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }
}

/// A connection's state as its task sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct State {
    /// A request is being answered.
    busy: bool,
    /// Idle since (the accept, the TLS handshake's end, or the last answer).
    since: Instant,
    /// No request yet.
    first: bool,
}

/// What a connection's task and its requests share: the state, and the signals.
pub(crate) struct Track {
    state: Mutex<State>,
    /// Bytes arrived since the connection went idle.
    bytes: AtomicBool,
    /// The state changed (or bytes arrived).
    changed: Notify,
    /// The table closed the connection to make room.
    close: Notify,
}

impl Track {
    fn new() -> Self {
        Track {
            state: Mutex::new(State {
                busy: false,
                since: Instant::now(),
                first: true,
            }),
            bytes: AtomicBool::new(false),
            changed: Notify::new(),
            close: Notify::new(),
        }
    }

    fn set(&self, f: impl FnOnce(&mut State)) {
        f(&mut lock(&self.state));
        self.changed.notify_waiters();
    }

    fn snapshot(&self) -> (State, bool) {
        (*lock(&self.state), self.bytes.load(Ordering::Relaxed))
    }

    /// Resolves when the connection has been idle too long without a byte of a request:
    /// [`Limits::first_byte_timeout`] for a new one, [`Limits::keep_alive_timeout`] after
    /// an answer. Once a request has started, hyper's header timeout takes over.
    async fn idle_too_long(&self, limits: &Limits) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let seen = self.snapshot();
            let (s, bytes) = seen;
            if s.busy || bytes {
                changed.await;
                continue;
            }
            let wait = if s.first {
                limits.first_byte_timeout
            } else {
                limits.keep_alive_timeout
            };
            tokio::select! {
                () = tokio::time::sleep_until(s.since + wait) => {
                    if self.snapshot() == seen {
                        return;
                    }
                }
                () = &mut changed => {}
            }
        }
    }
}

/// A connection's place in the table, given back when its task ends.
pub(crate) struct Slot {
    id: Id,
    track: Arc<Track>,
    shared: Arc<Shared>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        lock(&self.shared.table).remove(self.id);
        self.shared.stats.open.fetch_sub(1, Ordering::Relaxed);
        self.shared
            .running
            .send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// Marks a connection busy while it lives (a request being answered, its body included).
struct Busy {
    id: Id,
    track: Arc<Track>,
    shared: Arc<Shared>,
}

impl Busy {
    fn start(slot: &Slot) -> Busy {
        lock(&slot.shared.table).busy(slot.id);
        slot.track.set(|s| s.busy = true);
        Busy {
            id: slot.id,
            track: Arc::clone(&slot.track),
            shared: Arc::clone(&slot.shared),
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        lock(&self.shared.table).idle(self.id, std::time::Instant::now());
        self.track.bytes.store(false, Ordering::Relaxed);
        self.track.set(|s| {
            s.busy = false;
            s.first = false;
            s.since = Instant::now();
        });
    }
}

/// A stream that notes when request bytes arrive (for the first-byte deadlines, and so that
/// a connection whose request is arriving is displaced only after silent ones).
struct Watched<S> {
    inner: S,
    track: Arc<Track>,
    shared: Arc<Shared>,
    id: Id,
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            let t = &self.track;
            if !t.bytes.swap(true, Ordering::Relaxed) {
                t.changed.notify_waiters();
                lock(&self.shared.table).started(self.id);
            }
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// Serves one accepted connection until it ends, is closed for room or times out.
pub(crate) async fn connection(
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    tls: Option<TlsAcceptor>,
    app: axum::Router,
    stop: watch::Receiver<bool>,
    slot: Slot,
) {
    let track = Arc::clone(&slot.track);
    let stats = Arc::clone(&slot.shared.stats);
    let limits = slot.shared.limits;
    let Some(acc) = tls else {
        let io = Watched {
            inner: tcp,
            track,
            shared: Arc::clone(&slot.shared),
            id: slot.id,
        };
        return serve_io(io, peer, app, stop, slot).await;
    };
    let handshake = tokio::time::timeout(limits.tls_accept_timeout, acc.accept(tcp));
    let r = tokio::select! {
        r = handshake => r,
        () = track.close.notified() => return,
    };
    match r {
        Ok(Ok(s)) => {
            // The first request's deadline counts from the end of the handshake.
            track.set(|st| st.since = Instant::now());
            let io = Watched {
                inner: s,
                track,
                shared: Arc::clone(&slot.shared),
                id: slot.id,
            };
            serve_io(io, peer, app, stop, slot).await;
        }
        Ok(Err(e)) => {
            stats.tls_failed.fetch_add(1, Ordering::Relaxed);
            debug!(%peer, error = %e, "TLS handshake failed");
        }
        Err(_) => {
            stats.tls_failed.fetch_add(1, Ordering::Relaxed);
            debug!(%peer, "TLS handshake timed out");
        }
    }
}

async fn serve_io<S>(
    io: Watched<S>,
    peer: SocketAddr,
    app: axum::Router,
    mut stop: watch::Receiver<bool>,
    slot: Slot,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let slot = Arc::new(slot);
    let track = Arc::clone(&slot.track);
    let limits = slot.shared.limits;
    let stats = Arc::clone(&slot.shared.stats);
    let svc = {
        let slot = Arc::clone(&slot);
        hyper::service::service_fn(move |req: Request<Incoming>| {
            let busy = Busy::start(&slot);
            let shared = Arc::clone(&slot.shared);
            let app = app.clone();
            async move {
                let r = answer(req, peer, app, &shared).await;
                // The connection stays busy until the answer's body is sent.
                let r = r.map(|b| {
                    Body::new(b.map_frame(move |f| {
                        let _ = &busy;
                        f
                    }))
                });
                Ok::<_, std::convert::Infallible>(r)
            }
        })
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(16 * 1024)
        .keep_alive(true);
    let conn = builder.serve_connection(TokioIo::new(io), svc);
    tokio::pin!(conn);
    let lifetime = tokio::time::sleep(limits.max_lifetime);
    tokio::pin!(lifetime);
    let result = tokio::select! {
        r = conn.as_mut() => r,
        () = &mut lifetime => {
            conn.as_mut().graceful_shutdown();
            tokio::time::timeout(limits.request_timeout, conn.as_mut()).await.unwrap_or(Ok(()))
        }
        () = async { let _ = stop.wait_for(|s| *s).await; } => {
            conn.as_mut().graceful_shutdown();
            tokio::time::timeout(Duration::from_secs(5), conn.as_mut()).await.unwrap_or(Ok(()))
        }
        () = track.close.notified() => {
            debug!(%peer, "idle connection closed to make room");
            Ok(())
        }
        () = track.idle_too_long(&limits) => {
            stats.idle_timeouts.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
    };
    if let Err(e) = result {
        debug!(%peer, error = %e, "connection ended");
    }
}

/// One request: the client's address, its rate, then the app within the request timeout.
async fn answer(
    mut req: Request<Incoming>,
    peer: SocketAddr,
    app: axum::Router,
    shared: &Shared,
) -> Response<Body> {
    let stats = &shared.stats;
    let Some(client) = shared.client_ip.resolve(peer, req.headers()) else {
        stats.no_client_ip.fetch_add(1, Ordering::Relaxed);
        return status(
            StatusCode::BAD_REQUEST,
            "the proxy did not say who the client is\n",
        );
    };
    let rate = lock(&shared.rates).check(client.ip(), std::time::Instant::now());
    if let Err(wait) = rate {
        stats.rate_limited.fetch_add(1, Ordering::Relaxed);
        let mut r = status(StatusCode::TOO_MANY_REQUESTS, "too many requests\n");
        let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
        return r;
    }
    req.extensions_mut().insert(ClientAddr(client));
    let call = app.oneshot(req.map(Body::new));
    match tokio::time::timeout(shared.limits.request_timeout, call).await {
        Ok(Ok(r)) => r,
        Ok(Err(never)) => match never {},
        Err(_) => {
            stats.request_timeouts.fetch_add(1, Ordering::Relaxed);
            let mut r = status(StatusCode::REQUEST_TIMEOUT, "request timeout\n");
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            r
        }
    }
}

fn status(code: StatusCode, text: &'static str) -> Response<Body> {
    let mut r = Response::new(Body::from(text));
    *r.status_mut() = code;
    r
}
