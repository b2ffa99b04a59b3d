//! Lists: what a `getservers` request selects, encoded once and cached until what it could
//! show changes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use fragstat_core::service::Outbox;
use fragstat_quake3_oob::{encode_server_list, EotStyle, GetServers};

use super::{Master, MAX_PACKET};

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

#[derive(Debug)]
pub(super) struct CachedList {
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
