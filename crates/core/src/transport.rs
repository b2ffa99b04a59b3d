//! The datagram transport the engine sends and receives through, behind a small trait so
//! tests can drive the engine with a fault-injecting double ([`crate::testing::SimNet`]).

use std::io::{self, IoSlice, IoSliceMut};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::OnceLock;

use async_trait::async_trait;
use quinn_udp::{RecvMeta, UdpSocketState};
use smallvec::SmallVec;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::Interest;

use crate::MAX_DATAGRAM;

/// Buffers for the datagrams of one [`Transport::recv_batch`]: up to
/// [`quinn_udp::BATCH_SIZE`] of them, each up to [`MAX_DATAGRAM`] bytes (so none is cut).
#[derive(Debug)]
pub struct RecvBatch {
    /// One block cut into [`MAX_DATAGRAM`]-byte slots: one zeroed allocation, of which only
    /// the pages datagrams land in are ever touched.
    buf: Vec<u8>,
    meta: Vec<RecvMeta>,
    filled: usize,
}

impl Default for RecvBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl RecvBatch {
    /// Room for a full batch.
    pub fn new() -> Self {
        RecvBatch {
            buf: vec![0u8; quinn_udp::BATCH_SIZE * MAX_DATAGRAM],
            meta: vec![RecvMeta::default(); quinn_udp::BATCH_SIZE],
            filled: 0,
        }
    }

    /// The datagrams of the last receive, `(sender, bytes)` in arrival order; datagrams the
    /// kernel coalesced (UDP GRO: same sender, same size) are split again by their stride.
    pub fn datagrams(&self) -> impl Iterator<Item = (SocketAddr, &[u8])> {
        self.meta
            .iter()
            .zip(self.buf.chunks(MAX_DATAGRAM))
            .take(self.filled)
            .flat_map(|(m, b)| {
                let data = b.get(..m.len.min(b.len())).unwrap_or_default();
                // An empty datagram is still a datagram (the exchange judges it).
                let empty = data.is_empty().then_some((m.addr, data));
                data.chunks(m.stride.max(1))
                    .map(move |d| (m.addr, d))
                    .chain(empty)
            })
    }

    /// Records one datagram of `len` bytes from `from`, received into the first buffer.
    fn set_one(&mut self, len: usize, from: SocketAddr) {
        if let Some(m) = self.meta.first_mut() {
            *m = RecvMeta {
                addr: from,
                len,
                stride: len,
                ..RecvMeta::default()
            };
            self.filled = 1;
        }
    }
}

/// A datagram socket. One transport serves every query of its address family.
#[async_trait]
pub trait Transport: Send + Sync + 'static {
    /// Sends one datagram.
    async fn send_to(&self, buf: &[u8], to: SocketAddr) -> io::Result<()>;
    /// Sends one datagram if the socket takes it now, without waiting: `WouldBlock`
    /// otherwise, and the caller awaits [`Transport::send_to`]. The default always answers
    /// `WouldBlock`. (The engine's fast path: no boxed future per datagram.)
    fn try_send_to(&self, _buf: &[u8], _to: SocketAddr) -> io::Result<()> {
        Err(io::ErrorKind::WouldBlock.into())
    }
    /// Sends datagrams without waiting, in as few system calls as the platform allows
    /// (`sendmmsg`): `Ok(n)` when the first `n` went (fewer than all when the socket filled
    /// up or the next one failed: send that one again to learn which), `Err` when the first
    /// did not (`WouldBlock`: the socket is full). The default sends them one by one with
    /// [`Transport::try_send_to`].
    fn try_send_batch(&self, datagrams: &[(SocketAddr, &[u8])]) -> io::Result<usize> {
        for (n, &(to, buf)) in datagrams.iter().enumerate() {
            if let Err(e) = self.try_send_to(buf, to) {
                return if n == 0 { Err(e) } else { Ok(n) };
            }
        }
        Ok(datagrams.len())
    }
    /// Receives one datagram into `buf`; returns its length and sender.
    async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)>;
    /// Waits for at least one datagram and receives it into `batch`, with any others already
    /// waiting where the platform can take several in one system call (`recvmmsg`). The
    /// default receives one with [`Transport::recv_from`].
    async fn recv_batch(&self, batch: &mut RecvBatch) -> io::Result<()> {
        batch.filled = 0;
        let Some(buf) = batch.buf.chunks_mut(MAX_DATAGRAM).next() else {
            return Ok(());
        };
        let (n, from) = self.recv_from(buf).await?;
        batch.set_one(n, from);
        Ok(())
    }
    /// The local address.
    fn local_addr(&self) -> io::Result<SocketAddr>;
    /// Appends to `out` the destinations the network has reported unreachable since the
    /// last call (ICMP port or host unreachable, read from the socket's error queue where the
    /// platform keeps one: Linux with [`UdpTransport::report_unreachable`]). The default
    /// reports none.
    fn take_unreachable(&self, _out: &mut Vec<SocketAddr>) -> io::Result<()> {
        Ok(())
    }
}

/// A tokio UDP socket.
#[derive(Debug)]
pub struct UdpTransport {
    socket: tokio::net::UdpSocket,
    /// ICMP errors are queued on the socket ([`UdpTransport::report_unreachable`]).
    recverr: bool,
    /// quinn-udp's state for batched receives, set up on the first [`Transport::recv_batch`]
    /// (`None`: the platform refused it; single receives then).
    batch: OnceLock<Option<UdpSocketState>>,
}

/// Socket buffer size asked for: a scan of thousands of servers receives replies in bursts.
const SOCKET_BUFFER: usize = 8 << 20;

/// A UDP socket bound to `addr` (blocking; IPv6 sockets IPv6-only, so each family has a
/// socket of its own), asking for receive and send buffers of `buffer` bytes. The kernel
/// caps those at `net.core.{r,w}mem_max`; a smaller grant still works, and drops a burst
/// sooner.
pub fn udp_socket(addr: SocketAddr, buffer: usize) -> io::Result<std::net::UdpSocket> {
    let domain = if addr.is_ipv4() {
        Domain::IPV4
    } else {
        Domain::IPV6
    };
    let socket = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    // Best effort (see above).
    let _ = socket.set_recv_buffer_size(buffer);
    let _ = socket.set_send_buffer_size(buffer);
    socket.bind(&addr.into())?;
    Ok(socket.into())
}

impl UdpTransport {
    /// The tokio socket, for batched I/O beside the [`Transport`] calls (e.g. `recvmmsg` and
    /// UDP GSO through quinn-udp, as the master server does).
    pub fn socket(&self) -> &tokio::net::UdpSocket {
        &self.socket
    }

    /// Receives a datagram if one is waiting now, without waiting (`WouldBlock` otherwise):
    /// for draining a burst after a wake-up without going back to the runtime per datagram.
    pub fn try_recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.socket.try_recv_from(buf)
    }

    /// Binds `addr`. IPv6 sockets are IPv6-only, so each family has its own socket.
    /// Receive and send buffers are enlarged (as far as the OS allows) for bursts of replies.
    pub fn bind(addr: SocketAddr) -> io::Result<Self> {
        let socket = udp_socket(addr, SOCKET_BUFFER)?;
        socket.set_nonblocking(true)?;
        let socket = tokio::net::UdpSocket::from_std(socket)?;
        Ok(UdpTransport {
            socket,
            recverr: false,
            batch: OnceLock::new(),
        })
    }

    /// Takes a socket bound elsewhere (inherited by socket activation, or passed by a test
    /// that keeps its port), with the same buffers and non-blocking mode as [`Self::bind`].
    pub fn from_std(socket: std::net::UdpSocket) -> io::Result<Self> {
        let sock = socket2::SockRef::from(&socket);
        let _ = sock.set_recv_buffer_size(SOCKET_BUFFER);
        let _ = sock.set_send_buffer_size(SOCKET_BUFFER);
        socket.set_nonblocking(true)?;
        let socket = tokio::net::UdpSocket::from_std(socket)?;
        Ok(UdpTransport {
            socket,
            recverr: false,
            batch: OnceLock::new(),
        })
    }

    /// Has the kernel queue ICMP errors about what this socket sent (Linux `IP_RECVERR` /
    /// `IPV6_RECVERR`): a query to a closed port then learns at once that nothing listens
    /// there ([`Transport::take_unreachable`]). For a client's sockets only: a server's
    /// receive calls would then fail whenever a peer's port had closed. A no-op elsewhere.
    ///
    /// # Errors
    /// When the option cannot be set.
    pub fn report_unreachable(mut self) -> io::Result<Self> {
        #[cfg(target_os = "linux")]
        {
            use nix::sys::socket::{setsockopt, sockopt};
            let v6 = self.socket.local_addr()?.is_ipv6();
            let r = if v6 {
                setsockopt(&self.socket, sockopt::Ipv6RecvErr, &true)
            } else {
                setsockopt(&self.socket, sockopt::Ipv4RecvErr, &true)
            };
            r.map_err(io::Error::from)?;
            self.recverr = true;
        }
        Ok(self)
    }

    /// Binds an ephemeral port on every IPv4 address.
    pub fn any_v4() -> io::Result<Self> {
        Self::bind(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0))
    }

    /// Binds an ephemeral port on every IPv6 address.
    pub fn any_v6() -> io::Result<Self> {
        Self::bind(SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0))
    }
}

#[async_trait]
impl Transport for UdpTransport {
    async fn send_to(&self, buf: &[u8], to: SocketAddr) -> io::Result<()> {
        self.socket.send_to(buf, to).await.map(|_| ())
    }

    async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.socket.recv_from(buf).await
    }

    fn try_send_to(&self, buf: &[u8], to: SocketAddr) -> io::Result<()> {
        self.socket.try_send_to(buf, to).map(|_| ())
    }

    /// One `sendmmsg` (through rustix) for the whole batch.
    #[cfg(target_os = "linux")]
    fn try_send_batch(&self, datagrams: &[(SocketAddr, &[u8])]) -> io::Result<usize> {
        use rustix::net::addr::SocketAddrArg;
        use rustix::net::{sendmmsg, MMsgHdr, SendAncillaryBuffer, SendFlags};
        const INLINE: usize = 16;
        let addrs: SmallVec<[_; INLINE]> = datagrams.iter().map(|(a, _)| a.as_any()).collect();
        let iovs: SmallVec<[[IoSlice<'_>; 1]; INLINE]> =
            datagrams.iter().map(|(_, d)| [IoSlice::new(d)]).collect();
        let mut controls: SmallVec<[SendAncillaryBuffer<'_, '_, '_>; INLINE]> = datagrams
            .iter()
            .map(|_| SendAncillaryBuffer::default())
            .collect();
        let mut msgs: SmallVec<[MMsgHdr<'_>; INLINE]> = addrs
            .iter()
            .zip(&iovs)
            .zip(controls.iter_mut())
            .map(|((addr, iov), control)| MMsgHdr::new_with_addr(addr, iov, control))
            .collect();
        self.socket.try_io(Interest::WRITABLE, || {
            sendmmsg(&self.socket, &mut msgs, SendFlags::empty()).map_err(io::Error::from)
        })
    }

    async fn recv_batch(&self, batch: &mut RecvBatch) -> io::Result<()> {
        let state = self
            .batch
            .get_or_init(|| UdpSocketState::new((&self.socket).into()).ok());
        let Some(state) = state else {
            batch.filled = 0;
            let (n, from) = match batch.buf.chunks_mut(MAX_DATAGRAM).next() {
                Some(buf) => self.socket.recv_from(buf).await?,
                None => return Ok(()),
            };
            batch.set_one(n, from);
            return Ok(());
        };
        loop {
            if self.recverr {
                // An ICMP error about something sent is signalled as error readiness only
                // (EPOLLERR, no datagram): say so, and the caller reads the error queue
                // ([`Transport::take_unreachable`]).
                let ready = self
                    .socket
                    .ready(Interest::READABLE | Interest::ERROR)
                    .await?;
                if ready.is_error() && !ready.is_readable() {
                    batch.filled = 0;
                    return Err(io::ErrorKind::ConnectionRefused.into());
                }
            } else {
                self.socket.readable().await?;
            }
            let mut iovs: Vec<IoSliceMut<'_>> = batch
                .buf
                .chunks_mut(MAX_DATAGRAM)
                .map(IoSliceMut::new)
                .collect();
            let got = self.socket.try_io(Interest::READABLE, || {
                state.recv((&self.socket).into(), &mut iovs, &mut batch.meta)
            });
            match got {
                Ok(n) => {
                    batch.filled = n.min(batch.meta.len());
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => {
                    batch.filled = 0;
                    return Err(e);
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    #[cfg(target_os = "linux")]
    fn take_unreachable(&self, out: &mut Vec<SocketAddr>) -> io::Result<()> {
        if !self.recverr {
            return Ok(());
        }
        let drained = match errqueue::drain(&self.socket, out) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
            other => other,
        };
        // The queue is empty now: clear the runtime's error readiness (a no-op when it was
        // not set), or the next wait would return at once.
        let _ = self.socket.try_io(Interest::ERROR, || {
            Err::<(), _>(io::Error::from(io::ErrorKind::WouldBlock))
        });
        drained
    }
}

pub use crate::canonical;

/// Waits between consecutive receive errors, so a socket that fails persistently does not spin
/// a core: 1 ms after the first error, doubling up to [`Backoff::MAX`], back to the start after
/// a datagram is received.
///
/// ICMP reports (`ConnectionRefused`, `ConnectionReset`: Windows surfaces "port unreachable"
/// this way on unconnected sockets) are exempt: each one reports one datagram that bounced,
/// so they cannot persist, and a scan meeting many dead servers must not stall on them.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    next: Option<std::time::Duration>,
}

impl Backoff {
    /// The first wait.
    pub(crate) const FIRST: std::time::Duration = std::time::Duration::from_millis(1);
    /// The longest wait.
    pub(crate) const MAX: std::time::Duration = std::time::Duration::from_millis(128);

    /// A datagram was received: the next error waits [`Backoff::FIRST`] again.
    pub(crate) fn reset(&mut self) {
        self.next = None;
    }

    /// How long to wait after the receive error `e` (`None`: an ICMP report, no wait).
    pub(crate) fn delay(&mut self, e: &io::Error) -> Option<std::time::Duration> {
        if matches!(
            e.kind(),
            io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionReset
        ) {
            return None;
        }
        let d = self.next.unwrap_or(Self::FIRST);
        self.next = Some(d.saturating_mul(2).min(Self::MAX));
        Some(d)
    }

    /// Waits after the receive error `e` (for an ICMP report, only yields).
    pub(crate) async fn wait(&mut self, e: &io::Error) {
        match self.delay(e) {
            Some(d) => tokio::time::sleep(d).await,
            None => tokio::task::yield_now().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::time::Instant;

    #[test]
    fn a_socket_gets_the_buffers_it_asks_for_as_far_as_the_system_allows() {
        let rmem_max: usize = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0);
        let asked = 1 << 20;
        let socket = udp_socket("127.0.0.1:0".parse().unwrap(), asked).unwrap();
        let got = socket2::SockRef::from(&socket).recv_buffer_size().unwrap();
        // Linux reports twice what it grants; the grant is capped at rmem_max.
        assert!(
            got >= asked.min(rmem_max),
            "{got} of {asked} (rmem_max {rmem_max})"
        );
        assert!(socket.local_addr().unwrap().port() != 0);
    }

    /// A batch of real datagrams through recvmmsg: every datagram whole, in order, with its
    /// sender, the empty one and one of the largest size included; then a single receive.
    #[tokio::test]
    async fn recv_batch_takes_every_waiting_datagram_whole() {
        let rx = UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let to = rx.local_addr().unwrap();
        let a = UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let b = UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let big = vec![7u8; 60_000];
        let mut sent: Vec<(SocketAddr, Vec<u8>)> = Vec::new();
        for i in 0..40u8 {
            let (t, data) = match i {
                3 => (&a, Vec::new()),
                5 => (&b, big.clone()),
                _ if i % 2 == 0 => (&a, vec![i; usize::from(i) + 1]),
                _ => (&b, vec![i; 3]),
            };
            t.send_to(&data, to).await.unwrap();
            sent.push((t.local_addr().unwrap(), data));
        }
        let mut got: Vec<(SocketAddr, Vec<u8>)> = Vec::new();
        let mut batch = RecvBatch::new();
        let mut calls = 0;
        while got.len() < sent.len() {
            tokio::time::timeout(Duration::from_secs(5), rx.recv_batch(&mut batch))
                .await
                .expect("datagrams arrive")
                .unwrap();
            calls += 1;
            got.extend(batch.datagrams().map(|(f, d)| (f, d.to_vec())));
        }
        assert_eq!(got, sent);
        assert!(
            calls < sent.len(),
            "{calls} receives for {} datagrams: not batched",
            sent.len()
        );
    }

    /// A batch of datagrams to several receivers in one call: each arrives whole, in order,
    /// from the sender; a datagram the socket refuses ends the batch there (`Ok` of those
    /// before it, `Err` when it is the first).
    #[tokio::test]
    async fn send_batch_delivers_every_datagram_and_stops_at_a_refused_one() {
        let tx = UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let from = tx.local_addr().unwrap();
        let rx: Vec<UdpTransport> = (0..4)
            .map(|_| UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap())
            .collect();
        let data: Vec<(SocketAddr, Vec<u8>)> = (0..40u8)
            .map(|i| {
                let to = rx[usize::from(i) % 4].local_addr().unwrap();
                (to, vec![i; usize::from(i) * 37 % 1400])
            })
            .collect();
        let pairs: Vec<(SocketAddr, &[u8])> = data.iter().map(|(a, d)| (*a, &d[..])).collect();
        tx.socket.writable().await.unwrap();
        assert_eq!(tx.try_send_batch(&pairs).unwrap(), 40);
        for (r, receiver) in rx.iter().enumerate() {
            for (to, want) in data.iter().skip(r).step_by(4) {
                assert_eq!(*to, receiver.local_addr().unwrap());
                let mut buf = vec![0u8; 2048];
                let (n, who) =
                    tokio::time::timeout(Duration::from_secs(5), receiver.recv_from(&mut buf))
                        .await
                        .expect("datagram arrives")
                        .unwrap();
                assert_eq!((who, &buf[..n]), (from, &want[..]));
            }
        }
        // An IPv6 destination on an IPv4 socket is refused.
        let v6: SocketAddr = "[::1]:9".parse().unwrap();
        let ok = rx[0].local_addr().unwrap();
        assert_eq!(
            tx.try_send_batch(&[(ok, &b"a"[..]), (v6, b"b"), (ok, b"c")])
                .unwrap(),
            1
        );
        assert!(tx.try_send_batch(&[(v6, &b"b"[..]), (ok, b"c")]).is_err());
    }

    /// A port no socket will take a datagram on, held so nobody can bind it while the test
    /// runs: bound on the wildcard address (no reuse) and connected elsewhere, so the kernel
    /// answers a datagram from anyone else with ICMP port unreachable.
    #[cfg(target_os = "linux")]
    fn refusing_port(v6: bool) -> (std::net::UdpSocket, SocketAddr) {
        let (any, peer, lo): (SocketAddr, SocketAddr, std::net::IpAddr) = if v6 {
            (
                "[::]:0".parse().unwrap(),
                "[::1]:1".parse().unwrap(),
                "::1".parse().unwrap(),
            )
        } else {
            (
                "0.0.0.0:0".parse().unwrap(),
                "127.0.0.1:1".parse().unwrap(),
                "127.0.0.1".parse().unwrap(),
            )
        };
        let hold = std::net::UdpSocket::bind(any).unwrap();
        hold.connect(peer).unwrap();
        let port = hold.local_addr().unwrap().port();
        (hold, SocketAddr::new(lo, port))
    }

    /// ICMP port unreachable (IPv4 and IPv6): the receive says so, the error queue names the
    /// destination, and afterwards the socket waits for datagrams again (no error readiness
    /// left behind) and takes the next one.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn unreachable_destinations_are_reported_then_receiving_goes_on() {
        for v6 in [false, true] {
            let local: SocketAddr = if v6 { "[::1]:0" } else { "127.0.0.1:0" }.parse().unwrap();
            let t = UdpTransport::bind(local)
                .unwrap()
                .report_unreachable()
                .unwrap();
            let (_hold, closed) = refusing_port(v6);
            t.send_to(b"\xff\xff\xff\xffgetinfo", closed).await.unwrap();
            let mut batch = RecvBatch::new();
            let deadline = Duration::from_secs(20);
            let err = tokio::time::timeout(deadline, t.recv_batch(&mut batch))
                .await
                .expect("the ICMP error is signalled")
                .expect_err("no datagram came");
            assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused, "{v6}");
            let mut out = Vec::new();
            t.take_unreachable(&mut out).unwrap();
            assert_eq!(out, vec![canonical(closed)], "{v6}");
            // Nothing is left queued: a second drain finds nothing.
            out.clear();
            t.take_unreachable(&mut out).unwrap();
            assert!(out.is_empty());
            // The next receive waits for, and takes, a real datagram.
            let peer = UdpTransport::bind(local).unwrap();
            let to = t.local_addr().unwrap();
            let recv = tokio::spawn(async move {
                let mut batch = RecvBatch::new();
                let r = t.recv_batch(&mut batch).await.map(|()| {
                    batch
                        .datagrams()
                        .map(|(_, d)| d.to_vec())
                        .collect::<Vec<_>>()
                });
                (t, r)
            });
            peer.send_to(b"hello", to).await.unwrap();
            let (_t, r) = tokio::time::timeout(deadline, recv).await.unwrap().unwrap();
            assert_eq!(r.unwrap(), vec![b"hello".to_vec()], "{v6}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn backoff_doubles_to_its_cap_and_resets_on_success() {
        let persistent = io::Error::other("persistent");
        let mut b = Backoff::default();
        let mut waits = Vec::new();
        for _ in 0..10 {
            let t = Instant::now();
            b.wait(&persistent).await;
            waits.push(t.elapsed().as_millis());
        }
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 64, 128, 128, 128]);
        b.reset();
        let t = Instant::now();
        b.wait(&persistent).await;
        assert_eq!(t.elapsed(), Backoff::FIRST);
        // A bounced datagram reported by ICMP neither waits nor grows the backoff.
        let t = Instant::now();
        b.wait(&io::Error::from(io::ErrorKind::ConnectionRefused))
            .await;
        b.wait(&io::Error::from(io::ErrorKind::ConnectionReset))
            .await;
        assert_eq!(t.elapsed(), Duration::ZERO);
        let t = Instant::now();
        b.wait(&persistent).await;
        assert_eq!(t.elapsed(), Duration::from_millis(2));
    }
}

/// Linux's socket error queue (`IP_RECVERR`): ICMP errors about datagrams the socket sent.
#[cfg(target_os = "linux")]
mod errqueue {
    use std::io;
    use std::io::IoSliceMut;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
    use std::os::fd::AsRawFd;

    use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags, SockaddrStorage};

    /// `SO_EE_ORIGIN_ICMP` and `SO_EE_ORIGIN_ICMP6` (linux/errqueue.h).
    const ORIGIN_ICMP: u8 = 2;
    const ORIGIN_ICMP6: u8 = 3;
    /// ICMP "destination unreachable" (any code: net, host, port, prohibited…); ICMPv6 type 1.
    const ICMP_DEST_UNREACH: u8 = 3;
    const ICMP6_DST_UNREACH: u8 = 1;

    /// Reads every queued error; the destination of each datagram reported unreachable goes
    /// to `out` (the message's name is the original destination, port included). Ends with
    /// `WouldBlock` when the queue is empty.
    pub(super) fn drain(
        socket: &tokio::net::UdpSocket,
        out: &mut Vec<SocketAddr>,
    ) -> io::Result<()> {
        let fd = socket.as_raw_fd();
        // An error queue holds a bounded number of entries; a busy scan drains a few at a time.
        for _ in 0..1024 {
            let mut data = [0u8; 64];
            let mut iov = [IoSliceMut::new(&mut data)];
            // Room for the error itself and for whatever else the socket asked to receive
            // (quinn-udp turns on packet info and TOS, which error messages carry as well).
            let mut cmsg = nix::cmsg_space!(
                libc::sock_extended_err,
                libc::sockaddr_in6,
                libc::in6_pktinfo,
                libc::in_pktinfo,
                [u8; 64]
            );
            let msg = match recvmsg::<SockaddrStorage>(
                fd,
                &mut iov,
                Some(&mut cmsg),
                MsgFlags::MSG_ERRQUEUE | MsgFlags::MSG_DONTWAIT,
            ) {
                Ok(m) => m,
                // Empty: `WouldBlock` tells the runtime to clear the error readiness.
                Err(nix::errno::Errno::EAGAIN) => return Err(io::ErrorKind::WouldBlock.into()),
                Err(e) => return Err(io::Error::from(e)),
            };
            let to = msg.address.and_then(|a| {
                a.as_sockaddr_in()
                    .map(|v4| SocketAddr::from((v4.ip(), v4.port())))
                    .or_else(|| {
                        a.as_sockaddr_in6()
                            .map(|v6| SocketAddr::from((v6.ip(), v6.port())))
                    })
            });
            // Believed only when the offender (the ICMP's sender, `SO_EE_OFFENDER`) is the
            // destination itself: a "port unreachable" comes from the host that has no such
            // port. Anyone else (a server in the same scan that learnt this socket's port from
            // its own probe, anyone on the path) could otherwise end a query with one forged
            // ICMP (security review M1). A router's "host unreachable" goes with them: such
            // a query ends by its timeout.
            let unreachable = to.is_some_and(|to| {
                msg.cmsgs().is_ok_and(|mut c| {
                    c.any(|c| match c {
                        ControlMessageOwned::Ipv4RecvErr(e, offender) => {
                            e.ee_origin == ORIGIN_ICMP
                                && e.ee_type == ICMP_DEST_UNREACH
                                && offender.is_some_and(|o| {
                                    let ip = Ipv4Addr::from(u32::from_be(o.sin_addr.s_addr));
                                    same_host(to, ip.into())
                                })
                        }
                        ControlMessageOwned::Ipv6RecvErr(e, offender) => {
                            e.ee_origin == ORIGIN_ICMP6
                                && e.ee_type == ICMP6_DST_UNREACH
                                && offender.is_some_and(|o| {
                                    same_host(to, Ipv6Addr::from(o.sin6_addr.s6_addr).into())
                                })
                        }
                        _ => false,
                    })
                })
            });
            if let (true, Some(to)) = (unreachable, to) {
                out.push(crate::transport::canonical(to));
            }
        }
        Ok(())
    }

    /// Whether `offender` is `to`'s host (an IPv4-mapped address counts as its IPv4 one).
    pub(super) fn same_host(to: SocketAddr, offender: IpAddr) -> bool {
        let canonical = crate::transport::canonical;
        canonical(to).ip() == canonical(SocketAddr::new(offender, 0)).ip()
    }
}
