//! Fair registrations (issue 30): caps per address prefix with displacement when the list is
//! full, new-server rates per wider network charged only on an answered challenge, deferred
//! verifications, and private sources. Sans-IO, with injected time.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};

use fragstat_core::fair::{Level, Prefix};
use fragstat_core::service::{Outbox, Service};
use fragstat_master_server::{Caps, Config, Drop, LimitConfig, Listed, Master, Snapshot};

mod common;
use common::*;

/// The defaults, but documentation addresses (2001:db8::/32, 203.0.113.0/24) accepted.
fn public_master(config: Config) -> Master {
    Master::with_seed(
        Config {
            allow_private: true,
            ..config
        },
        11,
    )
}

fn in_48(m: &Master, net: &str) -> usize {
    let p = Prefix::of(net.parse().unwrap(), Level::Net).unwrap();
    m.servers().filter(|s| p.contains(s.addr.ip())).count()
}

/// The i-th address of an attacker's /48: its /64s spread over the /48's /56s, 4 ports each.
fn rotating(i: u32) -> String {
    let net = i / 4;
    let ip = Ipv6Addr::new(
        0x2001,
        0xdb8,
        0xaaaa,
        (((net % 256) << 8) | (net / 256 % 256)) as u16,
        0,
        0,
        0,
        1,
    );
    SocketAddr::new(IpAddr::V6(ip), 27960 + (i % 4) as u16).to_string()
}

/// H2: one /48 rotating /64s (and /56s) as fast as it likes for two minutes lists at most its
/// /48 cap (512), and a server from another /48 still registers.
#[test]
fn one_48_rotating_64s_lists_at_most_its_cap_and_another_48_still_registers() {
    let start = Instant::now();
    let mut m = public_master(Config {
        max_servers: 2048,
        ..Config::default()
    });
    let mut i = 0u32;
    for step in 0..1200u64 {
        // 100 new addresses a second.
        let now = start + Duration::from_millis(step * 100);
        for _ in 0..10 {
            Server::new(&rotating(i), Some("Quake3Arena"), 68, 0, 8).register(&mut m, now);
            i += 1;
        }
        if m.poll_timeout().is_some_and(|w| w <= now) {
            m.handle_timeout(now, &mut Outbox::new());
        }
    }
    let now = start + Duration::from_secs(120);
    assert_eq!(in_48(&m, "2001:db8:aaaa::"), 512, "{:?}", m.stats());
    assert!(m.stats().dropped(Drop::PerNetwork) > 0);
    let real = Server::new("[2001:db8:bbbb::1]:27960", Some("Quake3Arena"), 68, 3, 16);
    real.register(&mut m, now);
    assert!(m.servers().any(|s| s.addr == real.addr), "{:?}", m.stats());
}

/// The /48's new-server rate holds too: rotating its /64s gets 256 at once, then 4 a second.
#[test]
fn rotating_64s_do_not_multiply_the_new_server_rate() {
    let now = Instant::now();
    let mut m = public_master(Config::default());
    for i in 0..1000 {
        Server::new(&rotating(i), Some("Quake3Arena"), 68, 0, 8).register(&mut m, now);
    }
    assert_eq!(m.len(), 256, "{:?}", m.stats());
    let later = now + Duration::from_secs(10);
    for i in 1000..2000 {
        Server::new(&rotating(i), Some("Quake3Arena"), 68, 0, 8).register(&mut m, later);
    }
    assert_eq!(m.len(), 256 + 40, "{:?}", m.stats());
    // Another /48 has its own.
    Server::new("[2001:db8:bbbb::1]:27960", Some("Quake3Arena"), 68, 0, 8).register(&mut m, later);
    assert_eq!(m.len(), 256 + 41);
}

/// When the list is full of one party's networks, a stranger displaces the newest server of
/// the network holding the most; the party cannot take the place back.
#[test]
fn a_full_list_lets_a_stranger_in() {
    let now = Instant::now();
    let mut m = public_master(Config {
        max_servers: 1024,
        limits: LimitConfig::unlimited(),
        ..Config::default()
    });
    // Two /48s in two /32s, 512 each (their caps): the list is full.
    for (n, prefix) in [(0u32, "2001:db8:aaaa"), (1, "3fff:0:aaaa")] {
        for i in 0..512u32 {
            let a = format!("[{prefix}:{:x}::1]:{}", (i / 4) << 8, 27960 + i % 4);
            Server::new(&a, Some("Quake3Arena"), 68, 0, 8).register(&mut m, now);
        }
        assert_eq!(m.len(), 512 * (n as usize + 1), "{:?}", m.stats());
    }
    let stranger = Server::new("203.0.113.7:27960", Some("Quake3Arena"), 68, 2, 16);
    stranger.register(&mut m, now);
    assert!(
        m.servers().any(|s| s.addr == stranger.addr),
        "{:?}",
        m.stats()
    );
    assert_eq!(m.len(), 1024);
    assert_eq!(m.stats().displaced, 1, "{:?}", m.stats());
    // The attacker's next server (in the /48 that gave way) is refused: displacing would
    // only move servers between its own networks.
    let before = m.stats().dropped(Drop::ServersFull);
    Server::new("[3fff:0:aaaa:ff00::1]:27960", Some("Quake3Arena"), 68, 0, 8).register(&mut m, now);
    assert_eq!(m.stats().dropped(Drop::ServersFull), before + 1);
    assert!(m.servers().any(|s| s.addr == stranger.addr));
}

/// M4: spoofed heartbeats from `victim_ip:random_port` (they never answer) do not use up the
/// host's new-server allowance: a server started on that host later registers.
#[test]
fn spoofed_heartbeats_from_a_host_do_not_stop_a_new_server_there() {
    let start = Instant::now();
    let mut m = public_master(Config::default());
    let mut port = 1024u16;
    for step in 0..1200u64 {
        // Two a second, from a new port each time, for two minutes.
        let now = start + Duration::from_millis(step * 100);
        if step % 5 == 0 {
            Server::new(&format!("203.0.113.9:{port}"), None, 68, 0, 8).heartbeat(
                &mut m,
                now,
                "QuakeArena-1",
            );
            port += 1;
        }
        if m.poll_timeout().is_some_and(|w| w <= now) {
            m.handle_timeout(now, &mut Outbox::new());
        }
    }
    let now = start + Duration::from_secs(120);
    let real = Server::new("203.0.113.9:27960", Some("Quake3Arena"), 68, 1, 8);
    real.register(&mut m, now);
    assert_eq!(m.len(), 1, "{:?}", m.stats());
}

/// Item 3: a heartbeat from a listed server within `verify_interval` of its last
/// verification (ioquake3's shutdown heartbeat, 1 s after it registered) is verified at the
/// interval's end, and the server is removed when that goes unanswered.
#[test]
fn a_heartbeat_soon_after_a_verification_is_verified_at_the_end_of_the_interval() {
    let t0 = Instant::now();
    let mut m = public_master(Config::default());
    let s = Server::new("203.0.113.20:27960", None, 71, 0, 8);
    let other = Server::new("203.0.113.21:27960", None, 71, 0, 8);
    s.register(&mut m, t0);
    other.register(&mut m, t0);
    assert_eq!(m.len(), 2);
    // Both heartbeat 1 s later; `s` has shut down, `other` answers.
    let t1 = t0 + Duration::from_secs(1);
    assert!(s.heartbeat(&mut m, t1, "QuakeArena-1").is_empty());
    let out = other.heartbeat(&mut m, t1, "QuakeArena-1");
    assert!(out.is_empty(), "deferred, not sent at once");
    advance(&mut m, t1, t0 + Duration::from_millis(2500), &[&other]);
    assert_eq!(m.stats().verifications, 1, "verified at the interval's end");
    // Two more challenges 2 s apart go unanswered: removed ~8 s after registering.
    let mut gone = None;
    let mut t = t0 + Duration::from_millis(2500);
    while t < t0 + Duration::from_secs(10) {
        advance(&mut m, t, t + Duration::from_millis(100), &[&other]);
        t += Duration::from_millis(100);
        if gone.is_none() && !m.servers().any(|l| l.addr == s.addr) {
            gone = Some(t - t0);
        }
    }
    let gone = gone.expect("removed within 10 s");
    assert!(gone <= Duration::from_millis(8500), "{gone:?}");
    assert_eq!(m.len(), 1, "the server that answered stays");
    assert_eq!(m.stats().removals, 1);
}

/// L1: private and special-purpose sources are refused (without a challenge) unless
/// `allow_private`; loopback needs `allow_loopback` either way; restored snapshots likewise.
#[test]
fn private_sources_are_refused_unless_allowed() {
    let now = Instant::now();
    let special = [
        "10.0.0.1:27960",
        "172.16.5.4:27960",
        "192.168.1.1:27960",
        "100.64.0.1:27960",
        "169.254.1.1:27960",
        "203.0.113.1:27960",
        "240.0.0.1:27960",
        "[fd00::1]:27960",
        "[fe80::1]:27960",
        "[64:ff9b::102:304]:27960",
        "[2002:102:304::1]:27960",
        "[2001:0:102:304::1]:27960",
        "[2001:db8::1]:27960",
    ];
    let mut strict = Master::with_seed(Config::default(), 3);
    for a in special {
        let out = Server::new(a, None, 68, 0, 8).heartbeat(&mut strict, now, "QuakeArena-1");
        assert!(out.is_empty(), "{a} was challenged");
    }
    assert_eq!(strict.stats().dropped(Drop::Private), special.len() as u64);
    let out =
        Server::new("127.0.0.1:27960", None, 68, 0, 8).heartbeat(&mut strict, now, "QuakeArena-1");
    assert!(out.is_empty());
    assert_eq!(strict.stats().dropped(Drop::Unroutable), 1);
    // A public address is challenged (nothing is sent anywhere: this is sans-IO).
    let public = Server::new("1.2.3.4:27960", None, 68, 0, 8);
    public.register(&mut strict, now);
    assert_eq!(strict.len(), 1);

    let mut lan = public_master(Config::default());
    for a in special {
        Server::new(a, None, 68, 0, 8).register(&mut lan, now);
    }
    assert_eq!(lan.len(), special.len(), "{:?}", lan.stats());
    Server::new("127.0.0.1:27960", None, 68, 0, 8).register(&mut lan, now);
    assert_eq!(
        lan.len(),
        special.len(),
        "loopback still needs allow_loopback"
    );

    // A snapshot of the LAN master restored on a public one lists only the public server.
    lan.restore(
        Snapshot {
            servers: strict.snapshot().servers,
            ..lan.snapshot()
        },
        now,
    );
    let r = Master::with_seed(Config::default(), 4).restore(lan.snapshot(), now);
    assert_eq!((r.listed, r.skipped), (1, special.len()));
}

/// A snapshot restore respects the caps per network.
#[test]
fn a_restore_respects_the_caps() {
    let now = Instant::now();
    let servers: Vec<Listed> = (0..600u32)
        .map(|i| Listed {
            addr: rotating(i).parse().unwrap(),
            game: "Quake3Arena".into(),
            protocol: 68,
            clients: 0,
            max_clients: 8,
            gametype: "0".into(),
        })
        .collect();
    let snapshot = Snapshot {
        version: fragstat_master_server::SNAPSHOT_VERSION,
        servers,
    };
    let mut m = public_master(Config::default());
    let r = m.restore(snapshot.clone(), now);
    assert_eq!((r.listed, r.skipped), (512, 88));
    let mut wide = public_master(Config {
        per_network: Caps::NONE,
        ..Config::default()
    });
    assert_eq!(wide.restore(snapshot, now).listed, 600);
}
