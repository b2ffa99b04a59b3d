//! Sans-IO servers: emulated game servers, emulated masters and (later) a real master are
//! [`Service`]s. They never touch a socket or a clock: the caller passes the time in, and
//! collects the datagrams to send. `serve::run` (feature `runtime`) drives one on a socket;
//! tests drive one directly.

use std::net::SocketAddr;
use std::time::Instant;

/// Datagrams a service wants sent: `(destination, bytes)`.
pub type Outbox = Vec<(SocketAddr, Vec<u8>)>;

/// A datagram service described without I/O.
///
/// ```
/// use std::net::SocketAddr;
/// use std::time::Instant;
/// use fragstat_core::service::{Outbox, Service};
///
/// /// Answers "ping" with "pong".
/// struct Pong;
/// impl Service for Pong {
///     fn handle(&mut self, _now: Instant, from: SocketAddr, datagram: &[u8], out: &mut Outbox) {
///         if datagram == b"ping" {
///             out.push((from, b"pong".to_vec()));
///         }
///     }
/// }
///
/// let mut out = Outbox::new();
/// Pong.handle(Instant::now(), "127.0.0.1:9".parse().unwrap(), b"ping", &mut out);
/// assert_eq!(out[0].1, b"pong");
/// ```
pub trait Service: Send {
    /// Called once when the service starts running at `now` (before any datagram): a game
    /// server sends its first heartbeat here, a master re-verifies what it restored.
    fn start(&mut self, now: Instant, out: &mut Outbox) {
        let _ = (now, out);
    }

    /// A datagram arrived from `from` at `now`: push any replies onto `out`.
    fn handle(&mut self, now: Instant, from: SocketAddr, datagram: &[u8], out: &mut Outbox);

    /// When the service next wants [`Service::handle_timeout`] called (a pending challenge
    /// expires, a registration lapses, a snapshot is due). `None`: never.
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    /// The time returned by [`Service::poll_timeout`] has come (or passed): expire what is
    /// due, and push anything to send onto `out`.
    fn handle_timeout(&mut self, now: Instant, out: &mut Outbox) {
        let _ = (now, out);
    }
}

impl<S: Service + ?Sized> Service for Box<S> {
    fn start(&mut self, now: Instant, out: &mut Outbox) {
        (**self).start(now, out);
    }
    fn handle(&mut self, now: Instant, from: SocketAddr, datagram: &[u8], out: &mut Outbox) {
        (**self).handle(now, from, datagram, out);
    }
    fn poll_timeout(&self) -> Option<Instant> {
        (**self).poll_timeout()
    }
    fn handle_timeout(&mut self, now: Instant, out: &mut Outbox) {
        (**self).handle_timeout(now, out);
    }
}
