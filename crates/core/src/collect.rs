//! Collecting a master's list across datagrams, for every family's master exchange: entries
//! de-duplicated in the order they came, and the wait that decides when the list is whole.

use std::collections::HashSet;
use std::hash::Hash;
use std::time::Duration;

use crate::exchange::Verdict;
use crate::wire::DecodeError;

/// A master list arriving in any number of datagrams, none of which says how many follow.
///
/// Each datagram's entries are added in order; an entry seen before (a datagram delivered
/// twice, a master listing a server twice) is kept once, where it first came. The list is
/// taken to be whole a short `settle` after a datagram that says it ends the list (an end
/// marker, a datagram that is not full): UDP reorders, so datagrams it overtook may still
/// come. Until then each datagram restarts the attempt timeout, and when the master has been
/// quiet that long the list is whatever came.
///
/// ```
/// use std::time::Duration;
/// use fragstat_core::collect::ListCollector;
/// use fragstat_core::Verdict;
///
/// let mut list = ListCollector::new(Duration::from_millis(100));
/// list.add([1, 2, 3]);
/// assert!(matches!(list.progress::<()>(false), Verdict::Progress { wait: None, .. }));
/// list.add([3, 4]);
/// let Verdict::Progress { wait, .. } = list.progress::<()>(true) else { panic!() };
/// assert_eq!(wait, Some(Duration::from_millis(100)));
/// assert_eq!(list.on_timeout().unwrap().unwrap(), [1, 2, 3, 4]);
/// ```
#[derive(Debug, Clone)]
pub struct ListCollector<A> {
    seen: HashSet<A>,
    entries: Vec<A>,
    datagrams: u32,
    settle: Duration,
    ended: bool,
}

impl<A: Hash + Eq + Clone> ListCollector<A> {
    /// An empty list that settles `settle` after its last datagram.
    pub fn new(settle: Duration) -> Self {
        ListCollector {
            seen: HashSet::new(),
            entries: Vec::new(),
            datagrams: 0,
            settle,
            ended: false,
        }
    }

    /// Sets the wait after the datagram that ends the list.
    pub fn with_settle(mut self, settle: Duration) -> Self {
        self.settle = settle;
        self
    }

    /// One datagram of the list arrived with these entries.
    pub fn add(&mut self, entries: impl IntoIterator<Item = A>) {
        self.datagrams += 1;
        for e in entries {
            if self.seen.insert(e.clone()) {
                self.entries.push(e);
            }
        }
    }

    /// One datagram that belongs to the list but lists nothing (a count, say) arrived.
    pub fn add_empty(&mut self) {
        self.datagrams += 1;
    }

    /// Entries so far (each once).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no entry has come.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Datagrams of the list so far.
    pub fn datagrams(&self) -> u32 {
        self.datagrams
    }

    /// The verdict after a datagram: `ends` says this datagram ends the list (once one has,
    /// every later datagram lingers only `settle` too).
    pub fn progress<O>(&mut self, ends: bool) -> Verdict<O> {
        self.ended |= ends;
        Verdict::Progress {
            attempt: None,
            wait: self.ended.then_some(self.settle),
        }
    }

    /// The entries, in the order they first came (the collector is left empty).
    pub fn take(&mut self) -> Vec<A> {
        self.seen.clear();
        std::mem::take(&mut self.entries)
    }

    /// For [`Exchange::on_timeout`](crate::Exchange::on_timeout): the list when any datagram
    /// of it came (a list with no end marker ends with the master's silence), else `None`.
    pub fn on_timeout(&mut self) -> Option<Result<Vec<A>, DecodeError>> {
        (self.datagrams > 0).then(|| Ok(self.take()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_kept_once_where_they_first_came() {
        let mut l = ListCollector::new(Duration::from_millis(5));
        l.add(["b", "a"]);
        l.add(["a", "c", "b"]);
        assert_eq!((l.len(), l.datagrams()), (3, 2));
        assert_eq!(l.take(), ["b", "a", "c"]);
        assert!(l.is_empty());
    }

    #[test]
    fn the_end_is_sticky_and_silence_without_datagrams_is_no_list() {
        let mut l: ListCollector<u8> = ListCollector::new(Duration::from_millis(5));
        assert!(l.on_timeout().is_none());
        l.add_empty();
        let end = Some(Duration::from_millis(5));
        assert!(matches!(l.progress::<()>(true), Verdict::Progress { wait, .. } if wait == end));
        l.add([1]);
        assert!(matches!(l.progress::<()>(false), Verdict::Progress { wait, .. } if wait == end));
        assert_eq!(l.on_timeout().unwrap().unwrap(), [1]);
    }
}
