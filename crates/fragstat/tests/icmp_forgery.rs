//! Forged ICMP "port unreachable" (security review M1), in a network namespace of its own
//! (`unshare -n`, loopback only): a server probed in the same round as a victim learns the
//! client's port from its own probe and sends, from a raw socket, an ICMP naming the client's
//! datagram to the victim. The victim (a gate in front of an emulated server, which answers
//! only once the forgery has gone out) must still be reported online. A real refusal (nothing
//! listens) is still `Down`, after two attempts drew it.

mod support;

use std::future::IntoFuture;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use fragstat::{Client, Error};
use fragstat_testkit::netns::{private_netns, Netns};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use tokio::net::UdpSocket;
use tokio::sync::watch;

#[test]
fn a_forged_icmp_does_not_mark_a_server_down() {
    match private_netns("a_forged_icmp_does_not_mark_a_server_down") {
        Netns::Inside => inside(),
        Netns::Ran(text) => assert!(text.contains("forgeries sent: v4 "), "{text}"),
        Netns::Skipped => {}
    }
}

fn inside() {
    // A second IPv6 address for the forger (a fresh namespace's loopback has only ::1).
    let ok = std::process::Command::new("ip")
        .args(["-6", "addr", "add", "fd00::66/128", "dev", "lo", "nodad"])
        .status()
        .expect("ip addr add");
    assert!(ok.success());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let v4 = scenario(
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            "127.0.0.66".parse().unwrap(),
        )
        .await;
        let v6 = scenario(IpAddr::V6(Ipv6Addr::LOCALHOST), "fd00::66".parse().unwrap()).await;
        refused_twice_is_down().await;
        println!("forgeries sent: v4 {v4}, v6 {v6}");
    });
}

/// The victim at `victim_ip`, the forger at `forger_ip`: three rounds.
/// 1. No retries, forgery from the forger's own address: only the offender check saves it.
/// 2. Two retries, forgery spoofing the victim's own address: one report ends an attempt,
///    not the query.
/// 3. Each query's result is the victim's answer.
async fn scenario(victim_ip: IpAddr, forger_ip: IpAddr) -> usize {
    let q3 = fragstat::game("q3").unwrap();
    let farm = support::farm_at(&q3, victim_ip, 1, 2);
    let backend = farm.servers[0];
    let (forged_tx, forged_rx) = watch::channel(0usize);
    let (need_tx, need_rx) = watch::channel(0usize);
    let victim = gate(victim_ip, backend, forged_rx, need_rx).await;
    let forger = Forger::start(forger_ip, victim, forged_tx.clone()).await;
    let client = Client::new();
    for (retries, spoof_victim) in [(0, false), (2, true)] {
        forger.spoof_victim.send_replace(spoof_victim);
        let before = *forged_tx.borrow();
        // The victim answers this round only once the round's forgery has gone out.
        need_tx.send_replace(before + 1);
        let (bait, answer) = tokio::join!(
            client
                .query(&q3, forger.addr)
                .timeout(Duration::from_millis(300))
                .retries(0)
                .into_future(),
            client
                .query(&q3, victim)
                .timeout(Duration::from_secs(5))
                .retries(retries)
                .players()
                .into_future(),
        );
        assert!(bait.is_err(), "the forger never answers");
        let after = *forged_tx.borrow();
        assert!(after > before, "no forgery went out");
        let info = answer.unwrap_or_else(|e| {
            panic!("victim {victim} reported {e:?} after a forged ICMP (retries {retries}, spoofed {spoof_victim})")
        });
        assert_eq!(
            info.info.players.as_ref().map(Vec::len),
            Some(2),
            "{info:?}"
        );
    }
    let sent = *forged_tx.borrow();
    sent
}

/// Nothing listens (a fresh namespace): the genuine ICMP from the destination itself ends the
/// query as `Down`, with both attempts sent and long before the timeout.
async fn refused_twice_is_down() {
    let q3 = fragstat::game("q3").unwrap();
    let client = Client::new();
    for to in ["127.0.0.1:9", "[::1]:9"] {
        let start = tokio::time::Instant::now();
        let r = client
            .query(&q3, to)
            .timeout(Duration::from_secs(10))
            .retries(3)
            .await;
        assert!(matches!(r, Err(Error::Down)), "{to}: {r:?}");
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{to}: waited a timeout"
        );
    }
}

/// A UDP socket at `ip` that passes each datagram to `backend` and its answer back, but only
/// once the forgeries sent reach `need` (the round's): the forged ICMP always arrives first.
async fn gate(
    ip: IpAddr,
    backend: SocketAddr,
    mut forged: watch::Receiver<usize>,
    need: watch::Receiver<usize>,
) -> SocketAddr {
    let front = UdpSocket::bind((ip, 0)).await.unwrap();
    let back = UdpSocket::bind((ip, 0)).await.unwrap();
    let addr = front.local_addr().unwrap();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 65_536];
        let mut reply = vec![0u8; 65_536];
        loop {
            let Ok((n, client)) = front.recv_from(&mut buf).await else {
                return;
            };
            back.send_to(&buf[..n], backend).await.unwrap();
            let Ok(Ok((m, _))) =
                tokio::time::timeout(Duration::from_secs(10), back.recv_from(&mut reply)).await
            else {
                continue;
            };
            // The forger signals after its raw send returned.
            let need = *need.borrow();
            let _ = forged.wait_for(|f| *f >= need).await;
            let _ = front.send_to(&reply[..m], client).await;
        }
    });
    addr
}

/// A "server" that never answers; each probe it receives makes it send an ICMP port
/// unreachable naming (the prober's address and port → `victim`), from its own address or,
/// when told, from the victim's.
struct Forger {
    addr: SocketAddr,
    spoof_victim: Arc<watch::Sender<bool>>,
}

impl Forger {
    async fn start(ip: IpAddr, victim: SocketAddr, sent: watch::Sender<usize>) -> Forger {
        let socket = UdpSocket::bind((ip, 0)).await.unwrap();
        let addr = socket.local_addr().unwrap();
        let spoof_victim = Arc::new(watch::Sender::new(false));
        let spoof = spoof_victim.subscribe();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 2048];
            while let Ok((_, prober)) = socket.recv_from(&mut buf).await {
                let from = if *spoof.borrow() { victim.ip() } else { ip };
                send_port_unreachable(from, prober, victim);
                sent.send_modify(|n| *n += 1);
            }
        });
        Forger { addr, spoof_victim }
    }
}

/// Sends, from `from` (a raw socket bound there), an ICMP "port unreachable" to `prober`
/// quoting a UDP datagram `prober` → `victim`.
fn send_port_unreachable(from: IpAddr, prober: SocketAddr, victim: SocketAddr) {
    let udp = {
        let mut h = Vec::with_capacity(8);
        h.extend_from_slice(&prober.port().to_be_bytes());
        h.extend_from_slice(&victim.port().to_be_bytes());
        h.extend_from_slice(&20u16.to_be_bytes());
        h.extend_from_slice(&[0, 0]);
        h
    };
    let (domain, protocol, packet) = match (prober.ip(), victim.ip()) {
        (IpAddr::V4(src), IpAddr::V4(dst)) => {
            let mut ip = vec![0x45, 0, 0, 48, 0, 0, 0x40, 0, 64, 17, 0, 0];
            ip.extend_from_slice(&src.octets());
            ip.extend_from_slice(&dst.octets());
            let sum = checksum(&ip);
            ip[10..12].copy_from_slice(&sum.to_be_bytes());
            // Type 3 (destination unreachable), code 3 (port unreachable).
            let mut icmp = vec![3, 3, 0, 0, 0, 0, 0, 0];
            icmp.extend_from_slice(&ip);
            icmp.extend_from_slice(&udp);
            let sum = checksum(&icmp);
            icmp[2..4].copy_from_slice(&sum.to_be_bytes());
            (Domain::IPV4, Protocol::ICMPV4, icmp)
        }
        (IpAddr::V6(src), IpAddr::V6(dst)) => {
            // Version 6, payload 8 bytes (the UDP header quoted), next header UDP, hop limit 64.
            let mut ip = vec![0x60, 0, 0, 0, 0, 8, 17, 64];
            ip.extend_from_slice(&src.octets());
            ip.extend_from_slice(&dst.octets());
            // Type 1 (destination unreachable), code 4 (port unreachable); the kernel fills
            // in an ICMPv6 raw socket's checksum.
            let mut icmp = vec![1, 4, 0, 0, 0, 0, 0, 0];
            icmp.extend_from_slice(&ip);
            icmp.extend_from_slice(&udp);
            (Domain::IPV6, Protocol::ICMPV6, icmp)
        }
        _ => panic!("mixed families"),
    };
    let raw = Socket::new(domain, Type::RAW, Some(protocol)).expect("a raw socket (root)");
    raw.bind(&SockAddr::from(SocketAddr::new(from, 0)))
        .expect("bind the raw socket");
    raw.send_to(&packet, &SockAddr::from(SocketAddr::new(prober.ip(), 0)))
        .expect("send the forgery");
}

/// The Internet checksum.
fn checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}
