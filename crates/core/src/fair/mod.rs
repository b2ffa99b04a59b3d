//! Fair shares of a bounded table among address prefixes: what every listener that keeps
//! state for strangers (the master's server list, the DDNet master's registrations, the HTTP
//! listeners' connection slots) uses so that no one network can take what everyone needs.
//!
//! An address belongs to one prefix at each [`Level`]: for IPv4 the address, its /24 and its
//! /16; for IPv6 its /64, /56, /48 and /32 (what allocation policies hand one host, one
//! site, one customer and one provider). [`Shares`] counts what each prefix holds against a
//! cap per level ([`Caps`]); [`FairTable`] adds a total cap and, when the total is full,
//! names whom a newcomer displaces: the newest entry of the widest prefix (IPv4 /16, IPv6
//! /32) that holds the most, never an entry of the newcomer's own widest prefix. A stranger
//! is therefore refused only when its own networks are at their caps, and a flood from one
//! network can only displace its own entries once it is the largest holder.
//!
//! Sans-IO and O(log n) per operation: no scan of the table is ever made for a packet.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::hash::Hash;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

mod rate;
mod recent;
pub use rate::{Bucket, Rate, RateTable};
pub use recent::Recent;

/// A prefix level (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    /// One host: an IPv4 address, an IPv6 /64.
    Host,
    /// One site: an IPv4 /24, an IPv6 /56.
    Site,
    /// One network: an IPv4 /16, an IPv6 /48 (what a tunnel broker gives away).
    Net,
    /// One provider: an IPv6 /32 (IPv4 has no level this wide).
    Provider,
}

impl Level {
    /// Every level, narrowest first.
    pub const ALL: [Level; 4] = [Level::Host, Level::Site, Level::Net, Level::Provider];

    /// The prefix length of this level for IPv6 (`true`) or IPv4; `None` when the family has
    /// no such level.
    pub fn bits(self, v6: bool) -> Option<u8> {
        match (self, v6) {
            (Level::Host, false) => Some(32),
            (Level::Site, false) => Some(24),
            (Level::Net, false) => Some(16),
            (Level::Provider, false) => None,
            (Level::Host, true) => Some(64),
            (Level::Site, true) => Some(56),
            (Level::Net, true) => Some(48),
            (Level::Provider, true) => Some(32),
        }
    }

    fn index(self) -> usize {
        match self {
            Level::Host => 0,
            Level::Site => 1,
            Level::Net => 2,
            Level::Provider => 3,
        }
    }
}

/// An address prefix at one [`Level`]. IPv4-mapped IPv6 addresses are taken as IPv4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Prefix {
    v6: bool,
    len: u8,
    bits: u128,
}

// `len` is the prefix length (as in `2001:db8::/32`), not a count of elements.
#[allow(clippy::len_without_is_empty)]
impl Prefix {
    /// The prefix of `ip` at `level` (`None` for IPv4 at [`Level::Provider`]).
    pub fn of(ip: IpAddr, level: Level) -> Option<Prefix> {
        let (v6, value) = match canonical(ip) {
            IpAddr::V4(v4) => (false, u128::from(u32::from(v4))),
            IpAddr::V6(v6) => (true, u128::from(v6)),
        };
        let len = level.bits(v6)?;
        let width: u32 = if v6 { 128 } else { 32 };
        let shift = width - u32::from(len);
        let bits = value.checked_shr(shift).unwrap_or(0);
        Some(Prefix { v6, len, bits })
    }

    /// The widest prefix of `ip`: IPv4 /16, IPv6 /32.
    pub fn widest(ip: IpAddr) -> Prefix {
        let level = if canonical(ip).is_ipv6() {
            Level::Provider
        } else {
            Level::Net
        };
        // Every family has its widest level.
        Prefix::of(ip, level).unwrap_or(Prefix {
            v6: false,
            len: 0,
            bits: 0,
        })
    }

    /// Its level.
    pub fn level(&self) -> Level {
        Level::ALL
            .into_iter()
            .find(|l| l.bits(self.v6) == Some(self.len))
            .unwrap_or(Level::Provider)
    }

    /// The prefix length in bits.
    pub fn len(&self) -> u8 {
        self.len
    }

    /// True for an IPv6 prefix.
    pub fn is_ipv6(&self) -> bool {
        self.v6
    }

    /// Whether `ip` is inside this prefix.
    pub fn contains(&self, ip: IpAddr) -> bool {
        Prefix::of(ip, self.level()) == Some(*self)
    }

    /// The prefix's first address.
    pub fn network(&self) -> IpAddr {
        let width: u32 = if self.v6 { 128 } else { 32 };
        let value = self
            .bits
            .checked_shl(width - u32::from(self.len))
            .unwrap_or(0);
        if self.v6 {
            IpAddr::V6(Ipv6Addr::from(value))
        } else {
            IpAddr::V4(Ipv4Addr::from(u32::try_from(value).unwrap_or(0)))
        }
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network(), self.len)
    }
}

/// IPv4-mapped IPv6 addresses as IPv4.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// The prefixes of `ip`, narrowest first (three for IPv4, four for IPv6).
pub fn prefixes(ip: IpAddr) -> impl Iterator<Item = Prefix> {
    Level::ALL
        .into_iter()
        .filter_map(move |l| Prefix::of(ip, l))
}

/// A cap per level, for IPv4 (address, /24, /16) and IPv6 (/64, /56, /48, /32), in the unit
/// the table counts (entries, bytes…).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// IPv4: an address, a /24, a /16.
    pub v4: [u64; 3],
    /// IPv6: a /64, a /56, a /48, a /32.
    pub v6: [u64; 4],
}

impl Caps {
    /// No cap at any level.
    pub const NONE: Caps = Caps {
        v4: [u64::MAX; 3],
        v6: [u64::MAX; 4],
    };

    /// The cap of `p`'s level.
    pub fn of(&self, p: &Prefix) -> u64 {
        let i = p.level().index();
        let caps: &[u64] = if p.v6 { &self.v6 } else { &self.v4 };
        caps.get(i).copied().unwrap_or(u64::MAX)
    }

    /// Checks the caps: each at least 1 and no narrower than the level inside it (a /24 cap
    /// below its addresses' cap would only hide the smaller one).
    pub fn check(&self, what: &str) -> Result<(), String> {
        for (family, caps) in [("IPv4", &self.v4[..]), ("IPv6", &self.v6[..])] {
            if caps.contains(&0) {
                return Err(format!(
                    "{what}: every {family} prefix cap must be at least 1"
                ));
            }
            if caps.windows(2).any(|w| matches!(w, [a, b] if b < a)) {
                return Err(format!(
                    "{what}: a wider {family} prefix's cap must be at least a narrower one's"
                ));
            }
        }
        Ok(())
    }
}

/// Why a prefix table refused an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The prefix already holds its cap.
    Share(Prefix),
    /// The table is full and the newcomer's own widest prefix is the largest holder (or
    /// the entry alone is larger than the table).
    Full,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Share(p) => write!(f, "{p} holds its share"),
            Refusal::Full => f.write_str("full"),
        }
    }
}

/// What each prefix holds, against a cap per level: the counting half of [`FairTable`],
/// for callers with eviction rules of their own (the HTTP listener closes idle connections).
#[derive(Debug, Clone)]
pub struct Shares {
    caps: Caps,
    held: HashMap<Prefix, u64>,
}

impl Shares {
    /// Empty, with `caps`.
    pub fn new(caps: Caps) -> Self {
        Shares {
            caps,
            held: HashMap::new(),
        }
    }

    /// The caps.
    pub fn caps(&self) -> &Caps {
        &self.caps
    }

    /// What `p` holds.
    pub fn held(&self, p: &Prefix) -> u64 {
        self.held.get(p).copied().unwrap_or(0)
    }

    /// Would `weight` more for `ip` keep every prefix of it within its cap? The first (the
    /// narrowest) prefix over its cap otherwise.
    pub fn check(&self, ip: IpAddr, weight: u64) -> Result<(), Refusal> {
        for p in prefixes(ip) {
            if self.held(&p).saturating_add(weight) > self.caps.of(&p) {
                return Err(Refusal::Share(p));
            }
        }
        Ok(())
    }

    /// Counts `weight` for `ip` in every prefix (no check: see [`Shares::check`]).
    pub fn add(&mut self, ip: IpAddr, weight: u64) {
        for p in prefixes(ip) {
            let h = self.held.entry(p).or_default();
            *h = h.saturating_add(weight);
        }
    }

    /// Takes `weight` for `ip` back from every prefix; prefixes left at zero are forgotten.
    pub fn sub(&mut self, ip: IpAddr, weight: u64) {
        for p in prefixes(ip) {
            if let Some(h) = self.held.get_mut(&p) {
                *h = h.saturating_sub(weight);
                if *h == 0 {
                    self.held.remove(&p);
                }
            }
        }
    }

    /// Prefixes holding anything (all levels).
    pub fn prefixes_held(&self) -> usize {
        self.held.len()
    }
}

#[derive(Debug, Clone, Copy)]
struct Item {
    ip: IpAddr,
    weight: u64,
    seq: u64,
}

/// A table of entries keyed by `K`, each charged to an address, bounded per prefix
/// ([`Caps`]) and in all, that displaces instead of refusing (see the module
/// documentation). Entries carry a weight: 1 for counting servers or connections, a size
/// for counting bytes.
#[derive(Debug, Clone)]
pub struct FairTable<K> {
    shares: Shares,
    total_cap: u64,
    total: u64,
    seq: u64,
    items: HashMap<K, Item>,
    /// Entries of each widest prefix, oldest first.
    groups: HashMap<Prefix, BTreeMap<u64, K>>,
    /// Widest prefixes by what they hold.
    by_weight: BTreeSet<(u64, Prefix)>,
}

impl<K: Hash + Eq + Clone> FairTable<K> {
    /// An empty table holding at most `total_cap` in all and `caps` per prefix.
    pub fn new(caps: Caps, total_cap: u64) -> Self {
        FairTable {
            shares: Shares::new(caps),
            total_cap,
            total: 0,
            seq: 0,
            items: HashMap::new(),
            groups: HashMap::new(),
            by_weight: BTreeSet::new(),
        }
    }

    /// The caps per prefix.
    pub fn caps(&self) -> &Caps {
        self.shares.caps()
    }

    /// The cap in all.
    pub fn total_cap(&self) -> u64 {
        self.total_cap
    }

    /// What the table holds in all.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Whether `k` is held.
    pub fn contains(&self, k: &K) -> bool {
        self.items.contains_key(k)
    }

    /// The address and weight `k` is held for.
    pub fn get(&self, k: &K) -> Option<(IpAddr, u64)> {
        self.items.get(k).map(|i| (i.ip, i.weight))
    }

    /// What `p` holds.
    pub fn held(&self, p: &Prefix) -> u64 {
        self.shares.held(p)
    }

    /// Whether `weight` more for `ip` fits its prefixes' caps (the total is not looked at:
    /// a full table makes room, see [`FairTable::victim`]).
    pub fn check(&self, ip: IpAddr, weight: u64) -> Result<(), Refusal> {
        if weight > self.total_cap {
            return Err(Refusal::Full);
        }
        self.shares.check(ip, weight)
    }

    /// Whether `weight` more fits the total now.
    pub fn has_room(&self, weight: u64) -> bool {
        self.total.saturating_add(weight) <= self.total_cap
    }

    /// The entry a newcomer from `ip` displaces when the table is full: the newest entry
    /// of the widest prefix holding the most, unless that is `ip`'s own widest prefix (or
    /// it holds no more than `ip`'s would after admission), in which case `None`: the
    /// newcomer is refused instead.
    pub fn victim(&self, ip: IpAddr, weight: u64) -> Option<&K> {
        let own = Prefix::widest(ip);
        let &(held, heaviest) = self.by_weight.last()?;
        if heaviest == own || held <= self.held(&own).saturating_add(weight) {
            return None;
        }
        self.groups
            .get(&heaviest)
            .and_then(|g| g.last_key_value())
            .map(|(_, k)| k)
    }

    /// Holds `k` for `ip` with `weight` (replacing what `k` held before). Refused when a
    /// prefix of `ip` would exceed its cap or the total would be exceeded: make room first
    /// with [`FairTable::victim`] and [`FairTable::remove`], or use [`FairTable::admit`].
    pub fn insert(&mut self, k: K, ip: IpAddr, weight: u64) -> Result<(), Refusal> {
        let old = self.remove(&k);
        let fits = self
            .check(ip, weight)
            .and_then(|()| self.has_room(weight).then_some(()).ok_or(Refusal::Full));
        if let Err(e) = fits {
            if let Some((oip, ow)) = old {
                // Put back what was there; it fitted before.
                self.put(k, oip, ow);
            }
            return Err(e);
        }
        self.put(k, ip, weight);
        Ok(())
    }

    /// Holds `k` for `ip` with `weight`, displacing others as [`FairTable::victim`] says
    /// while the total is short. Returns the displaced keys (also when refused: displacing
    /// stops as soon as the newcomer's own network is the largest holder).
    pub fn admit(&mut self, k: K, ip: IpAddr, weight: u64) -> (Result<(), Refusal>, Vec<K>) {
        let mut displaced = Vec::new();
        let old = self.remove(&k);
        if let Err(e) = self.check(ip, weight) {
            if let Some((oip, ow)) = old {
                self.put(k, oip, ow);
            }
            return (Err(e), displaced);
        }
        while !self.has_room(weight) {
            let Some(v) = self.victim(ip, weight).cloned() else {
                if let Some((oip, ow)) = old {
                    if self.has_room(ow) {
                        self.put(k, oip, ow);
                    }
                }
                return (Err(Refusal::Full), displaced);
            };
            self.remove(&v);
            displaced.push(v);
        }
        self.put(k, ip, weight);
        (Ok(()), displaced)
    }

    fn put(&mut self, k: K, ip: IpAddr, weight: u64) {
        self.seq += 1;
        let seq = self.seq;
        let w = Prefix::widest(ip);
        let before = self.held(&w);
        self.shares.add(ip, weight);
        self.total = self.total.saturating_add(weight);
        self.by_weight.remove(&(before, w));
        self.by_weight.insert((before.saturating_add(weight), w));
        self.groups.entry(w).or_default().insert(seq, k.clone());
        self.items.insert(k, Item { ip, weight, seq });
    }

    /// Lets `k` go; its address and weight when it was held.
    pub fn remove(&mut self, k: &K) -> Option<(IpAddr, u64)> {
        let item = self.items.remove(k)?;
        let w = Prefix::widest(item.ip);
        let before = self.held(&w);
        self.shares.sub(item.ip, item.weight);
        self.total = self.total.saturating_sub(item.weight);
        self.by_weight.remove(&(before, w));
        let after = before.saturating_sub(item.weight);
        if let Some(g) = self.groups.get_mut(&w) {
            g.remove(&item.seq);
            if g.is_empty() {
                self.groups.remove(&w);
            }
        }
        if after > 0 {
            self.by_weight.insert((after, w));
        }
        Some((item.ip, item.weight))
    }

    /// Every key held, in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.items.keys()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn prefixes_at_every_level() {
        let v4: Vec<String> = prefixes(ip("198.51.100.7"))
            .map(|p| p.to_string())
            .collect();
        assert_eq!(v4, ["198.51.100.7/32", "198.51.100.0/24", "198.51.0.0/16"]);
        let mapped: Vec<Prefix> = prefixes(ip("::ffff:198.51.100.7")).collect();
        assert_eq!(mapped, prefixes(ip("198.51.100.7")).collect::<Vec<_>>());
        let v6: Vec<String> = prefixes(ip("2001:db8:aaaa:bb12:1:2:3:4"))
            .map(|p| p.to_string())
            .collect();
        assert_eq!(
            v6,
            [
                "2001:db8:aaaa:bb12::/64",
                "2001:db8:aaaa:bb00::/56",
                "2001:db8:aaaa::/48",
                "2001:db8::/32"
            ]
        );
        let p = Prefix::of(ip("2001:db8:aaaa::1"), Level::Net).unwrap();
        assert!(p.contains(ip("2001:db8:aaaa:ffff::9")));
        assert!(!p.contains(ip("2001:db8:aaab::1")));
        assert!(!p.contains(ip("10.0.0.1")));
        assert_eq!(p.level(), Level::Net);
        assert_eq!(Prefix::of(ip("10.1.2.3"), Level::Provider), None);
        assert_eq!(Prefix::widest(ip("10.1.2.3")).to_string(), "10.1.0.0/16");
    }

    fn caps() -> Caps {
        Caps {
            v4: [4, 8, 16],
            v6: [4, 8, 16, 32],
        }
    }

    #[test]
    fn caps_hold_at_every_level() {
        let mut t: FairTable<u32> = FairTable::new(caps(), 1000);
        for i in 0..4 {
            assert_eq!(t.insert(i, ip("10.0.0.1"), 1), Ok(()));
        }
        assert_eq!(
            t.insert(9, ip("10.0.0.1"), 1),
            Err(Refusal::Share(
                Prefix::of(ip("10.0.0.1"), Level::Host).unwrap()
            ))
        );
        for i in 4..8 {
            assert_eq!(t.insert(i, ip("10.0.0.2"), 1), Ok(()));
        }
        assert!(matches!(t.insert(9, ip("10.0.0.3"), 1), Err(Refusal::Share(p)) if p.len() == 24));
        // One /48 rotating /64s stops at its /56 caps, then at its /48 cap.
        let mut n = 0;
        for i in 0..100u32 {
            let a = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 1, i as u16, 0, 0, 0, 1));
            if t.insert(100 + i, a, 1).is_ok() {
                n += 1;
            }
        }
        assert_eq!(n, 8, "one /56");
        let mut n = 0;
        for i in 0..100u32 {
            let a = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 1, (i << 8) as u16, 0, 0, 0, 1));
            if t.insert(200 + i, a, 1).is_ok() {
                n += 1;
            }
        }
        assert_eq!(n, 8, "the rest of the /48");
        assert_eq!(
            t.held(&Prefix::of(ip("2001:db8:1::"), Level::Net).unwrap()),
            16
        );
        // Removing gives the share back.
        assert!(t.remove(&100).is_some());
        assert!(t.insert(99, ip("2001:db8:1:ff::1"), 1).is_ok());
        assert!(caps().check("x").is_ok());
        assert!(Caps {
            v4: [4, 2, 16],
            ..caps()
        }
        .check("x")
        .is_err());
    }

    #[test]
    fn a_full_table_displaces_the_largest_holders_newest_entry() {
        let mut t: FairTable<u32> = FairTable::new(Caps::NONE, 10);
        // An attacker's /16 fills the table.
        for i in 0..10u32 {
            let a = IpAddr::V4(Ipv4Addr::new(203, 0, (i / 256) as u8, i as u8));
            assert_eq!(t.admit(i, a, 1), (Ok(()), vec![]));
        }
        // A stranger gets in; the attacker's newest entry goes.
        assert_eq!(t.admit(100, ip("198.51.100.1"), 1), (Ok(()), vec![9]));
        // The attacker cannot take the stranger's place back: its own /16 holds the most.
        assert_eq!(
            t.admit(10, ip("203.0.9.9"), 1),
            (Err(Refusal::Full), vec![])
        );
        assert!(t.contains(&100));
        assert_eq!(t.len(), 10);
        // Weighted (bytes): a large newcomer displaces as many as it needs.
        let mut b: FairTable<u32> = FairTable::new(Caps::NONE, 100);
        for i in 0..10u32 {
            assert!(b.admit(i, ip("203.0.0.1"), 10).0.is_ok());
        }
        let (r, gone) = b.admit(50, ip("198.51.100.1"), 25);
        assert_eq!(r, Ok(()));
        assert_eq!(gone, vec![9, 8, 7]);
        assert_eq!(b.total(), 95);
        // Replacing an entry re-weighs it.
        assert!(b.insert(50, ip("198.51.100.1"), 5).is_ok());
        assert_eq!(b.total(), 75);
    }

    #[test]
    fn displacing_compares_networks_not_hosts() {
        // A hoster's /16 with many servers and an attacker spread over /48s of one /32:
        // whoever holds the most in their widest prefix gives way.
        let mut t: FairTable<u32> = FairTable::new(Caps::NONE, 30);
        for i in 0..10u32 {
            assert!(t
                .admit(i, IpAddr::V4(Ipv4Addr::new(51, 77, 1, i as u8)), 1)
                .0
                .is_ok());
        }
        for i in 0..20u32 {
            let a = IpAddr::V6(Ipv6Addr::new(0x2001, 0x470, i as u16, 0, 0, 0, 0, 1));
            assert!(t.admit(100 + i, a, 1).0.is_ok());
        }
        let (r, gone) = t.admit(999, ip("2a01:4f8::1"), 1);
        assert_eq!(r, Ok(()));
        assert_eq!(gone, vec![119]);
        assert_eq!(
            t.held(&Prefix::widest(ip("51.77.1.1"))),
            10,
            "the hoster keeps all its servers"
        );
    }

    #[test]
    fn bookkeeping_stays_consistent_under_churn() {
        let mut t: FairTable<u32> = FairTable::new(caps(), 50);
        let mut rng = 12345u64;
        for step in 0..20_000u32 {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = (rng >> 33) as u32;
            let a = if r % 3 == 0 {
                IpAddr::V6(Ipv6Addr::new(
                    0x2001,
                    0xdb8,
                    (r % 5) as u16,
                    (r % 7) as u16,
                    0,
                    0,
                    0,
                    1,
                ))
            } else {
                IpAddr::V4(Ipv4Addr::new(
                    10,
                    (r % 3) as u8,
                    (r % 11) as u8,
                    (r % 13) as u8,
                ))
            };
            let k = r % 200;
            if step % 4 == 0 {
                t.remove(&k);
            } else {
                let _ = t.admit(k, a, u64::from(r % 3 + 1));
            }
            assert!(t.total() <= 50);
        }
        let sum: u64 = t.keys().map(|k| t.get(k).unwrap().1).sum();
        assert_eq!(sum, t.total());
        let keys: Vec<u32> = t.keys().copied().collect();
        for k in keys {
            t.remove(&k);
        }
        assert_eq!(t.total(), 0);
        assert!(t.groups.is_empty() && t.by_weight.is_empty());
        assert_eq!(t.shares.prefixes_held(), 0);
    }
}
