//! One query in flight ([`Slot`]) and the arithmetic of its timers and caps.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use slab::Slab;
use smallvec::SmallVec;

use super::Options;
use crate::rto::RttEstimator;
use crate::{LimitKind, QueryError};

pub(super) struct Slot<E> {
    /// The query's id ([`slot_in`]).
    pub(super) id: u64,
    pub(super) index: usize,
    pub(super) addr: SocketAddr,
    pub(super) ex: E,
    /// Attempts sent in the current step.
    pub(super) attempts: u32,
    /// When each attempt of the current step was sent.
    pub(super) sent_at: SmallVec<[Instant; 4]>,
    /// Timer generation: a popped timer whose generation differs is stale.
    pub(super) generation: u64,
    pub(super) rtt: Option<Duration>,
    /// What went wrong last (an undecodable reply, a failed send): reported instead of a
    /// bare timeout.
    pub(super) last_error: Option<QueryError>,
    /// Datagrams handed to the exchange so far, across every attempt and step.
    pub(super) datagrams: usize,
    /// Their bytes.
    pub(super) bytes: usize,
    /// When the query's lifetime ends (set at its first send).
    pub(super) expires: Option<Instant>,
    /// Datagrams from its address that were not an answer to it.
    pub(super) ignored: u32,
    /// Handed out by `poll_transmit` and not yet reported sent (`on_sent`).
    pub(super) sending: bool,
    /// Attempts the network reported unreachable (ICMP from the destination itself).
    pub(super) refused: u32,
    /// The send time of the attempt last counted in `refused` (one attempt counts once).
    pub(super) refused_for: Option<Instant>,
    /// The current attempt's datagrams, made and waiting for the server's budget
    /// ([`crate::Exchange::spacing`]) until this time.
    pub(super) held: Option<(Instant, Vec<Vec<u8>>)>,
}

impl<E> Slot<E> {
    pub(super) fn new(id: u64, index: usize, addr: SocketAddr, ex: E) -> Self {
        Slot {
            id,
            index,
            addr,
            ex,
            attempts: 0,
            sent_at: SmallVec::new(),
            generation: 0,
            rtt: None,
            last_error: None,
            datagrams: 0,
            bytes: 0,
            expires: None,
            ignored: 0,
            sending: false,
            refused: 0,
            refused_for: None,
            held: None,
        }
    }
}

/// The query `id` if it is still in flight. An id is the query's slot (low 32 bits) and its
/// place in the batch (high 32 bits): a slot is used again by later queries, and whatever still
/// names an earlier one (a timer, a datagram routed meanwhile) finds it gone, not its
/// successor.
pub(super) fn slot_in<E>(slots: &mut Slab<Slot<E>>, id: u64) -> Option<&mut Slot<E>> {
    slots.get_mut(slot_key(id)).filter(|s| s.id == id)
}

/// The id of the query in slot `key` that is the batch's `seq`th.
pub(super) fn query_id(key: usize, seq: u64) -> u64 {
    // Slots are below `MAX_IN_FLIGHT` (the window is capped there): 32 bits.
    ((seq & 0xFFFF_FFFF) << 32) | (key as u64 & 0xFFFF_FFFF)
}

/// The slot of query `id`.
pub(super) fn slot_key(id: u64) -> usize {
    (id & 0xFFFF_FFFF) as usize
}

/// When a timer of `slot` set for `t` fires: `t`, or the end of the query's lifetime if that
/// comes first. A query's lifetime is enforced through its one live timer (and on every
/// datagram), so there is no second timer per query: the heap holds about one entry per query
/// in flight, not one per query started in the last [`Options::lifetime`].
pub(super) fn timer_at<E>(slot: &Slot<E>, t: Instant) -> Instant {
    slot.expires.map_or(t, |e| t.min(e))
}

/// `t + d`, or far in the future when that overflows (a huge timeout means "never").
pub(super) fn later(t: Instant, d: Duration) -> Instant {
    const FAR: Duration = Duration::from_secs(86_400 * 365 * 30);
    t.checked_add(d).or_else(|| t.checked_add(FAR)).unwrap_or(t)
}

pub(super) fn exceeded(limit: LimitKind, max: u128) -> QueryError {
    QueryError::Exceeded {
        limit,
        max: u64::try_from(max).unwrap_or(u64::MAX),
    }
}

/// Whether a datagram of `len` bytes received at `at` would take the query past a cap.
pub(super) fn over_cap<E>(
    slot: &Slot<E>,
    options: &Options,
    len: usize,
    at: Instant,
) -> Option<QueryError> {
    if slot.expires.is_some_and(|e| at >= e) {
        Some(exceeded(LimitKind::Lifetime, options.lifetime.as_millis()))
    } else if slot.datagrams >= options.max_datagrams {
        Some(exceeded(
            LimitKind::Datagrams,
            options.max_datagrams as u128,
        ))
    } else if slot.bytes.saturating_add(len) > options.max_bytes {
        Some(exceeded(LimitKind::Bytes, options.max_bytes as u128))
    } else {
        None
    }
}

/// How long attempt `attempt` (0: the first) of a step waits for its reply: the adaptive
/// timeout when it is on, has samples and this is not the last attempt; otherwise
/// [`Options::timeout`].
pub(super) fn attempt_wait(options: &Options, rtt: &RttEstimator, attempt: u32) -> Duration {
    if !options.adaptive || attempt >= options.retries {
        return options.timeout;
    }
    rtt.backoff(attempt)
        .map_or(options.timeout, |d| d.min(options.timeout))
}

/// The RTT is taken once per step, at the first accepted datagram (`received`: when the
/// receive task got it), from the send time of the attempt it answers (the latest attempt when
/// the reply does not say).
pub(super) fn record_rtt<E>(slot: &mut Slot<E>, attempt: Option<u32>, received: Instant) {
    if slot.rtt.is_some() {
        return;
    }
    let sent = attempt
        .and_then(|a| slot.sent_at.get(usize::try_from(a).ok()?))
        .or_else(|| slot.sent_at.iter().rev().find(|s| **s <= received))
        .or(slot.sent_at.last());
    slot.rtt = sent.map(|s| received.saturating_duration_since(*s));
}
