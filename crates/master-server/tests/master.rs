//! The sans-IO master driven directly: registration by challenge, spoofing, flatlines,
//! filters, limits and amplification, bounds, expiry and restore.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use fragstat_core::service::{Outbox, Service};
use fragstat_master_server::{Config, Drop, LimitConfig, Master, Rate, MAX_PACKET};
use fragstat_quake3_oob::{decode, InfoResponse, InfoString, Packet};

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// A game server that answers the master's challenge like ioq3 does.
struct Server {
    addr: SocketAddr,
    info: Vec<(&'static str, String)>,
}

impl Server {
    fn new(a: &str, gamename: Option<&str>, protocol: i32, clients: u32, max: u32) -> Self {
        let mut info = vec![
            ("protocol", protocol.to_string()),
            ("sv_maxclients", max.to_string()),
            ("clients", clients.to_string()),
            ("gametype", "0".to_string()),
        ];
        if let Some(g) = gamename {
            info.push(("gamename", g.to_string()));
        }
        Server {
            addr: addr(a),
            info,
        }
    }

    fn with(mut self, k: &'static str, v: &str) -> Self {
        self.info.retain(|(key, _)| *key != k);
        self.info.push((k, v.into()));
        self
    }

    fn heartbeat(&self, m: &mut Master, now: Instant, name: &str) -> Outbox {
        let mut out = Outbox::new();
        let hb = format!("\u{ff}\u{ff}\u{ff}\u{ff}heartbeat {name}\n");
        let bytes: Vec<u8> = hb.chars().map(|c| c as u8).collect();
        m.handle(now, self.addr, &bytes, &mut out);
        out
    }

    /// Answers every challenge in `out` addressed to this server.
    fn answer(&self, m: &mut Master, now: Instant, out: &Outbox) {
        for (to, d) in out {
            if *to != self.addr {
                continue;
            }
            let Ok(Packet::GetInfo { challenge }) = decode(d) else {
                continue;
            };
            let mut info = InfoString::new();
            for (k, v) in &self.info {
                info.push(k, v);
            }
            info.push("challenge", challenge.unwrap_or_default());
            let reply = Packet::InfoResponse(InfoResponse { info })
                .to_bytes()
                .unwrap();
            m.handle(now, self.addr, &reply, &mut Outbox::new());
        }
    }

    fn register(&self, m: &mut Master, now: Instant) {
        let out = self.heartbeat(m, now, "QuakeArena-1");
        self.answer(m, now, &out);
    }
}

fn master() -> Master {
    Master::with_seed(
        Config {
            allow_loopback: true,
            ..Config::default()
        },
        7,
    )
}

fn list(
    m: &mut Master,
    now: Instant,
    from: &str,
    request: &str,
) -> (Vec<SocketAddr>, Vec<Vec<u8>>) {
    let mut out = Outbox::new();
    let req: Vec<u8> = format!("\u{ff}\u{ff}\u{ff}\u{ff}{request}")
        .chars()
        .map(|c| c as u8)
        .collect();
    m.handle(now, addr(from), &req, &mut out);
    let mut servers = Vec::new();
    let mut datagrams = Vec::new();
    for (to, d) in out {
        assert_eq!(to, addr(from));
        let Ok(Packet::ServersResponse(l)) = decode(&d) else {
            panic!("not a list")
        };
        servers.extend(l.servers);
        datagrams.push(d);
    }
    servers.sort();
    (servers, datagrams)
}

/// Runs the master's timers from `from` to `to` in 100 ms steps, handing challenges to the
/// servers that are still up.
fn advance(m: &mut Master, from: Instant, to: Instant, up: &[&Server]) {
    let mut t = from;
    while t < to {
        t += Duration::from_millis(100);
        if m.poll_timeout().is_some_and(|w| w <= t) {
            let mut out = Outbox::new();
            m.handle_timeout(t, &mut out);
            for s in up {
                s.answer(m, t, &out);
            }
        }
    }
}

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
    for i in 0..2000u32 {
        Server::new(
            &format!("10.3.{}.{}:27960", i / 250, i % 250 + 1),
            Some("Quake3Arena"),
            68,
            1,
            8,
        )
        .register(&mut m, now);
    }
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
    let budget = m.config().limits.budget;
    assert!(
        received <= budget * 2,
        "{received} bytes in 10 s, budget {budget} per 10 s window"
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

#[test]
fn bounds_hold() {
    let now = Instant::now();
    let mut m = Master::with_seed(
        Config {
            allow_loopback: true,
            max_servers: 5,
            max_per_address: 2,
            limits: LimitConfig {
                heartbeats: Rate {
                    per_sec: 100.0,
                    burst: 100.0,
                },
                ..LimitConfig::default()
            },
            ..Config::default()
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
            limits: LimitConfig {
                heartbeats: Rate {
                    per_sec: 1e12,
                    burst: 1e12,
                },
                ..LimitConfig::default()
            },
            ..Config::default()
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
