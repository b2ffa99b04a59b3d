//! Batched datagram I/O for the master's sockets, through quinn-udp: `recvmmsg` (up to
//! [`quinn_udp::BATCH_SIZE`] datagrams per system call, GRO-coalesced ones split by their
//! stride) and UDP GSO, which sends a whole server list to one client in one `sendmsg` instead
//! of one `sendto` per datagram.

use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use std::ops::Range;
use std::sync::Arc;

use fragstat_core::UdpTransport;
use quinn_udp::{RecvMeta, Transmit, UdpSocketState};
use tokio::io::Interest;

/// Receive buffer per datagram: larger than any datagram the master takes (a bigger one is
/// cut and then refused as junk).
const RECV_BUF: usize = 8 * 1024;

/// Largest GSO send: UDP's payload limit, less headroom for IPv6 and UDP headers.
const MAX_GSO_BYTES: usize = 65_000;

/// A listening socket with its quinn-udp state.
#[derive(Debug)]
pub(crate) struct BatchSocket {
    transport: Arc<UdpTransport>,
    state: UdpSocketState,
    /// The buffer GSO runs are joined in, kept between sends: a full list is ~71 KB, and a
    /// fresh buffer per list was mapped, faulted in and given back to the system each time.
    joined: std::sync::Mutex<Vec<u8>>,
}

/// Buffers for one batch of received datagrams.
#[derive(Debug)]
pub(crate) struct RecvBatch {
    bufs: Vec<Vec<u8>>,
    meta: Vec<RecvMeta>,
    filled: usize,
}

impl RecvBatch {
    /// Room for [`quinn_udp::BATCH_SIZE`] datagrams.
    pub(crate) fn new() -> Self {
        RecvBatch {
            bufs: (0..quinn_udp::BATCH_SIZE)
                .map(|_| vec![0u8; RECV_BUF])
                .collect(),
            meta: vec![RecvMeta::default(); quinn_udp::BATCH_SIZE],
            filled: 0,
        }
    }

    /// The datagrams of the last receive, GRO-coalesced ones split: `(from, bytes)`.
    pub(crate) fn datagrams(&self) -> impl Iterator<Item = (SocketAddr, &[u8])> {
        self.meta
            .iter()
            .zip(&self.bufs)
            .take(self.filled)
            .flat_map(|(m, b)| {
                let data = b.get(..m.len.min(b.len())).unwrap_or_default();
                data.chunks(m.stride.max(1)).map(move |d| (m.addr, d))
            })
    }
}

impl BatchSocket {
    /// Wraps a bound socket.
    pub(crate) fn new(transport: Arc<UdpTransport>) -> io::Result<Self> {
        let state = UdpSocketState::new(transport.socket().into())?;
        allow_fragments(transport.socket());
        Ok(BatchSocket {
            transport,
            state,
            joined: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// The socket's local address.
    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        self.transport.socket().local_addr()
    }

    fn recv_now(&self, batch: &mut RecvBatch) -> io::Result<usize> {
        let sock = self.transport.socket();
        let mut iovs: Vec<IoSliceMut<'_>> =
            batch.bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
        let n = sock.try_io(Interest::READABLE, || {
            self.state.recv(sock.into(), &mut iovs, &mut batch.meta)
        })?;
        batch.filled = n.min(batch.meta.len());
        Ok(batch.filled)
    }

    /// Waits for datagrams and receives a batch of them.
    pub(crate) async fn recv(&self, batch: &mut RecvBatch) -> io::Result<usize> {
        loop {
            self.transport.socket().readable().await?;
            match self.recv_now(batch) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                r => return r,
            }
        }
    }

    /// Receives a batch only if datagrams are waiting now (`WouldBlock` otherwise).
    pub(crate) fn try_recv(&self, batch: &mut RecvBatch) -> io::Result<usize> {
        self.recv_now(batch)
    }

    /// Sends `out` in order: runs of datagrams to one address that GSO can carry (all the
    /// size of the first but the last, which may be shorter) go in one system call each.
    pub(crate) async fn send_all(&self, out: &[(SocketAddr, Vec<u8>)]) {
        let sock = self.transport.socket();
        // Taken out, not held across the awaits below (a concurrent send makes its own).
        let mut joined = std::mem::take(&mut *self.joined_buf());
        for (to, range, segment) in gso_runs(out, self.state.max_gso_segments()) {
            let contents: &[u8] = match out.get(range.clone()) {
                Some([(_, one)]) => one,
                Some(run) => {
                    joined.clear();
                    for (_, d) in run {
                        joined.extend_from_slice(d);
                    }
                    &joined
                }
                None => continue,
            };
            let transmit = Transmit {
                destination: to,
                ecn: None,
                contents,
                segment_size: (range.len() > 1).then_some(segment),
                src_ip: None,
            };
            loop {
                if let Err(e) = sock.writable().await {
                    tracing::debug!(%to, error = %e, "send failed");
                    break;
                }
                match sock.try_io(Interest::WRITABLE, || {
                    self.state.try_send(sock.into(), &transmit)
                }) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    Err(e) if transmit.segment_size.is_some() => {
                        // A GSO send the path cannot take whole (a device or a learned path
                        // MTU under the segment size: EMSGSIZE or EINVAL): each datagram
                        // alone, which the kernel fragments.
                        tracing::debug!(%to, error = %e, "GSO send refused: one by one");
                        if let Some(run) = out.get(range.clone()) {
                            self.send_each(to, run).await;
                        }
                        break;
                    }
                    // UDP is lossy: anything else is dropped.
                    Err(e) => {
                        tracing::debug!(%to, error = %e, "send failed");
                        break;
                    }
                    Ok(()) => break,
                }
            }
        }
        joined.clear();
        let mut kept = self.joined_buf();
        if joined.capacity() > kept.capacity() {
            *kept = joined;
        }
    }

    /// Sends each datagram of `run` on its own.
    async fn send_each(&self, to: SocketAddr, run: &[(SocketAddr, Vec<u8>)]) {
        let sock = self.transport.socket();
        for (_, d) in run {
            let transmit = Transmit {
                destination: to,
                ecn: None,
                contents: d,
                segment_size: None,
                src_ip: None,
            };
            loop {
                if sock.writable().await.is_err() {
                    return;
                }
                match sock.try_io(Interest::WRITABLE, || {
                    self.state.try_send(sock.into(), &transmit)
                }) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    _ => break,
                }
            }
        }
    }

    fn joined_buf(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        // A poisoned buffer is still a buffer: nothing panics while holding it.
        self.joined.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Lets the kernel fragment list datagrams again. quinn-udp forbids fragmentation
/// (`IP_PMTUDISC_PROBE`, `IPV6_DONTFRAG`), which suits QUIC, which sizes its own packets, but
/// black-holes a 1,428-byte list datagram on any path with a smaller MTU (a WireGuard
/// tunnel's 1,420, PPPoE's 1,492 less a tunnel): IPv4 datagrams go without DF (routers
/// fragment them), IPv6 ones follow the path MTU the kernel learns and are fragmented by it.
fn allow_fragments(socket: &tokio::net::UdpSocket) {
    use rustix::net::sockopt;
    let v4 = socket.local_addr().is_ok_and(|a| a.is_ipv4());
    let r = sockopt::set_ip_mtu_discover(socket, sockopt::Ipv4PathMtuDiscovery::DONT);
    if v4 {
        if let Err(e) = r {
            tracing::warn!(error = %e, "IP_MTU_DISCOVER not reset: list datagrams may be lost on small-MTU paths");
        }
        return;
    }
    let r6 = sockopt::set_ipv6_mtu_discover(socket, sockopt::Ipv6PathMtuDiscovery::WANT)
        .map_err(std::io::Error::from)
        .and_then(|()| {
            nix::sys::socket::setsockopt(socket, nix::sys::socket::sockopt::Ipv6DontFrag, &false)
                .map_err(std::io::Error::from)
        });
    if let Err(e) = r6 {
        tracing::warn!(error = %e, "IPv6 fragmentation not allowed: list datagrams may be lost on small-MTU paths");
    }
}

/// Splits `out` into runs GSO can send as one: `(destination, indices, segment size)`.
/// A run has one destination, at most `max_segments` datagrams and [`MAX_GSO_BYTES`] bytes,
/// and every datagram but the last exactly the segment size (the first's).
pub(crate) fn gso_runs(
    out: &[(SocketAddr, Vec<u8>)],
    max_segments: usize,
) -> Vec<(SocketAddr, Range<usize>, usize)> {
    let mut runs = Vec::new();
    let mut i = 0;
    while let Some((to, first)) = out.get(i) {
        let segment = first.len();
        let mut end = i + 1;
        let mut bytes = segment;
        // Extend while the previous datagram was full-size (only the last may be shorter).
        while let Some((next_to, d)) = out.get(end) {
            let prev_full = out.get(end - 1).is_some_and(|(_, p)| p.len() == segment);
            if next_to != to
                || !prev_full
                || d.len() > segment
                || d.is_empty()
                || end - i >= max_segments
                || bytes + d.len() > MAX_GSO_BYTES
            {
                break;
            }
            bytes += d.len();
            end += 1;
        }
        runs.push((*to, i..end, segment));
        i = end;
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(list: &[(&str, usize)]) -> Vec<(SocketAddr, Vec<u8>)> {
        list.iter()
            .map(|(a, n)| (a.parse().unwrap(), vec![7u8; *n]))
            .collect()
    }

    fn shape(runs: &[(SocketAddr, Range<usize>, usize)]) -> Vec<(Range<usize>, usize)> {
        runs.iter().map(|(_, r, s)| (r.clone(), *s)).collect()
    }

    #[test]
    fn a_list_goes_in_runs_of_equal_segments_with_a_shorter_last() {
        let a = "127.0.0.1:1";
        // 52 datagrams of 1,394 bytes and a last one of 600: 46 fit in 65,000 bytes.
        let mut list = vec![(a, 1394); 52];
        list.push((a, 600));
        let runs = gso_runs(&out(&list), 64);
        assert_eq!(shape(&runs), vec![(0..46, 1394), (46..53, 1394)]);
        // Without GSO (max 1 segment) every datagram is its own send.
        assert_eq!(gso_runs(&out(&list), 1).len(), 53);
    }

    #[test]
    fn runs_end_at_a_new_destination_a_short_datagram_or_a_longer_one() {
        let (a, b) = ("127.0.0.1:1", "127.0.0.1:2");
        let list = out(&[
            (a, 100),
            (a, 100),
            (b, 100),
            (b, 50),
            (b, 50),
            (a, 100),
            (a, 200),
        ]);
        assert_eq!(
            shape(&gso_runs(&list, 64)),
            vec![
                (0..2, 100),
                (2..4, 100),
                (4..5, 50),
                (5..6, 100),
                (6..7, 200)
            ]
        );
        assert_eq!(shape(&gso_runs(&list, 64)).len(), 5);
        assert!(gso_runs(&[], 64).is_empty());
    }

    #[test]
    fn batches_split_coalesced_datagrams_by_stride() {
        let mut b = RecvBatch::new();
        let from: SocketAddr = "127.0.0.1:9".parse().unwrap();
        b.bufs[0][..5].copy_from_slice(b"aabbc");
        b.meta[0] = RecvMeta {
            addr: from,
            len: 5,
            stride: 2,
            ..RecvMeta::default()
        };
        b.bufs[1][..3].copy_from_slice(b"xyz");
        b.meta[1] = RecvMeta {
            addr: from,
            len: 3,
            stride: 3,
            ..RecvMeta::default()
        };
        b.filled = 2;
        let got: Vec<&[u8]> = b.datagrams().map(|(_, d)| d).collect();
        assert_eq!(got, vec![&b"aa"[..], b"bb", b"c", b"xyz"]);
    }
}
