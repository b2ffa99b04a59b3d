//! Running sans-IO [`Service`]s on real sockets: `run(socket, service, shutdown)`.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::time::Instant;

use crate::service::{Outbox, Service};
use crate::transport::{Backoff, Transport};
use crate::MAX_DATAGRAM;

/// Serves `service` on `socket` until `shutdown` completes. [`Service::start`] is called
/// first (a game server's first heartbeat goes out then), [`Service::stop`] last (its
/// heartbeat at shutdown goes out before `run` returns). Each datagram received goes to
/// [`Service::handle`]; when the time [`Service::poll_timeout`] names comes,
/// [`Service::handle_timeout`] is called; whatever either pushes onto the outbox is sent from
/// the same socket.
///
/// The `now` passed to the service is tokio's clock (as a [`std::time::Instant`]): the
/// monotonic clock of [`std::time::Instant::now`], except under tokio's paused test time,
/// where it is the paused clock the timers run on.
///
/// [`Service::handle_timeout`] is called at most once per millisecond.
///
/// Receive errors are skipped, waiting longer after each consecutive one (1 ms doubling to
/// 128 ms; timers still fire meanwhile) so a socket that fails persistently does not spin.
/// A receive in progress is dropped when a timer fires or `shutdown` completes, so the
/// transport's `recv_from` must be cancel-safe (a [`crate::UdpTransport`]'s is).
pub async fn run<S: Service>(
    socket: Arc<dyn Transport>,
    mut service: S,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut out = Outbox::new();
    let mut backoff = Backoff::default();
    // After a receive error: no receive before this.
    let mut resume: Option<Instant> = None;
    // After a timeout: no timeout before this, so a service whose `poll_timeout` stays in the
    // past (it did not expire what was due) cannot spin the loop.
    let mut not_before: Option<Instant> = None;
    tokio::pin!(shutdown);
    service.start(now(), &mut out);
    loop {
        for (to, reply) in out.drain(..) {
            if let Err(e) = socket.send_to(&reply, to).await {
                tracing::debug!(%to, error = %e, "reply not sent");
            }
        }
        let wake = service.poll_timeout().map(|w| {
            let w = Instant::from_std(w);
            not_before.map_or(w, |n| w.max(n))
        });
        tokio::select! {
            () = &mut shutdown => {
                service.stop(now(), &mut out);
                for (to, reply) in out.drain(..) {
                    if let Err(e) = socket.send_to(&reply, to).await {
                        tracing::debug!(%to, error = %e, "reply not sent");
                    }
                }
                return Ok(());
            }
            () = sleep_until(wake) => {
                service.handle_timeout(now(), &mut out);
                not_before = Some(Instant::now() + MIN_TIMEOUT_INTERVAL);
            }
            () = sleep_until(resume) => resume = None,
            r = socket.recv_from(&mut buf), if resume.is_none() => match r {
                Ok((n, from)) => {
                    backoff.reset();
                    service.handle(now(), from, buf.get(..n).unwrap_or_default(), &mut out);
                }
                Err(e) => {
                    tracing::trace!(error = %e, "receive error");
                    match backoff.delay(&e) {
                        Some(d) => resume = Some(Instant::now() + d),
                        None => tokio::task::yield_now().await,
                    }
                }
            },
        }
    }
}

/// The shortest time between two calls of [`Service::handle_timeout`].
const MIN_TIMEOUT_INTERVAL: std::time::Duration = std::time::Duration::from_millis(1);

/// The service clock: see [`run`].
fn now() -> std::time::Instant {
    Instant::now().into_std()
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A [`Service`] made of a closure that answers each datagram (see [`from_fn`]). It has no
/// timers.
pub struct FnService<F>(F);

impl<F> std::fmt::Debug for FnService<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FnService")
    }
}

/// Turns a closure answering each datagram with the `(destination, bytes)` pairs to send into
/// a [`Service`] for [`run`].
///
/// ```
/// use std::net::SocketAddr;
/// use std::time::Instant;
/// use fragstat_core::serve::from_fn;
/// use fragstat_core::service::{Outbox, Service};
///
/// let mut echo = from_fn(|from: SocketAddr, d: &[u8]| vec![(from, d.to_vec())]);
/// let mut out = Outbox::new();
/// echo.handle(Instant::now(), "127.0.0.1:9".parse().unwrap(), b"hi", &mut out);
/// assert_eq!(out[0].1, b"hi");
/// ```
pub fn from_fn<F>(handler: F) -> FnService<F>
where
    F: FnMut(SocketAddr, &[u8]) -> Vec<(SocketAddr, Vec<u8>)> + Send,
{
    FnService(handler)
}

impl<F> Service for FnService<F>
where
    F: FnMut(SocketAddr, &[u8]) -> Vec<(SocketAddr, Vec<u8>)> + Send,
{
    fn handle(
        &mut self,
        _now: std::time::Instant,
        from: SocketAddr,
        datagram: &[u8],
        out: &mut Outbox,
    ) {
        out.extend((self.0)(from, datagram));
    }
}
