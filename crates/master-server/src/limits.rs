//! Limits that hold whatever the source address says: rates per source host, challenge
//! budgets per destination network (/24 for IPv4, /64 for IPv6) and in all, and the list
//! budget ([`crate::budget`]: fair shares of the uplink per destination prefix).
//! Sans-IO: every call takes the time.
//!
//! Every bucket is a GCRA (generic cell rate algorithm) token bucket stored as one number, its
//! theoretical arrival time; a bucket whose time has passed is full, so forgetting it changes
//! nothing. The tables of buckets are generational ([`Recent`]): a new key goes into the young
//! table, a key found in the old one moves to the young one, and when the young table holds
//! half the room (or has aged), the old table is dropped whole and the young one becomes old.
//! No packet ever pays for a scan of the table, and a flood of new addresses never locks a new
//! client out: it only forgets the buckets of addresses that were quiet for a generation.

use std::hash::Hash;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::budget::{Budget, Grant, ListBudget};

/// A rate: `per_sec` tokens a second, at most `burst` saved up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Tokens added per second.
    pub per_sec: f64,
    /// Most tokens held.
    pub burst: f64,
}

impl Rate {
    /// No limit at all (benchmarks, trusted networks).
    pub const UNLIMITED: Rate = Rate {
        per_sec: f64::INFINITY,
        burst: f64::INFINITY,
    };

    /// True for a rate that never refuses.
    pub fn is_unlimited(&self) -> bool {
        self.per_sec == f64::INFINITY
    }

    /// Checks that the rate is usable: finite positive numbers in a range where every
    /// computation stays exact enough (no operator value makes a limit panic later).
    pub fn check(&self, what: &str) -> Result<(), String> {
        if self.is_unlimited() {
            return Ok(());
        }
        if !(self.per_sec.is_finite() && (1e-3..=1e9).contains(&self.per_sec)) {
            return Err(format!(
                "{what}: the rate must be between 0.001 and 1e9 a second"
            ));
        }
        if !(self.burst.is_finite() && (1.0..=1e12).contains(&self.burst)) {
            return Err(format!("{what}: the burst must be between 1 and 1e12"));
        }
        Ok(())
    }
}

/// A GCRA bucket: the time (ns since the clock's origin) at which it will be full again.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Bucket(pub(crate) u64);

impl Bucket {
    /// Would `cost` tokens be taken at `now`? Returns the bucket's new time if so.
    pub(crate) fn try_take(self, rate: Rate, now: u64, cost: f64) -> Option<u64> {
        if rate.is_unlimited() {
            return Some(self.0);
        }
        // Nanoseconds per token; `as` saturates, so no value can overflow or panic.
        let per = 1e9 / rate.per_sec.max(1e-9);
        let inc = (per * cost.max(0.0)) as u64;
        let tolerance = (per * rate.burst.max(0.0)) as u64;
        let next = self.0.max(now).saturating_add(inc);
        (next.saturating_sub(now) <= tolerance).then_some(next)
    }

    /// Takes `delta` tokens more (or gives `-delta` back) without refusing: a charge made on
    /// an estimate, settled once the real cost is known.
    pub(crate) fn adjust(self, rate: Rate, now: u64, delta: f64) -> Bucket {
        if rate.is_unlimited() || delta == 0.0 {
            return self;
        }
        let per = 1e9 / rate.per_sec.max(1e-9);
        let inc = (per * delta.abs()) as u64;
        if delta > 0.0 {
            Bucket(self.0.max(now).saturating_add(inc))
        } else {
            Bucket(self.0.saturating_sub(inc))
        }
    }

    /// Tokens left at `now`.
    pub(crate) fn tokens(self, rate: Rate, now: u64) -> f64 {
        if rate.is_unlimited() {
            return f64::INFINITY;
        }
        let per = 1e9 / rate.per_sec.max(1e-9);
        let owed = self.0.saturating_sub(now) as f64 / per;
        (rate.burst - owed).max(0.0)
    }
}

/// A limit's key: an IPv4 address or network, or an IPv6 /64 (what dpmaster and every
/// allocation policy treat as one host).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    /// IPv4, masked.
    V4(u32),
    /// The upper 64 bits of an IPv6 address.
    V6(u64),
}

impl Key {
    /// The host: an IPv4 address (/32), or an IPv6 /64.
    pub fn host(ip: IpAddr) -> Key {
        match canonical_ip(ip) {
            IpAddr::V4(v4) => Key::V4(u32::from(v4)),
            IpAddr::V6(v6) => Key::V6((u128::from(v6) >> 64) as u64),
        }
    }

    /// The network: an IPv4 /24, or an IPv6 /64.
    pub fn net(ip: IpAddr) -> Key {
        match canonical_ip(ip) {
            IpAddr::V4(v4) => Key::V4(u32::from(v4) & 0xffff_ff00),
            IpAddr::V6(v6) => Key::V6((u128::from(v6) >> 64) as u64),
        }
    }

    /// The wider network new servers are counted in as well: an IPv4 /24, an IPv6 /48 (so
    /// that rotating the /64s of one /48 gains nothing).
    pub fn wide(ip: IpAddr) -> Key {
        match canonical_ip(ip) {
            IpAddr::V4(v4) => Key::V4(u32::from(v4) & 0xffff_ff00),
            IpAddr::V6(v6) => Key::V6(((u128::from(v6) >> 64) as u64) & !0xffff),
        }
    }
}

/// IPv4-mapped IPv6 addresses as IPv4.
pub use fragstat_core::fair::canonical as canonical_ip;

/// The generational table of [`fragstat_core::fair::Recent`], keyed by [`Key`] unless told.
pub type Recent<V, K = Key> = fragstat_core::fair::Recent<V, K>;

/// Why a datagram was refused by the limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The source sent more than its rate.
    Rate,
    /// Sending would exceed the destination network's byte budget.
    Budget,
    /// Sending would exceed the master's main outbound byte budget, and the destination's
    /// network is no stranger (it was sent a list recently).
    GlobalBudget,
    /// A stranger, but the main budget and the reserve are both spent.
    Reserve,
    /// Sending a challenge would exceed the destination network's or the master's challenge
    /// budget.
    ChallengeBudget,
}

/// The limits' settings. The defaults are documented in docs/master-server.md ("Running it
/// in public").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LimitConfig {
    /// `getservers` per source host (IPv4 address, IPv6 /64).
    pub requests: Rate,
    /// New servers listed per host (IPv4 address, IPv6 /64), charged when a new server
    /// answers its challenge (a spoofed heartbeat, which cannot answer, charges nothing).
    /// Listed servers are limited per address:port instead (see
    /// [`crate::Config::verify_interval`]).
    pub new_servers: Rate,
    /// List bytes: the uplink granted to lists, its reserve for strangers, the shares of each
    /// destination prefix, the reply cap and the builds a second (see [`crate::budget`]).
    pub lists: ListBudget,
    /// New servers listed per wider network (IPv4 /24, IPv6 /48), charged with the host's;
    /// never below the host's rate and burst (see [`LimitConfig::new_servers_per_net`]).
    pub new_servers_net: Rate,
    /// Challenges per destination network.
    pub net_challenges: Rate,
    /// Challenges in all. Repeated challenges (retries of registrations) are sent only while
    /// at least half of this bucket is left, so a heartbeat flood cannot crowd out first
    /// challenges.
    pub global_challenges: Rate,
    /// Most keys held per table (sources; destination networks).
    pub max_sources: usize,
}

impl LimitConfig {
    /// No limits (benchmarks, trusted networks).
    pub fn unlimited() -> Self {
        LimitConfig {
            requests: Rate::UNLIMITED,
            new_servers: Rate::UNLIMITED,
            lists: ListBudget::unlimited(),
            new_servers_net: Rate::UNLIMITED,
            net_challenges: Rate::UNLIMITED,
            global_challenges: Rate::UNLIMITED,
            ..LimitConfig::default()
        }
    }

    /// Checks every rate (see [`Rate::check`]).
    pub fn check(&self) -> Result<(), String> {
        for (what, r) in [
            ("requests", self.requests),
            ("new servers", self.new_servers),
            ("new servers per network", self.new_servers_net),
            ("network challenges", self.net_challenges),
            ("global challenges", self.global_challenges),
        ] {
            r.check(what)?;
        }
        self.lists.check()?;
        if self.max_sources < 2 {
            return Err("max sources must be at least 2".into());
        }
        Ok(())
    }
}

impl LimitConfig {
    /// The new-server rate per wider network as applied: never below one host's (a network
    /// holds its hosts), so raising the host's rate alone raises both.
    pub fn new_servers_per_net(&self) -> Rate {
        let (h, n) = (self.new_servers, self.new_servers_net);
        Rate {
            per_sec: n.per_sec.max(h.per_sec),
            burst: n.burst.max(h.burst),
        }
    }
}

impl Default for LimitConfig {
    fn default() -> Self {
        LimitConfig {
            requests: Rate {
                per_sec: 1.0,
                burst: 8.0,
            },
            new_servers: Rate {
                per_sec: 1.0,
                burst: 64.0,
            },
            new_servers_net: Rate {
                per_sec: 4.0,
                burst: 256.0,
            },
            lists: ListBudget::default(),
            net_challenges: Rate {
                per_sec: 64.0,
                burst: 256.0,
            },
            global_challenges: Rate {
                per_sec: 10_000.0,
                burst: 20_000.0,
            },
            max_sources: 131_072,
        }
    }
}

/// What is kept per source host.
#[derive(Debug, Clone, Copy, Default)]
struct Source {
    requests: Bucket,
    new_servers: Bucket,
}

/// What is kept per destination network.
#[derive(Debug, Clone, Copy, Default)]
struct Net {
    challenges: Bucket,
}

/// How long a generation of the tables may last: longer than any default bucket takes to
/// refill, so what is forgotten when idle was full anyway.
const GENERATION: Duration = Duration::from_secs(60);

/// The limits: per-source and per-destination buckets, and the two global ones.
#[derive(Debug)]
pub struct Limits {
    config: LimitConfig,
    origin: Option<Instant>,
    sources: Recent<Source>,
    nets: Recent<Net>,
    lists: Budget,
    /// New-server buckets per wider network ([`Key::wide`]).
    wide: Recent<Bucket>,
    global_challenges: Bucket,
}

impl Limits {
    /// Limits with `config`.
    pub fn new(config: LimitConfig) -> Self {
        Limits {
            sources: Recent::new(config.max_sources, GENERATION),
            nets: Recent::new(config.max_sources, GENERATION),
            lists: Budget::new(config.lists, config.max_sources, GENERATION),
            wide: Recent::new(config.max_sources, GENERATION),
            config,
            origin: None,
            global_challenges: Bucket::default(),
        }
    }

    /// The settings.
    pub fn config(&self) -> &LimitConfig {
        &self.config
    }

    fn ns(&mut self, now: Instant) -> u64 {
        let origin = *self.origin.get_or_insert(now);
        u64::try_from(now.saturating_duration_since(origin).as_nanos()).unwrap_or(u64::MAX)
    }

    /// Sources and networks tracked now.
    pub fn tracked(&self) -> usize {
        self.sources.len() + self.nets.len() + self.lists.tracked() + self.wide.len()
    }

    /// Table generations dropped (sources and networks): each is one table freed at once.
    pub fn rotations(&self) -> u64 {
        self.sources.rotations() + self.nets.rotations() + self.wide.rotations()
    }

    /// A list request from `ip`: within its host's rate?
    pub fn request(&mut self, ip: IpAddr, now: Instant) -> Result<(), Refusal> {
        let (t, rate) = (self.ns(now), self.config.requests);
        let s = self.sources.entry(Key::host(ip), t);
        let next = s.requests.try_take(rate, t, 1.0).ok_or(Refusal::Rate)?;
        s.requests = Bucket(next);
        Ok(())
    }

    /// A new server on `ip` answered its challenge: within its host's rate for new servers
    /// and its wider network's ([`Key::wide`])? Both are charged, or neither.
    pub fn new_server(&mut self, ip: IpAddr, now: Instant) -> Result<(), Refusal> {
        let (t, rate) = (self.ns(now), self.config.new_servers);
        let net_rate = self.config.new_servers_per_net();
        let w = self.wide.entry(Key::wide(ip), t);
        let wide = w.try_take(net_rate, t, 1.0).ok_or(Refusal::Rate)?;
        let s = self.sources.entry(Key::host(ip), t);
        let next = s.new_servers.try_take(rate, t, 1.0).ok_or(Refusal::Rate)?;
        s.new_servers = Bucket(next);
        *self.wide.entry(Key::wide(ip), t) = Bucket(wide);
        Ok(())
    }

    /// Charges an estimate of `bytes` of list to `ip` (see [`Budget::send`]): refused before
    /// anything is built.
    pub fn send_list(&mut self, ip: IpAddr, bytes: u64, now: Instant) -> Result<Grant, Refusal> {
        let t = self.ns(now);
        self.lists.send(ip, bytes, t)
    }

    /// Settles a [`Limits::send_list`] charge with the `bytes` really sent.
    pub fn settle_list(&mut self, ip: IpAddr, grant: Grant, bytes: u64, now: Instant) {
        let t = self.ns(now);
        self.lists.settle(ip, grant, bytes, t);
    }

    /// May a list be built now (the bound on builds a second)?
    pub fn build_list(&mut self, now: Instant) -> bool {
        let t = self.ns(now);
        self.lists.build(t)
    }

    /// Reserves one challenge to `ip`. A `retry` is sent only while half the global challenge
    /// bucket is left.
    pub fn send_challenge(&mut self, ip: IpAddr, retry: bool, now: Instant) -> Result<(), Refusal> {
        let t = self.ns(now);
        let c = self.config;
        if retry
            && !c.global_challenges.is_unlimited()
            && self.global_challenges.tokens(c.global_challenges, t)
                < c.global_challenges.burst / 2.0 + 1.0
        {
            return Err(Refusal::ChallengeBudget);
        }
        let global = self
            .global_challenges
            .try_take(c.global_challenges, t, 1.0)
            .ok_or(Refusal::ChallengeBudget)?;
        let n = self.nets.entry(Key::net(ip), t);
        let net = n
            .challenges
            .try_take(c.net_challenges, t, 1.0)
            .ok_or(Refusal::ChallengeBudget)?;
        n.challenges = Bucket(net);
        self.global_challenges = Bucket(global);
        Ok(())
    }

    /// Ages the tables (call from a timer).
    pub fn tick(&mut self, now: Instant) {
        let t = self.ns(now);
        self.sources.tick(t);
        self.nets.tick(t);
        self.lists.tick(t);
        self.wide.tick(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn buckets_refill() {
        let now = Instant::now();
        let mut l = Limits::new(LimitConfig::default());
        let a = ip("10.0.0.1");
        for _ in 0..8 {
            assert!(l.request(a, now).is_ok());
        }
        assert_eq!(l.request(a, now), Err(Refusal::Rate));
        assert!(l.request(a, now + Duration::from_secs(1)).is_ok());
        // IPv6: one /64 is one host.
        for i in 0..8 {
            assert!(l.request(ip(&format!("2001:db8::{i}")), now).is_ok());
        }
        assert_eq!(l.request(ip("2001:db8::ffff"), now), Err(Refusal::Rate));
        assert!(l.request(ip("2001:db8:0:1::1"), now).is_ok());
    }

    #[test]
    fn new_servers_are_limited_per_host_and_per_48_or_24() {
        let now = Instant::now();
        let mut l = Limits::new(LimitConfig::default());
        // 512 /64s of one /48: 256 at once (the /48's burst), not 512 × 64.
        let ok = (0..512u16)
            .filter(|i| {
                l.new_server(
                    IpAddr::V6(std::net::Ipv6Addr::new(0x2001, 0xdb8, 1, *i, 0, 0, 0, 1)),
                    now,
                )
                .is_ok()
            })
            .count();
        assert_eq!(ok, 256);
        // Another /48 has its own; a refusal by the /48 charged no host.
        assert!(l.new_server(ip("2001:db8:2::1"), now).is_ok());
        let later = now + Duration::from_secs(1);
        assert!(l.new_server(ip("2001:db8:1:ffff::1"), later).is_ok());
        // An IPv4 /24 likewise; its hosts keep their own 64.
        let ok = (0..=255u8)
            .flat_map(|h| (0..2).map(move |_| h))
            .filter(|h| l.new_server(IpAddr::from([198, 51, 100, *h]), now).is_ok())
            .count();
        assert_eq!(ok, 256);
        for _ in 0..64 {
            assert!(l.new_server(ip("198.51.101.1"), now).is_ok());
        }
        assert_eq!(l.new_server(ip("198.51.101.1"), now), Err(Refusal::Rate));
        // The network's rate is never below a host's.
        let c = LimitConfig {
            new_servers: Rate {
                per_sec: 100.0,
                burst: 1000.0,
            },
            ..LimitConfig::default()
        };
        assert_eq!(c.new_servers_per_net().burst, 1000.0);
        assert_eq!(
            Key::wide(ip("2001:db8:1:ffff::1")),
            Key::wide(ip("2001:db8:1::"))
        );
        assert_ne!(Key::wide(ip("2001:db8:1::")), Key::wide(ip("2001:db8:2::")));
    }

    #[test]
    fn retries_leave_half_the_challenges_for_first_ones() {
        let now = Instant::now();
        let mut l = Limits::new(LimitConfig {
            global_challenges: Rate {
                per_sec: 1e-3,
                burst: 10.0,
            },
            ..LimitConfig::default()
        });
        let mut sent = 0;
        for i in 0..20u8 {
            if l.send_challenge(IpAddr::from([10, 0, i, 1]), true, now)
                .is_ok()
            {
                sent += 1;
            }
        }
        assert_eq!(sent, 5, "retries stop at half the bucket");
        for i in 0..20u8 {
            if l.send_challenge(IpAddr::from([10, 1, i, 1]), false, now)
                .is_ok()
            {
                sent += 1;
            }
        }
        assert_eq!(sent, 10, "first challenges take the rest");
    }

    #[test]
    fn a_flood_of_new_sources_locks_nobody_out_and_scans_nothing() {
        let now = Instant::now();
        let mut l = Limits::new(LimitConfig {
            max_sources: 100_000,
            ..LimitConfig::default()
        });
        for i in 0..100_000u32 {
            assert!(l.request(IpAddr::from(i.to_be_bytes()), now).is_ok());
        }
        let before = l.rotations();
        let t = now + Duration::from_secs(1);
        for i in 0..10_000u32 {
            let a = IpAddr::from((0x0a00_0000 + i).to_be_bytes());
            assert!(l.request(a, t).is_ok(), "a new source is never refused");
        }
        assert!(l.rotations() - before <= 1, "{}", l.rotations() - before);
        assert!(l.tracked() <= 2 * 100_000);
    }

    #[test]
    fn operator_values_that_would_overflow_are_refused_or_harmless() {
        let silly = Rate {
            per_sec: 0.001,
            burst: 1e20,
        };
        assert!(silly.check("x").is_err());
        // Even unchecked, the arithmetic saturates instead of panicking.
        let mut l = Limits::new(LimitConfig {
            requests: silly,
            ..LimitConfig::default()
        });
        let now = Instant::now();
        assert!(l.request(ip("10.0.0.1"), now).is_ok());
        l.tick(now + Duration::from_secs(1_000_000));
        assert!(Rate::UNLIMITED.check("x").is_ok());
        assert!(LimitConfig::default().check().is_ok());
    }
}
