//! Real servers' manners: how many queries each engine answers from one address, and how the
//! client keeps to it.
//!
//! Game servers limit connectionless queries to stop their replies being used as an
//! amplifier: ioquake3 answers 10 back-to-back `getstatus`/`getinfo` from one address, then
//! about one a second; DarkPlaces drops any second query from an address within a second.
//! [`ServerEngine::limits`] is that table, each number with the engine's source line.
//!
//! The client side is [`Ledger`]: a per-address budget (GCRA, the token bucket's
//! one-timestamp form) shared by every batch of a client, so that a burst of different queries
//! to one server is spaced to what it answers instead of being sent to be dropped. The server
//! side, for the emulators, is [`Guard`] (and [`Guarded`], a [`Service`] wrapped in it): it
//! drops what the engine would drop.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use fragstat_core::manners::{Ledger, ServerEngine};
//!
//! let spacing = ServerEngine::DarkPlaces.spacing().expect("DarkPlaces limits queries");
//! let ledger = Ledger::new();
//! let server = "127.0.0.1:26000".parse().unwrap();
//! let t0 = Instant::now();
//! assert_eq!(ledger.reserve(server, spacing, 1, t0), Ok(()));
//! // A second query within the flood-block time waits for it.
//! let at = ledger.reserve(server, spacing, 1, t0).unwrap_err();
//! assert!(at >= t0 + Duration::from_secs(1));
//! assert_eq!(ledger.reserve(server, spacing, 1, at), Ok(()));
//! ```

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::service::{Outbox, Service};

#[cfg(test)]
mod tests;

/// The server engine a game runs on, as far as its query limits go: the row of the table
/// ([`ServerEngine::limits`]) each registry game maps to ([`crate::registry::GameMeta::engine`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ServerEngine {
    /// ioquake3 and the engines derived from it (OpenArena, Urban Terror, Tremulous GPP,
    /// ET: Legacy, the ioq3 standalone games). The whole Quake III family maps here: the
    /// limit only spaces an eleventh query to one server within a second.
    Ioq3,
    /// DarkPlaces (Nexuiz, Xonotic).
    DarkPlaces,
    /// qfusion (Warsow, Warfork).
    Qfusion,
    /// idTech 4 (Doom 3 / dhewm3, Quake 4, Prey, ETQW).
    IdTech4,
    /// Teeworlds 0.6 and 0.7 (the reference server).
    Teeworlds,
    /// DDNet.
    Ddnet,
    /// Nothing known: no limit.
    #[default]
    Unknown,
}

/// A token bucket: `burst` queries at once, then one per `period` (ioquake3's
/// `SVC_RateLimit(bucket, burst, period)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    /// Queries answered back to back from a full bucket.
    pub burst: u32,
    /// One more query is answered per this much time.
    pub period: Duration,
}

/// What one engine answers of connectionless server queries (`getinfo`, `getstatus`, their
/// equivalents), as its source says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct EngineLimits {
    /// Per source IP address (the port is not looked at): what one client gets.
    pub per_address: Option<Bucket>,
    /// For all clients together (shared with everyone else querying the server).
    pub global: Option<Bucket>,
    /// For all clients together, counted in fixed one-second windows: more in one window
    /// are dropped.
    pub per_second: Option<u32>,
}

/// ioquake3 `code/server/sv_main.c` at 5956299e80b29ef3891bcec8e99cd3e680f34b1a:
/// `SVC_Status` line 549 and `SVC_Info` line 612, `SVC_RateLimitAddress( from, 10, 1000 )`
/// (10 at once, then one per 1000 ms, per source address; `SVC_BucketForAddress` keys on the
/// address without its port); lines 557 and 620, `SVC_RateLimit( &outboundLeakyBucket, 10,
/// 100 )`, one bucket for every client. `SVC_RateLimit` (line 486) counts only the queries it
/// lets through.
const IOQ3: EngineLimits = EngineLimits {
    per_address: Some(Bucket {
        burst: 10,
        period: Duration::from_millis(1000),
    }),
    global: Some(Bucket {
        burst: 10,
        period: Duration::from_millis(100),
    }),
    per_second: None,
};

/// DarkPlaces `netconn.c` at 2f25af65533ac52fc5f1b526316cfb00dec8e28b: line 82,
/// `net_getstatusfloodblockingtimeout` "1" (seconds); lines 3404 (`getinfo`) and 3423
/// (`getstatus`) check the same `sv.getstatusfloodaddresses` list with
/// `NetConn_PreventFlood` (line 2872: per address without its port, `renew` false), so one
/// query of either kind per second from one address.
const DARKPLACES: EngineLimits = EngineLimits {
    per_address: Some(Bucket {
        burst: 1,
        period: Duration::from_millis(1000),
    }),
    global: None,
    per_second: None,
};

/// DDNet `src/engine/server/server.cpp` at 28baa427bad88b7dd0b04eca370ab8c9daed9a7c, line
/// 2260 `RateLimitServerInfoConnless`: one count for all clients, reset each second; over
/// `sv_server_info_replies_per_second` (500, `src/engine/shared/config_variables.h` line 497)
/// a request is dropped, over `sv_server_info_per_second` (50, line 496) the info goes out
/// without its clients.
const DDNET: EngineLimits = EngineLimits {
    per_address: None,
    global: None,
    per_second: Some(500),
};

/// What a client keeps to with a DDNet server: under the 50 complete replies of any
/// one-second window ([`DDNET`]): 25 at once, then one per 40 ms.
const DDNET_SPACING: Bucket = Bucket {
    burst: 25,
    period: Duration::from_millis(40),
};

impl ServerEngine {
    /// The engine's limits on server queries. Engines with none in their source:
    /// - qfusion: `source/server/sv_oob.c` at 02d07f25e9478506597455e9b4728b247cdda6a1,
    ///   `SVC_InfoResponse` and `SVC_SendInfoString` answer every `info`, `getinfo` and
    ///   `getstatus` (only `sv_public` and the server state are checked);
    /// - idTech 4: dhewm3 `neo/framework/async/AsyncServer.cpp` at
    ///   ae43c289f480a9ad9ead85c6dccddb9cbde96e8e, `idAsyncServer::ProcessGetInfoMessage`
    ///   (line 2039) answers every `getInfo` while the server is active (Quake 4, Prey and
    ///   ETQW have no public source: assumed the same);
    /// - Teeworlds: `src/engine/server/server.cpp` at
    ///   5d682733e482950f686663c129adc4b751c8d790, line 1158, answers every `getinfo`.
    pub fn limits(self) -> EngineLimits {
        match self {
            ServerEngine::Ioq3 => IOQ3,
            ServerEngine::DarkPlaces => DARKPLACES,
            ServerEngine::Ddnet => DDNET,
            ServerEngine::Qfusion
            | ServerEngine::IdTech4
            | ServerEngine::Teeworlds
            | ServerEngine::Unknown => EngineLimits::default(),
        }
    }

    /// How a client spaces its queries to one server of this engine ([`Ledger`]): within the
    /// per-address bucket, its burst less [`GLOBAL_RESERVE`] where a global bucket is no
    /// larger (ioquake3's is as large and ten times faster), for
    /// DDNet within its per-second count of complete replies (a client alone may use all of
    /// it), each period lengthened by 5 % and [`SPACING_MARGIN`] so that clock granularity on
    /// either side never makes a query early. `None`: no limit.
    pub fn spacing(self) -> Option<Spacing> {
        let limits = self.limits();
        let b = match self {
            ServerEngine::Ddnet => DDNET_SPACING,
            _ => limits.per_address?,
        };
        // A global bucket no larger than the burst is shared with every other client (and a
        // server's own readiness checks): part of it is left to them.
        let burst = match limits.global {
            Some(g) if g.burst <= b.burst => g.burst.saturating_sub(GLOBAL_RESERVE),
            _ => b.burst,
        };
        Some(Spacing {
            burst: burst.max(1),
            interval: b.period + b.period / 20 + SPACING_MARGIN,
        })
    }

    /// A lower-case name for messages (`ioq3`, `darkplaces`…).
    pub fn name(self) -> &'static str {
        match self {
            ServerEngine::Ioq3 => "ioq3",
            ServerEngine::DarkPlaces => "darkplaces",
            ServerEngine::Qfusion => "qfusion",
            ServerEngine::IdTech4 => "idtech4",
            ServerEngine::Teeworlds => "teeworlds",
            ServerEngine::Ddnet => "ddnet",
            ServerEngine::Unknown => "unknown",
        }
    }
}

/// Queries of a global bucket ([`EngineLimits::global`]) a client leaves to everyone else when
/// it spaces its burst ([`ServerEngine::spacing`]): ioquake3's 10 at once become 8.
pub const GLOBAL_RESERVE: u32 = 2;

/// Added to each period of a [`Spacing`] (besides 5 %): DarkPlaces reads its clock once per
/// server frame, so a query a few milliseconds early by ours can be late by its.
pub const SPACING_MARGIN: Duration = Duration::from_millis(15);

/// How a client spaces the queries it sends to one server: `burst` at once, then one per
/// `interval` ([`ServerEngine::spacing`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spacing {
    /// Queries that may go back to back.
    pub burst: u32,
    /// Then one per this much time.
    pub interval: Duration,
}

/// The client's per-server budgets: one timestamp per server recently queried (the GCRA's
/// theoretical arrival time). Cheap to clone: clones share the budgets, so every batch of a
/// client (and every engine it binds) spaces its queries together.
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    inner: Arc<Mutex<Budgets>>,
}

#[derive(Debug, Default)]
struct Budgets {
    /// When each server's budget is full again (absent: full now). Hashed with foldhash,
    /// randomly seeded per map (the keys come from master lists): SipHash here cost a scan of
    /// 10,000 servers 3 % more instructions (callgrind, docs/benchmarks.md).
    full_at: HashMap<SocketAddr, Instant, foldhash::fast::RandomState>,
    /// Entries left by the last sweep (the next sweep comes at twice as many).
    after_sweep: usize,
}

/// Entries a ledger holds before it first sweeps out the servers whose budget is full.
const SWEEP_AT_LEAST: usize = 1024;

impl Ledger {
    /// An empty ledger.
    pub fn new() -> Self {
        Ledger::default()
    }

    /// Takes `datagrams` queries' worth of `server`'s budget at `now` (`Ok`), or says when it
    /// will have them (`Err(at)`; nothing is taken). A send of more datagrams than the burst
    /// waits for a full budget and leaves it owing the rest.
    pub fn reserve(
        &self,
        server: SocketAddr,
        spacing: Spacing,
        datagrams: u32,
        now: Instant,
    ) -> Result<(), Instant> {
        let mut b = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let iv = spacing.interval;
        let burst = spacing.burst.max(1);
        // One lookup: the entry is written only when the budget is taken.
        let entry = b.full_at.entry(server);
        let tat = match &entry {
            Entry::Occupied(t) => (*t.get()).max(now),
            Entry::Vacant(_) => now,
        };
        // The GCRA: `k` datagrams may go when the budget's time minus the burst's tolerance
        // leaves room for them.
        let k = datagrams.clamp(1, burst);
        let slack = iv.saturating_mul(burst - k);
        let earliest = tat.checked_sub(slack).map_or(now, |t| t.max(now));
        if earliest > now {
            return Err(earliest);
        }
        let next = tat
            .checked_add(iv.saturating_mul(datagrams.max(1)))
            .unwrap_or(tat);
        match entry {
            Entry::Occupied(mut t) => *t.get_mut() = next,
            Entry::Vacant(v) => {
                v.insert(next);
            }
        }
        b.sweep(now);
        Ok(())
    }

    /// Servers with a budget not yet full (a diagnostic).
    pub fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .full_at
            .len()
    }

    /// Whether no server's budget is in use.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Budgets {
    fn sweep(&mut self, now: Instant) {
        if self.full_at.len() < (self.after_sweep * 2).max(SWEEP_AT_LEAST) {
            return;
        }
        self.full_at.retain(|_, t| *t > now);
        self.after_sweep = self.full_at.len();
    }
}

/// The server side of an engine's limits, for emulators: whether to answer a query from
/// `from` at `now`, as the engine decides ([`ServerEngine::limits`]). Sans-IO.
#[derive(Debug)]
pub struct Guard {
    limits: EngineLimits,
    /// Per source IP: (tokens used, when the bucket last drained), ioquake3's
    /// `leakyBucket_t`.
    per_address: HashMap<IpAddr, Leaky>,
    global: Leaky,
    /// DDNet's count: (window start, queries in it).
    window: Option<(Instant, u32)>,
}

/// ioquake3's leaky bucket (`SVC_RateLimit`): `used` tokens, draining one per period since
/// `last`.
#[derive(Debug, Clone, Copy)]
struct Leaky {
    used: u32,
    last: Option<Instant>,
}

impl Leaky {
    const EMPTY: Leaky = Leaky {
        used: 0,
        last: None,
    };

    /// `SVC_RateLimit`: true when the query is over the limit (and then not counted).
    fn over(&mut self, b: Bucket, now: Instant) -> bool {
        let period = b.period.max(Duration::from_millis(1));
        if let Some(last) = self.last {
            let interval = now.saturating_duration_since(last);
            let expired = interval.as_nanos() / period.as_nanos();
            let remainder = interval.as_nanos() % period.as_nanos();
            if expired > u128::from(self.used) {
                self.used = 0;
                self.last = Some(now);
            } else {
                // `expired` is at most `used` here: it fits.
                self.used -= u32::try_from(expired).unwrap_or(self.used);
                let rem = Duration::from_nanos(u64::try_from(remainder).unwrap_or(0));
                self.last = Some(now.checked_sub(rem).unwrap_or(now));
            }
        } else {
            self.last = Some(now);
        }
        if self.used < b.burst {
            self.used += 1;
            return false;
        }
        true
    }
}

/// Source addresses a [`Guard`] keeps before it forgets the idle ones.
const GUARD_ADDRESSES: usize = 4096;

impl Guard {
    /// A guard with `engine`'s limits.
    pub fn new(engine: ServerEngine) -> Self {
        Guard::with_limits(engine.limits())
    }

    /// A guard with these limits.
    pub fn with_limits(limits: EngineLimits) -> Self {
        Guard {
            limits,
            per_address: HashMap::new(),
            global: Leaky::EMPTY,
            window: None,
        }
    }

    /// Whether a query from `from` at `now` is answered (and counted); false: the engine
    /// would drop it. The per-address bucket is asked first, as ioquake3 does: a query it
    /// drops does not count against the global one.
    pub fn allow(&mut self, from: SocketAddr, now: Instant) -> bool {
        if let Some(b) = self.limits.per_address {
            if self.per_address.len() >= GUARD_ADDRESSES {
                let idle = b.period.saturating_mul(b.burst.max(1));
                self.per_address.retain(|_, l| {
                    l.last
                        .is_some_and(|t| now.saturating_duration_since(t) < idle)
                });
            }
            let bucket = self.per_address.entry(from.ip()).or_insert(Leaky::EMPTY);
            if bucket.over(b, now) {
                return false;
            }
        }
        if let Some(b) = self.limits.global {
            if self.global.over(b, now) {
                return false;
            }
        }
        if let Some(max) = self.limits.per_second {
            // DDNet: a new window when more than a second has passed since this one began;
            // every request counts, answered or not.
            let (start, n) = match self.window {
                Some((start, n))
                    if now.saturating_duration_since(start) <= Duration::from_secs(1) =>
                {
                    (start, n)
                }
                _ => (now, 0),
            };
            let n = n.saturating_add(1);
            self.window = Some((start, n));
            if n > max {
                return false;
            }
        }
        true
    }
}

/// A [`Service`] whose datagrams first pass a [`Guard`]: what the guard refuses is dropped
/// unanswered, as the engine drops it. Emulated servers are served this way unless asked not
/// to be (`fragstat serve --no-rate-limit`).
pub struct Guarded {
    inner: Box<dyn Service>,
    guard: Guard,
}

impl std::fmt::Debug for Guarded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guarded")
            .field("guard", &self.guard)
            .finish_non_exhaustive()
    }
}

impl Guarded {
    /// `inner` behind `engine`'s limits; `inner` itself when the engine has none.
    pub fn wrap(engine: ServerEngine, inner: Box<dyn Service>) -> Box<dyn Service> {
        let limits = engine.limits();
        if limits == EngineLimits::default() {
            return inner;
        }
        Box::new(Guarded {
            inner,
            guard: Guard::with_limits(limits),
        })
    }
}

impl Service for Guarded {
    fn start(&mut self, now: Instant, out: &mut Outbox) {
        self.inner.start(now, out);
    }
    fn handle(&mut self, now: Instant, from: SocketAddr, datagram: &[u8], out: &mut Outbox) {
        if self.guard.allow(from, now) {
            self.inner.handle(now, from, datagram, out);
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.inner.poll_timeout()
    }
    fn handle_timeout(&mut self, now: Instant, out: &mut Outbox) {
        self.inner.handle_timeout(now, out);
    }
    fn stop(&mut self, now: Instant, out: &mut Outbox) {
        self.inner.stop(now, out);
    }
}
