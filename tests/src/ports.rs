//! Ports without races.
//!
//! No test learns a port by binding a socket and letting it go ("free port"): between the
//! release and the use another program — another test, another copy of the suite — can take
//! it. Instead:
//!
//! - where a test owns the socket, it binds port 0 and keeps the socket (or passes it to the
//!   child it starts), or reads the port the program printed;
//! - a "dead" address is a [`SilentUdp`]: a socket that is bound for as long as the test
//!   holds it and never answers, so queries to it time out and nobody else can take it;
//! - a TCP port that refuses connections is a [`RefusingTcp`]: bound, never listening; a
//!   closed UDP port (ICMP port unreachable) is a [`RefusingUdp`];
//! - a third-party server that must be told a port is given one from [`pick_port`] (outside
//!   the kernel's ephemeral range, so no port-0 bind of any test can hold it), and the port
//!   it really bound is read from the kernel ([`udp_ports_of`], [`tcp_listeners_of`]: the
//!   sockets its PID holds, from `/proc`), never assumed; a server that exits saying the
//!   address is in use is started again on another port ([`crate::process::Exited::in_use`],
//!   [`crate::process::start_on_picked_port`]).

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicU32, Ordering};

/// Well-known ports of the games and masters under test, never handed out.
const RESERVED: &[std::ops::RangeInclusive<u16>] = &[26000..=26010, 27500..=27999];

/// Lowest port [`pick_port`] hands out.
const FLOOR: u16 = 12_000;

/// The kernel's ephemeral range (`/proc/sys/net/ipv4/ip_local_port_range`), where port-0
/// binds land: `(low, high)`.
pub fn ephemeral_range() -> (u16, u16) {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| {
            let mut it = s.split_whitespace().map(|p| p.parse::<u16>().ok());
            Some((it.next()??, it.next()??))
        })
        .unwrap_or((32_768, 60_999))
}

/// A port to tell a third-party server to use: random, below the ephemeral range (so no
/// port-0 socket of ours or of any program holds it), never a game's well-known port, and
/// never the same twice in this process. The caller must still check which port the
/// server bound and retry when it was taken: another copy of the suite picks from the same
/// range.
pub fn pick_port() -> u16 {
    static HANDED_OUT: AtomicU32 = AtomicU32::new(0);
    let (low, _) = ephemeral_range();
    let ceiling = low.max(FLOOR + 1_000);
    let span = u32::from(ceiling - FLOOR);
    // A random start per process, then a stride through the range: two copies of the suite
    // rarely meet, and one copy never repeats itself.
    static START: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    let start = *START.get_or_init(|| fastrand::u32(0..span));
    loop {
        let n = HANDED_OUT.fetch_add(1, Ordering::Relaxed);
        let port = FLOOR + ((start + n.wrapping_mul(7_919)) % span) as u16;
        if !RESERVED.iter().any(|r| r.contains(&port)) {
            return port;
        }
    }
}

/// A UDP socket that is bound and never answers: a dead server that cannot be confused with
/// a closed port (no ICMP port unreachable comes back) and whose port no other program can
/// take while the test holds it. Queries to [`SilentUdp::addr`] time out.
#[derive(Debug)]
pub struct SilentUdp {
    /// Its address.
    pub addr: SocketAddr,
    _socket: UdpSocket,
}

impl SilentUdp {
    /// Binds `ip:0`.
    ///
    /// # Panics
    /// When the address cannot be bound (no such local address).
    pub fn bind(ip: IpAddr) -> SilentUdp {
        let socket = UdpSocket::bind(SocketAddr::new(ip, 0))
            .unwrap_or_else(|e| panic!("binding a silent socket on {ip}: {e}"));
        SilentUdp {
            addr: socket.local_addr().expect("local addr"),
            _socket: socket,
        }
    }

    /// A silent socket on 127.0.0.1.
    pub fn v4() -> SilentUdp {
        Self::bind(IpAddr::V4(Ipv4Addr::LOCALHOST))
    }

    /// The address as text (`127.0.0.1:PORT`).
    pub fn to_addr_string(&self) -> String {
        self.addr.to_string()
    }
}

/// A UDP port on 127.0.0.1 where nothing listens, held so no other program can take it: a
/// socket bound on the wildcard address (no reuse) and connected elsewhere, so the kernel
/// answers a datagram from anyone else with ICMP port unreachable (a `down` server).
#[derive(Debug)]
pub struct RefusingUdp {
    /// Its address (127.0.0.1).
    pub addr: SocketAddr,
    _socket: UdpSocket,
}

impl RefusingUdp {
    /// Binds 0.0.0.0:0 and connects to 127.0.0.1:1.
    ///
    /// # Panics
    /// When no UDP socket can be bound.
    pub fn v4() -> RefusingUdp {
        let socket = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).expect("binding 0.0.0.0:0");
        socket
            .connect((Ipv4Addr::LOCALHOST, 1))
            .expect("connecting the held socket");
        let port = socket.local_addr().expect("its address").port();
        RefusingUdp {
            addr: (Ipv4Addr::LOCALHOST, port).into(),
            _socket: socket,
        }
    }
}

/// A TCP port on 127.0.0.1 that refuses every connection at once (connection refused): a
/// socket bound there without listening (and without `SO_REUSEADDR`), so no other program can
/// take the port while the test holds it.
#[derive(Debug)]
pub struct RefusingTcp {
    /// Its address.
    pub addr: SocketAddr,
    _socket: socket2::Socket,
}

impl RefusingTcp {
    /// Binds 127.0.0.1:0 without listening.
    ///
    /// # Panics
    /// When no TCP socket can be bound.
    pub fn v4() -> RefusingTcp {
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("a TCP socket");
        let any: SocketAddr = (Ipv4Addr::LOCALHOST, 0).into();
        socket.bind(&any.into()).expect("binding 127.0.0.1:0");
        let addr = socket
            .local_addr()
            .ok()
            .and_then(|a| a.as_socket())
            .expect("its address");
        RefusingTcp {
            addr,
            _socket: socket,
        }
    }
}

/// Whether this machine has IPv6 loopback (`[::1]` can be bound). Under `CI` a machine
/// without it fails the test that asked (these machines have it); elsewhere the caller
/// prints `SKIPPED`.
///
/// # Panics
/// Under `CI`, when `[::1]` cannot be bound.
pub fn require_ipv6() -> bool {
    match UdpSocket::bind("[::1]:0") {
        Ok(_) => true,
        Err(e) => {
            let msg = format!("no IPv6 loopback ([::1]:0: {e})");
            assert!(!crate::in_ci(), "{msg}");
            eprintln!("SKIPPED (not in CI): {msg}");
            false
        }
    }
}

/// Socket inodes `pid` holds (`/proc/PID/fd/* -> socket:[INODE]`).
fn socket_inodes(pid: u32) -> HashSet<u64> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return HashSet::new();
    };
    dir.filter_map(|e| {
        let link = std::fs::read_link(e.ok()?.path()).ok()?;
        let s = link.to_str()?;
        s.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
    })
    .collect()
}

/// Parses `/proc/net/{udp,udp6,tcp,tcp6}`'s `local_address` column (`0100007F:5BA0`, the
/// address in the kernel's byte order, the port in hex).
fn parse_local(field: &str) -> Option<SocketAddr> {
    let (addr, port) = field.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let ip = match addr.len() {
        8 => IpAddr::V4(Ipv4Addr::from(
            u32::from_str_radix(addr, 16).ok()?.to_ne_bytes(),
        )),
        32 => {
            let mut bytes = [0u8; 16];
            for (i, chunk) in bytes.chunks_mut(4).enumerate() {
                let word = u32::from_str_radix(addr.get(i * 8..i * 8 + 8)?, 16).ok()?;
                chunk.copy_from_slice(&word.to_ne_bytes());
            }
            IpAddr::V6(Ipv6Addr::from(bytes))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// The local addresses of `pid`'s sockets listed in `/proc/PID/net/<table>` whose state
/// passes `state` (hex, as the table writes it).
fn sockets_of(pid: u32, tables: &[&str], state: impl Fn(&str) -> bool) -> Vec<SocketAddr> {
    let inodes = socket_inodes(pid);
    if inodes.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for table in tables {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            // sl local rem st tx:rx tr:when retrnsmt uid timeout inode …
            let (Some(local), Some(st), Some(inode)) = (cols.get(1), cols.get(3), cols.get(9))
            else {
                continue;
            };
            let Ok(inode) = inode.parse::<u64>() else {
                continue;
            };
            if !inodes.contains(&inode) || !state(st) {
                continue;
            }
            if let Some(a) = parse_local(local).filter(|a| a.port() != 0) {
                out.push(a);
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The UDP addresses process `pid` has bound (its own sockets, read from `/proc`).
pub fn udp_ports_of(pid: u32) -> Vec<SocketAddr> {
    sockets_of(pid, &["udp", "udp6"], |_| true)
}

/// The TCP addresses process `pid` listens on.
pub fn tcp_listeners_of(pid: u32) -> Vec<SocketAddr> {
    // TCP_LISTEN is state 10.
    sockets_of(pid, &["tcp", "tcp6"], |st| st == "0A")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picked_ports_avoid_the_ephemeral_range_and_repeat_nothing() {
        let (low, _) = ephemeral_range();
        let mut seen = HashSet::new();
        for _ in 0..2_000 {
            let p = pick_port();
            assert!(p >= FLOOR && p < low.max(FLOOR + 1_000), "{p}");
            assert!(!RESERVED.iter().any(|r| r.contains(&p)), "{p}");
            assert!(seen.insert(p), "{p} twice");
        }
    }

    #[test]
    fn our_own_sockets_are_found_in_proc() {
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let me = std::process::id();
        assert!(udp_ports_of(me).contains(&udp.local_addr().unwrap()));
        assert!(tcp_listeners_of(me).contains(&tcp.local_addr().unwrap()));
        if let Ok(u6) = UdpSocket::bind("[::1]:0") {
            assert!(udp_ports_of(me).contains(&u6.local_addr().unwrap()));
        }
        let silent = SilentUdp::v4();
        assert!(udp_ports_of(me).contains(&silent.addr));
    }

    #[test]
    fn proc_addresses_parse() {
        assert_eq!(
            parse_local("0100007F:5BA0"),
            Some("127.0.0.1:23456".parse().unwrap())
        );
        assert_eq!(
            parse_local("00000000000000000000000001000000:0050"),
            Some("[::1]:80".parse().unwrap())
        );
        assert_eq!(parse_local("zz:1"), None);
    }
}
