//! `fragstat master-server` registrations under attack (issue 30), against the real binary:
//! one IPv6 /48 registering as many servers as it can (in a private network namespace, where
//! the whole of 2001:db8::/32 is local), and a real OpenArena that shuts down right after it
//! registered.

use std::net::{Ipv6Addr, SocketAddr, UdpSocket};
use std::process::Command;
use std::time::{Duration, Instant};

use fragstat_testkit::netns::{private_netns, Netns};
use fragstat_testkit::wait::{self, SETTLE};
use fragstat_testkit::{OpenArena, OpenArenaConfig};

mod support;
use support::{bin, Running};

/// The addresses of every server in the master's `getserversExt` list (IPv4 and IPv6), asked
/// from `from`.
fn list_ext(from: &UdpSocket, master: SocketAddr) -> Vec<SocketAddr> {
    from.send_to(
        b"\xff\xff\xff\xffgetserversExt Quake3Arena 68 empty full ipv4 ipv6",
        master,
    )
    .expect("send getserversExt");
    from.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 2048];
    let header = b"\xff\xff\xff\xffgetserversExtResponse";
    while let Ok((n, _)) = from.recv_from(&mut buf) {
        let Some(mut d) = buf[..n].strip_prefix(header.as_slice()) else {
            continue;
        };
        let mut done = false;
        while let Some((&kind, rest)) = d.split_first() {
            match kind {
                b'\\' if rest.starts_with(b"EOT") => {
                    done = true;
                    break;
                }
                b'\\' if rest.len() >= 6 => {
                    let ip: [u8; 4] = rest[..4].try_into().unwrap();
                    let port = u16::from_be_bytes([rest[4], rest[5]]);
                    out.push(SocketAddr::from((ip, port)));
                    d = &rest[6..];
                }
                b'/' if rest.len() >= 18 => {
                    let ip: [u8; 16] = rest[..16].try_into().unwrap();
                    let port = u16::from_be_bytes([rest[16], rest[17]]);
                    out.push(SocketAddr::from((Ipv6Addr::from(ip), port)));
                    d = &rest[18..];
                }
                _ => break,
            }
        }
        if done {
            break;
        }
    }
    out
}

fn sh(args: &[&str]) {
    let ok = Command::new(args[0])
        .args(&args[1..])
        .status()
        .expect(args[0]);
    assert!(ok.success(), "{args:?}");
}

/// The `k`-th address of the attacker's /48: its /64s spread over the /48's /56s.
fn attacker(k: u32) -> SocketAddr {
    let ip = Ipv6Addr::new(
        0x2001,
        0xdb8,
        0xaaaa,
        (((k % 256) << 8) | (k / 256)) as u16,
        0,
        0,
        0,
        1,
    );
    SocketAddr::from((ip, 27960))
}

/// Registers `count` fake servers from the attacker's /48 as fast as the master lets them,
/// 64 at a time: each heartbeats from its own address and answers its challenge.
fn register_from_one_48(master: SocketAddr, count: u32) {
    for batch in 0..count.div_ceil(64) {
        let socks: Vec<UdpSocket> = (batch * 64..((batch + 1) * 64).min(count))
            .map(|k| UdpSocket::bind(attacker(k)).expect("bind in the /48"))
            .collect();
        for s in &socks {
            s.send_to(b"\xff\xff\xff\xffheartbeat QuakeArena-1\n", master)
                .unwrap();
        }
        // Challenges are answered as they come; a refused heartbeat gets none.
        let deadline = Instant::now() + Duration::from_secs(1);
        let mut buf = [0u8; 256];
        for s in &socks {
            let left = deadline.saturating_duration_since(Instant::now());
            s.set_read_timeout(Some(left.max(Duration::from_millis(1))))
                .unwrap();
            let Ok((n, _)) = s.recv_from(&mut buf) else {
                continue;
            };
            let Some(challenge) = buf[..n].strip_prefix(b"\xff\xff\xff\xffgetinfo ") else {
                continue;
            };
            let mut reply = b"\xff\xff\xff\xffinfoResponse\n\\protocol\\68\\sv_maxclients\\8\\clients\\0\\gamename\\Quake3Arena\\challenge\\".to_vec();
            reply.extend_from_slice(challenge);
            s.send_to(&reply, master).unwrap();
        }
    }
}

/// H2 (the review's E8, at a reduced scale): one /48 tries to register 2,112 servers, more
/// than the whole list (`--max-servers 2048`), from 2,112 /64s. It lists at most its /48's
/// cap (512), and a real server from another /48 still registers and is listed.
#[test]
fn one_48_lists_at_most_its_cap_and_a_server_from_another_48_registers() {
    match private_netns("one_48_lists_at_most_its_cap_and_a_server_from_another_48_registers") {
        Netns::Inside => {}
        Netns::Ran(out) => {
            eprint!("{out}");
            return;
        }
        Netns::Skipped => return,
    }
    // Inside a fresh namespace: all of 2001:db8::/32 is local on its loopback, and any of its
    // addresses may be bound. Nothing here can leave the namespace.
    sh(&["ip", "-6", "addr", "add", "2001:db8::1/128", "dev", "lo"]);
    sh(&[
        "ip",
        "-6",
        "route",
        "add",
        "local",
        "2001:db8::/32",
        "dev",
        "lo",
    ]);
    std::fs::write("/proc/sys/net/ipv6/ip_nonlocal_bind", "1").expect("ip_nonlocal_bind");
    let bin_s = bin().to_str().unwrap();
    let mut master = Running::start(
        &[
            "master-server",
            "--listen",
            "[2001:db8::1]:0",
            // 2001:db8::/32 is documentation space.
            "--allow-private",
            "--max-servers",
            "2048",
            // The /48's new-server rate lifted: here the cap is what must hold.
            "--heartbeat-net-rate",
            "10000",
            "--heartbeat-net-burst",
            "10000",
        ],
        &[],
    );
    let m = master.master_ready();

    let start = Instant::now();
    register_from_one_48(m, 2112);
    let client = UdpSocket::bind("[2001:db8:cccc::1]:0").unwrap();
    let in_attacker = |l: &[SocketAddr]| {
        l.iter()
            .filter(|a| matches!(a, SocketAddr::V6(v) if v.ip().segments()[..3] == [0x2001, 0xdb8, 0xaaaa]))
            .count()
    };
    let listed = list_ext(&client, m);
    eprintln!(
        "the /48 lists {} of 2,112 after {:?}",
        in_attacker(&listed),
        start.elapsed()
    );
    assert_eq!(in_attacker(&listed), 512, "its /48 cap");

    // A real server (ioq3-like: heartbeats, answers challenges) in another /48.
    let mut real = Running::start_cmd({
        let mut c = Command::new(bin_s);
        c.args([
            "serve",
            "q3",
            "--listen",
            "[2001:db8:bbbb::1]:0",
            "--count",
            "1",
            "--heartbeat",
            &m.to_string(),
            "--heartbeat-every-s",
            "2",
        ]);
        c
    });
    real.wait_line("the server ready", |l| l == "ready");
    wait::until_true("the real server listed", SETTLE, || {
        list_ext(&client, m).iter().any(
            |a| matches!(a, SocketAddr::V6(v) if v.ip().segments()[..3] == [0x2001, 0xdb8, 0xbbbb]),
        )
    });
    assert_eq!(in_attacker(&list_ext(&client, m)), 512);
    real.kill();
    master.kill();
}

/// Issue 30 item 3: a real OpenArena that shuts down 1 s after it registered (within
/// `verify_interval` of its verification) is removed within 10 s: its shutdown heartbeat
/// schedules a verification at the end of the interval, which goes unanswered.
#[test]
fn a_real_openarena_shut_down_right_after_registering_is_removed_within_10_s() {
    let mut master = Running::start(
        &[
            "master-server",
            "--listen",
            "127.0.0.1:0",
            "--allow-loopback",
        ],
        &[],
    );
    let m = master.master_ready();
    let Some(oa) = OpenArena::start(OpenArenaConfig {
        hostname: "Short-lived OA".into(),
        bots: vec![],
        master: Some(m),
        ..OpenArenaConfig::default()
    }) else {
        return;
    };
    let oa_addr = oa.addr.to_string();
    master.wait_stderr("OpenArena registered", |l| {
        l.contains("registered") && l.contains(&oa_addr)
    });
    // The scenario: it runs for one second after registering, then shuts down (SIGTERM:
    // ioquake3 sends its heartbeat again and exits).
    std::thread::sleep(Duration::from_secs(1));
    drop(oa);
    let down = Instant::now();
    master.wait_stderr("OpenArena removed", |l| {
        l.contains("removed") && l.contains(&oa_addr)
    });
    let took = down.elapsed();
    eprintln!("removed {took:?} after shutting down");
    assert!(took < Duration::from_secs(10), "{took:?}");
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    assert!(list_ext(&client, m).is_empty());
    master.kill();
}
