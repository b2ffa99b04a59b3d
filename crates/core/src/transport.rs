//! The datagram transport the engine sends and receives through, behind a small trait so
//! tests can drive the engine with a fault-injecting double ([`crate::testing::SimNet`]).

#[cfg(not(target_os = "linux"))]
use std::io::IoSliceMut;
use std::io::{self, IoSlice};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use quinn_udp::RecvMeta;
#[cfg(not(target_os = "linux"))]
use quinn_udp::UdpSocketState;
use smallvec::SmallVec;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::Interest;

use crate::MAX_DATAGRAM;

/// Datagrams one [`Transport::recv_batch`] takes at most (quinn-udp's batch on Linux).
const RECV_BATCH: usize = 32;

/// Buffers for the datagrams of one [`Transport::recv_batch`]: up to 32 of them, each up to
/// [`MAX_DATAGRAM`] bytes (so none is cut), with when the kernel received each where the
/// transport can tell ([`RecvBatch::datagrams_at`]).
#[derive(Debug)]
pub struct RecvBatch {
    /// One block cut into [`MAX_DATAGRAM`]-byte slots: one zeroed allocation, of which only
    /// the pages datagrams land in are ever touched.
    buf: Vec<u8>,
    meta: Vec<RecvMeta>,
    /// When the kernel received each datagram (`SO_TIMESTAMPNS`: `CLOCK_REALTIME`, since the
    /// Unix epoch); `None` where the transport cannot tell.
    stamps: Vec<Option<Duration>>,
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
            buf: vec![0u8; RECV_BATCH * MAX_DATAGRAM],
            meta: vec![RecvMeta::default(); RECV_BATCH],
            stamps: vec![None; RECV_BATCH],
            filled: 0,
        }
    }

    /// The datagrams of the last receive, `(sender, bytes)` in arrival order; datagrams the
    /// kernel coalesced (UDP GRO: same sender, same size) are split again by their stride.
    pub fn datagrams(&self) -> impl Iterator<Item = (SocketAddr, &[u8])> {
        self.stamped().map(|(from, d, _)| (from, d))
    }

    /// [`RecvBatch::datagrams`] with when each arrived, `(sender, bytes, at)`, on the clock
    /// of `now` (the time the receive returned, taken just before this call): the kernel's
    /// receive time where the transport has it ([`UdpTransport`] on Linux), so datagrams that
    /// waited in the socket while the receiving task was busy keep their own times; `now`
    /// otherwise.
    pub fn datagrams_at(&self, now: Instant) -> impl Iterator<Item = (SocketAddr, &[u8], Instant)> {
        // One reading of the wall clock for the batch: the kernel stamps on it.
        let wall = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .ok();
        self.stamped()
            .map(move |(from, d, stamp)| (from, d, arrival(stamp, wall, now)))
    }

    /// The datagrams with their kernel stamps.
    fn stamped(&self) -> impl Iterator<Item = (SocketAddr, &[u8], Option<Duration>)> {
        self.meta
            .iter()
            .zip(&self.stamps)
            .zip(self.buf.chunks(MAX_DATAGRAM))
            .take(self.filled)
            .flat_map(|((m, &stamp), b)| {
                let data = b.get(..m.len.min(b.len())).unwrap_or_default();
                // An empty datagram is still a datagram (the exchange judges it).
                let empty = data.is_empty().then_some((m.addr, data, stamp));
                data.chunks(m.stride.max(1))
                    .map(move |d| (m.addr, d, stamp))
                    .chain(empty)
            })
    }

    /// Records one datagram of `len` bytes from `from`, received into the first buffer.
    fn set_one(&mut self, len: usize, from: SocketAddr) {
        if let (Some(m), Some(stamp)) = (self.meta.first_mut(), self.stamps.first_mut()) {
            *m = RecvMeta {
                addr: from,
                len,
                stride: len,
                ..RecvMeta::default()
            };
            *stamp = None;
            self.filled = 1;
        }
    }
}

/// When a datagram arrived, on the clock of `now`: `now` less the age of its kernel `stamp`
/// by the wall clock (`wall`, read at about `now`), never after `now`. Without a stamp (or a
/// wall clock before 1970), or when the wall clock was set back since the stamp, `now`.
///
/// A wall clock set forward since the stamp makes the datagram look older than it is; the
/// scheduler measures no RTT below zero (a reply is never taken as received before its
/// request went).
fn arrival(stamp: Option<Duration>, wall: Option<Duration>, now: Instant) -> Instant {
    stamp
        .zip(wall)
        .and_then(|(stamp, wall)| wall.checked_sub(stamp))
        .and_then(|age| now.checked_sub(age))
        .unwrap_or(now)
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
///
/// On Linux its [`Transport::recv_batch`] takes up to 32 datagrams per `recvmmsg` and stamps
/// each with the kernel's receive time (`SO_TIMESTAMPNS`, turned on at the first batched
/// receive): a reply's RTT ends when it reached the host, not when the receiving task got
/// round to it ([`RecvBatch::datagrams_at`]). (When no other socket on the host asked for
/// stamps, the kernel turns stamping on arrival on a moment later, from a deferred work item;
/// until then it stamps a datagram when it is read.) Elsewhere quinn-udp batches where the
/// platform can, without receive times.
#[derive(Debug)]
pub struct UdpTransport {
    socket: tokio::net::UdpSocket,
    /// ICMP errors are queued on the socket ([`UdpTransport::report_unreachable`]).
    recverr: bool,
    /// Set up on the first [`Transport::recv_batch`]: on Linux, whether the kernel stamps
    /// receive times; elsewhere quinn-udp's state for batched receives (`None`: the platform
    /// refused it; single receives then).
    #[cfg(target_os = "linux")]
    batch: OnceLock<bool>,
    #[cfg(not(target_os = "linux"))]
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
        #[cfg(target_os = "linux")]
        let stamps = *self.batch.get_or_init(|| {
            use nix::sys::socket::{setsockopt, sockopt};
            // Best effort: without it datagrams are timed when received here.
            setsockopt(&self.socket, sockopt::ReceiveTimestampns, &true).is_ok()
        });
        #[cfg(not(target_os = "linux"))]
        let Some(state) = self
            .batch
            .get_or_init(|| UdpSocketState::new((&self.socket).into()).ok())
        else {
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
            #[cfg(target_os = "linux")]
            let got = self.socket.try_io(Interest::READABLE, || {
                mmsg::recv(&self.socket, batch, stamps)
            });
            #[cfg(not(target_os = "linux"))]
            let got = {
                let mut iovs: Vec<IoSliceMut<'_>> = batch
                    .buf
                    .chunks_mut(MAX_DATAGRAM)
                    .map(IoSliceMut::new)
                    .collect();
                batch.stamps.fill(None);
                self.socket.try_io(Interest::READABLE, || {
                    state.recv((&self.socket).into(), &mut iovs, &mut batch.meta)
                })
            };
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
mod tests;

/// Batched receives with the kernel's receive time of each datagram (Linux `recvmmsg`).
#[cfg(target_os = "linux")]
mod mmsg;

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
            // (the receive time, `SO_TIMESTAMPNS`, which error messages carry as well).
            let mut cmsg = nix::cmsg_space!(
                libc::sock_extended_err,
                libc::sockaddr_in6,
                libc::timespec,
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
