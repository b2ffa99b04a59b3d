//! Lists: what a `getservers` request selects, encoded once and cached until what it could
//! show changes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use fragstat_core::service::Outbox;
use fragstat_quake3_oob::{encode_server_list, EotStyle, GetServers};

use super::{Master, MAX_PACKET};
use crate::stats::Drop;

/// What distinguishes one list from another: only values that can match a listed server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct ListKey {
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

/// An encoded list.
#[derive(Debug, Clone)]
pub(super) struct Encoded {
    datagrams: Arc<[Vec<u8>]>,
    bytes: u64,
    /// Cut to the reply cap.
    truncated: bool,
}

#[derive(Debug)]
pub(super) struct CachedList {
    generation: u64,
    built: u64,
    used: u64,
    /// Requests it served (kept when it is rebuilt), halved every [`HITS_WINDOW_MS`] after
    /// `window`.
    hits: u32,
    window: u64,
    list: Encoded,
}

/// How long a cached list's count of requests lasts before it is halved.
const HITS_WINDOW_MS: u64 = 10_000;

impl CachedList {
    /// Its requests lately, at `t`.
    fn hits_at(&self, t: u64) -> u32 {
        let age = (t / HITS_WINDOW_MS).saturating_sub(self.window);
        self.hits
            .checked_shr(u32::try_from(age).unwrap_or(u32::MAX))
            .unwrap_or(0)
    }
}

/// Most distinct lists kept encoded; the least recently used goes first.
const MAX_CACHED_LISTS: usize = 64;

/// A list may be this stale while servers keep registering (a master with 10,000 servers sees
/// dozens of re-registrations a second; rebuilding for each request would cost more than the
/// list is worth).
const LIST_STALENESS_MS: u64 = 1000;

/// Games that clients ask for without a name (`getservers <protocol>`).
const ANONYMOUS: [&str; 3] = ["Quake3Arena", "et", "wolfmp"];

impl Master {
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

    /// What `key`'s list costs, before it is built: the cached list's size, else a bound from
    /// the servers of its protocol (every one of them matching), within the reply cap.
    fn estimate(&self, key: Option<&ListKey>, ext: bool) -> u64 {
        let Some(key) = key else {
            return bytes_of(&self.empty_lists[usize::from(ext)]);
        };
        if let Some(c) = self.lists.get(key) {
            return c.list.bytes;
        }
        let n = self.protocols.get(&key.protocol).copied().unwrap_or(0);
        let bound = list_bound(n, if key.v6 { 19 } else { 7 }) as u64;
        bound.min(self.config.limits.lists.max_reply)
    }

    /// The encoded list for `key`: from the cache when nothing changed since it was built (or
    /// it is less than a second old), else built and cached, the least recently used list
    /// making room. When the bound on builds a second is hit, the cached list is served
    /// stale; `None` when there is none.
    fn list_for(&mut self, key: Option<ListKey>, ext: bool, now: Instant) -> Option<Encoded> {
        let Some(key) = key else {
            let datagrams = Arc::clone(&self.empty_lists[usize::from(ext)]);
            let bytes = bytes_of(&datagrams);
            return Some(Encoded {
                datagrams,
                bytes,
                truncated: false,
            });
        };
        let t = self.ms(now);
        self.lists_used += 1;
        let used = self.lists_used;
        let mut hits = 1;
        if let Some(c) = self.lists.get_mut(&key) {
            c.used = used;
            c.hits = c.hits_at(t).saturating_add(1);
            c.window = t / HITS_WINDOW_MS;
            hits = c.hits;
            if c.generation == self.generation || t.saturating_sub(c.built) < LIST_STALENESS_MS {
                return Some(c.list.clone());
            }
        }
        if !self.limits.build_list(now) {
            let stale = self.lists.get(&key).map(|c| c.list.clone());
            if stale.is_some() {
                self.stats.lists_stale += 1;
            }
            return stale;
        }
        let list = self.build(&key);
        if self.lists.len() >= MAX_CACHED_LISTS && !self.lists.contains_key(&key) {
            // The list asked for least lately goes first (the least recently used of those),
            // so keys that rotate evict each other rather than the lists clients keep asking
            // for.
            if let Some(victim) = self
                .lists
                .iter()
                .min_by_key(|(_, c)| (c.hits_at(t), c.used))
                .map(|(k, _)| *k)
            {
                self.lists.remove(&victim);
            }
        }
        self.lists.insert(
            key,
            CachedList {
                generation: self.generation,
                built: t,
                used,
                hits,
                window: t / HITS_WINDOW_MS,
                list: list.clone(),
            },
        );
        Some(list)
    }

    /// Selects and encodes `key`'s list, cut to the reply cap.
    fn build(&mut self, key: &ListKey) -> Encoded {
        let list = self.select_key(key);
        self.stats.lists_built += 1;
        let mut datagrams = encode_server_list(&list, key.ext, EotStyle::LastPacket, MAX_PACKET);
        let cap = self.config.limits.lists.max_reply;
        let mut truncated = false;
        if bytes_of(&datagrams) > cap {
            let keep = servers_within(&datagrams, key.ext, cap);
            datagrams =
                encode_server_list(&list[..keep], key.ext, EotStyle::LastPacket, MAX_PACKET);
            truncated = true;
        }
        let bytes = bytes_of(&datagrams);
        Encoded {
            datagrams: datagrams.into(),
            bytes,
            truncated,
        }
    }

    pub(super) fn on_getservers(
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
        // The budgets are charged an estimate before anything is built (M5).
        let key = self.list_key(req);
        let estimate = self.estimate(key.as_ref(), req.ext);
        let grant = match self.limits.send_list(from.ip(), estimate, now) {
            Ok(g) => g,
            Err(r) => {
                self.stats.drop(r.into());
                return;
            }
        };
        let Some(list) = self.list_for(key, req.ext, now) else {
            self.limits.settle_list(from.ip(), grant, 0, now);
            self.stats.drop(Drop::Builds);
            return;
        };
        self.limits.settle_list(from.ip(), grant, list.bytes, now);
        self.stats.lists += 1;
        self.stats.lists_reserve += u64::from(grant.reserve);
        self.stats.lists_truncated += u64::from(list.truncated);
        self.stats.bytes_sent += list.bytes;
        out.extend(list.datagrams.iter().map(|p| (from, p.clone())));
    }
}

/// Bytes of `datagrams` in all.
fn bytes_of(datagrams: &[Vec<u8>]) -> u64 {
    datagrams.iter().map(|d| d.len() as u64).sum()
}

/// Bytes a list of `servers` entries of `entry` bytes (7 for IPv4, 19 for IPv6) can take, in
/// datagrams of [`MAX_PACKET`].
pub(super) fn list_bound(servers: usize, entry: usize) -> usize {
    let per = (MAX_PACKET - 40) / entry.max(1);
    servers * entry + servers.div_ceil(per.max(1)) * 40 + 40
}

/// How many servers the first datagrams of an encoded list hold, as many datagrams as fit in
/// `cap` bytes with the end marker added to the last (at least the first one).
fn servers_within(datagrams: &[Vec<u8>], ext: bool, cap: u64) -> usize {
    let head = 4 + if ext {
        "getserversExtResponse".len()
    } else {
        "getserversResponse".len()
    };
    let marker = b"\\EOT\0\0\0".len() as u64;
    let (mut total, mut servers) = (marker, 0);
    // Every datagram but the last holds entries only (the marker goes on the last).
    for (i, d) in datagrams[..datagrams.len().saturating_sub(1)]
        .iter()
        .enumerate()
    {
        if i > 0 && total + d.len() as u64 > cap {
            break;
        }
        total += d.len() as u64;
        let mut body = d.get(head..).unwrap_or_default();
        while let Some(&kind) = body.first() {
            let len = if kind == b'/' { 19 } else { 7 };
            body = body.get(len..).unwrap_or_default();
            servers += 1;
        }
    }
    servers
}
