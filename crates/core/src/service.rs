//! Sans-IO servers: emulated game servers, emulated masters and (later) a real master are
//! [`Service`]s. They never touch a socket or a clock: the caller passes the time in, and
//! collects the datagrams to send. `serve::run` (feature `runtime`) drives one on a socket;
//! tests drive one directly.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

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

    /// The service is stopping at `now`: push anything to send on the way out (a game server
    /// heartbeats its master once more, so the master checks it, finds it gone and drops it
    /// at once instead of at expiry). Nothing is handled after this.
    fn stop(&mut self, now: Instant, out: &mut Outbox) {
        let _ = (now, out);
    }
}

/// How often the engines heartbeat their masters: ioq3 and idTech 4 `HEARTBEAT_MSEC`, qfusion
/// and DarkPlaces `HEARTBEAT_SECONDS`, all 5 minutes.
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(300);

/// The shortest heartbeat period a schedule takes (a shorter one is raised to it).
pub const MIN_HEARTBEAT_INTERVAL: Duration = Duration::from_millis(100);

/// When a game server heartbeats its master: at start, then every period. The emulators of
/// every family that registers by heartbeat keep one.
///
/// ```
/// use std::time::{Duration, Instant};
/// use fragstat_core::service::Heartbeats;
///
/// let master = "127.0.0.1:27950".parse().unwrap();
/// let mut hb = Heartbeats::new(Some(master)).every(Duration::from_secs(2));
/// let t0 = Instant::now();
/// assert_eq!(hb.due(t0), Some(master));
/// assert_eq!(hb.due(t0 + Duration::from_secs(1)), None);
/// assert_eq!(hb.poll_timeout(), Some(t0 + Duration::from_secs(2)));
/// assert_eq!(hb.due(t0 + Duration::from_secs(2)), Some(master));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heartbeats {
    master: Option<SocketAddr>,
    every: Duration,
    next: Option<Instant>,
}

impl Default for Heartbeats {
    fn default() -> Self {
        Heartbeats::new(None)
    }
}

impl Heartbeats {
    /// Heartbeats to `master` (none: never) every [`HEARTBEAT_INTERVAL`].
    pub fn new(master: Option<SocketAddr>) -> Self {
        Heartbeats {
            master,
            every: HEARTBEAT_INTERVAL,
            next: None,
        }
    }

    /// Sets the period (at least [`MIN_HEARTBEAT_INTERVAL`]).
    pub fn every(mut self, every: Duration) -> Self {
        self.every = every.max(MIN_HEARTBEAT_INTERVAL);
        self
    }

    /// The master heartbeated, if any.
    pub fn master(&self) -> Option<SocketAddr> {
        self.master
    }

    /// The period.
    pub fn period(&self) -> Duration {
        self.every
    }

    /// The master to heartbeat at `now`, if a heartbeat is due (the first call always is);
    /// the next one is scheduled a period later.
    pub fn due(&mut self, now: Instant) -> Option<SocketAddr> {
        let master = self.master?;
        if self.next.is_some_and(|t| t > now) {
            return None;
        }
        self.next = Some(now + self.every);
        Some(master)
    }

    /// When the next heartbeat is due (`None` before the first, or with no master).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.next
    }

    /// The masters to heartbeat when the server shuts down: the master twice, as ioquake3's
    /// `SV_MasterShutdown` sends its heartbeat twice "to minimize chance of drops"
    /// (`ioquake/ioq3` @ `5956299e`, `code/server/sv_main.c:341-352`); the master then finds
    /// the server gone when it checks. Nothing after this.
    ///
    /// ```
    /// use std::time::Instant;
    /// use fragstat_core::service::Heartbeats;
    ///
    /// let master = "127.0.0.1:27950".parse().unwrap();
    /// let mut hb = Heartbeats::new(Some(master));
    /// assert_eq!(hb.due(Instant::now()), Some(master));
    /// assert_eq!(hb.at_shutdown(), [master, master]);
    /// assert_eq!(hb.poll_timeout(), None);
    /// assert!(Heartbeats::new(None).at_shutdown().is_empty());
    /// ```
    pub fn at_shutdown(&mut self) -> Vec<SocketAddr> {
        self.next = None;
        self.master.take().map(|m| vec![m, m]).unwrap_or_default()
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
    fn stop(&mut self, now: Instant, out: &mut Outbox) {
        (**self).stop(now, out);
    }
}
