//! The sans-IO master driven directly: registration by challenge, spoofing, flatlines,
//! filters, limits and amplification, bounds, expiry and restore.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use fragstat_core::service::{Outbox, Service};
use fragstat_master_server::{Config, Drop, LimitConfig, Master, Rate, MAX_PACKET};

mod common;
use common::*;

#[test]
fn lists_only_after_the_challenge_is_echoed() {
    let now = Instant::now();
    let mut m = master();
    let s = Server::new("10.0.0.1:27960", Some("Quake3Arena"), 68, 3, 16);
    let out = s.heartbeat(&mut m, now, "QuakeArena-1");
    assert_eq!(out.len(), 1, "one getinfo challenge");
    assert!(m.is_empty(), "a heartbeat alone lists nothing");
    // A reply with someone else's challenge, or from another address, does not list it.
    let forged = Server::new("10.0.0.2:27960", Some("Quake3Arena"), 68, 3, 16);
    forged.answer(&mut m, now, &vec![(forged.addr, out[0].1.clone())]);
    assert!(m.is_empty());
    let mut wrong = Outbox::new();
    let bad = b"\xff\xff\xff\xffinfoResponse\n\\protocol\\68\\sv_maxclients\\16\\clients\\3\\challenge\\nope";
    m.handle(now, s.addr, bad, &mut wrong);
    assert!(m.is_empty());
    assert_eq!(m.stats().dropped(Drop::BadChallenge), 1);
    s.answer(&mut m, now, &out);
    assert_eq!(m.len(), 1);
    let (servers, _) = list(&mut m, now, "10.9.9.9:5000", "getservers 68 empty full");
    assert_eq!(servers, vec![s.addr]);
}

#[test]
fn spoofed_heartbeats_and_flatlines_never_change_the_list() {
    let now = Instant::now();
    let mut m = master();
    let live = Server::new("10.0.0.1:27960", None, 84, 2, 20);
    let out = live.heartbeat(&mut m, now, "EnemyTerritory-1");
    live.answer(&mut m, now, &out);
    assert_eq!(m.len(), 1);
    // 500 spoofed heartbeats from addresses with no server: nothing is listed.
    let mut t = now;
    for i in 0..500u32 {
        let ghost = Server::new(
            &format!("10.1.{}.{}:27960", i / 250, i % 250),
            None,
            84,
            0,
            8,
        );
        ghost.heartbeat(&mut m, t, "EnemyTerritory-1");
        t += Duration::from_millis(1);
    }
    advance(&mut m, t, t + Duration::from_secs(10), &[&live]);
    assert_eq!(m.len(), 1, "spoofed heartbeats never list");
    assert_eq!(m.pending(), 0, "their challenges lapsed");
    // A spoofed flatline for the live server: it is challenged, answers, stays.
    let t = t + Duration::from_secs(10);
    let out = live.heartbeat(&mut m, t, "ETFlatline-1");
    live.answer(&mut m, t, &out);
    advance(&mut m, t, t + Duration::from_secs(10), &[&live]);
    assert_eq!(m.len(), 1, "a spoofed flatline removes nothing");
    // A real shutdown: the flatline comes and then nothing answers: removed after the
    // verification attempts, not before.
    let t = t + Duration::from_secs(10);
    live.heartbeat(&mut m, t, "ETFlatline-1");
    advance(&mut m, t, t + Duration::from_secs(3), &[]);
    assert_eq!(m.len(), 1, "one lost challenge does not remove a server");
    advance(
        &mut m,
        t + Duration::from_secs(3),
        t + Duration::from_secs(8),
        &[],
    );
    assert_eq!(m.len(), 0, "removed once it stopped answering");
    assert_eq!(m.stats().removals, 1);
}

#[test]
fn filters_match_dpmaster() {
    let now = Instant::now();
    let mut m = master();
    let empty = Server::new("10.0.0.1:1", Some("Quake3Arena"), 68, 0, 8);
    let some = Server::new("10.0.0.2:2", Some("Quake3Arena"), 68, 3, 8).with("gametype", "4");
    let full = Server::new("10.0.0.3:3", Some("Quake3Arena"), 68, 8, 8);
    let v6 = Server::new("[2001:db8::1]:4", Some("Quake3Arena"), 68, 3, 8);
    let nexuiz = Server::new("10.0.0.5:5", Some("Nexuiz"), 3, 1, 8);
    let et_full = Server::new("10.0.0.6:6", None, 84, 20, 20);
    for s in [&empty, &some, &full, &v6, &nexuiz] {
        s.register(&mut m, now);
    }
    let out = et_full.heartbeat(&mut m, now, "EnemyTerritory-1");
    et_full.answer(&mut m, now, &out);
    // DarkPlaces heartbeats need a game name.
    let nameless = Server::new("10.0.0.7:7", None, 3, 1, 8);
    let out = nameless.heartbeat(&mut m, now, "DarkPlaces");
    nameless.answer(&mut m, now, &out);
    assert_eq!(m.len(), 6);
    assert_eq!(
        list(&mut m, now, "10.9.8.1:1", "getservers 68").0,
        vec![some.addr],
        "no empty, no full, no IPv6"
    );
    assert_eq!(
        list(&mut m, now, "10.9.8.2:1", "getservers 68 empty full").0,
        vec![empty.addr, some.addr, full.addr]
    );
    assert_eq!(
        list(&mut m, now, "10.9.8.3:1", "getservers 68 empty full ctf").0,
        vec![some.addr]
    );
    assert_eq!(
        list(&mut m, now, "10.9.8.4:1", "getservers 68 full gametype=0").0,
        vec![full.addr]
    );
    assert_eq!(
        list(
            &mut m,
            now,
            "10.9.8.5:1",
            "getserversExt Quake3Arena 68 empty full"
        )
        .0,
        vec![empty.addr, some.addr, full.addr, v6.addr]
    );
    assert_eq!(
        list(
            &mut m,
            now,
            "10.9.8.6:1",
            "getserversExt Quake3Arena 68 ipv6"
        )
        .0,
        vec![v6.addr]
    );
    assert_eq!(
        list(&mut m, now, "10.9.8.7:1", "getservers Nexuiz 3").0,
        vec![nexuiz.addr]
    );
    assert_eq!(
        list(&mut m, now, "10.9.8.8:1", "getservers 84").0,
        vec![et_full.addr],
        "W:ET gets everything"
    );
    assert_eq!(
        list(&mut m, now, "10.9.8.9:1", "getserversExt et 84 full").0,
        vec![et_full.addr]
    );
    assert!(list(&mut m, now, "10.9.8.10:1", "getservers 71 empty full")
        .0
        .is_empty());
}

#[test]
fn big_lists_are_split_with_the_marker_on_the_last_datagram() {
    let now = Instant::now();
    let mut m = master();
    for i in 0..1000u32 {
        Server::new(
            &format!("10.2.{}.{}:27960", i / 250, i % 250 + 1),
            Some("Quake3Arena"),
            68,
            1,
            8,
        )
        .register(&mut m, now);
    }
    let mut m = {
        // Registration used the heartbeat rate of one address per server: all listed.
        assert_eq!(m.len(), 1000);
        m
    };
    let (servers, datagrams) = list(&mut m, now, "10.9.9.9:1", "getservers 68 empty full");
    assert_eq!(servers.len(), 1000);
    assert!(datagrams.len() > 1);
    for (i, d) in datagrams.iter().enumerate() {
        assert!(d.len() <= MAX_PACKET, "{}", d.len());
        assert_eq!(d.ends_with(b"\\EOT\0\0\0"), i + 1 == datagrams.len());
    }
}

#[test]
fn a_spoofed_request_flood_amplifies_a_bounded_factor() {
    let now = Instant::now();
    let mut m = master();
    register_many(&mut m, now, 2000, |i| {
        format!("10.3.{}.{}:27960", i / 250, i % 250 + 1)
    });
    let victim = "192.0.2.1:27960";
    let request = b"\xff\xff\xff\xffgetservers 68 empty full\n";
    let mut received = 0u64;
    let mut sent = 0u64;
    // 10,000 spoofed requests over 10 s.
    for i in 0..10_000u32 {
        let t = now + Duration::from_millis(u64::from(i));
        let mut out = Outbox::new();
        m.handle(t, addr(victim), request, &mut out);
        sent += request.len() as u64;
        received += out.iter().map(|(_, d)| d.len() as u64).sum::<u64>();
    }
    let lists = m.config().limits.lists;
    let net = lists.share(lists.shares.v4[1]);
    let cap = net.burst + 10.0 * net.per_sec;
    assert!(
        received as f64 <= cap,
        "{received} bytes in 10 s, budget {cap} per 10 s"
    );
    let factor = received as f64 / sent as f64;
    assert!(factor < 3.0, "amplification {factor:.2}");
    assert!(m.stats().dropped(Drop::Rate) > 9000);
    // Another client is still served.
    let (servers, _) = list(
        &mut m,
        now + Duration::from_secs(11),
        "10.9.9.9:1",
        "getservers 68 empty full",
    );
    assert_eq!(servers.len(), 2000);
}

/// S1: one request from each of 10,000 victims (5,000 in one IPv4 /24, 5,000 in one IPv6
/// /64) in 10 s: bounded per network and in all, however many victims.
#[test]
fn a_many_victim_spoof_is_bounded_per_network_and_in_all() {
    let now = Instant::now();
    let mut m = master();
    register_many(&mut m, now, 2000, |i| {
        format!("10.3.{}.{}:27960", i / 250, i % 250 + 1)
    });
    let v4 = b"\xff\xff\xff\xffgetservers 68 empty full\n";
    let v6 = b"\xff\xff\xff\xffgetserversExt Quake3Arena 68 empty full\n";
    let (mut sent, mut to_v4, mut to_v6) = (0u64, 0u64, 0u64);
    for i in 0..10_000u32 {
        let t = now + Duration::from_millis(u64::from(i));
        let (from, req): (SocketAddr, &[u8]) = if i % 2 == 0 {
            (
                SocketAddr::from(([198, 51, 100, (i / 2 % 256) as u8], 1024 + (i / 512) as u16)),
                v4,
            )
        } else {
            (format!("[2001:db8:1::{:x}]:1024", i).parse().unwrap(), v6)
        };
        let mut out = Outbox::new();
        m.handle(t, from, req, &mut out);
        sent += req.len() as u64;
        let got: u64 = out.iter().map(|(_, d)| d.len() as u64).sum();
        if from.is_ipv4() {
            to_v4 += got;
        } else {
            to_v6 += got;
        }
    }
    let c = m.config().limits.lists;
    let net = c.share(c.shares.v4[1]);
    let net_cap = net.burst + 10.0 * net.per_sec;
    let global_cap = c.uplink.burst + 10.0 * c.uplink.per_sec;
    assert!(to_v4 as f64 <= net_cap, "/24 got {to_v4}, cap {net_cap}");
    assert!(to_v6 as f64 <= net_cap, "/64 got {to_v6}, cap {net_cap}");
    assert!(
        (to_v4 + to_v6) as f64 <= global_cap,
        "{} in all, cap {global_cap}",
        to_v4 + to_v6
    );
    let factor = (to_v4 + to_v6) as f64 / sent as f64;
    assert!(factor <= 10.0, "amplification {factor:.1}");
    let s = m.stats();
    assert!(s.dropped(Drop::Budget) + s.dropped(Drop::GlobalBudget) + s.dropped(Drop::Rate) > 9000);

    // Victims spread over many networks: the global budget holds the sum.
    let mut m = master();
    register_many(&mut m, now, 2000, |i| {
        format!("10.3.{}.{}:27960", i / 250, i % 250 + 1)
    });
    let mut all = 0u64;
    for i in 0..10_000u32 {
        let t = now + Duration::from_millis(u64::from(i));
        let from = SocketAddr::from(([100, (i / 256) as u8, (i % 256) as u8, 1], 1024));
        let mut out = Outbox::new();
        m.handle(t, from, v4, &mut out);
        all += out.iter().map(|(_, d)| d.len() as u64).sum::<u64>();
    }
    // What a spoof naming many victims gets out of the master is the uplink the operator
    // grants lists (`--uplink-mib`), and each victim network only its share of it.
    assert!(all as f64 <= global_cap, "{all} in all, cap {global_cap}");
}

/// Runs the master's timers from `from` to `to` in 100 ms steps, handing challenges to the
/// servers that are still up, and a heartbeat from `spoof` every `every`.
fn advance_spoofed(
    m: &mut Master,
    from: Instant,
    to: Instant,
    up: &[&Server],
    spoof: &Server,
    every: Duration,
    heartbeat_every: Duration,
) {
    let mut t = from;
    let mut next_spoof = from;
    let mut next_hb = from + heartbeat_every;
    while t < to {
        t += Duration::from_millis(100);
        if t >= next_spoof {
            spoof.heartbeat(m, t, "QuakeArena-1");
            next_spoof += every;
        }
        if t >= next_hb {
            for s in up {
                let out = s.heartbeat(m, t, "QuakeArena-1");
                s.answer(m, t, &out);
            }
            next_hb += heartbeat_every;
        }
        if m.poll_timeout().is_some_and(|w| w <= t) {
            let mut out = Outbox::new();
            m.handle_timeout(t, &mut out);
            for s in up {
                s.answer(m, t, &out);
            }
        }
    }
}

/// S2: a spoofer heartbeating twice a second from another port of a server's host for 16
/// minutes does not get the server delisted.
#[test]
fn a_spoofer_on_another_port_of_the_host_cannot_delist_a_server() {
    let now = Instant::now();
    let mut m = Master::with_seed(private(), 7);
    let real = Server::new("203.0.113.7:27960", Some("Quake3Arena"), 68, 1, 8);
    real.register(&mut m, now);
    assert_eq!(m.len(), 1);
    let spoof = Server::new("203.0.113.7:1", Some("Quake3Arena"), 68, 1, 8);
    advance_spoofed(
        &mut m,
        now,
        now + Duration::from_secs(16 * 60),
        &[&real],
        &spoof,
        Duration::from_millis(500),
        Duration::from_secs(300),
    );
    assert_eq!(
        m.servers().map(|s| s.addr).collect::<Vec<_>>(),
        vec![real.addr],
        "{:?}",
        m.stats()
    );
    assert_eq!(m.stats().removals + m.stats().expirations, 0);
}

/// S3: challenges the limits kept back are not attempts: a server whose challenges could not
/// be sent is not removed.
#[test]
fn a_challenge_the_limits_kept_back_never_removes_a_server() {
    let now = Instant::now();
    let mut m = Master::with_seed(
        Config {
            limits: LimitConfig {
                net_challenges: Rate {
                    per_sec: 0.01,
                    burst: 2.0,
                },
                ..LimitConfig::default()
            },
            ..private()
        },
        7,
    );
    let real = Server::new("203.0.113.7:27960", Some("Quake3Arena"), 68, 1, 8);
    real.register(&mut m, now);
    // The spoofer spends the network's challenges (and its list budget: 18 requests)…
    let t = now + Duration::from_millis(10);
    for port in 2..6u16 {
        Server::new(&format!("203.0.113.9:{port}"), None, 68, 1, 8).heartbeat(
            &mut m,
            t,
            "QuakeArena-1",
        );
    }
    for _ in 0..18 {
        let mut out = Outbox::new();
        m.handle(
            t,
            addr("203.0.113.7:5555"),
            b"\xff\xff\xff\xffgetservers 68 empty full\n",
            &mut out,
        );
    }
    // …then heartbeats from the server's own address: a verification whose challenges the
    // budget keeps back.
    let out = real.heartbeat(&mut m, t, "QuakeArena-1");
    assert!(out.is_empty(), "no challenge could go out");
    advance(&mut m, t, t + Duration::from_secs(8), &[&real]);
    assert_eq!(m.len(), 1, "{:?}", m.stats());
    assert_eq!(m.stats().removals, 0);
    assert!(m.stats().dropped(Drop::ChallengeBudget) > 0);
}

/// S4: 20,000 spoofed heartbeats from random addresses in 8 s: a real server still registers
/// at once, and a listed one stays listed through 16 minutes.
#[test]
fn a_heartbeat_flood_from_random_sources_does_not_stop_registrations() {
    let now = Instant::now();
    let mut m = Master::with_seed(private(), 7);
    let listed = Server::new("198.51.100.20:27960", Some("Quake3Arena"), 68, 1, 8);
    listed.register(&mut m, now);
    let mut rng = fastrand::Rng::with_seed(11);
    let mut t = now;
    for i in 0..20_000u32 {
        t = now + Duration::from_micros(u64::from(i) * 400);
        let from = SocketAddr::from((
            [rng.u8(1..=223), rng.u8(..), rng.u8(..), rng.u8(1..)],
            rng.u16(1024..),
        ));
        let mut out = Outbox::new();
        m.handle(
            t,
            from,
            b"\xff\xff\xff\xffheartbeat QuakeArena-1\n",
            &mut out,
        );
        if i % 1000 == 0 && m.poll_timeout().is_some_and(|w| w <= t) {
            m.handle_timeout(t, &mut Outbox::new());
        }
        if i == 10_000 {
            let out = listed.heartbeat(&mut m, t, "QuakeArena-1");
            listed.answer(&mut m, t, &out);
        }
    }
    assert!(m.pending() <= m.config().max_pending + m.len());
    let real = Server::new("203.0.113.50:27960", Some("Quake3Arena"), 68, 2, 8);
    let out = real.heartbeat(&mut m, t, "QuakeArena-1");
    real.answer(&mut m, t, &out);
    assert!(m.servers().any(|s| s.addr == real.addr), "{:?}", m.stats());
    let (l, _) = list(&mut m, t, "10.9.9.9:1", "getservers 68 empty full");
    assert_eq!(l.len(), 2);
    // The listed server heartbeats every 5 minutes and stays listed.
    let nobody = Server::new("192.0.2.99:1", None, 68, 0, 8);
    advance_spoofed(
        &mut m,
        t,
        t + Duration::from_secs(16 * 60),
        &[&listed, &real],
        &nobody,
        Duration::from_secs(3600),
        Duration::from_secs(300),
    );
    assert_eq!(m.len(), 2, "{:?}", m.stats());
}

/// S7: 40 servers on one host heartbeating in the same instant every 5 minutes for an hour
/// are all listed after the first round.
#[test]
fn forty_servers_on_one_host_restarting_together_are_all_listed() {
    let now = Instant::now();
    let mut m = Master::with_seed(
        Config {
            max_per_address: 40,
            ..private()
        },
        7,
    );
    let servers: Vec<Server> = (0..40u16)
        .map(|i| {
            Server::new(
                &format!("198.51.100.9:{}", 27960 + i),
                Some("Quake3Arena"),
                68,
                1,
                8,
            )
        })
        .collect();
    let up: Vec<&Server> = servers.iter().collect();
    let mut t = now;
    for round in 0..12 {
        for s in &servers {
            let out = s.heartbeat(&mut m, t, "QuakeArena-1");
            s.answer(&mut m, t, &out);
        }
        if round == 0 {
            advance(&mut m, t, t + Duration::from_secs(10), &up);
            assert_eq!(m.len(), 40, "{:?}", m.stats());
        }
        advance(&mut m, t, t + Duration::from_secs(300), &up);
        t += Duration::from_secs(300);
    }
    assert_eq!(m.len(), 40, "{:?}", m.stats());
}

/// S5: a spoofed heartbeat naming another anonymous game does not relabel a listed server.
#[test]
fn a_spoofed_heartbeat_does_not_relabel_a_listed_server() {
    let now = Instant::now();
    let mut m = master();
    let et = Server::new("10.0.0.1:27960", None, 84, 2, 20);
    let out = et.heartbeat(&mut m, now, "EnemyTerritory-1");
    et.answer(&mut m, now, &out);
    let t = now + Duration::from_secs(5);
    let out = et.heartbeat(&mut m, t, "QuakeArena-1");
    et.answer(&mut m, t, &out);
    assert_eq!(m.stats().verifications, 1);
    assert_eq!(m.servers().next().unwrap().game, "et");
}

/// R1: a flood of new source addresses locks no new client out and scans no table per
/// packet.
#[test]
fn a_flood_of_new_sources_locks_nobody_out() {
    let now = Instant::now();
    let mut m = Master::with_seed(
        Config {
            limits: LimitConfig {
                max_sources: 100_000,
                ..LimitConfig::default()
            },
            ..private()
        },
        7,
    );
    let server = Server::new("198.51.100.20:27960", Some("Quake3Arena"), 68, 1, 8);
    server.register(&mut m, now);
    for i in 0..100_000u32 {
        let from = format!("{}:1", std::net::Ipv4Addr::from(0x0b00_0000u32 + i));
        let _ = list(&mut m, now, &from, "getservers 71");
    }
    let before = m.limits().rotations();
    let t = now + Duration::from_secs(1);
    for i in 0..10_000u32 {
        let from = SocketAddr::from(((0x0c00_0000u32 + i).to_be_bytes(), 1));
        m.handle(
            t,
            from,
            b"\xff\xff\xff\xffgetservers 71\n",
            &mut Outbox::new(),
        );
    }
    assert!(m.limits().rotations() - before <= 1);
    // A listed server's heartbeat still gets its challenge, a new client its list.
    let t = t + Duration::from_secs(5);
    let out = server.heartbeat(&mut m, t, "QuakeArena-1");
    assert_eq!(out.len(), 1);
    assert_eq!(
        list(&mut m, t, "203.0.113.77:1", "getservers 68").0,
        vec![server.addr]
    );
}

/// R2: requests for values no server has cost no scan and evict no cached list.
#[test]
fn requests_for_unknown_values_scan_nothing_and_evict_nothing() {
    let now = Instant::now();
    let mut m = master();
    register_many(&mut m, now, 5000, |i| {
        format!("10.4.{}.{}:27960", i / 250, i % 250 + 1)
    });
    let (l, _) = list(&mut m, now, "10.9.9.9:1", "getservers 68 empty full");
    assert_eq!(l.len(), 5000);
    let built = m.stats().lists_built;
    for i in 0..5000u32 {
        let from = format!("10.{}.{}.{}:1", 100 + i / 65_536, i / 256 % 256, i % 256);
        let _ = list(
            &mut m,
            now,
            &from,
            &format!("getservers 68 empty full gametype=x{i}"),
        );
        let _ = list(
            &mut m,
            now,
            &from,
            &format!("getservers {} empty full", 1000 + i),
        );
        let _ = list(&mut m, now, &from, &format!("getservers Game{i} 68"));
    }
    assert_eq!(
        m.stats().lists_built,
        built,
        "no scan for values nobody has"
    );
    // (The empty answers spent the global budget: ask once it has refilled.)
    let later = now + Duration::from_secs(10);
    let (l, _) = list(&mut m, later, "10.9.9.8:1", "getservers 68 empty full");
    assert_eq!(l.len(), 5000);
    assert_eq!(
        m.stats().lists_built,
        built,
        "the common list stayed cached"
    );
}

/// R3: names are freed with the servers that used them; a new game still registers after
/// 10,000 verifications with made-up game types.
#[test]
fn names_made_up_by_servers_are_freed() {
    let now = Instant::now();
    let mut m = Master::with_seed(
        Config {
            allow_loopback: true,
            verify_interval: Duration::ZERO,
            ..private()
        },
        7,
    );
    let mut t = now;
    for i in 0..10_000u32 {
        let s = Server::new(
            &format!("10.5.0.{}:27960", i % 100 + 1),
            Some("Junk"),
            68,
            1,
            8,
        )
        .with("gametype", &format!("gt{i}"));
        t += Duration::from_millis(1);
        s.register(&mut m, t);
    }
    assert_eq!(m.len(), 100);
    assert!(m.names_in_use() <= 101, "{}", m.names_in_use());
    let x = Server::new("10.6.0.1:26000", Some("Xonotic"), 3, 1, 8).with("gametype", "ctf");
    x.register(&mut m, t);
    assert_eq!(
        list(&mut m, t, "10.9.9.9:1", "getservers Xonotic 3").0,
        vec![x.addr]
    );
}

/// S1b: an IPv6 /64 is one host: its addresses share one allowance of servers.
#[test]
fn an_ipv6_64_is_one_host() {
    let now = Instant::now();
    let mut m = master();
    for i in 0..100u32 {
        for port in [27960u16, 27961] {
            Server::new(
                &format!("[2001:db8::{i:x}]:{port}"),
                Some("Quake3Arena"),
                68,
                1,
                8,
            )
            .register(&mut m, now + Duration::from_secs(u64::from(i)));
        }
    }
    assert_eq!(m.len(), m.config().max_per_address, "{:?}", m.stats());
    assert!(m.stats().dropped(Drop::PerAddress) > 0);
}

/// F4: restored entries are checked like live answers.
#[test]
fn restore_checks_entries_like_live_answers() {
    use fragstat_master_server::{Listed, Snapshot};
    let now = Instant::now();
    let mut m = Master::with_seed(
        Config {
            per_network: fragstat_master_server::Caps::NONE,
            ..private()
        },
        7,
    );
    let ok = |a: &str| Listed {
        addr: addr(a),
        game: "Quake3Arena".into(),
        protocol: 68,
        clients: 1,
        max_clients: 8,
        gametype: "0".into(),
    };
    let mut servers = vec![
        Listed {
            game: "x".repeat(1024),
            ..ok("203.0.113.1:1")
        },
        Listed {
            game: "two words".into(),
            ..ok("203.0.113.1:2")
        },
        Listed {
            max_clients: 0,
            ..ok("203.0.113.1:3")
        },
        Listed {
            clients: 100_000,
            ..ok("203.0.113.1:4")
        },
        ok("127.0.0.1:27960"),
    ];
    for port in 0..40u16 {
        servers.push(ok(&format!("198.51.100.1:{}", 1000 + port)));
    }
    for i in 0..70_000u32 {
        servers.push(ok(&format!(
            "{}:27960",
            std::net::Ipv4Addr::from(0x2a00_0000 + i)
        )));
    }
    let r = m.restore(
        Snapshot {
            version: 1,
            servers,
        },
        now,
    );
    assert_eq!(m.len(), m.config().max_servers);
    assert_eq!(r.listed, m.len());
    assert!(m.servers().all(|s| s.game == "Quake3Arena"));
    assert_eq!(
        m.servers()
            .filter(|s| s.addr.ip() == addr("198.51.100.1:1").ip())
            .count(),
        32
    );
    assert!(m.pending() <= m.config().max_servers);
}

#[test]
fn bounds_hold() {
    let now = Instant::now();
    let mut m = Master::with_seed(
        Config {
            allow_loopback: true,
            max_servers: 5,
            max_per_address: 2,
            limits: LimitConfig {
                new_servers: Rate {
                    per_sec: 100.0,
                    burst: 100.0,
                },
                ..LimitConfig::default()
            },
            ..private()
        },
        1,
    );
    for port in 1..=4u16 {
        Server::new(&format!("10.0.0.1:{port}"), Some("Quake3Arena"), 68, 1, 8)
            .register(&mut m, now);
    }
    assert_eq!(m.len(), 2, "two per address");
    assert_eq!(m.stats().dropped(Drop::PerAddress), 2);
    for i in 2..=9u8 {
        Server::new(&format!("10.0.0.{i}:1"), Some("Quake3Arena"), 68, 1, 8).register(&mut m, now);
    }
    assert_eq!(m.len(), 5, "five in all");
    // Loopback servers are refused unless allowed.
    let mut strict = Master::with_seed(Config::default(), 1);
    let out = Server::new("127.0.0.1:27960", Some("Quake3Arena"), 68, 1, 8).heartbeat(
        &mut strict,
        now,
        "QuakeArena-1",
    );
    assert!(out.is_empty());
    assert_eq!(strict.stats().dropped(Drop::Unroutable), 1);
}

#[test]
fn junk_costs_nothing_and_breaks_nothing() {
    let now = Instant::now();
    let mut m = master();
    let s = Server::new("10.0.0.1:27960", Some("Quake3Arena"), 68, 1, 8);
    s.register(&mut m, now);
    let mut rng = fastrand::Rng::with_seed(3);
    for i in 0..20_000u32 {
        let len = rng.usize(0..200);
        let mut d: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
        if i % 2 == 0 {
            d.splice(0..0, *b"\xff\xff\xff\xff");
        }
        let mut out = Outbox::new();
        let from = SocketAddr::from(([10, 5, (i >> 8) as u8, i as u8], 1000));
        m.handle(now, from, &d, &mut out);
        assert!(out.len() <= 1);
    }
    assert_eq!(m.len(), 1);
    assert_eq!(
        list(&mut m, now, "10.9.9.9:1", "getservers 68").0,
        vec![s.addr]
    );
}

#[test]
fn servers_expire_and_restore_re_verifies() {
    let now = Instant::now();
    let mut m = master();
    let a = Server::new("10.0.0.1:1", Some("Quake3Arena"), 68, 1, 8);
    let b = Server::new("10.0.0.2:2", Some("Quake3Arena"), 68, 1, 8);
    a.register(&mut m, now);
    b.register(&mut m, now);
    let snap = m.snapshot();
    assert_eq!(snap.servers.len(), 2);
    // A restarted master lists both at once, then drops the one that does not answer.
    let mut r = master();
    r.restore(snap, now);
    assert_eq!(list(&mut r, now, "10.9.9.9:1", "getservers 68").0.len(), 2);
    advance(&mut r, now, now + Duration::from_secs(10), &[&a]);
    assert_eq!(
        list(
            &mut r,
            now + Duration::from_secs(10),
            "10.9.9.8:1",
            "getservers 68"
        )
        .0,
        vec![a.addr]
    );
    // Expiry: 15 minutes after the last verified answer.
    advance(&mut m, now, now + Duration::from_secs(15 * 60 + 1), &[]);
    assert!(m.is_empty());
    assert_eq!(m.stats().expirations, 2);
}

/// Not a timing assertion: prints what 10,000 in-process registrations cost, to separate the
/// master's own work from sockets and runtime in `cargo xtask bench master`.
#[test]
fn in_process_registration_cost_is_reported() {
    let now = Instant::now();
    let mut m = Master::with_seed(
        Config {
            allow_loopback: true,
            max_per_address: 1_000_000,
            limits: LimitConfig::unlimited(),
            ..private()
        },
        5,
    );
    let servers: Vec<Server> = (0..10_000u32)
        .map(|i| {
            Server::new(
                &format!("10.4.{}.{}:27960", i / 250, i % 250 + 1),
                Some("Quake3Arena"),
                68,
                1,
                8,
            )
        })
        .collect();
    let t = Instant::now();
    for s in &servers {
        s.register(&mut m, now);
    }
    let per = t.elapsed().as_secs_f64() / 10_000.0 * 1e6;
    assert_eq!(m.len(), 10_000);
    eprintln!("in-process registration: {per:.2} µs per server (test harness included)");
}

/// The retry table: a heartbeat flood from one network takes at most its share, and a real
/// server in that network still registers (its challenge goes out without a retry).
#[test]
fn a_heartbeat_flood_from_one_network_takes_only_its_share_of_the_retry_table() {
    let now = Instant::now();
    let mut m = Master::with_seed(
        Config {
            limits: LimitConfig {
                new_servers: Rate::UNLIMITED,
                net_challenges: Rate::UNLIMITED,
                ..LimitConfig::default()
            },
            ..private()
        },
        7,
    );
    for i in 0..5000u32 {
        let from = SocketAddr::from(([198, 51, 100, (i % 200) as u8 + 1], 1024 + (i / 200) as u16));
        m.handle(
            now,
            from,
            b"\xff\xff\xff\xffheartbeat QuakeArena-1\n",
            &mut Outbox::new(),
        );
    }
    assert!(
        m.pending() <= m.config().max_pending_per_net,
        "{}",
        m.pending()
    );
    assert!(m.stats().dropped(Drop::PendingFull) > 4000);
    let real = Server::new("198.51.100.250:27960", Some("Quake3Arena"), 68, 1, 8);
    real.register(&mut m, now);
    assert_eq!(m.len(), 1);
}

/// Heartbeats spoofed from a listed server's own address start at most one verification per
/// interval: the server gets a bounded number of challenges and stays listed.
#[test]
fn heartbeats_spoofed_from_a_listed_address_are_limited_per_address() {
    let now = Instant::now();
    let mut m = Master::with_seed(private(), 7);
    let real = Server::new("203.0.113.7:27960", Some("Quake3Arena"), 68, 1, 8);
    real.register(&mut m, now);
    let mut challenges = 0;
    let mut t = now;
    for _ in 0..1000 {
        t += Duration::from_millis(10);
        let mut out = real.heartbeat(&mut m, t, "QuakeArena-1");
        if m.poll_timeout().is_some_and(|w| w <= t) {
            m.handle_timeout(t, &mut out);
        }
        challenges += out.len();
        real.answer(&mut m, t, &out);
    }
    // 10 s of heartbeats every 10 ms: one verification per 2 s (a heartbeat within the
    // interval defers it to the interval's end; the ones after it find it pending).
    assert!((4..=6).contains(&challenges), "{challenges}");
    assert_eq!(m.len(), 1);
    assert!(m.stats().dropped(Drop::AlreadyPending) > 900);
}
