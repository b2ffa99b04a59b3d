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
    /// From loopback or another non-routable address (allow with `allow_loopback`).
    Unroutable,
    /// Over the source's rate.
    Rate,
    /// Over the destination's byte budget.
    Budget,
    /// Too many sources tracked at once.
    Sources,
    /// A challenge for this server is already outstanding.
    AlreadyPending,
    /// Too many challenges outstanding.
    PendingFull,
    /// An infoResponse nobody asked for.
    Unsolicited,
    /// An infoResponse with the wrong challenge.
    BadChallenge,
    /// An infoResponse without the keys a listing needs.
    MissingKeys,
    /// The list is full.
    ServersFull,
    /// Too many servers on this IP address.
    PerAddress,
}

impl Drop {
    /// The label used in metrics.
    pub fn label(self) -> &'static str {
        match self {
            Drop::Junk => "junk",
            Drop::Unexpected => "unexpected",
            Drop::UnknownHeartbeat => "unknown_heartbeat",
            Drop::Unroutable => "unroutable",
            Drop::Rate => "rate",
            Drop::Budget => "budget",
            Drop::Sources => "sources",
            Drop::AlreadyPending => "already_pending",
            Drop::PendingFull => "pending_full",
            Drop::Unsolicited => "unsolicited",
            Drop::BadChallenge => "bad_challenge",
            Drop::MissingKeys => "missing_keys",
            Drop::ServersFull => "servers_full",
            Drop::PerAddress => "per_address",
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
    /// New servers listed.
    pub registrations: u64,
    /// Listed servers that answered a challenge again.
    pub verifications: u64,
    /// Listed servers removed because they stopped answering (flatline, shutdown).
    pub removals: u64,
    /// Listed servers that expired.
    pub expirations: u64,
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
