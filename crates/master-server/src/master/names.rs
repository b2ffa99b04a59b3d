//! Game names and game types, interned.

use std::collections::HashMap;

/// Game names and game types, stored once each and freed when no server uses them: 10,000
/// servers of one game share one string, and names an attacker's servers made up go when the
/// servers go.
#[derive(Debug, Default)]
pub(super) struct Names {
    all: Vec<(Box<str>, u32)>,
    index: HashMap<Box<str>, u32>,
    free: Vec<u32>,
}

impl Names {
    pub(super) fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            if let Some(e) = self.all.get_mut(i as usize) {
                e.1 += 1;
            }
            return i;
        }
        let i = match self.free.pop() {
            Some(i) => {
                if let Some(e) = self.all.get_mut(i as usize) {
                    *e = (s.into(), 1);
                }
                i
            }
            None => {
                self.all.push((s.into(), 1));
                u32::try_from(self.all.len() - 1).unwrap_or(u32::MAX)
            }
        };
        self.index.insert(s.into(), i);
        i
    }

    pub(super) fn release(&mut self, i: u32) {
        let Some(e) = self.all.get_mut(i as usize) else {
            return;
        };
        e.1 = e.1.saturating_sub(1);
        if e.1 == 0 {
            let name = std::mem::take(&mut e.0);
            self.index.remove(&name);
            self.free.push(i);
        }
    }

    pub(super) fn lookup(&self, s: &str) -> Option<u32> {
        self.index.get(s).copied()
    }

    pub(super) fn get(&self, i: u32) -> &str {
        self.all.get(i as usize).map_or("", |s| &s.0)
    }

    /// Names in use.
    pub(super) fn len(&self) -> usize {
        self.index.len()
    }
}
