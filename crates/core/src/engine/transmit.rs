//! Sending a batch of ready queries' datagrams: `sendmmsg` where the transport has it, each
//! attempt stamped with the time just before the call that sent it.

use std::net::SocketAddr;
use std::time::Instant;

use smallvec::SmallVec;
use tracing::debug;

use super::Inner;
use crate::scheduler::Transmit;

/// Queries whose datagrams go out together (see [`super::driver`]): a burst of replies is
/// answered by a few system calls, not one per datagram, while one call's datagrams (stamped
/// together just before it) leave within a few tens of microseconds of each other.
pub(super) const SEND_BATCH: usize = 16;

/// A query's datagrams for one attempt, about to go out.
pub(super) struct Prepared {
    pub(super) transmit: Transmit,
    /// Why one of them did not go.
    pub(super) error: Option<std::io::Error>,
    /// When the last of them went (the attempt's send time, for its RTT).
    pub(super) sent: Option<Instant>,
}

/// The clock the driver runs on: tokio's (paused in tests), as a [`std::time::Instant`].
pub(super) fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// Sends the datagrams of `batch`, each address family in as few system calls as its
/// transport allows ([`Transport::try_send_batch`]); a datagram the socket cannot take now
/// is awaited alone. Each datagram is still a unit of the task's budget, as one awaited send
/// was: a long burst yields now and then, so the receive task keeps taking replies off the
/// socket (and stamping their RTT) meanwhile.
pub(super) async fn transmit(engine: &Inner, batch: &mut [Prepared]) {
    for (v4, transport) in [(true, &engine.v4), (false, &engine.v6)] {
        let Some(t) = transport else {
            continue;
        };
        let mut failed: SmallVec<[(usize, std::io::Error); 2]> = SmallVec::new();
        // (position in `batch`, when its datagram went)
        let mut stamps: SmallVec<[(usize, Instant); SEND_BATCH]> = SmallVec::new();
        // (position in `batch`, address, datagram)
        let list: SmallVec<[(usize, SocketAddr, &[u8]); SEND_BATCH]> = batch
            .iter()
            .enumerate()
            .filter(|(_, p)| p.transmit.destination.is_ipv4() == v4)
            .flat_map(|(i, p)| {
                let addr = p.transmit.destination;
                p.transmit
                    .datagrams
                    .iter()
                    .map(move |d| (i, addr, d.as_slice()))
            })
            .collect();
        let mut done = 0;
        let mut refused = 0;
        while let Some(rest) = list.get(done..).filter(|r| !r.is_empty()) {
            let pairs: SmallVec<[(SocketAddr, &[u8]); SEND_BATCH]> =
                rest.iter().map(|&(_, a, d)| (a, d)).collect();
            // Stamped just before the call: a reply can be received (on another thread)
            // before the call returns, and its RTT must not come out negative (zero).
            let before = now();
            let sent = match t.try_send_batch(&pairs) {
                Ok(n) if n > 0 => n,
                Ok(_) => 0,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => 0,
                // An ICMP error about an earlier datagram (IP_RECVERR) is reported on the next
                // call, this send: nothing went; it is read (and routed) by the receive task.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused && refused < 8 => {
                    refused += 1;
                    continue;
                }
                Err(e) => {
                    if let Some(&(i, addr, _)) = rest.first() {
                        debug!(%addr, error = %e, "send failed");
                        failed.push((i, e));
                    }
                    done += 1;
                    continue;
                }
            };
            if sent == 0 {
                // The socket is full: wait for room for this one, then try the rest together.
                if let Some(&(i, addr, d)) = rest.first() {
                    let mut r = t.send_to(d, addr).await;
                    if r.as_ref()
                        .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused)
                    {
                        // An earlier datagram's ICMP error, reported here: send again.
                        r = t.send_to(d, addr).await;
                    }
                    if let Err(e) = r {
                        debug!(%addr, error = %e, "send failed");
                        failed.push((i, e));
                    }
                    stamps.push((i, now()));
                }
                done += 1;
                continue;
            }
            // Stamped as they leave: a later datagram of the batch may wait for room.
            stamps.extend(rest.iter().take(sent).map(|&(i, _, _)| (i, before)));
            for _ in 0..sent {
                tokio::task::consume_budget().await;
            }
            done += sent;
        }
        drop(list);
        for (i, e) in failed {
            if let Some(p) = batch.get_mut(i) {
                p.error = Some(e);
            }
        }
        for (i, at) in stamps {
            if let Some(p) = batch.get_mut(i) {
                p.sent = Some(at);
            }
        }
    }
}
