//! The sans-IO master: registrations verified by challenge, lists filtered and split into
//! datagrams, expiry, limits, snapshots. Drive it with [`Service::handle`] and
//! [`Service::handle_timeout`]; `crate::run` does that on real sockets.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use fragstat_core::service::{Outbox, Service};
use fragstat_quake3_oob::{decode, encode_server_list, EotStyle, GetServers, InfoResponse, Packet};
use serde::{Deserialize, Serialize};

use crate::limits::{LimitConfig, Limits, Refusal};
use crate::stats::{Drop, Stats};

/// Largest list datagram (dpmaster's).
pub const MAX_PACKET: usize = 1400;

/// The master's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Most servers listed in all.
    pub max_servers: usize,
    /// Most servers per IP address.
    pub max_per_address: usize,
    /// A server is dropped this long after its last verified infoResponse.
    pub expiry: Duration,
    /// How long to wait for the answer to a `getinfo` challenge.
    pub challenge_timeout: Duration,
    /// Challenges sent before giving up on a server: a listed one that stopped answering is
    /// removed, a new one is not listed (a lost datagram neither removes a live server nor
    /// loses a registration).
    pub verify_attempts: u32,
    /// Most challenges outstanding at once.
    pub max_pending: usize,
    /// Accept servers on loopback and other non-routable addresses (tests, LAN masters).
    pub allow_loopback: bool,
    /// Per-source rates and the per-destination byte budget.
    pub limits: LimitConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_servers: 65_536,
            max_per_address: 32,
            expiry: Duration::from_secs(15 * 60),
            challenge_timeout: Duration::from_secs(2),
            verify_attempts: 3,
            max_pending: 16_384,
            allow_loopback: false,
            limits: LimitConfig::default(),
        }
    }
}

/// A listed server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listed {
    /// Its address.
    pub addr: SocketAddr,
    /// The game name it is listed under (`gamename`, or the anonymous game of its heartbeat:
    /// `Quake3Arena`, `et`, `wolfmp`).
    pub game: String,
    /// Its protocol number.
    pub protocol: i32,
    /// Clients when last verified.
    pub clients: u32,
    /// Slots.
    pub max_clients: u32,
    /// `gametype` as sent (`0` when absent).
    pub gametype: String,
}

/// A listed server as stored: small, with its names interned (see [`Names`]).
#[derive(Debug, Clone, Copy)]
struct Entry {
    game: u16,
    gametype: u16,
    protocol: i32,
    clients: u16,
    max_clients: u16,
    expires: Instant,
}

/// Game names and game types, stored once each: 10,000 servers of one game share one string.
#[derive(Debug, Default)]
struct Names {
    all: Vec<Box<str>>,
    index: HashMap<Box<str>, u16>,
}

impl Names {
    fn intern(&mut self, s: &str) -> Option<u16> {
        if let Some(i) = self.index.get(s) {
            return Some(*i);
        }
        let i = u16::try_from(self.all.len()).ok()?;
        self.all.push(s.into());
        self.index.insert(s.into(), i);
        Some(i)
    }

    fn get(&self, i: u16) -> &str {
        self.all.get(usize::from(i)).map_or("", |s| s)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Why {
    /// A heartbeat from an unlisted server.
    Register,
    /// A listed server heartbeated, flatlined, or was restored from a snapshot: it must answer.
    Verify,
}

#[derive(Debug, Clone)]
struct Pending {
    challenge: [u8; CHALLENGE_LEN],
    /// The anonymous game its heartbeat names, for servers that send no `gamename`.
    heartbeat_game: &'static str,
    why: Why,
    deadline: Instant,
    attempts: u32,
}

/// The saved state: what is listed (see [`Master::snapshot`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Format version.
    pub version: u32,
    /// Listed servers.
    pub servers: Vec<Listed>,
}

/// The master.
#[derive(Debug)]
pub struct Master {
    config: Config,
    servers: HashMap<SocketAddr, Entry>,
    names: Names,
    per_ip: HashMap<IpAddr, usize>,
    pending: HashMap<SocketAddr, Pending>,
    limits: Limits,
    rng: fastrand::Rng,
    next_tick: Option<Instant>,
    stats: Stats,
    /// Encoded lists by request, with the list generation and time they were built at.
    lists: HashMap<ListKey, CachedList>,
    /// Bumped whenever what a list could show changes.
    generation: u64,
}

/// What distinguishes one list request from another.
type ListKey = (bool, Option<Vec<u8>>, i32, Vec<Vec<u8>>);

#[derive(Debug)]
struct CachedList {
    generation: u64,
    built: Instant,
    datagrams: std::sync::Arc<[Vec<u8>]>,
}

/// Most distinct requests whose lists are kept encoded.
const MAX_CACHED_LISTS: usize = 64;

/// A list may be this stale while servers keep registering (a master with 10,000 servers sees
/// dozens of re-registrations a second; rebuilding for each request would cost more than the
/// list is worth).
const LIST_STALENESS: Duration = Duration::from_secs(1);

/// Length of the challenges the master sends.
const CHALLENGE_LEN: usize = 12;

/// Longest game name or game type stored.
const MAX_NAME: usize = 64;

/// How often timers are looked at while anything is pending or listed.
const TICK: Duration = Duration::from_millis(250);

/// The anonymous game a heartbeat string stands for (dpmaster: Q3A, W:ET and RtCW servers
/// need not send `gamename`).
fn heartbeat_game(name: &[u8]) -> Option<&'static str> {
    match name {
        b"QuakeArena-1" => Some("Quake3Arena"),
        b"EnemyTerritory-1" | b"ETFlatline-1" => Some("et"),
        b"Wolfenstein-1" | b"WolfFlatline-1" => Some("wolfmp"),
        b"DarkPlaces" => Some(""),
        _ => None,
    }
}

/// Games that clients ask for without a name (`getservers <protocol>`).
const ANONYMOUS: [&str; 3] = ["Quake3Arena", "et", "wolfmp"];

fn routable(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            !(v4.is_loopback() || v4.is_unspecified() || v4.is_broadcast() || v4.is_multicast())
        }
        IpAddr::V6(v6) => !(v6.is_loopback() || v6.is_unspecified() || v6.is_multicast()),
    }
}

impl Master {
    /// A master with `config`, challenges from a random seed.
    pub fn new(config: Config) -> Self {
        Self::with_seed(config, fastrand::u64(..))
    }

    /// A master whose challenges come from `seed` (tests).
    pub fn with_seed(config: Config, seed: u64) -> Self {
        Master {
            limits: Limits::new(config.limits),
            config,
            servers: HashMap::new(),
            names: Names::default(),
            per_ip: HashMap::new(),
            pending: HashMap::new(),
            rng: fastrand::Rng::with_seed(seed),
            next_tick: None,
            stats: Stats::default(),
            lists: HashMap::new(),
            generation: 0,
        }
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Counters for metrics.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    fn listed(&self, addr: SocketAddr, e: &Entry) -> Listed {
        Listed {
            addr,
            game: self.names.get(e.game).to_string(),
            protocol: e.protocol,
            clients: u32::from(e.clients),
            max_clients: u32::from(e.max_clients),
            gametype: self.names.get(e.gametype).to_string(),
        }
    }

    /// Servers listed now, in no particular order.
    pub fn servers(&self) -> impl Iterator<Item = Listed> + '_ {
        self.servers.iter().map(|(a, e)| self.listed(*a, e))
    }

    /// Number of servers listed.
    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// True when nothing is listed.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Challenges outstanding.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Servers listed per game name.
    pub fn by_game(&self) -> HashMap<String, usize> {
        let mut m = HashMap::new();
        for e in self.servers.values() {
            *m.entry(self.names.get(e.game).to_string()).or_default() += 1;
        }
        m
    }

    /// What to save: every listed server.
    pub fn snapshot(&self) -> Snapshot {
        let mut servers: Vec<Listed> = self.servers().collect();
        servers.sort_by_key(|s| s.addr);
        Snapshot {
            version: 1,
            servers,
        }
    }

    /// Lists the saved servers at once and challenges each of them; those that do not answer
    /// within the verification attempts are dropped.
    pub fn restore(&mut self, snapshot: Snapshot, now: Instant) {
        for s in snapshot.servers {
            if self.servers.len() >= self.config.max_servers {
                break;
            }
            if !self.config.allow_loopback && !routable(s.addr.ip()) {
                continue;
            }
            let addr = s.addr;
            if !self.insert(s, now) {
                continue;
            }
            let challenge = self.new_challenge();
            self.pending.insert(
                addr,
                Pending {
                    challenge,
                    heartbeat_game: "",
                    why: Why::Verify,
                    // Sent on the first timer tick.
                    deadline: now,
                    attempts: 0,
                },
            );
        }
        self.next_tick = Some(now);
    }

    fn new_challenge(&mut self) -> [u8; CHALLENGE_LEN] {
        // Letters and digits only: valid for every engine.
        std::array::from_fn(|_| self.rng.alphanumeric() as u8)
    }

    /// Lists (or refreshes) `server`; false when its names cannot be stored or its counts
    /// are out of range.
    fn insert(&mut self, server: Listed, now: Instant) -> bool {
        let addr = server.addr;
        let (Some(game), Some(gametype), Ok(clients), Ok(max_clients)) = (
            self.names.intern(&server.game),
            self.names.intern(&server.gametype),
            u16::try_from(server.clients),
            u16::try_from(server.max_clients),
        ) else {
            return false;
        };
        let entry = Entry {
            game,
            gametype,
            protocol: server.protocol,
            clients,
            max_clients,
            expires: now + self.config.expiry,
        };
        match self.servers.insert(addr, entry) {
            None => {
                *self.per_ip.entry(addr.ip()).or_default() += 1;
                self.generation += 1;
            }
            Some(old) => {
                let same = (
                    old.game,
                    old.gametype,
                    old.protocol,
                    old.clients,
                    old.max_clients,
                ) == (game, gametype, server.protocol, clients, max_clients);
                if !same {
                    self.generation += 1;
                }
            }
        }
        true
    }

    fn remove(&mut self, addr: SocketAddr) -> bool {
        if self.servers.remove(&addr).is_none() {
            return false;
        }
        self.generation += 1;
        if let Some(n) = self.per_ip.get_mut(&addr.ip()) {
            *n -= 1;
            if *n == 0 {
                self.per_ip.remove(&addr.ip());
            }
        }
        true
    }

    fn send_challenge(&mut self, to: SocketAddr, challenge: &[u8], now: Instant, out: &mut Outbox) {
        let bytes = Packet::GetInfo {
            challenge: Some(challenge.to_vec()),
        }
        .to_bytes()
        .unwrap_or_default();
        if self.limits.spend(to.ip(), bytes.len() as u64, now).is_err() {
            self.stats.drop(Drop::Budget);
            return;
        }
        self.stats.challenges += 1;
        out.push((to, bytes));
    }

    fn on_heartbeat(&mut self, now: Instant, from: SocketAddr, name: &[u8], out: &mut Outbox) {
        self.stats.heartbeats += 1;
        if !self.config.allow_loopback && !routable(from.ip()) {
            self.stats.drop(Drop::Unroutable);
            return;
        }
        let Some(game) = heartbeat_game(name) else {
            self.stats.drop(Drop::UnknownHeartbeat);
            return;
        };
        if let Err(r) = self.limits.heartbeat(from.ip(), now) {
            self.stats.drop(r.into());
            return;
        }
        let why = if self.servers.contains_key(&from) {
            Why::Verify
        } else {
            Why::Register
        };
        if self.pending.contains_key(&from) {
            // One challenge at a time per server; a repeated heartbeat does not reset it.
            self.stats.drop(Drop::AlreadyPending);
            return;
        }
        if self.pending.len() >= self.config.max_pending {
            self.stats.drop(Drop::PendingFull);
            return;
        }
        let challenge = self.new_challenge();
        self.send_challenge(from, &challenge, now, out);
        self.pending.insert(
            from,
            Pending {
                challenge,
                heartbeat_game: game,
                why,
                deadline: now + self.config.challenge_timeout,
                attempts: 1,
            },
        );
        self.arm(now);
    }

    fn arm(&mut self, now: Instant) {
        let t = now + TICK;
        self.next_tick = Some(self.next_tick.map_or(t, |n| n.min(t)));
    }

    fn on_info(&mut self, now: Instant, from: SocketAddr, r: &InfoResponse) {
        let Some(p) = self.pending.get(&from) else {
            self.stats.drop(Drop::Unsolicited);
            return;
        };
        if r.info.get("challenge") != Some(&p.challenge[..]) {
            self.stats.drop(Drop::BadChallenge);
            return;
        }
        let Some(p) = self.pending.remove(&from) else {
            return;
        };
        let int = |k: &str| r.info.get_int(&[k]);
        let (Some(protocol), Some(max), Some(clients)) =
            (int("protocol"), int("sv_maxclients"), int("clients"))
        else {
            self.stats.drop(Drop::MissingKeys);
            self.remove(from);
            return;
        };
        let gamename = r.info.get("gamename").map(|g| g.to_vec());
        let game = match &gamename {
            Some(g) if !g.is_empty() => match std::str::from_utf8(g) {
                Ok(s) if !s.contains(char::is_whitespace) => s.to_string(),
                _ => {
                    self.stats.drop(Drop::MissingKeys);
                    self.remove(from);
                    return;
                }
            },
            // DarkPlaces servers must name their game; Q3A, W:ET and RtCW need not.
            _ if p.heartbeat_game.is_empty() => {
                if let Some(e) = self.servers.get(&from) {
                    self.names.get(e.game).to_string()
                } else {
                    self.stats.drop(Drop::MissingKeys);
                    return;
                }
            }
            _ => p.heartbeat_game.to_string(),
        };
        let (Ok(protocol), Ok(max), Ok(clients)) = (
            i32::try_from(protocol),
            u32::try_from(max),
            u32::try_from(clients),
        ) else {
            self.stats.drop(Drop::MissingKeys);
            self.remove(from);
            return;
        };
        if max == 0 || clients > 4096 || max > 4096 {
            self.stats.drop(Drop::MissingKeys);
            self.remove(from);
            return;
        }
        let gametype = r
            .info
            .get("gametype")
            .filter(|g| !g.is_empty())
            .map(|g| String::from_utf8_lossy(g).into_owned())
            .unwrap_or_else(|| "0".into());
        if gametype.len() > MAX_NAME || game.len() > MAX_NAME {
            self.stats.drop(Drop::MissingKeys);
            self.remove(from);
            return;
        }
        if !self.servers.contains_key(&from) {
            if self.servers.len() >= self.config.max_servers {
                self.stats.drop(Drop::ServersFull);
                return;
            }
            if self.per_ip.get(&from.ip()).copied().unwrap_or(0) >= self.config.max_per_address {
                self.stats.drop(Drop::PerAddress);
                return;
            }
            self.stats.registrations += 1;
        } else {
            self.stats.verifications += 1;
        }
        let listed = Listed {
            addr: from,
            game,
            protocol,
            clients,
            max_clients: max,
            gametype,
        };
        if !self.insert(listed, now) {
            self.stats.drop(Drop::ServersFull);
            return;
        }
        self.arm(now);
    }

    /// The servers a request asks for, in address order.
    pub fn select(&self, req: &GetServers) -> Vec<SocketAddr> {
        let opt = |o: &str| req.has_option(o);
        let named = req.game.as_deref().map(String::from_utf8_lossy);
        // W:ET clients get every server for `getservers 84` (dpmaster).
        let everything = named.is_none() && req.protocol == 84;
        let want_empty = everything || opt("empty");
        let want_full = everything || opt("full");
        let gametype: Option<String> = req.options.iter().find_map(|o| {
            let o = String::from_utf8_lossy(o);
            if let Some(v) = o.strip_prefix("gametype=") {
                return Some(v.to_string());
            }
            match o.to_ascii_lowercase().as_str() {
                "ffa" => Some("0".into()),
                "tourney" => Some("1".into()),
                "team" => Some("3".into()),
                "ctf" => Some("4".into()),
                _ => None,
            }
        });
        let (v4, v6) = if req.ext {
            match (opt("ipv4"), opt("ipv6")) {
                (false, false) => (true, true),
                (a, b) => (a, b),
            }
        } else {
            (true, false)
        };
        let names = &self.names;
        let mut list: Vec<SocketAddr> = self
            .servers
            .iter()
            .filter(|(_, s)| s.protocol == req.protocol)
            .filter(|(_, s)| match &named {
                Some(n) => names.get(s.game) == *n,
                None => ANONYMOUS.contains(&names.get(s.game)),
            })
            .filter(|(_, s)| want_empty || s.clients > 0)
            .filter(|(_, s)| want_full || s.clients < s.max_clients)
            .filter(|(_, s)| gametype.as_ref().is_none_or(|g| g == names.get(s.gametype)))
            .filter(|(a, _)| if a.is_ipv4() { v4 } else { v6 })
            .map(|(a, _)| *a)
            .collect();
        list.sort();
        list
    }

    /// The encoded list for `req`: from the cache when nothing changed since it was built (or
    /// it is less than [`LIST_STALENESS`] old), else built and cached.
    fn list_for(&mut self, req: &GetServers, now: Instant) -> std::sync::Arc<[Vec<u8>]> {
        let mut options = req.options.clone();
        options.sort();
        let key: ListKey = (req.ext, req.game.clone(), req.protocol, options);
        if let Some(c) = self.lists.get(&key) {
            if c.generation == self.generation
                || now.saturating_duration_since(c.built) < LIST_STALENESS
            {
                return std::sync::Arc::clone(&c.datagrams);
            }
        }
        let list = self.select(req);
        let datagrams: std::sync::Arc<[Vec<u8>]> =
            encode_server_list(&list, req.ext, EotStyle::LastPacket, MAX_PACKET).into();
        if self.lists.len() >= MAX_CACHED_LISTS {
            self.lists.clear();
        }
        self.lists.insert(
            key,
            CachedList {
                generation: self.generation,
                built: now,
                datagrams: std::sync::Arc::clone(&datagrams),
            },
        );
        datagrams
    }

    fn on_getservers(
        &mut self,
        now: Instant,
        from: SocketAddr,
        req: &GetServers,
        out: &mut Outbox,
    ) {
        self.stats.requests += 1;
        if let Err(r) = self.limits.request(from.ip(), now) {
            self.stats.drop(r.into());
            return;
        }
        let packets = self.list_for(req, now);
        let bytes: u64 = packets.iter().map(|p| p.len() as u64).sum();
        if let Err(r) = self.limits.spend(from.ip(), bytes, now) {
            self.stats.drop(r.into());
            return;
        }
        self.stats.lists += 1;
        self.stats.bytes_sent += bytes;
        out.extend(packets.iter().map(|p| (from, p.clone())));
    }
}

impl From<Refusal> for Drop {
    fn from(r: Refusal) -> Drop {
        match r {
            Refusal::Rate => Drop::Rate,
            Refusal::Budget => Drop::Budget,
            Refusal::Sources => Drop::Sources,
        }
    }
}

impl Service for Master {
    fn handle(&mut self, now: Instant, from: SocketAddr, datagram: &[u8], out: &mut Outbox) {
        self.stats.datagrams += 1;
        let from = fragstat_core::canonical(from);
        match decode(datagram) {
            Ok(Packet::Heartbeat(h)) => self.on_heartbeat(now, from, &h.name, out),
            Ok(Packet::InfoResponse(r)) => self.on_info(now, from, &r),
            Ok(Packet::GetServers(req)) => self.on_getservers(now, from, &req, out),
            Ok(_) => self.stats.drop(Drop::Unexpected),
            Err(_) => self.stats.drop(Drop::Junk),
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.next_tick
    }

    fn handle_timeout(&mut self, now: Instant, out: &mut Outbox) {
        // Challenges that went unanswered: ask again, or give up.
        let due: Vec<SocketAddr> = self
            .pending
            .iter()
            .filter(|(_, p)| p.deadline <= now)
            .map(|(a, _)| *a)
            .collect();
        for addr in due {
            let Some(mut p) = self.pending.remove(&addr) else {
                continue;
            };
            // Registrations are retried too: a server that heartbeats while still loading its
            // map misses the first challenge and would otherwise wait minutes for the next.
            let tries = self.config.verify_attempts.max(1);
            if p.attempts < tries {
                p.attempts += 1;
                p.deadline = now + self.config.challenge_timeout;
                let c = p.challenge;
                self.send_challenge(addr, &c, now, out);
                self.pending.insert(addr, p);
            } else if p.why == Why::Verify && self.remove(addr) {
                self.stats.removals += 1;
            }
        }
        let expired: Vec<SocketAddr> = self
            .servers
            .iter()
            .filter(|(_, e)| e.expires <= now)
            .map(|(a, _)| *a)
            .collect();
        for addr in expired {
            if self.remove(addr) {
                self.stats.expirations += 1;
            }
        }
        self.limits.prune(now);
        // A burst of registrations leaves a large, empty challenge table behind: give it back.
        if self.pending.capacity() > 4 * self.pending.len() + 64 {
            self.pending.shrink_to(2 * self.pending.len());
        }
        self.next_tick = if self.pending.is_empty() && self.servers.is_empty() {
            None
        } else {
            Some(now + TICK)
        };
    }
}
