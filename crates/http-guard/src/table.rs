//! The connection table, sans-IO (every call takes the time): which connections are open,
//! which of them are idle (no request in progress: new, or kept alive between requests) and
//! since when, and what each address prefix holds against its caps ([`Shares`]).
//!
//! Admission:
//! - a prefix of the newcomer at its cap: the newcomer takes the place of an idle connection
//!   inside that prefix (of the host holding the most there, the oldest first), or is refused
//!   when every connection there is busy;
//! - the table full: the newcomer takes the place of an idle connection of the widest
//!   prefix (IPv4 /16, IPv6 /32) holding the most connections that has any idle one (within
//!   it, of the narrower prefix holding the most, the oldest first), or is refused when no
//!   connection at all is idle.
//!
//! So a flood of idle connections only ever displaces itself (or idle, kept-alive connections,
//! which cost their owner one reconnect), and a connection answering a request is never cut.
//! Connections from trusted proxies carry many clients: they are not held to the prefix caps
//! but count in the total and can be displaced when idle.

use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;
use std::time::Instant;

use fragstat_core::fair::{prefixes, Caps, Level, Prefix, Refusal, Shares};

/// A connection's number in the table.
pub(crate) type Id = u64;

#[derive(Debug)]
struct Entry<H> {
    ip: IpAddr,
    group: Prefix,
    capped: bool,
    idle_since: Option<Instant>,
    /// Has had a request: a kept-alive client's, displaced only after never-used ones.
    served: bool,
    /// Bytes of a request have arrived (its headers are not complete yet): displaced only
    /// after silent ones.
    started: bool,
    handle: H,
}

#[derive(Debug, Default)]
struct Group {
    count: u64,
    /// Idle connections, oldest first.
    idle: BTreeSet<(Instant, Id)>,
}

/// How much a connection should go first when room is needed (the larger, the sooner):
/// silent, never used, then what its prefixes hold, widest first.
type Preference = (bool, bool, [u64; 4]);

/// Why a connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Every connection is busy and the table is full.
    Full,
    /// The host (IPv4 address, IPv6 /64) holds its cap, all of it busy.
    Host,
    /// A wider prefix holds its cap, all of it busy.
    Prefix(Prefix),
}

/// A connection taken in.
#[derive(Debug)]
pub(crate) struct Admitted<H> {
    /// Its number.
    pub id: Id,
    /// The idle connection it displaced: to be closed.
    pub evicted: Option<H>,
}

/// The table (see the module documentation). `H` is what closes a connection.
#[derive(Debug)]
pub(crate) struct Table<H> {
    shares: Shares,
    total_cap: usize,
    next: Id,
    conns: HashMap<Id, Entry<H>>,
    groups: HashMap<Prefix, Group>,
    /// Widest prefixes by connections held.
    by_count: BTreeSet<(u64, Prefix)>,
}

impl<H> Table<H> {
    /// An empty table of at most `total_cap` connections, `caps` per prefix.
    pub fn new(caps: Caps, total_cap: usize) -> Self {
        Table {
            shares: Shares::new(caps),
            total_cap: total_cap.max(1),
            next: 0,
            conns: HashMap::new(),
            groups: HashMap::new(),
            by_count: BTreeSet::new(),
        }
    }

    /// Connections held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.conns.len()
    }

    /// Takes in a connection from `ip` (`capped`: held to the prefix caps; false for trusted
    /// proxies), idle from `now`, displacing an idle one if need be.
    pub fn admit(
        &mut self,
        ip: IpAddr,
        capped: bool,
        now: Instant,
        handle: H,
    ) -> Result<Admitted<H>, Refused> {
        let mut evicted = None;
        if capped {
            if let Err(Refusal::Share(p)) = self.shares.check(ip, 1) {
                let victim = self.pick(self.groups.get(&Prefix::widest(ip)), Some(p));
                match victim {
                    Some(id) => evicted = self.remove(id),
                    None if p.level() == Level::Host => return Err(Refused::Host),
                    None => return Err(Refused::Prefix(p)),
                }
            }
        }
        if self.conns.len() >= self.total_cap {
            match self.victim() {
                Some(id) => evicted = self.remove(id).or(evicted),
                None => return Err(Refused::Full),
            }
        }
        let id = self.next;
        self.next += 1;
        let group = Prefix::widest(ip);
        if capped {
            self.shares.add(ip, 1);
        }
        let g = self.groups.entry(group).or_default();
        self.by_count.remove(&(g.count, group));
        g.count += 1;
        g.idle.insert((now, id));
        self.by_count.insert((g.count, group));
        self.conns.insert(
            id,
            Entry {
                ip,
                group,
                capped,
                idle_since: Some(now),
                served: false,
                started: false,
                handle,
            },
        );
        Ok(Admitted { id, evicted })
    }

    /// The idle connection to displace when the table is full: in the widest prefix holding
    /// the most that has an idle one (ties: the oldest idle connection).
    fn victim(&self) -> Option<Id> {
        let mut best: Option<(u64, Id, Instant)> = None;
        for &(count, prefix) in self.by_count.iter().rev() {
            if best.is_some_and(|(c, _, _)| count < c) {
                break;
            }
            let Some(id) = self.pick(self.groups.get(&prefix), None) else {
                continue;
            };
            let since = self.conns.get(&id).and_then(|e| e.idle_since);
            let Some(since) = since else { continue };
            if best.is_none_or(|(_, _, s)| since < s) {
                best = Some((count, id, since));
            }
        }
        best.map(|(_, id, _)| id)
    }

    /// Among `group`'s idle connections (those inside `within` only, when given), a silent
    /// one before one whose request has started arriving, one that never had a request
    /// before a kept-alive one (whose client may be sending its next
    /// request right now), then the one of the narrower prefixes holding the most, the oldest
    /// first.
    fn pick(&self, group: Option<&Group>, within: Option<Prefix>) -> Option<Id> {
        let mut best: Option<(Preference, Id)> = None;
        for &(_, id) in &group?.idle {
            let Some(e) = self.conns.get(&id) else {
                continue;
            };
            if within.is_some_and(|p| !p.contains(e.ip)) {
                continue;
            }
            // What the entry's prefixes hold, widest first (its /16 or /32 is the group's).
            let mut held = [0u64; 4];
            for (slot, p) in held.iter_mut().rev().zip(prefixes(e.ip)) {
                *slot = self.shares.held(&p);
            }
            let key = (!e.started, !e.served, held);
            // Oldest first among equals: the set is walked oldest first, so only a heavier
            // one replaces the best.
            if best.is_none_or(|(k, _)| key > k) {
                best = Some((key, id));
            }
        }
        best.map(|(_, id)| id)
    }

    /// The connection has a request in progress: it cannot be displaced.
    pub fn busy(&mut self, id: Id) {
        let Some(e) = self.conns.get_mut(&id) else {
            return;
        };
        e.served = true;
        if let Some(since) = e.idle_since.take() {
            if let Some(g) = self.groups.get_mut(&e.group) {
                g.idle.remove(&(since, id));
            }
        }
    }

    /// Bytes of the connection's next request have arrived.
    pub fn started(&mut self, id: Id) {
        if let Some(e) = self.conns.get_mut(&id) {
            e.started = true;
        }
    }

    /// The connection answered its request and waits for another, from `now`.
    pub fn idle(&mut self, id: Id, now: Instant) {
        let Some(e) = self.conns.get_mut(&id) else {
            return;
        };
        e.started = false;
        if e.idle_since.is_none() {
            e.idle_since = Some(now);
            if let Some(g) = self.groups.get_mut(&e.group) {
                g.idle.insert((now, id));
            }
        }
    }

    /// Forgets a connection (closed, or displaced): its handle, if it was held.
    pub fn remove(&mut self, id: Id) -> Option<H> {
        let e = self.conns.remove(&id)?;
        if e.capped {
            self.shares.sub(e.ip, 1);
        }
        if let Some(g) = self.groups.get_mut(&e.group) {
            if let Some(since) = e.idle_since {
                g.idle.remove(&(since, id));
            }
            self.by_count.remove(&(g.count, e.group));
            g.count = g.count.saturating_sub(1);
            if g.count == 0 {
                self.groups.remove(&e.group);
            } else {
                self.by_count.insert((g.count, e.group));
            }
        }
        Some(e.handle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    const CAPS: Caps = Caps {
        v4: [2, 4, 6],
        v6: [2, 4, 6, 8],
    };

    #[test]
    fn a_full_table_displaces_the_oldest_idle_of_the_largest_network() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut t: Table<u32> = Table::new(CAPS, 5);
        // A network (10.1/16) with four connections, another (10.2/16) with one.
        for (i, a) in ["10.1.0.1", "10.1.0.2", "10.1.1.1", "10.1.1.2"]
            .into_iter()
            .enumerate()
        {
            let n = u32::try_from(i).unwrap();
            assert!(t
                .admit(ip(a), true, at(u64::from(n)), n)
                .unwrap()
                .evicted
                .is_none());
        }
        t.admit(ip("10.2.0.1"), true, at(0), 9).unwrap();
        // Full: a stranger displaces the oldest idle connection of 10.1/16.
        let a = t.admit(ip("10.3.0.1"), true, at(10), 10).unwrap();
        assert_eq!(a.evicted, Some(0));
        // Busy connections are never displaced: with 10.1/16's all busy, 10.2's idle goes.
        for id in [1, 2, 3] {
            t.busy(id);
        }
        let b = t.admit(ip("10.4.0.1"), true, at(11), 11).unwrap();
        assert!(
            b.evicted == Some(9) || b.evicted == Some(10),
            "{:?}",
            b.evicted
        );
        // Everyone busy: refused.
        for id in 0..20 {
            t.busy(id);
        }
        assert_eq!(
            t.admit(ip("10.5.0.1"), true, at(12), 12).unwrap_err(),
            Refused::Full
        );
        assert_eq!(t.len(), 5);
        // Idle again after its answer: displaceable again.
        t.idle(1, at(13));
        assert_eq!(
            t.admit(ip("10.5.0.1"), true, at(14), 12).unwrap().evicted,
            Some(1)
        );
    }

    #[test]
    fn a_prefix_at_its_cap_makes_room_inside_itself_or_is_refused() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut t: Table<u32> = Table::new(CAPS, 100);
        t.admit(ip("10.0.0.1"), true, at(0), 0).unwrap();
        let b = t.admit(ip("10.0.0.1"), true, at(1), 1).unwrap();
        // The host's cap (2): its oldest idle goes.
        let c = t.admit(ip("10.0.0.1"), true, at(2), 2).unwrap();
        assert_eq!(c.evicted, Some(0));
        t.busy(b.id);
        t.busy(c.id);
        assert_eq!(
            t.admit(ip("10.0.0.1"), true, at(3), 3).unwrap_err(),
            Refused::Host
        );

        // The /24's cap (4): a newcomer in the /24 displaces an idle connection of the host
        // holding the most there (.2 holds two), not a neighbour's lone one, even older.
        let mut t: Table<u32> = Table::new(CAPS, 100);
        t.admit(ip("10.0.0.3"), true, at(0), 30).unwrap();
        t.admit(ip("10.0.0.2"), true, at(1), 20).unwrap();
        t.admit(ip("10.0.0.2"), true, at(2), 21).unwrap();
        t.admit(ip("10.0.0.4"), true, at(3), 40).unwrap();
        let n = t.admit(ip("10.0.0.5"), true, at(4), 50).unwrap();
        assert_eq!(n.evicted, Some(20), "the heaviest host's oldest");
        // Everything in the /24 busy: refused for the /24.
        for id in 0..10 {
            t.busy(id);
        }
        match t.admit(ip("10.0.0.9"), true, at(9), 90) {
            Err(Refused::Prefix(p)) => assert_eq!(p.to_string(), "10.0.0.0/24"),
            other => panic!("{other:?}"),
        }
        // Another /24 is not concerned.
        assert!(t.admit(ip("10.0.1.1"), true, at(9), 91).is_ok());
    }

    #[test]
    fn kept_alive_connections_go_after_never_used_ones() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut t: Table<u32> = Table::new(CAPS, 100);
        // A kept-alive connection (served, idle since 0) and a newer, never used one.
        let kept = t.admit(ip("10.0.0.1"), true, at(0), 0).unwrap();
        t.busy(kept.id);
        t.idle(kept.id, at(0));
        t.admit(ip("10.0.0.1"), true, at(5), 1).unwrap();
        let n = t.admit(ip("10.0.0.1"), true, at(6), 2).unwrap();
        assert_eq!(n.evicted, Some(1), "the never-used one, though newer");
        // One whose request is arriving goes after a silent one.
        let mut t: Table<u32> = Table::new(CAPS, 100);
        let a = t.admit(ip("10.0.0.1"), true, at(0), 0).unwrap();
        t.started(a.id);
        t.admit(ip("10.0.0.1"), true, at(5), 1).unwrap();
        let n = t.admit(ip("10.0.0.1"), true, at(6), 2).unwrap();
        assert_eq!(n.evicted, Some(1), "the silent one, though newer");
    }

    #[test]
    fn trusted_proxies_are_not_capped_and_removal_frees_everything() {
        let t0 = Instant::now();
        let mut t: Table<u32> = Table::new(CAPS, 10);
        for i in 0..8 {
            let a = t.admit(ip("127.0.0.1"), false, t0, i).unwrap();
            assert!(a.evicted.is_none());
        }
        assert_eq!(t.len(), 8);
        for id in 0..8 {
            assert!(t.remove(id).is_some());
        }
        assert!(t.remove(0).is_none());
        assert_eq!(t.len(), 0);
        assert!(t.groups.is_empty() && t.by_count.is_empty());
        assert_eq!(t.shares.prefixes_held(), 0);
        // IPv6: a /64 is a host.
        t.admit(ip("2001:db8::1"), true, t0, 1).unwrap();
        t.admit(ip("2001:db8::2"), true, t0, 2).unwrap();
        let id = t.admit(ip("2001:db8::3"), true, t0, 3).unwrap();
        assert_eq!(id.evicted, Some(1));
    }
}
