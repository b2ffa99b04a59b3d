//! The HTTP(S) listener of every fragstat endpoint that faces the network (the DDNet HTTP
//! master, the master's and the tracker's `/metrics`, the tracker's pages): it assumes every
//! client may be hostile, and shares what it has fairly among address prefixes rather than
//! first come, first served.
//!
//! - HTTP/1 only (hyper's `http1` server): no HTTP/2 streams to multiply what one connection
//!   holds;
//! - deadlines: a TLS handshake within [`Limits::tls_accept_timeout`]; a new connection's
//!   first request must start within [`Limits::first_byte_timeout`], a kept-alive
//!   connection's next one within [`Limits::keep_alive_timeout`], and a request's headers be
//!   complete within [`Limits::header_read_timeout`] of the connection starting to wait for
//!   them; a whole request, body included, is answered within [`Limits::request_timeout`];
//!   a connection lives at most [`Limits::max_lifetime`];
//! - at most [`Limits::max_connections`] connections at once, and per address prefix
//!   [`Limits::max_per_ip`] (IPv4 address, IPv6 /64), [`Limits::max_per_site`] (IPv4 /24,
//!   IPv6 /56), [`Limits::max_per_net`] (IPv4 /16, IPv6 /48) and
//!   [`Limits::max_per_provider`] (IPv6 /32), counted with [`fragstat_core::fair::Shares`];
//! - when a newcomer finds its prefix at its cap, or the table full, an *idle* connection
//!   (one that has not sent a complete request: new, or kept alive between requests) is closed
//!   to make room: inside the newcomer's full prefix, or of the widest prefix (IPv4 /16,
//!   IPv6 /32) holding the most; within it, of the host holding the most, the oldest first.
//!   Only when every candidate is answering a request is the newcomer refused. Holding idle
//!   connections, however many hosts do it, therefore denies nobody;
//! - requests per second per client host ([`Limits::request_rate`]) and per network (IPv4
//!   /24, IPv6 /48: [`Limits::net_request_rate`]), answered `429 Too Many Requests` with
//!   `Retry-After` beyond;
//! - a header buffer of 16 KiB (body sizes are the router's: axum's `DefaultBodyLimit`);
//! - behind a TLS-terminating proxy, the client's address from a header
//!   ([`ClientIp::header`], its last line) but only on connections from a
//!   [`ClientIp::trusted`] network; every handler finds the address in the request's
//!   [`ClientAddr`] extension. Trusted proxies are exempt from the prefix caps (their
//!   connections carry many clients); request rates apply to the client the header names.

#![forbid(unsafe_code)]

mod client_ip;
mod conn;
mod table;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fragstat_core::fair::Caps;
use tokio_rustls::TlsAcceptor;
use tracing::{debug, info, warn};

pub use client_ip::{ClientAddr, ClientIp};
pub use fragstat_core::fair::Rate;

/// Timeouts, caps and rates. Build it with `..Limits::default()`: fields are added over time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// A request's headers must be complete within this from when the connection starts
    /// waiting for them (its accept, or the previous answer): the bound on slow headers once
    /// they have started.
    pub header_read_timeout: Duration,
    /// A new connection must send its first request's first byte within this (after the TLS
    /// handshake).
    pub first_byte_timeout: Duration,
    /// A kept-alive connection must start its next request within this of the last answer.
    pub keep_alive_timeout: Duration,
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
    /// Connections open at once from one IPv4 /24 or IPv6 /56 (raised to `max_per_ip` if
    /// below it).
    pub max_per_site: usize,
    /// Connections open at once from one IPv4 /16 or IPv6 /48 (raised to `max_per_site` if
    /// below it).
    pub max_per_net: usize,
    /// Connections open at once from one IPv6 /32 (raised to `max_per_net` if below it).
    pub max_per_provider: usize,
    /// Requests per client host (IPv4 address, IPv6 /64).
    pub request_rate: Rate,
    /// Requests per network (IPv4 /24, IPv6 /48).
    pub net_request_rate: Rate,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_read_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(2),
            keep_alive_timeout: Duration::from_secs(5),
            tls_accept_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(10),
            max_lifetime: Duration::from_secs(300),
            max_connections: 512,
            max_per_ip: 16,
            max_per_site: 64,
            max_per_net: 128,
            max_per_provider: 256,
            request_rate: Rate {
                per_sec: 20,
                burst: 100,
            },
            net_request_rate: Rate {
                per_sec: 100,
                burst: 400,
            },
        }
    }
}

impl Limits {
    /// Checks the values: every timeout between 1 ms and an hour, caps at least 1, a limited
    /// rate's burst at least 1.
    pub fn check(&self) -> Result<(), String> {
        for (what, d) in [
            ("header read timeout", self.header_read_timeout),
            ("first byte timeout", self.first_byte_timeout),
            ("keep-alive timeout", self.keep_alive_timeout),
            ("TLS accept timeout", self.tls_accept_timeout),
            ("request timeout", self.request_timeout),
            ("connection lifetime", self.max_lifetime),
        ] {
            if d.is_zero() || d > Duration::from_secs(3600) {
                return Err(format!("the {what} must be between 1 ms and an hour"));
            }
        }
        if [
            self.max_connections,
            self.max_per_ip,
            self.max_per_site,
            self.max_per_net,
            self.max_per_provider,
        ]
        .contains(&0)
        {
            return Err("connection caps must be at least 1".into());
        }
        for r in [self.request_rate, self.net_request_rate] {
            if !r.is_unlimited() && r.burst == 0 {
                return Err("a request rate's burst must be at least 1".into());
            }
        }
        Ok(())
    }

    /// The connection caps per prefix, each raised to the narrower one's when below it.
    pub fn caps(&self) -> Caps {
        let n = |v: usize| u64::try_from(v).unwrap_or(u64::MAX);
        let host = n(self.max_per_ip);
        let site = n(self.max_per_site).max(host);
        let net = n(self.max_per_net).max(site);
        let provider = n(self.max_per_provider).max(net);
        Caps {
            v4: [host, site, net],
            v6: [host, site, net, provider],
        }
    }
}

/// Counters, for metrics.
#[derive(Debug, Default)]
pub struct Stats {
    /// Connections accepted and served.
    pub accepted: AtomicU64,
    /// Connections open now.
    pub open: AtomicU64,
    /// Connections closed at once: too many open, none of them idle.
    pub refused_full: AtomicU64,
    /// Connections closed at once: too many from the client's host, none of them idle.
    pub refused_per_ip: AtomicU64,
    /// Connections closed at once: too many from a wider prefix of the client (IPv4 /24, /16,
    /// IPv6 /56, /48, /32), none of them idle.
    pub refused_per_prefix: AtomicU64,
    /// Idle connections closed to make room for a newcomer.
    pub evicted_idle: AtomicU64,
    /// Connections closed for not starting a request in time (first byte, keep-alive).
    pub idle_timeouts: AtomicU64,
    /// Requests answered 429: over the host's or the network's request rate.
    pub rate_limited: AtomicU64,
    /// TLS handshakes that failed or took too long.
    pub tls_failed: AtomicU64,
    /// Requests cut by the request timeout.
    pub request_timeouts: AtomicU64,
    /// Requests refused because a trusted proxy did not name the client.
    pub no_client_ip: AtomicU64,
}

impl Stats {
    /// `(name, help, value)` of every counter, for a metrics page (`open` is a gauge, the
    /// rest are counters).
    pub fn values(&self) -> [(&'static str, &'static str, u64); 11] {
        let v = |a: &AtomicU64| a.load(Ordering::Relaxed);
        [
            ("accepted", "Connections accepted", v(&self.accepted)),
            ("open", "Connections open now", v(&self.open)),
            (
                "refused_full",
                "Connections closed at once: the connection cap was reached, none idle",
                v(&self.refused_full),
            ),
            (
                "refused_per_ip",
                "Connections closed at once: the per-IP cap was reached, none idle",
                v(&self.refused_per_ip),
            ),
            (
                "refused_per_prefix",
                "Connections closed at once: a /24, /16, /56, /48 or /32 cap was reached, none idle",
                v(&self.refused_per_prefix),
            ),
            (
                "evicted_idle",
                "Idle connections closed to make room for a new one",
                v(&self.evicted_idle),
            ),
            (
                "idle_timeouts",
                "Connections closed for not starting a request in time",
                v(&self.idle_timeouts),
            ),
            (
                "rate_limited",
                "Requests answered 429: over the host's or network's request rate",
                v(&self.rate_limited),
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
        let shared = Arc::new(conn::Shared::new(limits, client_ip, stats));
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
            let Some(slot) = shared.admit(peer) else {
                drop(tcp);
                continue;
            };
            let _ = tcp.set_nodelay(true);
            tokio::spawn(conn::connection(
                tcp,
                peer,
                tls.clone(),
                app.clone(),
                stop_rx.clone(),
                slot,
            ));
        }
        let _ = stop_tx.send(true);
        // Give open connections a moment to finish what they are answering.
        let mut running = shared.running.subscribe();
        let _ = tokio::time::timeout(Duration::from_secs(5), running.wait_for(|n| *n == 0)).await;
        Ok(())
    }
}

/// Logs where a server listens, with its limits.
pub fn log_listening(what: &str, addr: SocketAddr, tls: bool, limits: &Limits) {
    info!(
        %addr,
        tls,
        max_connections = limits.max_connections,
        max_per_ip = limits.max_per_ip,
        max_per_site = limits.max_per_site,
        max_per_net = limits.max_per_net,
        request_rate = limits.request_rate.per_sec,
        "{what}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_check_and_the_caps_widen() {
        assert!(Limits::default().check().is_ok());
        assert!(Limits {
            max_connections: 0,
            ..Limits::default()
        }
        .check()
        .is_err());
        let l = Limits {
            max_per_ip: 100,
            ..Limits::default()
        };
        assert_eq!(l.caps().v4, [100, 100, 128]);
        assert!(l.caps().check("x").is_ok());
        assert_eq!(Limits::default().caps().v6, [16, 64, 128, 256]);
    }
}
