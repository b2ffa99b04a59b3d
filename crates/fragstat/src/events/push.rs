//! Events a server pushes: ET: Legacy's `sv_tracker` datagrams
//! ([`fragstat_quake3_oob::push`]) turned into the same [`Event`]s a scan yields, marked
//! [`Event::pushed`], with the slot and GUID on the player. [`PushListener`] is sans-IO:
//! the tracker and [`crate::Watch::pushes`] feed it each datagram with its source and the
//! time, and each scan's records and events.
//!
//! **Who is heard.** Only a server the listener already knows: a record of the last scan
//! ([`PushListener::know`]) of a game that pushes ([`PUSH_GAMES`]), matched on the datagram's
//! source address *and port* (the engine sends from its game socket). A datagram from anyone
//! else costs one lookup and is dropped ([`Dropped::Unknown`]). The protocol has no
//! challenge, sequence or acknowledgement (nothing is ever sent back), so a forged datagram
//! with a known server's address is believed: pushed events are what the server (or someone
//! forging it) said, the scans stay the truth (the database's sessions are the scans', a
//! push changes nothing there).
//!
//! **Limits**, in this order, before anything is decoded: the source known; at most
//! [`PushLimits::max_datagram`] bytes; a rate per server host and per network
//! ([`fragstat_core::fair::RateTable`], the HTTP guard's: IPv4 address and /24, IPv6 /64 and
//! /48), so one host takes at most its own rate of its network's. State is kept only for
//! known servers, in a [`FairTable`] of at most [`PushLimits::max_servers`] with caps per
//! prefix ([`PushLimits::caps`]: servers of one address, /24, /16), so a master list stuffed
//! with one network's addresses holds only that network's share; per server at most
//! [`MAX_CLIENTS`] slots (names cut to the engine's 35 bytes, GUIDs at most 64) and
//! [`MAX_PENDING`] changes awaiting a scan.
//!
//! **What becomes an event.** `connect` → `player_joined` (a `connect` into a slot held by
//! someone else first yields that one's `player_left`; the same client again, a reconnect,
//! nothing); `disconnect` → `player_left` for the slot's player (nothing for a slot the
//! listener never saw filled); `name` → `player_left` of the old name and `player_joined` of
//! the new (a rename is one leaving and one joining, as in a scan); `map` → `map_changed`
//! from the last known map (the last scan's or push's) when it differs. `ws` rows fill slots
//! the listener had not seen (a server already full when it started listening) without an
//! event, so their `disconnect` is reported. `stop` and `start` (the server shuts down; it
//! starts with a new, empty client table: `SV_Startup`) empty the slots without events (as in
//! a scan, players do not leave a server that is down: the next scan says it is down);
//! `maprestart`, `mapend`, `p`, `wsc` yield nothing: a scan has no such events.
//!
//! **Pushed and scanned events reconciled** ([`PushListener::reconcile`]): every pushed join,
//! leave and map change waits, per server, for the scan that sees it; that scan's matching
//! event (same kind, same name bytes; the map's name) is dropped instead of published again.
//! A pushed join and a pushed leave of the same name cancel out (the scan sees no change). A
//! change pushed before two scans started that neither confirmed (their player lists differ)
//! is forgotten; scans that could not check it (no list, the server down) do not count, and
//! it waits at most [`PushLimits::pending_for`]. A leave the scan reports on its own empties
//! the slot holding that name, so its later `disconnect` is not reported twice.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use fragstat_core::fair::{canonical, Caps, FairTable, Rate, RateTable};
use fragstat_core::model::{Dialect, Text};
use fragstat_core::record::{Record, Status};
use fragstat_quake3_oob::push::{decode_push, Push, PushClient, MAX_CLIENTS};

use super::{key_bytes, Event, EventKind, EventPlayer};

/// Games whose servers push (ET: Legacy's `sv_tracker`; a W:ET master lists ET: Legacy
/// servers too, so `et` records are heard as well).
pub const PUSH_GAMES: [&str; 2] = ["etl", "et"];
/// Bytes of a name kept: `cl->name` is `char[MAX_NAME_LENGTH]` (36, etl `q_shared.h:512`) and
/// getstatus shows it, so a longer userinfo name (the `name` event's) is cut as the engine
/// cuts it (`Q_strncpyz(cl->name, …, sizeof(cl->name))`, etl `sv_client.c:1964`).
pub const NAME_BYTES: usize = 35;
/// Changes awaiting a scan per server at most (the oldest forgotten past it).
pub const MAX_PENDING: usize = 2 * MAX_CLIENTS as usize;
/// Scans that could check a pushed change and did not see it before it is forgotten: two,
/// as a scan may start between the push and the change it tells reaching the server's
/// replies.
const MISSES: u8 = 2;

/// The listener's limits (module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PushLimits {
    /// Longest datagram taken (bytes).
    pub max_datagram: usize,
    /// Datagrams per server host (IPv4 address, IPv6 /64).
    pub host_rate: Rate,
    /// Datagrams per network (IPv4 /24, IPv6 /48).
    pub net_rate: Rate,
    /// Servers whose state is kept at most.
    pub max_servers: u64,
    /// Servers kept per IPv4 address, /24, /16 and IPv6 /64, /56, /48, /32.
    pub caps: Caps,
    /// How long a pushed change waits for a scan to see it.
    pub pending_for: Duration,
}

impl Default for PushLimits {
    /// 1400 bytes (an ET: Legacy event is under 200; a stats row with every weapon under
    /// 1 KiB); 20 datagrams a second per host with a burst of 200 (a full server sends `p`,
    /// `wsc` and up to 64 `ws` rows every 16 s: 66 at once, ~4 a second, so three full servers
    /// of one host at once); 100 a second per /24 (burst 800); 4,096 servers, 128 per
    /// address, 512 per /24, 2,048 per /16 (IPv6: /64, /56, /48, /32 alike, the /32 4,096);
    /// changes wait 15 minutes for a scan.
    fn default() -> Self {
        PushLimits {
            max_datagram: 1400,
            host_rate: Rate {
                per_sec: 20,
                burst: 200,
            },
            net_rate: Rate {
                per_sec: 100,
                burst: 800,
            },
            max_servers: 4096,
            caps: Caps {
                v4: [128, 512, 2048],
                v6: [128, 512, 2048, 4096],
            },
            pending_for: Duration::from_secs(900),
        }
    }
}

impl PushLimits {
    /// Checks the values: a datagram of at least 16 bytes, rates with a burst, caps in order.
    pub fn check(&self) -> Result<(), String> {
        if !(16..=65_535).contains(&self.max_datagram) {
            return Err("push max_datagram must be between 16 and 65535 bytes".into());
        }
        for (what, r) in [("host", self.host_rate), ("net", self.net_rate)] {
            if !r.is_unlimited() && r.burst == 0 {
                return Err(format!("push {what} rate: the burst must be at least 1"));
            }
        }
        if self.max_servers == 0 {
            return Err("push max_servers must be at least 1".into());
        }
        if self.pending_for.is_zero() {
            return Err("push pending time must be positive".into());
        }
        self.caps.check("push servers per prefix")
    }
}

/// Why a datagram was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Dropped {
    /// Its source address and port is no known server (or one refused its share).
    Unknown,
    /// Longer than [`PushLimits::max_datagram`].
    TooLarge,
    /// Its host or network is over its rate.
    Rate,
    /// Not an `sv_tracker` datagram ([`decode_push`] refused it).
    Malformed,
}

impl Dropped {
    /// `unknown`, `too_large`, `rate` or `malformed`.
    pub fn name(self) -> &'static str {
        match self {
            Dropped::Unknown => "unknown",
            Dropped::TooLarge => "too_large",
            Dropped::Rate => "rate",
            Dropped::Malformed => "malformed",
        }
    }
}

/// What the listener did so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PushStats {
    /// Datagrams taken (decoded and applied).
    pub accepted: u64,
    /// Dropped: unknown source.
    pub unknown: u64,
    /// Dropped: too long.
    pub too_large: u64,
    /// Dropped: over a rate.
    pub rate: u64,
    /// Dropped: not decodable.
    pub malformed: u64,
    /// Events made from pushes.
    pub events: u64,
    /// Scanned events dropped because a push had already said them.
    pub reconciled: u64,
    /// Known servers refused a place (their prefix at its cap, or the table full).
    pub refused_servers: u64,
}

#[derive(Debug, Clone)]
struct Slot {
    /// Empty when learned from a stats row (no GUID there).
    guid: Vec<u8>,
    name: Vec<u8>,
}

#[derive(Debug)]
struct Pending {
    key: Box<[u8]>,
    joined: bool,
    at: i64,
    /// Scans that could check it and did not confirm it.
    missed: u8,
}

#[derive(Debug)]
struct Server {
    /// The address as the records write it (events carry it).
    addr: String,
    game: String,
    dialect: Dialect,
    slots: Vec<Option<Slot>>,
    map: Option<Vec<u8>>,
    pending: VecDeque<Pending>,
    /// A pushed map awaiting a scan: the map, when, scans that missed it.
    pending_map: Option<(Vec<u8>, i64, u8)>,
}

impl Server {
    fn new(addr: String, game: String, dialect: Dialect) -> Self {
        Server {
            addr,
            game,
            dialect,
            slots: vec![None; usize::from(MAX_CLIENTS)],
            map: None,
            pending: VecDeque::new(),
            pending_map: None,
        }
    }

    fn player(&self, slot: u8, s: &Slot) -> EventPlayer {
        let mut p = EventPlayer::new(Text::new(s.name.clone(), self.dialect));
        p.slot = Some(u32::from(slot));
        p.guid = (!s.guid.is_empty()).then(|| s.guid.clone());
        p
    }

    /// A pushed join or leave of `name` awaits the scan: cancels the opposite one of the
    /// same name instead (the scan sees no change).
    fn expect(&mut self, name: &[u8], joined: bool, at: i64) {
        let key = key_bytes(name);
        if let Some(i) = self
            .pending
            .iter()
            .position(|p| p.joined != joined && *p.key == *key)
        {
            self.pending.remove(i);
            return;
        }
        if self.pending.len() >= MAX_PENDING {
            self.pending.pop_front();
        }
        self.pending.push_back(Pending {
            key: key.into(),
            joined,
            at,
            missed: 0,
        });
    }
}

/// The dialect of a game's names when no record said it.
fn dialect_of(game: &str) -> Dialect {
    game.parse::<fragstat_quake3_oob::Quake3Game>()
        .map_or(Dialect::Etl, |g| g.dialect(None))
}

/// A name as the engine keeps it (`cl->name`: [`NAME_BYTES`]).
fn engine_name(name: &[u8]) -> Vec<u8> {
    name.get(..NAME_BYTES).unwrap_or(name).to_vec()
}

/// The sans-IO listener (module docs).
#[derive(Debug)]
pub struct PushListener {
    limits: PushLimits,
    table: FairTable<SocketAddr>,
    servers: HashMap<SocketAddr, Server>,
    rates: RateTable,
    stats: PushStats,
}

impl PushListener {
    /// A listener knowing no server yet; its rates' clock starts at `origin`.
    pub fn new(limits: PushLimits, origin: Instant) -> Self {
        PushListener {
            limits,
            table: FairTable::new(limits.caps, limits.max_servers),
            servers: HashMap::new(),
            rates: RateTable::new(limits.host_rate, limits.net_rate, origin),
            stats: PushStats::default(),
        }
    }

    /// The limits.
    pub fn limits(&self) -> &PushLimits {
        &self.limits
    }

    /// What it did so far.
    pub fn stats(&self) -> PushStats {
        self.stats
    }

    /// Servers heard now.
    pub fn known(&self) -> usize {
        self.servers.len()
    }

    /// Whether datagrams from `addr` are heard.
    pub fn knows(&self, addr: SocketAddr) -> bool {
        self.servers
            .contains_key(&SocketAddr::new(canonical(addr.ip()), addr.port()))
    }

    /// The servers heard from now on: `records`' of a game that pushes ([`PUSH_GAMES`]),
    /// with a literal address (each scan's records; a server no longer among them is
    /// forgotten with its state). Their maps and names' dialect are taken from the records.
    pub fn know(&mut self, records: &[Record]) {
        let mut now: HashMap<SocketAddr, &Record> = HashMap::new();
        for r in records {
            if !PUSH_GAMES.contains(&r.game.as_str()) {
                continue;
            }
            let Some(addr) = r
                .address
                .as_deref()
                .and_then(|a| a.parse::<SocketAddr>().ok())
            else {
                continue;
            };
            now.insert(SocketAddr::new(canonical(addr.ip()), addr.port()), r);
        }
        let gone: Vec<SocketAddr> = self
            .servers
            .keys()
            .filter(|a| !now.contains_key(a))
            .copied()
            .collect();
        for a in gone {
            self.servers.remove(&a);
            self.table.remove(&a);
        }
        for (addr, r) in now {
            if !self.servers.contains_key(&addr) {
                let (admitted, displaced) = self.table.admit(addr, addr.ip(), 1);
                for d in displaced {
                    self.servers.remove(&d);
                }
                if admitted.is_err() {
                    self.stats.refused_servers += 1;
                    continue;
                }
                let dialect = r
                    .info
                    .as_ref()
                    .map_or_else(|| dialect_of(&r.game), |i| i.name.dialect());
                let text = r.address.clone().unwrap_or_else(|| addr.to_string());
                self.servers
                    .insert(addr, Server::new(text, r.game.clone(), dialect));
            }
            let Some(server) = self.servers.get_mut(&addr) else {
                continue;
            };
            if let (Some(info), Status::Online) = (&r.info, r.status) {
                server.dialect = info.name.dialect();
                // A map pushed since is newer than what this scan saw.
                if server.pending_map.is_none() {
                    server.map = Some(info.map.as_bytes().to_vec());
                }
            }
        }
    }

    /// One datagram from `from`, received at `now` (`at`: the same time in Unix ms, the
    /// events' `at`): its events, or why it was dropped (counted in [`PushListener::stats`]).
    pub fn handle(
        &mut self,
        now: Instant,
        at: i64,
        from: SocketAddr,
        datagram: &[u8],
    ) -> Result<Vec<Event>, Dropped> {
        let from = SocketAddr::new(canonical(from.ip()), from.port());
        let dropped = self.admit(now, from, datagram.len()).err();
        let push = match dropped {
            Some(d) => Err(d),
            None => decode_push(datagram).map_err(|e| {
                tracing::debug!(%from, "push dropped: {e}");
                Dropped::Malformed
            }),
        };
        let push = match push {
            Ok(p) => p,
            Err(d) => {
                match d {
                    Dropped::Unknown => self.stats.unknown += 1,
                    Dropped::TooLarge => self.stats.too_large += 1,
                    Dropped::Rate => self.stats.rate += 1,
                    Dropped::Malformed => self.stats.malformed += 1,
                }
                return Err(d);
            }
        };
        let Some(server) = self.servers.get_mut(&from) else {
            return Err(Dropped::Unknown);
        };
        let events = apply(server, at, push);
        self.stats.accepted += 1;
        self.stats.events += events.len() as u64;
        Ok(events)
    }

    /// The checks before decoding: known, size, rates.
    fn admit(&mut self, now: Instant, from: SocketAddr, len: usize) -> Result<(), Dropped> {
        if !self.servers.contains_key(&from) {
            return Err(Dropped::Unknown);
        }
        if len > self.limits.max_datagram {
            return Err(Dropped::TooLarge);
        }
        self.rates.check(from.ip(), now).map_err(|_| Dropped::Rate)
    }

    /// A scan's `events` (started at `at`, of `records`) without those a push already
    /// published (module docs); then what the pushes await is settled against `records`.
    /// Call [`PushListener::know`] with the same records after.
    pub fn reconcile(&mut self, at: i64, records: &[Record], events: Vec<Event>) -> Vec<Event> {
        let before = events.len();
        let out: Vec<Event> = events
            .into_iter()
            .filter(|e| !self.already_pushed(e))
            .collect();
        self.stats.reconciled += (before - out.len()) as u64;
        let expired = at.saturating_sub(self.limits.pending_for.as_millis() as i64);
        for r in records {
            let Some(addr) = r
                .address
                .as_deref()
                .and_then(|a| a.parse::<SocketAddr>().ok())
            else {
                continue;
            };
            let addr = SocketAddr::new(canonical(addr.ip()), addr.port());
            let Some(server) = self.servers.get_mut(&addr) else {
                continue;
            };
            // What two scans could check and did not confirm is forgotten (one may have
            // started between the push and the change it tells); the rest waits.
            let checked = r.status == Status::Online;
            let listed = checked && r.info.as_ref().is_some_and(|i| i.players.is_some());
            server.pending.retain_mut(|p| {
                if listed && p.at < at {
                    p.missed += 1;
                }
                p.at >= expired && p.missed < MISSES
            });
            if let Some((_, t, missed)) = &mut server.pending_map {
                if checked && *t < at {
                    *missed += 1;
                }
                if *t < expired || *missed >= MISSES {
                    server.pending_map = None;
                }
            }
        }
        out
    }

    /// Whether a scanned event repeats one a push published (consuming what it matched).
    fn already_pushed(&mut self, e: &Event) -> bool {
        let Ok(addr) = e.server.parse::<SocketAddr>() else {
            return false;
        };
        let addr = SocketAddr::new(canonical(addr.ip()), addr.port());
        let Some(server) = self.servers.get_mut(&addr) else {
            return false;
        };
        match &e.kind {
            EventKind::PlayerJoined(p) | EventKind::PlayerLeft(p) => {
                let joined = matches!(e.kind, EventKind::PlayerJoined(_));
                let key = key_bytes(p.name.as_bytes());
                let found = server
                    .pending
                    .iter()
                    .position(|x| x.joined == joined && *x.key == *key);
                if let Some(i) = found {
                    server.pending.remove(i);
                    return true;
                }
                if !joined {
                    // Seen leaving without a push: its slot is free, and its `disconnect`
                    // (if it comes) is not reported again.
                    for s in server.slots.iter_mut() {
                        if s.as_ref().is_some_and(|s| key_bytes(&s.name) == key) {
                            *s = None;
                        }
                    }
                }
                false
            }
            EventKind::MapChanged { to, .. } => {
                if server
                    .pending_map
                    .as_ref()
                    .is_some_and(|(m, _, _)| m[..] == *to.as_bytes())
                {
                    server.pending_map = None;
                    return true;
                }
                false
            }
            _ => false,
        }
    }
}

/// Applies one push to its server's state: the events it makes.
fn apply(server: &mut Server, at: i64, push: Push) -> Vec<Event> {
    let mut kinds = Vec::new();
    match push {
        Push::Connect(c) | Push::Name(c) => seat(server, at, c, &mut kinds),
        Push::Disconnect { slot } => {
            if let Some(old) = server
                .slots
                .get_mut(usize::from(slot))
                .and_then(Option::take)
            {
                server.expect(&old.name, false, at);
                kinds.push(EventKind::PlayerLeft(server.player(slot, &old)));
            }
        }
        Push::Map { map } => {
            let from = server.map.clone().unwrap_or_default();
            if from != map {
                kinds.push(EventKind::MapChanged {
                    from: Text::new(from, server.dialect),
                    to: Text::new(map.clone(), server.dialect),
                });
                server.pending_map = Some((map.clone(), at, 0));
                server.map = Some(map);
            }
        }
        Push::StatsRow(w) => {
            if let Some(s) = server.slots.get_mut(usize::from(w.slot)) {
                if s.is_none() {
                    *s = Some(Slot {
                        guid: Vec::new(),
                        name: engine_name(&w.name),
                    });
                }
            }
        }
        Push::Stop | Push::Start => server.slots.iter_mut().for_each(|s| *s = None),
        // Liveness only: a scan has no such events.
        _ => {}
    }
    kinds
        .into_iter()
        .map(|k| Event::new(at, server.addr.clone(), server.game.clone(), k).as_pushed())
        .collect()
}

/// `connect` or `name`: the slot's client is `c` now.
fn seat(server: &mut Server, at: i64, c: PushClient, kinds: &mut Vec<EventKind>) {
    let new = Slot {
        guid: c.guid,
        name: engine_name(&c.name),
    };
    let Some(slot) = server.slots.get_mut(usize::from(c.slot)) else {
        return;
    };
    let old = slot.replace(new.clone());
    if let Some(old) = old {
        if old.name == new.name {
            // A reconnect, or the GUID learned for a slot a stats row filled.
            return;
        }
        server.expect(&old.name, false, at);
        kinds.push(EventKind::PlayerLeft(server.player(c.slot, &old)));
    }
    server.expect(&new.name, true, at);
    kinds.push(EventKind::PlayerJoined(server.player(c.slot, &new)));
}

#[cfg(test)]
mod tests;
