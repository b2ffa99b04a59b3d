//! Batched receives with the kernel's receive time of each datagram (Linux `recvmmsg`).

use std::io::{self, IoSliceMut};
use std::net::{Ipv4Addr, SocketAddr};
use std::os::fd::AsRawFd;
use std::time::Duration;

use nix::sys::socket::{recvmmsg, ControlMessageOwned, MsgFlags, MultiHeaders, SockaddrStorage};
use quinn_udp::RecvMeta;

use super::{RecvBatch, MAX_DATAGRAM, RECV_BATCH};

/// Takes the datagrams waiting on `socket` (at least one, or `WouldBlock`) into `batch`
/// in one `recvmmsg`, each with its `SO_TIMESTAMPNS` stamp when `stamps` (the option is
/// on); returns how many.
pub(super) fn recv(
    socket: &tokio::net::UdpSocket,
    batch: &mut RecvBatch,
    stamps: bool,
) -> io::Result<usize> {
    // Fresh headers per call: nix's recvmmsg does not restore the name and control
    // lengths the kernel shrank on the previous call (nix-rust/nix#2813), so reused
    // headers would lose the stamps.
    let space = stamps.then(|| nix::cmsg_space!(libc::timespec));
    let mut headers = MultiHeaders::<SockaddrStorage>::preallocate(RECV_BATCH, space);
    // An array (no destructor), as recvmmsg borrows it for as long as the buffers.
    let mut chunks = batch.buf.chunks_mut(MAX_DATAGRAM);
    let mut iovs: [[IoSliceMut<'_>; 1]; RECV_BATCH] =
        std::array::from_fn(|_| [IoSliceMut::new(chunks.next().unwrap_or_default())]);
    let msgs = recvmmsg(
        socket.as_raw_fd(),
        &mut headers,
        iovs.iter_mut(),
        MsgFlags::MSG_DONTWAIT,
        None,
    )?;
    let mut n = 0;
    for ((msg, meta), stamp) in msgs.zip(batch.meta.iter_mut()).zip(batch.stamps.iter_mut()) {
        // A sender of another family cannot happen on a UDP socket; such a datagram
        // would go to no one (no query waits on the unspecified address).
        let addr = msg
            .address
            .as_ref()
            .and_then(socket_addr)
            .unwrap_or(SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)));
        *meta = RecvMeta {
            addr,
            len: msg.bytes,
            stride: msg.bytes,
            ..RecvMeta::default()
        };
        *stamp = if stamps {
            msg.cmsgs().ok().and_then(|mut c| {
                c.find_map(|c| match c {
                    ControlMessageOwned::ScmTimestampns(t) => Some(Duration::from(t)),
                    _ => None,
                })
            })
        } else {
            None
        };
        n += 1;
    }
    Ok(n)
}

/// A received datagram's sender.
fn socket_addr(a: &SockaddrStorage) -> Option<SocketAddr> {
    a.as_sockaddr_in()
        .map(|v4| SocketAddr::V4((*v4).into()))
        .or_else(|| a.as_sockaddr_in6().map(|v6| SocketAddr::V6((*v6).into())))
}
