//! The datagram transport the engine sends and receives through, behind a small trait so
//! tests can drive the engine with a fault-injecting double ([`crate::testing::SimNet`]).

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use async_trait::async_trait;
use socket2::{Domain, Protocol, Socket, Type};

/// A datagram socket. One transport serves every query of its address family.
#[async_trait]
pub trait Transport: Send + Sync + 'static {
    /// Sends one datagram.
    async fn send_to(&self, buf: &[u8], to: SocketAddr) -> io::Result<()>;
    /// Receives one datagram into `buf`; returns its length and sender.
    async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)>;
    /// The local address.
    fn local_addr(&self) -> io::Result<SocketAddr>;
}

/// A tokio UDP socket.
#[derive(Debug)]
pub struct UdpTransport {
    socket: tokio::net::UdpSocket,
}

/// Socket buffer size asked for: a scan of thousands of servers receives replies in bursts.
const SOCKET_BUFFER: usize = 8 << 20;

impl UdpTransport {
    /// Binds `addr`. IPv6 sockets are IPv6-only, so each family has its own socket.
    /// Receive and send buffers are enlarged (as far as the OS allows) for bursts of replies.
    pub fn bind(addr: SocketAddr) -> io::Result<Self> {
        let domain = if addr.is_ipv4() {
            Domain::IPV4
        } else {
            Domain::IPV6
        };
        let socket = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
        if addr.is_ipv6() {
            socket.set_only_v6(true)?;
        }
        // Best effort: the kernel caps these at net.core.{r,w}mem_max.
        let _ = socket.set_recv_buffer_size(SOCKET_BUFFER);
        let _ = socket.set_send_buffer_size(SOCKET_BUFFER);
        socket.set_nonblocking(true)?;
        socket.bind(&addr.into())?;
        let socket = tokio::net::UdpSocket::from_std(socket.into())?;
        Ok(UdpTransport { socket })
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

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }
}

pub use crate::canonical;
