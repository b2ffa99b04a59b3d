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
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fragstat_core::addr::{classify, FilterReason};
use fragstat_core::fair::{self, Caps, FairTable, Level};
use fragstat_core::service::{Outbox, Service};
use fragstat_quake3_oob::{decode, encode_server_list, EotStyle, Packet};
use serde::{Deserialize, Serialize};
use tracing::info;

use crate::limits::{LimitConfig, Limits, Refusal};
use crate::stats::{Drop, Stats};

mod lists;
mod names;
mod registration;

#[cfg(test)]
mod tests;

use lists::{CachedList, ListKey};
use names::Names;

/// Largest list datagram (dpmaster's).
pub const MAX_PACKET: usize = 1400;

/// The state file format this master writes and reads.
pub const SNAPSHOT_VERSION: u32 = 1;

/// The master's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Most servers listed in all. With the default 16,384 an IPv4 list is at most ~115 KB,
    /// within the default reply cap (128 KiB); a longer list (every server on IPv6 in a
    /// `getserversExt`, ~312 KB) is cut to the cap.
    pub max_servers: usize,
    /// Most servers per host (IPv4 address, IPv6 /64).
    pub max_per_address: usize,
    /// Most servers per wider network: IPv4 `[_, /24, /16]`, IPv6 `[_, /56, /48, /32]` (the
    /// host entries are ignored: [`Config::max_per_address`]). Each is raised to at least
    /// the narrower level's cap ([`Config::caps`]). When the list is full, a newcomer whose
    /// networks are within their caps displaces the newest server of the network (IPv4 /16,
    /// IPv6 /32) holding the most, unless that is its own.
    pub per_network: Caps,
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
    /// Accept servers on loopback addresses (tests, a master for one machine).
    pub allow_loopback: bool,
    /// Accept servers on private and special-purpose addresses (RFC 1918, CGNAT,
    /// link-local, unique local, 6to4, Teredo, NAT64, documentation, reserved): a LAN
    /// master. Loopback needs [`Config::allow_loopback`] still; unspecified, multicast and
    /// broadcast sources are never listed.
    pub allow_private: bool,
    /// Rates and budgets.
    pub limits: LimitConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_servers: 16_384,
            max_per_address: 32,
            per_network: Caps {
                v4: [32, 256, 1024],
                v6: [32, 128, 512, 2048],
            },
            expiry: Duration::from_secs(15 * 60),
            challenge_timeout: Duration::from_secs(2),
            verify_attempts: 3,
            max_pending: 16_384,
            max_pending_per_net: 128,
            verify_interval: Duration::from_secs(2),
            allow_loopback: false,
            allow_private: false,
            limits: LimitConfig::default(),
        }
    }
}

impl Config {
    /// The caps per prefix as applied: the host's from [`Config::max_per_address`], each
    /// wider one at least the narrower one's (raising the host's cap alone raises them all).
    pub fn caps(&self) -> Caps {
        let host = u64::try_from(self.max_per_address).unwrap_or(u64::MAX);
        let mut c = self.per_network;
        for caps in [&mut c.v4[..], &mut c.v6[..]] {
            let mut floor = host;
            for (i, cap) in caps.iter_mut().enumerate() {
                *cap = if i == 0 { host } else { (*cap).max(floor) };
                floor = *cap;
            }
        }
        c
    }

    /// Checks that no value would make the master refuse every list or panic later.
    pub fn check(&self) -> Result<(), String> {
        self.limits.check()?;
        if self.max_servers == 0 || self.max_per_address == 0 {
            return Err("max servers and max per address must be at least 1".into());
        }
        self.caps().check("servers per network")?;
        let year = Duration::from_secs(366 * 86_400);
        if self.expiry.is_zero() || self.expiry > year {
            return Err("expiry must be between 1 s and a year".into());
        }
        if self.challenge_timeout.is_zero() || self.challenge_timeout > Duration::from_secs(60) {
            return Err("the challenge timeout must be between 1 ms and 60 s".into());
        }
        // One datagram must fit in a reply; a longer list is cut to the reply cap, which the
        // budget's checks fit in every burst.
        if self.limits.lists.max_reply < MAX_PACKET as u64 {
            return Err(format!(
                "the reply cap must be at least one datagram ({MAX_PACKET} bytes)"
            ));
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

/// Whether a server at `addr` may be listed, by the kind of address (see
/// [`Config::allow_loopback`], [`Config::allow_private`]).
fn listable(config: &Config, addr: SocketAddr) -> Result<(), Drop> {
    match classify(addr) {
        None => Ok(()),
        Some(FilterReason::Loopback) if config.allow_loopback => Ok(()),
        Some(
            FilterReason::Loopback
            | FilterReason::PortZero
            | FilterReason::Unspecified
            | FilterReason::Multicast
            | FilterReason::Broadcast,
        ) => Err(Drop::Unroutable),
        Some(_) if config.allow_private => Ok(()),
        Some(_) => Err(Drop::Private),
    }
}

/// The master.
#[derive(Debug)]
pub struct Master {
    config: Config,
    servers: HashMap<SocketAddr, Entry>,
    names: Names,
    /// The listed addresses, counted per prefix against the caps and in all.
    table: FairTable<SocketAddr>,
    protocols: HashMap<i32, usize>,
    pending: HashMap<SocketAddr, Pending>,
    /// Registrations in `pending`, in all and per network.
    registering: usize,
    registering_per_net: HashMap<crate::limits::Key, usize>,
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
            table: FairTable::new(config.caps(), config.max_servers as u64),
            config,
            servers: HashMap::new(),
            names: Names::default(),
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
                || !self.table.has_room(1)
                || self.table.check(addr.ip(), 1).is_err()
                || self.check(&s).is_err()
                || !self.insert(&s, t)
            {
                r.skipped += 1;
                continue;
            }
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

    /// Checks a listing like a live answer: names, counts, address.
    fn check(&self, s: &Listed) -> Result<(), Drop> {
        listable(&self.config, s.addr)?;
        if s.game.is_empty()
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

    /// Whether a new server at `addr` would be listed: its prefixes within their caps, and
    /// room in the list or someone else's server to displace.
    fn room_for(&self, addr: SocketAddr) -> Result<(), Drop> {
        match self.table.check(addr.ip(), 1) {
            Err(fair::Refusal::Share(p)) if p.level() == Level::Host => Err(Drop::PerAddress),
            Err(fair::Refusal::Share(_)) => Err(Drop::PerNetwork),
            Err(fair::Refusal::Full) => Err(Drop::ServersFull),
            Ok(()) if self.table.has_room(1) || self.table.victim(addr.ip(), 1).is_some() => Ok(()),
            Ok(()) => Err(Drop::ServersFull),
        }
    }

    /// Lists (or refreshes) a checked `server`; a new one may displace another network's
    /// newest server (see [`Config::per_network`]). False when there was no room for it.
    fn insert(&mut self, server: &Listed, t: u64) -> bool {
        let addr = server.addr;
        if !self.servers.contains_key(&addr) {
            let (admitted, displaced) = self.table.admit(addr, addr.ip(), 1);
            for d in displaced {
                self.take_pending(d);
                self.table_removed(d);
                self.stats.displaced += 1;
                info!(server = %d, by = %addr, "displaced: the list is full and its network holds the most");
            }
            if admitted.is_err() {
                return false;
            }
        }
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
        true
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
        self.table.remove(&addr);
        self.table_removed(addr)
    }

    /// Takes `addr` off the list once the table has let it go.
    fn table_removed(&mut self, addr: SocketAddr) -> bool {
        let Some(old) = self.servers.remove(&addr) else {
            return false;
        };
        self.generation += 1;
        self.names.release(old.game);
        self.names.release(old.gametype);
        self.uncount_protocol(old.protocol);
        true
    }
}

impl From<Refusal> for Drop {
    fn from(r: Refusal) -> Drop {
        match r {
            Refusal::Rate => Drop::Rate,
            Refusal::Budget => Drop::Budget,
            Refusal::GlobalBudget => Drop::GlobalBudget,
            Refusal::Reserve => Drop::ReserveBudget,
            Refusal::ChallengeBudget => Drop::ChallengeBudget,
        }
    }
}

impl Service for Master {
    fn handle(&mut self, now: Instant, from: SocketAddr, datagram: &[u8], out: &mut Outbox) {
        self.stats.datagrams += 1;
        let from = fragstat_core::canonical(from);
        if from.port() == 0 {
            // Nothing can be sent there (L2): dropped before any limit is charged.
            self.stats.drop(Drop::PortZero);
            return;
        }
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
