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

/// Per-host and per-network request rates: a host may take only its own rate of its
/// network's, so one host cannot spend what its neighbours need.
#[derive(Debug)]
pub struct RateTable {
    host: Rate,
    net: Rate,
    hosts: Recent<u64, Prefix>,
    nets: Recent<u64, Prefix>,
    origin: Instant,
}

/// Keys kept per table at most (two generations).
const ROOM: usize = 65_536;
/// A generation lasts at most this long: long enough for any bucket to fill up again.
const MAX_AGE: Duration = Duration::from_secs(120);

impl RateTable {
    /// Buckets at `host` per client host and `net` per network, the clock starting at `origin`.
    pub fn new(host: Rate, net: Rate, origin: Instant) -> Self {
        RateTable {
            host,
            net,
            hosts: Recent::new(ROOM, MAX_AGE),
            nets: Recent::new(ROOM, MAX_AGE),
            origin,
        }
    }

    /// Takes one request for `ip` at `now`, or says how long until one would be allowed.
    pub fn check(&mut self, ip: IpAddr, now: Instant) -> Result<(), Duration> {
        let now = u64::try_from(now.saturating_duration_since(self.origin).as_nanos())
            .unwrap_or(u64::MAX);
        let host = Prefix::of(ip, Level::Host);
        let v6 = super::canonical(ip).is_ipv6();
        let net = Prefix::of(ip, if v6 { Level::Net } else { Level::Site });
        let mut wait = 0u64;
        let mut taken = [None, None];
        for (slot, (rate, key, table)) in taken.iter_mut().zip([
            (self.host, host, &mut self.hosts),
            (self.net, net, &mut self.nets),
        ]) {
            let (Some(key), false) = (key, rate.is_unlimited()) else {
                continue;
            };
            let tat = *table.entry(key, now);
            let per = rate.nanos_per_token();
            let tolerance = per.saturating_mul(u64::from(rate.burst.max(1)));
            let next = tat.max(now).saturating_add(per);
            let ahead = next.saturating_sub(now);
            if ahead > tolerance {
                wait = wait.max(ahead - tolerance);
            }
            *slot = Some((key, tat, next));
        }
        let [h, n] = taken;
        for (table, e) in [(&mut self.hosts, h), (&mut self.nets, n)] {
            if let Some((key, tat, next)) = e {
                *table.entry(key, now) = if wait > 0 { tat } else { next };
            }
        }
        if wait > 0 {
            return Err(Duration::from_nanos(wait));
        }
        Ok(())
    }

    /// Keys held (both tables, both generations): at most twice the room, whatever comes.
    pub fn len(&self) -> usize {
        self.hosts.len() + self.nets.len()
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
}
