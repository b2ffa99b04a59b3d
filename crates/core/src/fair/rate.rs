//! Requests per second per client host (IPv4 address, IPv6 /64) and per network (IPv4 /24,
//! IPv6 /48), sans-IO (every call takes the time): what the HTTP guard (`fragstat-http-guard`)
//! holds each client to, and the tracker's push listener each server (`fragstat::events::push`).
//!
//! Every bucket is a GCRA token bucket stored as one number, the time at which it is full
//! again; a bucket whose time has passed is full, so forgetting it changes nothing. The
//! buckets live in a generational table: a key found in the old generation moves to the young
//! one, and when the young one holds half the room (or has aged) the old one is dropped whole.
//! No request pays for a scan, and a flood of new addresses only forgets the buckets of
//! addresses that were quiet for a generation.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use super::{Level, Prefix, Recent};

/// A request rate: `per_sec` requests a second, `burst` at once. `per_sec == 0`: no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Requests a second (0: unlimited).
    pub per_sec: u32,
    /// Requests at once after a quiet spell.
    pub burst: u32,
}

impl Rate {
    /// No limit.
    pub const UNLIMITED: Rate = Rate {
        per_sec: 0,
        burst: 0,
    };

    /// Whether this rate never refuses.
    pub fn is_unlimited(&self) -> bool {
        self.per_sec == 0
    }

    fn nanos_per_token(&self) -> u64 {
        1_000_000_000 / u64::from(self.per_sec.max(1))
    }
}

/// One GCRA token bucket, kept as the time (ns from the caller's origin) at which it is full
/// again: for callers that key their buckets themselves (the tracker's API keys, a bucket
/// per key named in its configuration). [`RateTable`] keeps its buckets the same way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bucket {
    tat: u64,
}

impl Bucket {
    /// Takes one request at `now` (ns from the caller's origin), or says how long until one
    /// would be allowed (the bucket unchanged then). An unlimited rate never refuses.
    pub fn take(&mut self, rate: Rate, now: u64) -> Result<(), Duration> {
        if rate.is_unlimited() {
            return Ok(());
        }
        match step(self.tat, rate, now) {
            (next, 0) => {
                self.tat = next;
                Ok(())
            }
            (_, wait) => Err(Duration::from_nanos(wait)),
        }
    }
}

/// One GCRA step for a bucket whose full-again time is `tat`: its time after one more
/// request, and the wait (ns, 0 when allowed).
fn step(tat: u64, rate: Rate, now: u64) -> (u64, u64) {
    let per = rate.nanos_per_token();
    let tolerance = per.saturating_mul(u64::from(rate.burst.max(1)));
    let next = tat.max(now).saturating_add(per);
    let ahead = next.saturating_sub(now);
    (next, ahead.saturating_sub(tolerance))
}

/// One level of a [`RateTable`]: its rate, the prefix level it keys IPv4 and IPv6 addresses
/// by, and its buckets.
#[derive(Debug)]
struct Tier {
    rate: Rate,
    v4: Level,
    v6: Level,
    buckets: Recent<u64, Prefix>,
}

/// Request rates per address prefix: per client host (IPv4 address, IPv6 /64) and per wider
/// prefixes. A request takes one from every level's bucket or from none: a host refused by its
/// own rate spends nothing of its networks', so a host may take only its own rate of its
/// network's, and one host cannot spend what its neighbours need.
#[derive(Debug)]
pub struct RateTable {
    tiers: Vec<Tier>,
    origin: Instant,
}

/// Keys kept per table at most (two generations).
const ROOM: usize = 65_536;
/// A generation lasts at most this long: long enough for any bucket to fill up again.
const MAX_AGE: Duration = Duration::from_secs(120);

impl RateTable {
    /// Buckets at `host` per client host and `net` per network (IPv4 /24, IPv6 /48), the
    /// clock starting at `origin`.
    pub fn new(host: Rate, net: Rate, origin: Instant) -> Self {
        RateTable::tiers(
            [
                (host, Level::Host, Level::Host),
                (net, Level::Site, Level::Net),
            ],
            origin,
        )
    }

    /// Buckets at `host` per client host (IPv4 address, IPv6 /64), `site` per IPv4 /24 and
    /// IPv6 /56, and `net` per IPv4 /16 and IPv6 /48, the clock starting at `origin`.
    pub fn per_level(host: Rate, site: Rate, net: Rate, origin: Instant) -> Self {
        RateTable::tiers(
            [
                (host, Level::Host, Level::Host),
                (site, Level::Site, Level::Site),
                (net, Level::Net, Level::Net),
            ],
            origin,
        )
    }

    fn tiers<const N: usize>(levels: [(Rate, Level, Level); N], origin: Instant) -> Self {
        RateTable {
            tiers: levels
                .into_iter()
                .map(|(rate, v4, v6)| Tier {
                    rate,
                    v4,
                    v6,
                    buckets: Recent::new(ROOM, MAX_AGE),
                })
                .collect(),
            origin,
        }
    }

    /// Takes one request for `ip` at `now`, or says how long until one would be allowed.
    pub fn check(&mut self, ip: IpAddr, now: Instant) -> Result<(), Duration> {
        let now = u64::try_from(now.saturating_duration_since(self.origin).as_nanos())
            .unwrap_or(u64::MAX);
        let v6 = super::canonical(ip).is_ipv6();
        let mut wait = 0u64;
        let mut taken = [None; 4];
        for (slot, tier) in taken.iter_mut().zip(self.tiers.iter_mut()) {
            let level = if v6 { tier.v6 } else { tier.v4 };
            let (Some(key), false) = (Prefix::of(ip, level), tier.rate.is_unlimited()) else {
                continue;
            };
            let tat = *tier.buckets.entry(key, now);
            let (next, w) = step(tat, tier.rate, now);
            wait = wait.max(w);
            *slot = Some((key, next));
        }
        if wait > 0 {
            return Err(Duration::from_nanos(wait));
        }
        for (slot, tier) in taken.iter().zip(self.tiers.iter_mut()) {
            if let Some((key, next)) = slot {
                *tier.buckets.entry(*key, now) = *next;
            }
        }
        Ok(())
    }

    /// Keys held (every level, both generations): at most twice the room a level, whatever
    /// comes.
    pub fn len(&self) -> usize {
        self.tiers.iter().map(|t| t.buckets.len()).sum()
    }

    /// True when no bucket is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_host_gets_its_burst_then_its_rate() {
        let t0 = Instant::now();
        let mut t = RateTable::new(
            Rate {
                per_sec: 10,
                burst: 5,
            },
            Rate {
                per_sec: 100,
                burst: 8,
            },
            t0,
        );
        for _ in 0..5 {
            assert!(t.check(ip("10.0.0.1"), t0).is_ok());
        }
        let wait = t.check(ip("10.0.0.1"), t0).unwrap_err();
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_millis(100),
            "{wait:?}"
        );
        // Another host of the /24 has its own bucket, but the /24 has 8 in all.
        for _ in 0..3 {
            assert!(t.check(ip("10.0.0.2"), t0).is_ok());
        }
        assert!(
            t.check(ip("10.0.0.3"), t0).is_err(),
            "the /24's burst is spent"
        );
        // Another /24 is not concerned.
        assert!(t.check(ip("10.0.1.1"), t0).is_ok());
        // 100 ms later, one more for the first host.
        let later = t0 + Duration::from_millis(100);
        assert!(t.check(ip("10.0.0.1"), later).is_ok());
        assert!(t.check(ip("10.0.0.1"), later).is_err());
        // IPv6: a /64 is a host, a /48 the network.
        for _ in 0..5 {
            assert!(t.check(ip("2001:db8:0:1::1"), t0).is_ok());
        }
        assert!(t.check(ip("2001:db8:0:1::2"), t0).is_err());
        assert!(t.check(ip("2001:db8:0:2::1"), t0).is_ok());
    }

    #[test]
    fn a_flood_of_new_hosts_keeps_the_table_bounded() {
        let t0 = Instant::now();
        let mut t = RateTable::new(
            Rate {
                per_sec: 1,
                burst: 1,
            },
            Rate::UNLIMITED,
            t0,
        );
        for i in 0..200_000u32 {
            let a = std::net::Ipv4Addr::from(0x0a00_0000 + i);
            assert!(t.check(IpAddr::V4(a), t0).is_ok());
        }
        assert!(t.len() <= ROOM, "{}", t.len());
        // Unlimited never refuses.
        let mut u = RateTable::new(Rate::UNLIMITED, Rate::UNLIMITED, t0);
        for _ in 0..1000 {
            assert!(u.check(ip("10.0.0.1"), t0).is_ok());
        }
    }

    /// Three levels: a host gets its own rate; the hosts of one /24 (IPv6 /56) share theirs,
    /// and a /16 (IPv6 /48) its own, so a flood from many hosts of one /24 leaves another
    /// /24 of the same /16 served, and a flood over a whole /16 another /16.
    #[test]
    fn per_level_rates_share_every_prefix() {
        let t0 = Instant::now();
        let r = |n| Rate {
            per_sec: 1,
            burst: n,
        };
        let mut t = RateTable::per_level(r(2), r(4), r(6), t0);
        for h in 1..=10 {
            let _ = t.check(ip(&format!("10.1.1.{h}")), t0);
            let _ = t.check(ip(&format!("10.1.1.{h}")), t0);
        }
        assert!(t.check(ip("10.1.1.200"), t0).is_err(), "the /24 is spent");
        assert!(
            t.check(ip("10.1.2.1"), t0).is_ok(),
            "another /24 of the /16"
        );
        assert!(t.check(ip("10.1.2.1"), t0).is_ok());
        assert!(t.check(ip("10.1.3.1"), t0).is_err(), "the /16 is spent");
        assert!(t.check(ip("10.2.0.1"), t0).is_ok(), "another /16");
        // IPv6: /64 host, /56 site, /48 net.
        for h in 1..=4 {
            let _ = t.check(ip(&format!("2001:db8:0:{h}::1")), t0);
        }
        assert!(
            t.check(ip("2001:db8:0:5::1"), t0).is_err(),
            "the /56 is spent"
        );
        assert!(t.check(ip("2001:db8:0:100::1"), t0).is_ok(), "another /56");
        // A refused request spends nothing.
        let mut u = RateTable::per_level(r(1), r(2), r(100), t0);
        assert!(u.check(ip("10.9.9.1"), t0).is_ok());
        for _ in 0..50 {
            assert!(u.check(ip("10.9.9.1"), t0).is_err());
        }
        assert!(
            u.check(ip("10.9.9.2"), t0).is_ok(),
            "the host's refusals took none of the /24"
        );
        // A bucket of its own.
        let mut b = Bucket::default();
        assert!(b.take(r(2), 0).is_ok() && b.take(r(2), 0).is_ok());
        let wait = b.take(r(2), 0).unwrap_err();
        assert!(wait <= Duration::from_secs(1) && wait > Duration::ZERO);
        assert!(b.take(r(2), 1_000_000_000).is_ok());
        assert!(b.take(Rate::UNLIMITED, 0).is_ok());
    }
}
