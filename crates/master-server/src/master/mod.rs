//! The sans-IO master: registrations verified by challenge, lists filtered and split into
//! datagrams, expiry, limits, snapshots. Drive it with [`Service::handle`] and
//! [`Service::handle_timeout`]; `crate::run` does that on real sockets.
//!
//! Challenges are stateless: a challenge is a keyed hash (HMAC-SHA256 with a key from the
//! operating system's random source) of the server's address, a 16 s epoch and the game its
//! heartbeat named, so an answer is checked without anything stored for it and a flood of
//! spoofed heartbeats fills no table a real server needs. What is stored per heartbeat is only
//! the retry schedule ([`Config::max_pending`], at most [`Config::max_pending_per_net`] per
//! network): when that is full, the challenge still goes out, once.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fragstat_core::service::{Outbox, Service};
use fragstat_quake3_oob::{decode, encode_server_list, EotStyle, GetServers, InfoResponse, Packet};
use serde::{Deserialize, Serialize};
use tracing::info;

use crate::limits::{Key, LimitConfig, Limits, Refusal};
use crate::stats::{Drop, Stats};

/// Largest list datagram (dpmaster's).
pub const MAX_PACKET: usize = 1400;

/// The state file format this master writes and reads.
pub const SNAPSHOT_VERSION: u32 = 1;

/// The master's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Most servers listed in all. With the default 16,384 the longest list (every server on
    /// IPv6 in a `getserversExt`) is ~312 KB, within one network's byte burst.
    pub max_servers: usize,
    /// Most servers per host (IPv4 address, IPv6 /64).
    pub max_per_address: usize,
    /// A server is dropped this long after its last verified infoResponse.
    pub expiry: Duration,
    /// How long to wait for the answer to a `getinfo` challenge.
    pub challenge_timeout: Duration,
    /// Challenges sent before giving up on a server: a listed one that stopped answering is
    /// removed, a new one is not listed (a lost datagram neither removes a live server nor
    /// loses a registration). A challenge the limits did not let out is not counted.
    pub verify_attempts: u32,
    /// Most registrations whose challenge is repeated (the retry schedule).
    pub max_pending: usize,
    /// Most of them per network (IPv4 /24, IPv6 /64).
    pub max_pending_per_net: usize,
    /// A heartbeat from a listed server starts a verification at most this often per
    /// address:port; such heartbeats never use the host's allowance for new servers.
    pub verify_interval: Duration,
    /// Accept servers on loopback and other non-routable addresses (tests, LAN masters).
    pub allow_loopback: bool,
    /// Rates and budgets.
    pub limits: LimitConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_servers: 16_384,
            max_per_address: 32,
            expiry: Duration::from_secs(15 * 60),
            challenge_timeout: Duration::from_secs(2),
            verify_attempts: 3,
            max_pending: 16_384,
            max_pending_per_net: 128,
            verify_interval: Duration::from_secs(2),
            allow_loopback: false,
            limits: LimitConfig::default(),
        }
    }
}

impl Config {
    /// Checks that no value would make the master refuse every list or panic later.
    pub fn check(&self) -> Result<(), String> {
        self.limits.check()?;
        if self.max_servers == 0 || self.max_per_address == 0 {
            return Err("max servers and max per address must be at least 1".into());
        }
        let year = Duration::from_secs(366 * 86_400);
        if self.expiry.is_zero() || self.expiry > year {
            return Err("expiry must be between 1 s and a year".into());
        }
        if self.challenge_timeout.is_zero() || self.challenge_timeout > Duration::from_secs(60) {
            return Err("the challenge timeout must be between 1 ms and 60 s".into());
        }
        // The longest list must fit in one burst of the byte budgets, or it is never sent.
        let longest = longest_list(self.max_servers) as f64;
        for (what, r) in [
            ("the per-network byte budget", self.limits.net_bytes),
            ("the global byte budget", self.limits.global_bytes),
        ] {
            if !r.is_unlimited() && r.burst < longest {
                return Err(format!(
                    "{what} ({:.0} KiB burst) is smaller than the longest list of {} servers ({:.0} KiB): raise it or lower the servers",
                    r.burst / 1024.0,
                    self.max_servers,
                    longest / 1024.0
                ));
            }
        }
        Ok(())
    }
}

/// Bytes of the longest list `servers` can make: every server on IPv6 (19 bytes each) in
/// datagrams of [`MAX_PACKET`].
pub fn longest_list(servers: usize) -> usize {
    let per = (MAX_PACKET - 40) / 19;
    servers * 19 + servers.div_ceil(per.max(1)) * 40 + 40
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

/// A listed server as stored: small, with its names interned (see [`Names`]); times in
/// milliseconds since the master's clock started.
#[derive(Debug, Clone, Copy)]
struct Entry {
    game: u32,
    gametype: u32,
    protocol: i32,
    clients: u16,
    max_clients: u16,
    expires: u64,
    /// When a heartbeat last started a verification.
    last_verify: u64,
}

/// Game names and game types, stored once each and freed when no server uses them: 10,000
/// servers of one game share one string, and names an attacker's servers made up go when the
/// servers go.
#[derive(Debug, Default)]
struct Names {
    all: Vec<(Box<str>, u32)>,
    index: HashMap<Box<str>, u32>,
    free: Vec<u32>,
}

impl Names {
    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            if let Some(e) = self.all.get_mut(i as usize) {
                e.1 += 1;
            }
            return i;
        }
        let i = match self.free.pop() {
            Some(i) => {
                if let Some(e) = self.all.get_mut(i as usize) {
                    *e = (s.into(), 1);
                }
                i
            }
            None => {
                self.all.push((s.into(), 1));
                u32::try_from(self.all.len() - 1).unwrap_or(u32::MAX)
            }
        };
        self.index.insert(s.into(), i);
        i
    }

    fn release(&mut self, i: u32) {
        let Some(e) = self.all.get_mut(i as usize) else {
            return;
        };
        e.1 = e.1.saturating_sub(1);
        if e.1 == 0 {
            let name = std::mem::take(&mut e.0);
            self.index.remove(&name);
            self.free.push(i);
        }
    }

    fn lookup(&self, s: &str) -> Option<u32> {
        self.index.get(s).copied()
    }

    fn get(&self, i: u32) -> &str {
        self.all.get(i as usize).map_or("", |s| &s.0)
    }

    /// Names in use.
    fn len(&self) -> usize {
        self.index.len()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Why {
    /// A heartbeat from an unlisted server.
    Register,
    /// A listed server heartbeated, flatlined, or was restored from a snapshot: it must answer.
    Verify,
}

/// A challenge's retry schedule (the challenge itself is recomputed, never stored).
#[derive(Debug, Clone, Copy)]
struct Pending {
    /// The game code of the heartbeat (see [`code_game`]).
    code: u8,
    why: Why,
    deadline: u64,
    /// Challenges that went out.
    sent: u8,
    since: u64,
}

/// The saved state: what is listed (see [`Master::snapshot`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Format version ([`SNAPSHOT_VERSION`]).
    pub version: u32,
    /// Listed servers.
    pub servers: Vec<Listed>,
}

/// What distinguishes one list from another: only values that can match a listed server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct ListKey {
    ext: bool,
    /// A named game's id; `None` for the anonymous Quake III dialect.
    game: Option<u32>,
    protocol: i32,
    gametype: Option<u32>,
    empty: bool,
    full: bool,
    v4: bool,
    v6: bool,
}

#[derive(Debug)]
struct CachedList {
    generation: u64,
    built: u64,
    used: u64,
    datagrams: Arc<[Vec<u8>]>,
}

/// Most distinct lists kept encoded; the least recently used goes first.
const MAX_CACHED_LISTS: usize = 64;

/// A list may be this stale while servers keep registering (a master with 10,000 servers sees
/// dozens of re-registrations a second; rebuilding for each request would cost more than the
/// list is worth).
const LIST_STALENESS_MS: u64 = 1000;

/// Length of the challenges the master sends.
const CHALLENGE_LEN: usize = 12;

/// Challenges are valid for the epoch they were made in and the next one.
const EPOCH_MS: u64 = 16_000;

/// Longest game name or game type stored.
const MAX_NAME: usize = 64;

/// How often timers are looked at while anything is pending or listed.
const TICK: Duration = Duration::from_millis(250);

/// A verification whose challenge the limits kept back this long is given up (the server
/// stays listed until it expires or a later verification fails).
const GIVE_UP_MS: u64 = 60_000;

/// The game code a heartbeat string stands for (dpmaster: Q3A, W:ET and RtCW servers need not
/// send `gamename`; DarkPlaces servers must).
fn heartbeat_code(name: &[u8]) -> Option<u8> {
    match name {
        b"QuakeArena-1" => Some(b'q'),
        b"EnemyTerritory-1" | b"ETFlatline-1" => Some(b'e'),
        b"Wolfenstein-1" | b"WolfFlatline-1" => Some(b'w'),
        b"DarkPlaces" => Some(b'd'),
        _ => None,
    }
}

/// The anonymous game of a code; `""` for DarkPlaces (the server must name its game).
fn code_game(code: u8) -> Option<&'static str> {
    match code {
        b'q' => Some("Quake3Arena"),
        b'e' => Some("et"),
        b'w' => Some("wolfmp"),
        b'd' => Some(""),
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

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// The master.
#[derive(Debug)]
pub struct Master {
    config: Config,
    servers: HashMap<SocketAddr, Entry>,
    names: Names,
    per_host: HashMap<Key, usize>,
    protocols: HashMap<i32, usize>,
    pending: HashMap<SocketAddr, Pending>,
    /// Registrations in `pending`, in all and per network.
    registering: usize,
    registering_per_net: HashMap<Key, usize>,
    limits: Limits,
    key: ring::hmac::Key,
    origin: Option<Instant>,
    next_tick: Option<Instant>,
    stats: Stats,
    lists: HashMap<ListKey, CachedList>,
    lists_used: u64,
    empty_lists: [Arc<[Vec<u8>]>; 2],
    /// Bumped whenever what a list could show changes.
    generation: u64,
}

/// What [`Master::restore`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Restored {
    /// Servers listed (and being re-verified).
    pub listed: usize,
    /// Entries skipped: invalid (names, counts, addresses) or over a bound.
    pub skipped: usize,
}

impl Master {
    /// A master with `config`, its challenge key from the operating system's random source.
    pub fn new(config: Config) -> Self {
        let rng = ring::rand::SystemRandom::new();
        let key = ring::hmac::Key::generate(ring::hmac::HMAC_SHA256, &rng).unwrap_or_else(|_| {
            // No OS randomness at all: still a key nobody outside this process knows.
            let seed = std::hash::BuildHasher::hash_one(&std::hash::RandomState::new(), 0u8);
            ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &seed.to_le_bytes())
        });
        Self::with_key(config, key)
    }

    /// A master whose challenge key comes from `seed` (tests: reproducible challenges).
    pub fn with_seed(config: Config, seed: u64) -> Self {
        Self::with_key(
            config,
            ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &seed.to_le_bytes()),
        )
    }

    fn with_key(config: Config, key: ring::hmac::Key) -> Self {
        let empty = |ext| -> Arc<[Vec<u8>]> {
            encode_server_list(&[], ext, EotStyle::LastPacket, MAX_PACKET).into()
        };
        Master {
            limits: Limits::new(config.limits),
            config,
            servers: HashMap::new(),
            names: Names::default(),
            per_host: HashMap::new(),
            protocols: HashMap::new(),
            pending: HashMap::new(),
            registering: 0,
            registering_per_net: HashMap::new(),
            key,
            origin: None,
            next_tick: None,
            stats: Stats::default(),
            lists: HashMap::new(),
            lists_used: 0,
            empty_lists: [empty(false), empty(true)],
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

    /// The limits (tables tracked, generations dropped).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Distinct game names and game types in use.
    pub fn names_in_use(&self) -> usize {
        self.names.len()
    }

    fn ms(&mut self, now: Instant) -> u64 {
        let origin = *self.origin.get_or_insert(now);
        u64::try_from(now.saturating_duration_since(origin).as_millis()).unwrap_or(u64::MAX)
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

    /// Challenges with a retry schedule.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Servers listed per game name.
    pub fn by_game(&self) -> HashMap<String, usize> {
        let mut ids: HashMap<u32, usize> = HashMap::new();
        for e in self.servers.values() {
            *ids.entry(e.game).or_default() += 1;
        }
        ids.into_iter()
            .map(|(g, n)| (self.names.get(g).to_string(), n))
            .collect()
    }

    /// What to save: every listed server.
    pub fn snapshot(&self) -> Snapshot {
        let mut servers: Vec<Listed> = self.servers().collect();
        servers.sort_by_key(|s| s.addr);
        Snapshot {
            version: SNAPSHOT_VERSION,
            servers,
        }
    }

    /// Lists the saved servers at once and challenges each of them; those that do not answer
    /// within the verification attempts are dropped. Every entry is checked like a live
    /// answer (names, counts, address, the bounds); what fails is skipped.
    pub fn restore(&mut self, snapshot: Snapshot, now: Instant) -> Restored {
        let t = self.ms(now);
        let mut r = Restored::default();
        for s in snapshot.servers {
            let addr = fragstat_core::canonical(s.addr);
            let s = Listed { addr, ..s };
            if self.servers.contains_key(&addr)
                || self.servers.len() >= self.config.max_servers
                || self.check(&s).is_err()
                || self.host_count(addr) >= self.config.max_per_address
            {
                r.skipped += 1;
                continue;
            }
            self.insert(&s, t);
            self.pending.insert(
                addr,
                Pending {
                    code: b'd',
                    why: Why::Verify,
                    // Sent on the first timer tick.
                    deadline: t,
                    sent: 0,
                    since: t,
                },
            );
            r.listed += 1;
        }
        self.next_tick = Some(now);
        r
    }

    /// The challenge for `addr` in `epoch`, for a heartbeat of game `code`: the code, then 11
    /// base-62 digits of the keyed hash.
    fn challenge(&self, addr: SocketAddr, epoch: u64, code: u8) -> [u8; CHALLENGE_LEN] {
        let ip = match addr.ip() {
            IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
            IpAddr::V6(v6) => v6.octets(),
        };
        let mut msg = [0u8; 27];
        msg[..16].copy_from_slice(&ip);
        msg[16..18].copy_from_slice(&addr.port().to_be_bytes());
        msg[18..26].copy_from_slice(&epoch.to_be_bytes());
        msg[26] = code;
        let tag = ring::hmac::sign(&self.key, &msg);
        let mut h = [0u8; 8];
        if let Some(t) = tag.as_ref().get(..8) {
            h.copy_from_slice(t);
        }
        let mut n = u64::from_be_bytes(h);
        let mut out = [0u8; CHALLENGE_LEN];
        out[0] = code;
        for c in out.iter_mut().skip(1) {
            *c = BASE62[(n % 62) as usize];
            n /= 62;
        }
        out
    }

    /// The game code of `challenge` when it is one this master made for `addr` in this epoch
    /// or the one before.
    fn check_challenge(&self, addr: SocketAddr, challenge: &[u8], t: u64) -> Option<u8> {
        let &code = challenge.first()?;
        code_game(code)?;
        if challenge.len() != CHALLENGE_LEN {
            return None;
        }
        let epoch = t / EPOCH_MS;
        let ok = |e: u64| self.challenge(addr, e, code)[..] == *challenge;
        (ok(epoch) || (epoch > 0 && ok(epoch - 1))).then_some(code)
    }

    /// Checks a listing like a live answer: names, counts, address.
    fn check(&self, s: &Listed) -> Result<(), Drop> {
        if !self.config.allow_loopback && !routable(s.addr.ip()) {
            return Err(Drop::Unroutable);
        }
        if s.addr.port() == 0
            || s.game.is_empty()
            || s.game.len() > MAX_NAME
            || s.game.contains(char::is_whitespace)
            || s.gametype.len() > MAX_NAME
            || s.max_clients == 0
            || s.max_clients > 4096
            || s.clients > 4096
        {
            return Err(Drop::MissingKeys);
        }
        Ok(())
    }

    fn host_count(&self, addr: SocketAddr) -> usize {
        self.per_host
            .get(&Key::host(addr.ip()))
            .copied()
            .unwrap_or(0)
    }

    /// Lists (or refreshes) a checked `server`.
    fn insert(&mut self, server: &Listed, t: u64) {
        let addr = server.addr;
        let game = self.names.intern(&server.game);
        let gametype = self.names.intern(&server.gametype);
        let mut entry = Entry {
            game,
            gametype,
            protocol: server.protocol,
            clients: u16::try_from(server.clients).unwrap_or(u16::MAX),
            max_clients: u16::try_from(server.max_clients).unwrap_or(u16::MAX),
            expires: t
                .saturating_add(u64::try_from(self.config.expiry.as_millis()).unwrap_or(u64::MAX)),
            last_verify: t,
        };
        if let Some(old) = self.servers.get(&addr) {
            entry.last_verify = old.last_verify;
        }
        match self.servers.insert(addr, entry) {
            None => {
                *self.per_host.entry(Key::host(addr.ip())).or_default() += 1;
                *self.protocols.entry(server.protocol).or_default() += 1;
                self.generation += 1;
            }
            Some(old) => {
                self.names.release(old.game);
                self.names.release(old.gametype);
                if old.protocol != entry.protocol {
                    self.uncount_protocol(old.protocol);
                    *self.protocols.entry(entry.protocol).or_default() += 1;
                }
                let same = (
                    old.game,
                    old.gametype,
                    old.protocol,
                    old.clients,
                    old.max_clients,
                ) == (
                    game,
                    gametype,
                    entry.protocol,
                    entry.clients,
                    entry.max_clients,
                );
                if !same {
                    self.generation += 1;
                }
            }
        }
    }

    fn uncount_protocol(&mut self, protocol: i32) {
        if let Some(n) = self.protocols.get_mut(&protocol) {
            *n -= 1;
            if *n == 0 {
                self.protocols.remove(&protocol);
            }
        }
    }

    fn remove(&mut self, addr: SocketAddr) -> bool {
        let Some(old) = self.servers.remove(&addr) else {
            return false;
        };
        self.generation += 1;
        self.names.release(old.game);
        self.names.release(old.gametype);
        self.uncount_protocol(old.protocol);
        let host = Key::host(addr.ip());
        if let Some(n) = self.per_host.get_mut(&host) {
            *n -= 1;
            if *n == 0 {
                self.per_host.remove(&host);
            }
        }
        true
    }

    /// Takes `addr`'s retry schedule out of the table (and out of the counts).
    fn take_pending(&mut self, addr: SocketAddr) -> Option<Pending> {
        let p = self.pending.remove(&addr)?;
        if p.why == Why::Register {
            self.registering = self.registering.saturating_sub(1);
            let net = Key::net(addr.ip());
            if let Some(n) = self.registering_per_net.get_mut(&net) {
                *n -= 1;
                if *n == 0 {
                    self.registering_per_net.remove(&net);
                }
            }
        }
        Some(p)
    }

    fn put_pending(&mut self, addr: SocketAddr, p: Pending) {
        if p.why == Why::Register {
            self.registering += 1;
            *self
                .registering_per_net
                .entry(Key::net(addr.ip()))
                .or_default() += 1;
        }
        self.pending.insert(addr, p);
    }

    /// Sends a challenge to `to` if the limits let it out; true when it went.
    fn send_challenge(
        &mut self,
        to: SocketAddr,
        code: u8,
        retry: bool,
        now: Instant,
        t: u64,
        out: &mut Outbox,
    ) -> bool {
        if let Err(r) = self.limits.send_challenge(to.ip(), retry, now) {
            self.stats.drop(r.into());
            return false;
        }
        let challenge = self.challenge(to, t / EPOCH_MS, code);
        let bytes = Packet::GetInfo {
            challenge: Some(challenge.to_vec()),
        }
        .to_bytes()
        .unwrap_or_default();
        self.stats.challenges += 1;
        out.push((to, bytes));
        true
    }

    fn on_heartbeat(&mut self, now: Instant, from: SocketAddr, name: &[u8], out: &mut Outbox) {
        self.stats.heartbeats += 1;
        if !self.config.allow_loopback && !routable(from.ip()) {
            self.stats.drop(Drop::Unroutable);
            return;
        }
        let Some(code) = heartbeat_code(name) else {
            self.stats.drop(Drop::UnknownHeartbeat);
            return;
        };
        if self.pending.contains_key(&from) {
            // One challenge schedule at a time per server; a repeated heartbeat does not
            // reset it.
            self.stats.drop(Drop::AlreadyPending);
            return;
        }
        let t = self.ms(now);
        let timeout = u64::try_from(self.config.challenge_timeout.as_millis()).unwrap_or(2000);
        let tick = TICK.as_millis() as u64;
        if let Some(e) = self.servers.get_mut(&from) {
            // A listed server: limited per address:port, never by its host's allowance (a
            // spoofer heartbeating from the host's other ports cannot starve it).
            let interval = u64::try_from(self.config.verify_interval.as_millis()).unwrap_or(0);
            if t < e.last_verify.saturating_add(interval) {
                self.stats.drop(Drop::Rate);
                return;
            }
            e.last_verify = t;
            let sent = self.send_challenge(from, code, false, now, t, out);
            self.put_pending(
                from,
                Pending {
                    code,
                    why: Why::Verify,
                    deadline: t + if sent { timeout } else { tick },
                    sent: u8::from(sent),
                    since: t,
                },
            );
            self.arm(now);
            return;
        }
        if let Err(r) = self.limits.new_server(from.ip(), now) {
            self.stats.drop(r.into());
            return;
        }
        let sent = self.send_challenge(from, code, false, now, t, out);
        let net = Key::net(from.ip());
        let room = self.registering < self.config.max_pending
            && self.registering_per_net.get(&net).copied().unwrap_or(0)
                < self.config.max_pending_per_net;
        if room {
            self.put_pending(
                from,
                Pending {
                    code,
                    why: Why::Register,
                    deadline: t + if sent { timeout } else { tick },
                    sent: u8::from(sent),
                    since: t,
                },
            );
            self.arm(now);
        } else {
            // The challenge went out (or not) without a retry: an answer is still checked
            // against the keyed hash.
            self.stats.drop(Drop::PendingFull);
        }
    }

    fn arm(&mut self, now: Instant) {
        let t = now + TICK;
        self.next_tick = Some(self.next_tick.map_or(t, |n| n.min(t)));
    }

    fn on_info(&mut self, now: Instant, from: SocketAddr, r: &InfoResponse) {
        let t = self.ms(now);
        let code = r
            .info
            .get("challenge")
            .and_then(|c| self.check_challenge(from, c, t));
        let Some(code) = code else {
            // A wrong challenge leaves the schedule in place: the real answer may follow.
            self.stats.drop(if self.pending.contains_key(&from) {
                Drop::BadChallenge
            } else {
                Drop::Unsolicited
            });
            return;
        };
        self.take_pending(from);
        let listed = self.servers.get(&from).copied();
        let int = |k: &str| r.info.get_int(&[k]);
        let (Some(protocol), Some(max), Some(clients)) =
            (int("protocol"), int("sv_maxclients"), int("clients"))
        else {
            self.refuse_answer(from, listed.is_some(), Drop::MissingKeys);
            return;
        };
        let game = match r.info.get("gamename").filter(|g| !g.is_empty()) {
            Some(g) => match std::str::from_utf8(g) {
                Ok(s) => s.to_string(),
                Err(_) => {
                    self.refuse_answer(from, listed.is_some(), Drop::MissingKeys);
                    return;
                }
            },
            // A listed server keeps its game (a spoofed heartbeat naming another anonymous
            // game does not relabel it); a new one takes its heartbeat's.
            None => match listed {
                Some(e) => self.names.get(e.game).to_string(),
                None => code_game(code).unwrap_or_default().to_string(),
            },
        };
        let gametype = r
            .info
            .get("gametype")
            .filter(|g| !g.is_empty())
            .map(|g| String::from_utf8_lossy(g).into_owned())
            .unwrap_or_else(|| "0".into());
        let s = Listed {
            addr: from,
            game,
            protocol: i32::try_from(protocol).unwrap_or(i32::MIN),
            clients: u32::try_from(clients).unwrap_or(u32::MAX),
            max_clients: u32::try_from(max).unwrap_or(0),
            gametype,
        };
        if i32::try_from(protocol).is_err() {
            self.refuse_answer(from, listed.is_some(), Drop::MissingKeys);
            return;
        }
        if let Err(d) = self.check(&s) {
            self.refuse_answer(from, listed.is_some(), d);
            return;
        }
        if listed.is_none() {
            if self.servers.len() >= self.config.max_servers {
                self.stats.drop(Drop::ServersFull);
                return;
            }
            if self.host_count(from) >= self.config.max_per_address {
                self.stats.drop(Drop::PerAddress);
                return;
            }
            self.stats.registrations += 1;
            info!(server = %from, game = %s.game, protocol = s.protocol, "registered");
        } else {
            self.stats.verifications += 1;
        }
        self.insert(&s, t);
        self.arm(now);
    }

    /// An answer with the right challenge whose info cannot be listed: a listed server is
    /// taken off (it answered, and what it says is not listable).
    fn refuse_answer(&mut self, from: SocketAddr, listed: bool, why: Drop) {
        self.stats.drop(why);
        if listed && self.remove(from) {
            self.stats.removals += 1;
            info!(server = %from, reason = why.label(), "removed: its answer cannot be listed");
        }
    }

    /// The servers a request asks for, in address order.
    pub fn select(&self, req: &GetServers) -> Vec<SocketAddr> {
        match self.list_key(req) {
            Some(k) => self.select_key(&k),
            None => Vec::new(),
        }
    }

    /// The request's list key, or `None` when nothing listed can match it (a game, game type
    /// or protocol no server has): such requests cost no scan and no cache entry.
    fn list_key(&self, req: &GetServers) -> Option<ListKey> {
        let opt = |o: &str| req.has_option(o);
        if !self.protocols.contains_key(&req.protocol) {
            return None;
        }
        let game = match &req.game {
            Some(g) => Some(self.names.lookup(std::str::from_utf8(g).ok()?)?),
            None => None,
        };
        // W:ET clients get every server for `getservers 84` (dpmaster).
        let everything = game.is_none() && req.protocol == 84;
        let mut gametype_name: Option<String> = None;
        for o in &req.options {
            let o = String::from_utf8_lossy(o);
            if let Some(v) = o.strip_prefix("gametype=") {
                gametype_name = Some(v.to_string());
                break;
            }
            let short = match o.to_ascii_lowercase().as_str() {
                "ffa" => Some("0"),
                "tourney" => Some("1"),
                "team" => Some("3"),
                "ctf" => Some("4"),
                _ => None,
            };
            if let Some(s) = short {
                gametype_name = Some(s.into());
                break;
            }
        }
        let gametype = match gametype_name {
            Some(g) => Some(self.names.lookup(&g)?),
            None => None,
        };
        let (v4, v6) = if req.ext {
            match (opt("ipv4"), opt("ipv6")) {
                (false, false) => (true, true),
                (a, b) => (a, b),
            }
        } else {
            (true, false)
        };
        Some(ListKey {
            ext: req.ext,
            game,
            protocol: req.protocol,
            gametype,
            empty: everything || opt("empty"),
            full: everything || opt("full"),
            v4,
            v6,
        })
    }

    fn select_key(&self, k: &ListKey) -> Vec<SocketAddr> {
        let anonymous: Vec<u32> = ANONYMOUS
            .iter()
            .filter_map(|g| self.names.lookup(g))
            .collect();
        let mut list: Vec<SocketAddr> = self
            .servers
            .iter()
            .filter(|(_, s)| s.protocol == k.protocol)
            .filter(|(_, s)| match k.game {
                Some(g) => s.game == g,
                None => anonymous.contains(&s.game),
            })
            .filter(|(_, s)| k.empty || s.clients > 0)
            .filter(|(_, s)| k.full || s.clients < s.max_clients)
            .filter(|(_, s)| k.gametype.is_none_or(|g| g == s.gametype))
            .filter(|(a, _)| if a.is_ipv4() { k.v4 } else { k.v6 })
            .map(|(a, _)| *a)
            .collect();
        list.sort();
        list
    }

    /// The encoded list for `req`: from the cache when nothing changed since it was built (or
    /// it is less than a second old), else built and cached, the least recently used list
    /// making room.
    fn list_for(&mut self, req: &GetServers, t: u64) -> Arc<[Vec<u8>]> {
        let Some(key) = self.list_key(req) else {
            return Arc::clone(&self.empty_lists[usize::from(req.ext)]);
        };
        self.lists_used += 1;
        let used = self.lists_used;
        if let Some(c) = self.lists.get_mut(&key) {
            if c.generation == self.generation || t.saturating_sub(c.built) < LIST_STALENESS_MS {
                c.used = used;
                return Arc::clone(&c.datagrams);
            }
        }
        let list = self.select_key(&key);
        self.stats.lists_built += 1;
        let datagrams: Arc<[Vec<u8>]> =
            encode_server_list(&list, key.ext, EotStyle::LastPacket, MAX_PACKET).into();
        if self.lists.len() >= MAX_CACHED_LISTS && !self.lists.contains_key(&key) {
            if let Some(oldest) = self
                .lists
                .iter()
                .min_by_key(|(_, c)| c.used)
                .map(|(k, _)| *k)
            {
                self.lists.remove(&oldest);
            }
        }
        self.lists.insert(
            key,
            CachedList {
                generation: self.generation,
                built: t,
                used,
                datagrams: Arc::clone(&datagrams),
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
        let t = self.ms(now);
        let packets = self.list_for(req, t);
        let bytes: u64 = packets.iter().map(|p| p.len() as u64).sum();
        if let Err(r) = self.limits.send_list(from.ip(), bytes, now) {
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
            Refusal::GlobalBudget => Drop::GlobalBudget,
            Refusal::ChallengeBudget => Drop::ChallengeBudget,
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
        let t = self.ms(now);
        let timeout = u64::try_from(self.config.challenge_timeout.as_millis()).unwrap_or(2000);
        let tick = TICK.as_millis() as u64;
        let tries = u8::try_from(self.config.verify_attempts.clamp(1, 255)).unwrap_or(3);
        // Challenges that went unanswered: ask again, or give up.
        let due: Vec<SocketAddr> = self
            .pending
            .iter()
            .filter(|(_, p)| p.deadline <= t)
            .map(|(a, _)| *a)
            .collect();
        for addr in due {
            let Some(mut p) = self.take_pending(addr) else {
                continue;
            };
            if p.why == Why::Verify && !self.servers.contains_key(&addr) {
                continue;
            }
            if p.sent >= tries {
                // Every challenge went out and none was answered.
                if p.why == Why::Verify && self.remove(addr) {
                    self.stats.removals += 1;
                    info!(server = %addr, "removed: stopped answering challenges");
                }
                continue;
            }
            if t.saturating_sub(p.since) > GIVE_UP_MS {
                // The limits kept its challenges back this long: give up without a verdict.
                continue;
            }
            // Registrations are retried too: a server that heartbeats while still loading its
            // map misses the first challenge and would otherwise wait minutes for the next.
            let retry = p.why == Why::Register && p.sent > 0;
            if self.send_challenge(addr, p.code, retry, now, t, out) {
                p.sent += 1;
                p.deadline = t + timeout;
            } else {
                // Not sent: not an attempt. Tried again on a later tick.
                p.deadline = t + tick;
            }
            self.put_pending(addr, p);
        }
        let expired: Vec<SocketAddr> = self
            .servers
            .iter()
            .filter(|(_, e)| e.expires <= t)
            .map(|(a, _)| *a)
            .collect();
        for addr in expired {
            self.take_pending(addr);
            if self.remove(addr) {
                self.stats.expirations += 1;
                info!(server = %addr, "expired");
            }
        }
        self.limits.tick(now);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_freed_and_their_slots_reused() {
        let mut n = Names::default();
        let a = n.intern("a");
        assert_eq!(n.intern("a"), a);
        let b = n.intern("b");
        n.release(a);
        assert_eq!(n.lookup("a"), Some(a), "still used once");
        n.release(a);
        assert_eq!(n.lookup("a"), None);
        let c = n.intern("c");
        assert_eq!(c, a, "the freed slot is reused");
        assert_eq!(n.get(b), "b");
        assert_eq!(n.len(), 2);
    }

    #[test]
    fn challenges_are_keyed_and_carry_their_game() {
        let m = Master::with_seed(Config::default(), 1);
        let other = Master::with_seed(Config::default(), 2);
        let a: SocketAddr = "203.0.113.7:27960".parse().unwrap();
        let c = m.challenge(a, 5, b'e');
        assert_eq!(c[0], b'e');
        assert!(c.iter().all(u8::is_ascii_alphanumeric));
        assert_ne!(
            c,
            other.challenge(a, 5, b'e'),
            "another key, another challenge"
        );
        assert_ne!(c, m.challenge(a, 6, b'e'));
        assert_ne!(
            c,
            m.challenge("203.0.113.7:27961".parse().unwrap(), 5, b'e')
        );
        let t = 5 * EPOCH_MS + 10;
        assert_eq!(m.check_challenge(a, &c, t), Some(b'e'));
        assert_eq!(m.check_challenge(a, &c, t + EPOCH_MS), Some(b'e'));
        assert_eq!(m.check_challenge(a, &c, t + 2 * EPOCH_MS), None, "too old");
        let mut relabelled = c;
        relabelled[0] = b'q';
        assert_eq!(m.check_challenge(a, &relabelled, t), None);
        // Two masters from the OS's random source do not share a key.
        let (x, y) = (
            Master::new(Config::default()),
            Master::new(Config::default()),
        );
        assert_ne!(x.challenge(a, 1, b'q'), y.challenge(a, 1, b'q'));
    }

    #[test]
    fn config_checks_refuse_what_would_never_list_or_would_panic() {
        assert!(Config::default().check().is_ok());
        let big = Config {
            max_servers: 65_536,
            ..Config::default()
        };
        assert!(big.check().unwrap_err().contains("longest list"));
        let unlimited = Config {
            max_servers: 1_000_000,
            limits: LimitConfig::unlimited(),
            ..Config::default()
        };
        assert!(unlimited.check().is_ok());
        let forever = Config {
            expiry: Duration::from_secs(u64::MAX),
            ..Config::default()
        };
        assert!(forever.check().is_err());
        assert!(longest_list(16_384) < 384 * 1024);
    }
}
