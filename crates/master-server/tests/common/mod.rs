//! What the sans-IO master's tests share: a game server that answers challenges like ioq3,
//! list requests, and the master's timers driven by injected time.
#![allow(dead_code)]

use fragstat_core::Encode;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use fragstat_core::service::{Outbox, Service};
use fragstat_master_server::{Caps, Config, Master};
use fragstat_quake3_oob::{decode, InfoResponse, InfoString, Packet};

pub fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// A game server that answers the master's challenge like ioq3 does.
pub struct Server {
    pub addr: SocketAddr,
    pub info: Vec<(&'static str, String)>,
}

impl Server {
    pub fn new(a: &str, gamename: Option<&str>, protocol: i32, clients: u32, max: u32) -> Self {
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

    pub fn with(mut self, k: &'static str, v: &str) -> Self {
        self.info.retain(|(key, _)| *key != k);
        self.info.push((k, v.into()));
        self
    }

    pub fn heartbeat(&self, m: &mut Master, now: Instant, name: &str) -> Outbox {
        let mut out = Outbox::new();
        let hb = format!("\u{ff}\u{ff}\u{ff}\u{ff}heartbeat {name}\n");
        let bytes: Vec<u8> = hb.chars().map(|c| c as u8).collect();
        m.handle(now, self.addr, &bytes, &mut out);
        out
    }

    /// Answers every challenge in `out` addressed to this server.
    pub fn answer(&self, m: &mut Master, now: Instant, out: &Outbox) {
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
            let reply = Packet::InfoResponse(InfoResponse::new(info))
                .to_bytes()
                .unwrap();
            m.handle(now, self.addr, &reply, &mut Outbox::new());
        }
    }

    pub fn register(&self, m: &mut Master, now: Instant) {
        let out = self.heartbeat(m, now, "QuakeArena-1");
        self.answer(m, now, &out);
    }
}

/// The defaults, with the private and documentation addresses the tests use accepted.
pub fn private() -> Config {
    Config {
        allow_private: true,
        ..Config::default()
    }
}

pub fn master() -> Master {
    Master::with_seed(
        Config {
            allow_loopback: true,
            allow_private: true,
            // The caps per network have tests of their own (fair.rs); here only the host's.
            per_network: Caps::NONE,
            ..Config::default()
        },
        7,
    )
}

pub fn list(
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
pub fn advance(m: &mut Master, from: Instant, to: Instant, up: &[&Server]) {
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

/// Registers `n` servers (`at(i)` their addresses), each answering its challenge.
pub fn register_many(
    m: &mut Master,
    now: Instant,
    n: u32,
    at: impl Fn(u32) -> String,
) -> Vec<Server> {
    let servers: Vec<Server> = (0..n)
        .map(|i| Server::new(&at(i), Some("Quake3Arena"), 68, 1, 8))
        .collect();
    for s in &servers {
        s.register(m, now);
    }
    assert_eq!(m.len(), n as usize, "{:?}", m.stats());
    servers
}
