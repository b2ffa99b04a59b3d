//! Counters the master keeps for its metrics.

use std::collections::BTreeMap;

/// Why a datagram was dropped (or not answered).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Drop {
    /// Not a packet of the protocol.
    Junk,
    /// A packet the master does not take (a getstatus, a list…).
    Unexpected,
    /// A heartbeat string no game sends.
    UnknownHeartbeat,
    /// From loopback (allow with `allow_loopback`) or an address nothing can be sent to
    /// (unspecified, multicast, broadcast).
    Unroutable,
    /// From a private or special-purpose address: RFC 1918, CGNAT, link-local, unique local,
    /// 6to4, Teredo, NAT64, documentation, reserved (allow with `allow_private`).
    Private,
    /// Over the source's rate.
    Rate,
    /// From source port 0: nothing can be sent there, so nothing is charged for it.
    PortZero,
    /// Over the share of list bytes of one of the destination's prefixes (IPv4 /24, /16;
    /// IPv6 /64, /56, /48, /32).
    Budget,
    /// The main list budget is spent and the destination's network (IPv4 /16, IPv6 /48) was
    /// sent a list recently, so it may not use the reserve.
    GlobalBudget,
    /// A stranger, but the main list budget and the reserve are both spent.
    ReserveBudget,
    /// The bound on list builds a second was hit and no list for the request was cached.
    Builds,
    /// Over the challenge budget (the destination network's, or the master's in all).
    ChallengeBudget,
    /// A challenge for this server is already outstanding.
    AlreadyPending,
    /// The retry table is full (in all or for this network): the challenge went out once,
    /// without retries.
    PendingFull,
    /// An infoResponse nobody asked for.
    Unsolicited,
    /// An infoResponse with the wrong challenge.
    BadChallenge,
    /// An infoResponse without the keys a listing needs.
    MissingKeys,
    /// The list is full.
    ServersFull,
    /// Too many servers on this host (IPv4 address, IPv6 /64).
    PerAddress,
    /// Too many servers in one of this host's wider networks (IPv4 /24, /16; IPv6 /56,
    /// /48, /32).
    PerNetwork,
}

impl Drop {
    /// The label used in metrics.
    pub fn label(self) -> &'static str {
        match self {
            Drop::Junk => "junk",
            Drop::Unexpected => "unexpected",
            Drop::UnknownHeartbeat => "unknown_heartbeat",
            Drop::Unroutable => "unroutable",
            Drop::Private => "private",
            Drop::Rate => "rate",
            Drop::PortZero => "port_zero",
            Drop::Budget => "budget",
            Drop::GlobalBudget => "global_budget",
            Drop::ReserveBudget => "reserve_budget",
            Drop::Builds => "builds",
            Drop::ChallengeBudget => "challenge_budget",
            Drop::AlreadyPending => "already_pending",
            Drop::PendingFull => "pending_full",
            Drop::Unsolicited => "unsolicited",
            Drop::BadChallenge => "bad_challenge",
            Drop::MissingKeys => "missing_keys",
            Drop::ServersFull => "servers_full",
            Drop::PerAddress => "per_address",
            Drop::PerNetwork => "per_network",
        }
    }
}

/// Counters since start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Datagrams received.
    pub datagrams: u64,
    /// Heartbeats received.
    pub heartbeats: u64,
    /// List requests received.
    pub requests: u64,
    /// Lists sent.
    pub lists: u64,
    /// Bytes of lists sent.
    pub bytes_sent: u64,
    /// Challenges sent.
    pub challenges: u64,
    /// Lists built (a scan of the table and an encode); the others came from the cache.
    pub lists_built: u64,
    /// Lists sent from the reserve (to strangers while the main budget was spent).
    pub lists_reserve: u64,
    /// Lists cut to the reply cap (their first datagrams, the end marker on the last).
    pub lists_truncated: u64,
    /// Lists sent stale from the cache because the bound on builds a second was hit.
    pub lists_stale: u64,
    /// New servers listed.
    pub registrations: u64,
    /// Listed servers that answered a challenge again.
    pub verifications: u64,
    /// Listed servers removed because they stopped answering (flatline, shutdown).
    pub removals: u64,
    /// Listed servers that expired.
    pub expirations: u64,
    /// Listed servers displaced by a newcomer when the list was full (the newest of the
    /// network holding the most).
    pub displaced: u64,
    /// Drops by reason.
    pub drops: BTreeMap<Drop, u64>,
}

impl Stats {
    /// Counts a drop.
    pub fn drop(&mut self, why: Drop) {
        *self.drops.entry(why).or_default() += 1;
    }

    /// Drops for one reason.
    pub fn dropped(&self, why: Drop) -> u64 {
        self.drops.get(&why).copied().unwrap_or(0)
    }
}
