//! Per-source limits: token buckets for requests and heartbeats, and a byte budget per
//! destination address so that a spoofed request flood amplifies at most a bounded factor.
//! Sans-IO: every call takes the time.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// A rate: `per_sec` tokens a second, at most `burst` saved up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Tokens added per second.
    pub per_sec: f64,
    /// Most tokens held.
    pub burst: f64,
}

/// A token bucket.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn full(rate: Rate, now: Instant) -> Self {
        Bucket {
            tokens: rate.burst,
            at: now,
        }
    }

    fn take(&mut self, rate: Rate, now: Instant, cost: f64) -> bool {
        let dt = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + dt * rate.per_sec).min(rate.burst);
        self.at = now;
        if self.tokens >= cost {
            self.tokens -= cost;
            true
        } else {
            false
        }
    }
}

/// What is tracked per source address.
#[derive(Debug, Clone, Copy)]
struct Source {
    requests: Bucket,
    heartbeats: Bucket,
    /// Bytes sent to this address in the current window, and when the window started.
    sent: u64,
    window: Instant,
    last_seen: Instant,
}

/// Why a datagram was refused by the limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The source sent more than its rate.
    Rate,
    /// Sending would exceed the destination's byte budget for the window.
    Budget,
    /// Too many sources are tracked at once (a flood from many addresses).
    Sources,
}

/// The limits' settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LimitConfig {
    /// `getservers` per source address.
    pub requests: Rate,
    /// Heartbeats per source address.
    pub heartbeats: Rate,
    /// Bytes sent to one address per `window`.
    pub budget: u64,
    /// The budget's window.
    pub window: Duration,
    /// Most source addresses tracked (bounded memory).
    pub max_sources: usize,
}

impl Default for LimitConfig {
    fn default() -> Self {
        LimitConfig {
            requests: Rate {
                per_sec: 1.0,
                burst: 8.0,
            },
            heartbeats: Rate {
                per_sec: 0.5,
                burst: 6.0,
            },
            budget: 512 * 1024,
            window: Duration::from_secs(10),
            max_sources: 100_000,
        }
    }
}

/// Per-source state for every address that talked to us recently.
#[derive(Debug)]
pub struct Limits {
    config: LimitConfig,
    sources: HashMap<IpAddr, Source>,
}

impl Limits {
    /// Limits with `config`.
    pub fn new(config: LimitConfig) -> Self {
        Limits {
            config,
            sources: HashMap::new(),
        }
    }

    /// The settings.
    pub fn config(&self) -> &LimitConfig {
        &self.config
    }

    /// Sources tracked now.
    pub fn tracked(&self) -> usize {
        self.sources.len()
    }

    fn source(&mut self, ip: IpAddr, now: Instant) -> Result<&mut Source, Refusal> {
        if !self.sources.contains_key(&ip) && self.sources.len() >= self.config.max_sources {
            self.prune(now);
            if self.sources.len() >= self.config.max_sources {
                return Err(Refusal::Sources);
            }
        }
        let c = self.config;
        let s = self.sources.entry(ip).or_insert_with(|| Source {
            requests: Bucket::full(c.requests, now),
            heartbeats: Bucket::full(c.heartbeats, now),
            sent: 0,
            window: now,
            last_seen: now,
        });
        s.last_seen = now;
        Ok(s)
    }

    /// A list request from `ip`: within its rate?
    pub fn request(&mut self, ip: IpAddr, now: Instant) -> Result<(), Refusal> {
        let rate = self.config.requests;
        let s = self.source(ip, now)?;
        if s.requests.take(rate, now, 1.0) {
            Ok(())
        } else {
            Err(Refusal::Rate)
        }
    }

    /// A heartbeat from `ip`: within its rate?
    pub fn heartbeat(&mut self, ip: IpAddr, now: Instant) -> Result<(), Refusal> {
        let rate = self.config.heartbeats;
        let s = self.source(ip, now)?;
        if s.heartbeats.take(rate, now, 1.0) {
            Ok(())
        } else {
            Err(Refusal::Rate)
        }
    }

    /// Reserves `bytes` of `ip`'s budget for this window, or refuses (and reserves nothing).
    pub fn spend(&mut self, ip: IpAddr, bytes: u64, now: Instant) -> Result<(), Refusal> {
        let (budget, window) = (self.config.budget, self.config.window);
        let s = self.source(ip, now)?;
        if now.saturating_duration_since(s.window) >= window {
            s.window = now;
            s.sent = 0;
        }
        if s.sent + bytes > budget {
            return Err(Refusal::Budget);
        }
        s.sent += bytes;
        Ok(())
    }

    /// Forgets sources idle for longer than a budget window whose buckets are full again.
    pub fn prune(&mut self, now: Instant) {
        let c = self.config;
        let idle = c
            .window
            .max(Duration::from_secs_f64(
                c.requests.burst / c.requests.per_sec.max(1e-3),
            ))
            .max(Duration::from_secs_f64(
                c.heartbeats.burst / c.heartbeats.per_sec.max(1e-3),
            ));
        self.sources
            .retain(|_, s| now.saturating_duration_since(s.last_seen) < idle);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_refill_and_budget_resets() {
        let now = Instant::now();
        let mut l = Limits::new(LimitConfig::default());
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        for _ in 0..8 {
            assert!(l.request(ip, now).is_ok());
        }
        assert_eq!(l.request(ip, now), Err(Refusal::Rate));
        assert!(l.request(ip, now + Duration::from_secs(1)).is_ok());
        assert!(l.spend(ip, 400 * 1024, now).is_ok());
        assert_eq!(l.spend(ip, 200 * 1024, now), Err(Refusal::Budget));
        assert!(l
            .spend(ip, 200 * 1024, now + Duration::from_secs(10))
            .is_ok());
    }

    #[test]
    fn sources_are_bounded() {
        let now = Instant::now();
        let mut l = Limits::new(LimitConfig {
            max_sources: 3,
            ..LimitConfig::default()
        });
        for i in 0..3u8 {
            assert!(l.request(IpAddr::from([10, 0, 0, i]), now).is_ok());
        }
        assert_eq!(
            l.request(IpAddr::from([10, 0, 0, 9]), now),
            Err(Refusal::Sources)
        );
        // Once they have been idle long enough, room is made.
        assert!(l
            .request(IpAddr::from([10, 0, 0, 9]), now + Duration::from_secs(60))
            .is_ok());
        assert_eq!(l.tracked(), 1);
    }
}
