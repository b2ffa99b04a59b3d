//! Spacing queries to one server to its engine's limits ([`crate::Exchange::spacing`],
//! [`crate::manners::Ledger`]): an attempt whose server has no budget left is held, with its
//! datagrams, until the ledger says it may go.

use std::cmp::Reverse;
use std::time::Instant;

use super::slot::slot_in;
use super::Scheduler;
use crate::exchange::Exchange;

impl<E: Exchange> Scheduler<E> {
    /// Takes `datagrams.len()` of the budget of query `id`'s server at `now` and gives the
    /// datagrams back to send; or holds them in the query's slot until the ledger's time and
    /// gives `None`.
    pub(super) fn spaced(
        &mut self,
        id: u64,
        datagrams: Vec<Vec<u8>>,
        now: Instant,
    ) -> Option<Vec<Vec<u8>>> {
        let slot = slot_in(&mut self.slots, id)?;
        let Some(spacing) = slot.ex.spacing() else {
            return Some(datagrams);
        };
        let n = u32::try_from(datagrams.len()).unwrap_or(u32::MAX);
        match self.ledger.reserve(slot.addr, spacing, n, now) {
            Ok(()) => Some(datagrams),
            Err(at) => {
                slot.held = Some((at, datagrams));
                self.held.push(Reverse((at, id)));
                None
            }
        }
    }

    /// Held attempts whose time has come go to the front of the send queue (they have
    /// waited longest), in the order they were due.
    pub(super) fn release_held(&mut self, now: Instant) {
        let mut due = Vec::new();
        while let Some(&Reverse((at, id))) = self.held.peek() {
            if at > now {
                break;
            }
            self.held.pop();
            if slot_in(&mut self.slots, id)
                .is_some_and(|s| s.held.as_ref().is_some_and(|h| h.0 == at))
            {
                due.push(id);
            }
        }
        for id in due.into_iter().rev() {
            self.send_queue.push_front(id);
        }
    }

    /// When the earliest held attempt may go (stale entries dropped).
    pub(super) fn next_held(&mut self) -> Option<Instant> {
        while let Some(&Reverse((at, id))) = self.held.peek() {
            if slot_in(&mut self.slots, id)
                .is_some_and(|s| s.held.as_ref().is_some_and(|h| h.0 == at))
            {
                return Some(at);
            }
            self.held.pop();
        }
        None
    }
}
