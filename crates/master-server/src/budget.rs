//! The master's outbound list budget: fair shares of the bandwidth the operator grants lists.
//! Sans-IO: every call takes the time (ns since the limits' clock started).
//!
//! - **The uplink** ([`ListBudget::uplink`]): list bytes a second in all. A part of it, the
//!   **reserve**, is spent only on *strangers*: networks (IPv4 /16, IPv6 /48, so rotating /24s
//!   or /64s inside one network does not make a stranger) that were not sent a list in the
//!   last [`ListBudget::stranger_after`]. The rest, the **main** budget, serves anyone; a
//!   stranger is served from the reserve when the main budget is spent.
//! - **Shares**: each prefix of the destination (IPv4 /24 and /16; IPv6 /64, /56, /48, /32,
//!   see [`fragstat_core::fair`]) may take only a fraction of the uplink, so a few networks
//!   asking at their allowed rate cannot spend the main budget.
//! - **One reply** is at most [`ListBudget::max_reply`] bytes (a longer list is truncated by
//!   the caller), so no single request empties a burst.
//! - **Builds** (a scan of the table and an encode) are bounded a second in all
//!   ([`ListBudget::builds`]); the caller serves the cached list, stale, when the bound is hit.
//!
//! A request is charged an estimate before its list is built ([`Budget::send`]) and settled
//! with the real size after ([`Budget::settle`]), so a refused request costs no build.

use std::net::IpAddr;
use std::time::Duration;

use fragstat_core::fair::{prefixes, Level, Prefix};

use crate::limits::{Bucket, Rate, Recent, Refusal};

/// Fractions of the uplink one prefix may take, per level (`1.0`: no share at that level).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShareFractions {
    /// IPv4: an address, a /24, a /16.
    pub v4: [f64; 3],
    /// IPv6: a /64, a /56, a /48, a /32.
    pub v6: [f64; 4],
}

impl ShareFractions {
    /// The fraction for `p`'s level.
    pub fn of(&self, p: &Prefix) -> f64 {
        let i = Level::ALL.iter().position(|l| *l == p.level()).unwrap_or(0);
        let f: &[f64] = if p.is_ipv6() { &self.v6 } else { &self.v4 };
        f.get(i).copied().unwrap_or(1.0)
    }
}

/// The list budget's settings. The defaults are documented in docs/master-server.md
/// ("Running it in public").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ListBudget {
    /// List bytes a second in all, and the burst: the bandwidth the operator grants lists.
    pub uplink: Rate,
    /// The fraction of the uplink kept for strangers.
    pub reserve: f64,
    /// A network (IPv4 /16, IPv6 /48) not sent a list for this long is a stranger.
    pub stranger_after: Duration,
    /// The fraction of the uplink one prefix may take; each share's burst is its fraction of
    /// the uplink's burst, and at least [`ListBudget::max_reply`].
    pub shares: ShareFractions,
    /// Most bytes of one reply; a longer list is cut to its first datagrams.
    pub max_reply: u64,
    /// Lists built (scanned and encoded) in all.
    pub builds: Rate,
}

impl ListBudget {
    /// No budget at all (benchmarks, trusted networks).
    pub fn unlimited() -> Self {
        ListBudget {
            uplink: Rate::UNLIMITED,
            max_reply: u64::MAX,
            builds: Rate::UNLIMITED,
            ..ListBudget::default()
        }
    }

    /// Checks the settings: usable rates, fractions in (0, 1], and a burst in every tier
    /// that holds the longest reply (or the longest reply would never be sent).
    pub fn check(&self) -> Result<(), String> {
        self.uplink.check("the uplink")?;
        self.builds.check("list builds")?;
        if !(0.0..=0.9).contains(&self.reserve) {
            return Err("the reserve must be between 0 and 0.9 of the uplink".into());
        }
        let fractions = self.shares.v4.iter().chain(&self.shares.v6);
        if fractions
            .into_iter()
            .any(|f| !(f.is_finite() && *f > 0.0 && *f <= 1.0))
        {
            return Err("every share must be a fraction of the uplink in (0, 1]".into());
        }
        if self.stranger_after.is_zero() || self.stranger_after > Duration::from_secs(3600) {
            return Err("the stranger time must be between 1 ms and an hour".into());
        }
        if self.uplink.is_unlimited() {
            return Ok(());
        }
        let reply = self.max_reply as f64;
        let main = self.uplink.burst * (1.0 - self.reserve);
        let reserve = self.uplink.burst * self.reserve;
        if main < reply || (self.reserve > 0.0 && reserve < reply) {
            return Err(format!(
                "the uplink's burst ({:.0} KiB, {:.0} % of it reserved) does not hold one reply of {:.0} KiB: raise the uplink or lower the reply cap",
                self.uplink.burst / 1024.0,
                self.reserve * 100.0,
                reply / 1024.0
            ));
        }
        Ok(())
    }

    /// The rate of the reserve (`true`) or of the main budget.
    pub fn tier(&self, reserve: bool) -> Rate {
        let f = if reserve {
            self.reserve
        } else {
            1.0 - self.reserve
        };
        Rate {
            per_sec: self.uplink.per_sec * f,
            burst: self.uplink.burst * f,
        }
    }

    /// The rate of a share of `fraction` of the uplink (its burst at least one reply).
    pub fn share(&self, fraction: f64) -> Rate {
        Rate {
            per_sec: self.uplink.per_sec * fraction,
            burst: (self.uplink.burst * fraction).max(self.max_reply as f64),
        }
    }
}

impl Default for ListBudget {
    fn default() -> Self {
        const MIB: f64 = 1024.0 * 1024.0;
        ListBudget {
            uplink: Rate {
                per_sec: 8.0 * MIB,
                burst: 8.0 * MIB,
            },
            reserve: 0.25,
            stranger_after: Duration::from_secs(10),
            shares: ShareFractions {
                v4: [1.0, 1.0 / 64.0, 1.0 / 4.0],
                v6: [1.0 / 64.0, 1.0 / 32.0, 1.0 / 16.0, 1.0 / 4.0],
            },
            max_reply: 128 * 1024,
            builds: Rate {
                per_sec: 100.0,
                burst: 100.0,
            },
        }
    }
}

/// A charge made by [`Budget::send`], to settle with the real size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// Bytes charged.
    pub bytes: u64,
    /// Taken from the reserve (the main budget was spent and the network a stranger).
    pub reserve: bool,
}

/// When a network was last sent a list (ns).
#[derive(Debug, Clone, Copy, Default)]
struct Served(Option<u64>);

/// The list budget's buckets (see the module documentation).
#[derive(Debug)]
pub struct Budget {
    config: ListBudget,
    main: Bucket,
    reserve: Bucket,
    builds: Bucket,
    shares: Recent<Bucket, Prefix>,
    served: Recent<Served, Prefix>,
}

/// The prefix by which strangers are judged: IPv4 /16, IPv6 /48.
fn network(ip: IpAddr) -> Option<Prefix> {
    Prefix::of(ip, Level::Net)
}

impl Budget {
    /// Buckets for `config`, each table holding at most `room` prefixes.
    pub fn new(config: ListBudget, room: usize, generation: Duration) -> Self {
        Budget {
            config,
            main: Bucket::default(),
            reserve: Bucket::default(),
            builds: Bucket::default(),
            shares: Recent::new(room, generation),
            served: Recent::new(room, generation),
        }
    }

    /// The settings.
    pub fn config(&self) -> &ListBudget {
        &self.config
    }

    /// Prefixes tracked (shares and networks served).
    pub fn tracked(&self) -> usize {
        self.shares.len() + self.served.len()
    }

    /// True when `ip`'s network was not sent a list in the last `stranger_after`.
    pub fn is_stranger(&self, ip: IpAddr, t: u64) -> bool {
        let after = u64::try_from(self.config.stranger_after.as_nanos()).unwrap_or(u64::MAX);
        match network(ip).and_then(|p| self.served.get(&p)) {
            Some(Served(Some(at))) => t.saturating_sub(*at) >= after,
            _ => true,
        }
    }

    /// Charges `bytes` (an estimate) for a list to `ip`: from each of its prefixes' shares and
    /// from the main budget, or from the reserve for a stranger when the main one is spent.
    /// Nothing is charged when it is refused.
    pub fn send(&mut self, ip: IpAddr, bytes: u64, t: u64) -> Result<Grant, Refusal> {
        let c = self.config;
        let cost = bytes as f64;
        let mut taken: [Option<(Prefix, u64)>; 4] = [None; 4];
        for (slot, p) in taken.iter_mut().zip(prefixes(ip)) {
            let f = c.shares.of(&p);
            if f >= 1.0 {
                continue;
            }
            let b = *self.shares.entry(p, t);
            let next = b.try_take(c.share(f), t, cost).ok_or(Refusal::Budget)?;
            *slot = Some((p, next));
        }
        let reserve = match self.main.try_take(c.tier(false), t, cost) {
            Some(next) => {
                self.main = Bucket(next);
                false
            }
            None if self.is_stranger(ip, t) => {
                let next = self
                    .reserve
                    .try_take(c.tier(true), t, cost)
                    .ok_or(Refusal::Reserve)?;
                self.reserve = Bucket(next);
                true
            }
            None => return Err(Refusal::GlobalBudget),
        };
        for (p, next) in taken.into_iter().flatten() {
            *self.shares.entry(p, t) = Bucket(next);
        }
        if let Some(p) = network(ip) {
            *self.served.entry(p, t) = Served(Some(t));
        }
        Ok(Grant { bytes, reserve })
    }

    /// Settles `grant` with the `bytes` really sent: the difference is charged (never
    /// refused: the estimate was checked) or given back.
    pub fn settle(&mut self, ip: IpAddr, grant: Grant, bytes: u64, t: u64) {
        let c = self.config;
        let delta = bytes as f64 - grant.bytes as f64;
        if delta == 0.0 {
            return;
        }
        for p in prefixes(ip) {
            let f = c.shares.of(&p);
            if f < 1.0 {
                let b = self.shares.entry(p, t);
                *b = b.adjust(c.share(f), t, delta);
            }
        }
        let rate = c.tier(grant.reserve);
        let tier = if grant.reserve {
            &mut self.reserve
        } else {
            &mut self.main
        };
        *tier = tier.adjust(rate, t, delta);
    }

    /// May a list be built now? Takes one build if so.
    pub fn build(&mut self, t: u64) -> bool {
        match self.builds.try_take(self.config.builds, t, 1.0) {
            Some(next) => {
                self.builds = Bucket(next);
                true
            }
            None => false,
        }
    }

    /// Ages the tables (call from a timer).
    pub fn tick(&mut self, t: u64) {
        self.shares.tick(t);
        self.served.tick(t);
    }
}
