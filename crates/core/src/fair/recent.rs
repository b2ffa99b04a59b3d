//! A bounded map of recently used keys, forgotten a generation at a time: what every
//! listener keeps per source or per network (rate buckets, shares) lives in one.
//!
//! A new key goes into the young table, a key found in the old one moves to the young one,
//! and when the young table holds half the room (or has aged), the old table is dropped whole
//! and the young one becomes old. No packet ever pays for a scan of the table, and a flood of
//! new keys never locks a new client out: it only forgets the values of keys that were quiet
//! for a generation (a GCRA bucket whose time has passed is full, so forgetting it changes
//! nothing).

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

/// A bounded map of recently used keys, forgotten a generation at a time (see the module
/// documentation): O(1) per access, at most `room` entries, no lockout.
#[derive(Debug)]
pub struct Recent<V, K> {
    young: HashMap<K, V>,
    old: HashMap<K, V>,
    room: usize,
    /// When the young table started (ns), and how long a generation may last.
    born: u64,
    max_age: u64,
    rotations: u64,
}

impl<V: Default, K: Copy + Eq + Hash> Recent<V, K> {
    /// A map of at most `room` keys whose generations last at most `max_age`.
    pub fn new(room: usize, max_age: Duration) -> Self {
        Recent {
            young: HashMap::new(),
            old: HashMap::new(),
            room: room.max(2),
            born: 0,
            max_age: u64::try_from(max_age.as_nanos()).unwrap_or(u64::MAX),
            rotations: 0,
        }
    }

    fn rotate_if_due(&mut self, now: u64) {
        if self.young.len() >= self.room / 2 || now.saturating_sub(self.born) >= self.max_age {
            self.old = std::mem::take(&mut self.young);
            self.born = now;
            self.rotations += 1;
        }
    }

    /// The value for `key`, a default one when it is new (or was forgotten).
    pub fn entry(&mut self, key: K, now: u64) -> &mut V {
        if !self.young.contains_key(&key) {
            self.rotate_if_due(now);
            let v = self.old.remove(&key).unwrap_or_default();
            self.young.insert(key, v);
        }
        self.young.entry(key).or_default()
    }

    /// The value for `key` if it is held, without touching the tables.
    pub fn get(&self, key: &K) -> Option<&V> {
        self.young.get(key).or_else(|| self.old.get(key))
    }

    /// Entries held (both generations).
    pub fn len(&self) -> usize {
        self.young.len() + self.old.len()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Generations dropped so far (each one a table freed at once, never a scan per packet).
    pub fn rotations(&self) -> u64 {
        self.rotations
    }

    /// Ages the tables without an access (the master's timer), so an idle master gives
    /// memory back.
    pub fn tick(&mut self, now: u64) {
        if now.saturating_sub(self.born) >= self.max_age {
            self.old = std::mem::take(&mut self.young);
            self.born = now;
            self.rotations += 1;
        }
    }
}
