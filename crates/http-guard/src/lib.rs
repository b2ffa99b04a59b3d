//! The HTTP(S) listener of every fragstat endpoint that faces the network (the DDNet HTTP
//! master, the master's and the tracker's `/metrics`, the tracker's pages): it assumes every
//! client may be hostile.
//!
//! - HTTP/1 only (hyper's `http1` server): no HTTP/2 streams to multiply what one connection
//!   holds;
//! - a TLS handshake must finish within [`Limits::tls_accept_timeout`], a request's headers
//!   within [`Limits::header_read_timeout`] (also between two requests on a kept-alive
//!   connection), a whole request, body included, within [`Limits::request_timeout`], and a
//!   connection lives at most [`Limits::max_lifetime`];
//! - at most [`Limits::max_connections`] connections at once, and [`Limits::max_per_ip`]
//!   per client host (IPv4 address, IPv6 /64); over that a connection is closed at once;
//! - a header buffer of 16 KiB (body sizes are the router's: axum's `DefaultBodyLimit`);
//! - behind a TLS-terminating proxy, the client's address from a header
//!   ([`ClientIp::header`]) but only on connections from a [`ClientIp::trusted`] network;
//!   every handler finds the address in the request's [`ClientAddr`] extension.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;
use tracing::{debug, info, warn};

/// Timeouts and caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// A request's headers must arrive within this (and a kept-alive connection must start its
    /// next request within it).
    pub header_read_timeout: Duration,
    /// The TLS handshake must finish within this.
    pub tls_accept_timeout: Duration,
    /// A request, its body included, must be read and answered within this.
    pub request_timeout: Duration,
    /// A connection is closed (gracefully) after this long.
    pub max_lifetime: Duration,
    /// Connections open at once.
    pub max_connections: usize,
    /// Connections open at once from one client host (IPv4 address, IPv6 /64); trusted
    /// proxies are exempt.
    pub max_per_ip: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_read_timeout: Duration::from_secs(10),
            tls_accept_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(10),
            max_lifetime: Duration::from_secs(300),
            max_connections: 512,
            max_per_ip: 16,
        }
    }
}

impl Limits {
    /// Checks the values: every timeout between 1 ms and an hour, caps at least 1.
    pub fn check(&self) -> Result<(), String> {
        for (what, d) in [
            ("header read timeout", self.header_read_timeout),
            ("TLS accept timeout", self.tls_accept_timeout),
            ("request timeout", self.request_timeout),
            ("connection lifetime", self.max_lifetime),
        ] {
            if d.is_zero() || d > Duration::from_secs(3600) {
                return Err(format!("the {what} must be between 1 ms and an hour"));
            }
        }
        if self.max_connections == 0 || self.max_per_ip == 0 {
            return Err("connection caps must be at least 1".into());
        }
        Ok(())
    }
}

/// Where the client's address comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientIp {
    /// A header the proxy sets to the client's IP (`X-Real-IP`; for `X-Forwarded-For` the
    /// last address is taken, the one the proxy added). `None`: the TCP peer's address.
    pub header: Option<HeaderName>,
    /// Networks of the proxies whose header is believed. A connection from anywhere else is
    /// taken at its TCP address, whatever headers it sends.
    pub trusted: Vec<ipnet::IpNet>,
}

impl ClientIp {
    /// The client's address from `header`, believed from the `trusted` networks only
    /// (`--connecting-ip-header`, `--trusted-proxy`).
    pub fn from_header(header: &str, trusted: &[String]) -> Result<ClientIp, String> {
        let header = HeaderName::from_bytes(header.as_bytes())
            .map_err(|_| format!("{header:?} is not a header name"))?;
        let trusted = Self::parse_networks(trusted)?;
        if trusted.is_empty() {
            return Err("a client IP header needs at least one trusted proxy".into());
        }
        Ok(ClientIp {
            header: Some(header),
            trusted,
        })
    }

    /// Parses `--trusted-proxy` values: CIDR networks or single addresses.
    pub fn parse_networks(values: &[String]) -> Result<Vec<ipnet::IpNet>, String> {
        values
            .iter()
            .map(|v| {
                v.parse::<ipnet::IpNet>()
                    .or_else(|_| v.parse::<IpAddr>().map(ipnet::IpNet::from))
                    .map_err(|_| format!("{v:?} is not a network (CIDR) or an address"))
            })
            .collect()
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.trusted.iter().any(|n| n.contains(&ip))
    }

    /// The client's address for a request from `peer`: `None` when a trusted proxy did not
    /// say who the client is (the request is refused).
    pub fn resolve(&self, peer: SocketAddr, headers: &HeaderMap) -> Option<SocketAddr> {
        let peer = SocketAddr::new(canonical(peer.ip()), peer.port());
        let Some(name) = &self.header else {
            return Some(peer);
        };
        if !self.trusts(peer.ip()) {
            return Some(peer);
        }
        let value = headers.get(name)?.to_str().ok()?;
        let last = value.rsplit(',').next()?.trim();
        let ip = last
            .parse::<IpAddr>()
            .ok()
            .or_else(|| last.parse::<SocketAddr>().ok().map(|s| s.ip()))?;
        Some(SocketAddr::new(canonical(ip), peer.port()))
    }
}

/// The client's address, in every request's extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddr(pub SocketAddr);

fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// A client host: an IPv4 address or an IPv6 /64.
fn host(ip: IpAddr) -> u128 {
    match canonical(ip) {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => (u128::from(v6) >> 64) | (1 << 127),
    }
}

/// Counters, for metrics.
#[derive(Debug, Default)]
pub struct Stats {
    /// Connections accepted and served.
    pub accepted: AtomicU64,
    /// Connections open now.
    pub open: AtomicU64,
    /// Connections closed at once: too many open.
    pub refused_full: AtomicU64,
    /// Connections closed at once: too many from the client's host.
    pub refused_per_ip: AtomicU64,
    /// TLS handshakes that failed or took too long.
    pub tls_failed: AtomicU64,
    /// Requests cut by the request timeout.
    pub request_timeouts: AtomicU64,
    /// Requests refused because a trusted proxy did not name the client.
    pub no_client_ip: AtomicU64,
}

impl Stats {
    /// `(name, help, value)` of every counter, for a metrics page.
    pub fn values(&self) -> [(&'static str, &'static str, u64); 7] {
        let v = |a: &AtomicU64| a.load(Ordering::Relaxed);
        [
            ("accepted", "Connections accepted", v(&self.accepted)),
            ("open", "Connections open now", v(&self.open)),
            (
                "refused_full",
                "Connections closed at once: the connection cap was reached",
                v(&self.refused_full),
            ),
            (
                "refused_per_ip",
                "Connections closed at once: the per-IP cap was reached",
                v(&self.refused_per_ip),
            ),
            (
                "tls_failed",
                "TLS handshakes that failed or timed out",
                v(&self.tls_failed),
            ),
            (
                "request_timeouts",
                "Requests cut by the request timeout",
                v(&self.request_timeouts),
            ),
            (
                "no_client_ip",
                "Requests from a trusted proxy without the client IP header",
                v(&self.no_client_ip),
            ),
        ]
    }
}

/// A listener and how to serve it.
pub struct Server {
    /// The bound listener.
    pub listener: tokio::net::TcpListener,
    /// TLS, or plain HTTP.
    pub tls: Option<TlsAcceptor>,
    /// Timeouts and caps.
    pub limits: Limits,
    /// Where the client's address comes from.
    pub client_ip: ClientIp,
    /// Counters.
    pub stats: Arc<Stats>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("listener", &self.listener)
            .field("tls", &self.tls.is_some())
            .field("limits", &self.limits)
            .field("client_ip", &self.client_ip)
            .finish()
    }
}

/// Raises the soft limit of open files to the hard one (a listener should run out of its own
/// connection cap, never of descriptors), once.
pub fn raise_fd_limit() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if let Err(e) = rlimit::increase_nofile_limit(u64::MAX) {
            debug!(error = %e, "open-files limit not raised");
        }
    });
}

/// Warns when plain HTTP is served on an address other machines reach (secrets would cross
/// the network in clear).
pub fn warn_if_public_plain_http(addr: SocketAddr, tls: bool, what: &str) {
    if !tls && !addr.ip().is_loopback() {
        warn!(%addr, "{what} serves plain HTTP on a non-loopback address: put a TLS proxy in front and bind it to loopback, or give it a certificate");
    }
}

/// Connections open per client host.
type PerIp = Arc<Mutex<HashMap<u128, usize>>>;

/// Releases a connection's places in the caps when dropped.
struct Slot {
    per_ip: Option<(PerIp, u128)>,
    stats: Arc<Stats>,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.stats.open.fetch_sub(1, Ordering::Relaxed);
        if let Some((map, key)) = &self.per_ip {
            let mut m = map.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(n) = m.get_mut(key) {
                *n -= 1;
                if *n == 0 {
                    m.remove(key);
                }
            }
        }
    }
}

impl Server {
    /// Serves `app` until `shutdown` completes; connections then get a few seconds to finish.
    pub async fn serve(
        self,
        app: axum::Router,
        shutdown: impl Future<Output = ()>,
    ) -> std::io::Result<()> {
        raise_fd_limit();
        let Server {
            listener,
            tls,
            limits,
            client_ip,
            stats,
        } = self;
        let client_ip = Arc::new(client_ip);
        let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
        let per_ip: PerIp = Arc::default();
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        tokio::pin!(shutdown);
        loop {
            let (tcp, peer) = tokio::select! {
                () = &mut shutdown => break,
                r = listener.accept() => match r {
                    Ok(c) => c,
                    Err(e) => {
                        debug!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                },
            };
            let Ok(permit) = Arc::clone(&slots).try_acquire_owned() else {
                stats.refused_full.fetch_add(1, Ordering::Relaxed);
                drop(tcp);
                continue;
            };
            let key = host(peer.ip());
            let capped = !client_ip.trusts(peer.ip());
            if capped {
                let mut m = per_ip.lock().unwrap_or_else(|e| e.into_inner());
                let n = m.entry(key).or_default();
                if *n >= limits.max_per_ip {
                    drop(m);
                    stats.refused_per_ip.fetch_add(1, Ordering::Relaxed);
                    drop(tcp);
                    continue;
                }
                *n += 1;
            }
            stats.accepted.fetch_add(1, Ordering::Relaxed);
            stats.open.fetch_add(1, Ordering::Relaxed);
            let slot = Slot {
                per_ip: capped.then(|| (Arc::clone(&per_ip), key)),
                stats: Arc::clone(&stats),
                _permit: permit,
            };
            let _ = tcp.set_nodelay(true);
            tokio::spawn(connection(
                tcp,
                peer,
                tls.clone(),
                app.clone(),
                limits,
                Arc::clone(&client_ip),
                Arc::clone(&stats),
                stop_rx.clone(),
                slot,
            ));
        }
        let _ = stop_tx.send(true);
        // Give open connections a moment to finish what they are answering.
        let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
        let _ = tokio::time::timeout(Duration::from_secs(5), slots.acquire_many(all)).await;
        Ok(())
    }
}

#[allow(clippy::too_many_arguments)]
async fn connection(
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    tls: Option<TlsAcceptor>,
    app: axum::Router,
    limits: Limits,
    client_ip: Arc<ClientIp>,
    stats: Arc<Stats>,
    stop: tokio::sync::watch::Receiver<bool>,
    slot: Slot,
) {
    let _slot = slot;
    match tls {
        Some(acc) => match tokio::time::timeout(limits.tls_accept_timeout, acc.accept(tcp)).await {
            Ok(Ok(s)) => serve_io(TokioIo::new(s), peer, app, limits, client_ip, stats, stop).await,
            Ok(Err(e)) => {
                stats.tls_failed.fetch_add(1, Ordering::Relaxed);
                debug!(%peer, error = %e, "TLS handshake failed");
            }
            Err(_) => {
                stats.tls_failed.fetch_add(1, Ordering::Relaxed);
                debug!(%peer, "TLS handshake timed out");
            }
        },
        None => serve_io(TokioIo::new(tcp), peer, app, limits, client_ip, stats, stop).await,
    }
}

async fn serve_io<I>(
    io: I,
    peer: SocketAddr,
    app: axum::Router,
    limits: Limits,
    client_ip: Arc<ClientIp>,
    stats: Arc<Stats>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let svc = hyper::service::service_fn(move |mut req: Request<Incoming>| {
        let app = app.clone();
        let stats = Arc::clone(&stats);
        let client = client_ip.resolve(peer, req.headers());
        async move {
            let Some(client) = client else {
                stats.no_client_ip.fetch_add(1, Ordering::Relaxed);
                return Ok::<_, std::convert::Infallible>(status(
                    StatusCode::BAD_REQUEST,
                    "the proxy did not say who the client is\n",
                ));
            };
            req.extensions_mut().insert(ClientAddr(client));
            let call = app.oneshot(req.map(Body::new));
            match tokio::time::timeout(limits.request_timeout, call).await {
                Ok(Ok(r)) => Ok(r),
                Ok(Err(never)) => match never {},
                Err(_) => {
                    stats.request_timeouts.fetch_add(1, Ordering::Relaxed);
                    let mut r = status(StatusCode::REQUEST_TIMEOUT, "request timeout\n");
                    r.headers_mut().insert(
                        axum::http::header::CONNECTION,
                        axum::http::HeaderValue::from_static("close"),
                    );
                    Ok(r)
                }
            }
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(16 * 1024)
        .keep_alive(true);
    let conn = builder.serve_connection(io, svc);
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
    };
    if let Err(e) = result {
        debug!(%peer, error = %e, "connection ended");
    }
}

fn status(code: StatusCode, text: &'static str) -> Response<Body> {
    let mut r = Response::new(Body::from(text));
    *r.status_mut() = code;
    r
}

/// Logs where a server listens, with its limits.
pub fn log_listening(what: &str, addr: SocketAddr, tls: bool, limits: &Limits) {
    info!(
        %addr,
        tls,
        max_connections = limits.max_connections,
        max_per_ip = limits.max_per_ip,
        "{what}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn the_client_ip_comes_from_a_trusted_proxy_only() {
        let c = ClientIp {
            header: Some(HeaderName::from_static("x-real-ip")),
            trusted: ClientIp::parse_networks(&["127.0.0.1".into(), "10.0.0.0/8".into()]).unwrap(),
        };
        let proxy: SocketAddr = "10.1.2.3:5555".parse().unwrap();
        let other: SocketAddr = "198.51.100.4:6666".parse().unwrap();
        let h = headers(&[("x-real-ip", "203.0.113.9")]);
        assert_eq!(
            c.resolve(proxy, &h),
            Some("203.0.113.9:5555".parse().unwrap())
        );
        assert_eq!(
            c.resolve(other, &h),
            Some(other),
            "an untrusted peer's header is ignored"
        );
        assert_eq!(
            c.resolve(proxy, &HeaderMap::new()),
            None,
            "a trusted proxy must say"
        );
        let xff = ClientIp {
            header: Some(HeaderName::from_static("x-forwarded-for")),
            ..c.clone()
        };
        let h = headers(&[("x-forwarded-for", "1.2.3.4, 2001:db8::7")]);
        assert_eq!(
            xff.resolve(proxy, &h).map(|a| a.ip()),
            Some("2001:db8::7".parse().unwrap())
        );
        // No header configured: always the peer.
        assert_eq!(ClientIp::default().resolve(proxy, &h), Some(proxy));
        assert!(ClientIp::parse_networks(&["nope".into()]).is_err());
    }

    #[test]
    fn hosts_are_ipv4_addresses_and_ipv6_64s() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(host(ip("2001:db8::1")), host(ip("2001:db8::ffff:1")));
        assert_ne!(host(ip("2001:db8::1")), host(ip("2001:db8:0:1::1")));
        assert_ne!(host(ip("10.0.0.1")), host(ip("10.0.0.2")));
        assert_eq!(host(ip("::ffff:10.0.0.1")), host(ip("10.0.0.1")));
        assert!(Limits::default().check().is_ok());
        assert!(Limits {
            max_connections: 0,
            ..Limits::default()
        }
        .check()
        .is_err());
    }
}
