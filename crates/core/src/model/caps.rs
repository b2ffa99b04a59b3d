//! How much of what a server controls one record keeps: at most [`MAX_PLAYERS`] players and
//! [`MAX_WARNINGS`] warnings, the rest only counted. A listed server is anyone's: a 64 KiB
//! status of `"\n` lines would otherwise be 32,000 warnings, and a datagram of short player
//! lines some 9,000 players, held for every server of a scan. The decoders keep no more than
//! this as they read, and [`ServerInfo::cap`] bounds any record after them.

use super::ServerInfo;

/// Most players a record keeps; the counts (`num_players`…) still say how many there were.
pub const MAX_PLAYERS: usize = 1024;

/// Most warnings a record keeps, the last one saying how many more there were.
pub const MAX_WARNINGS: usize = 32;

/// Keeps at most `max` of `items` (freeing the rest), and says how many went.
pub fn keep_first<T>(items: &mut Vec<T>, max: usize) -> usize {
    let over = items.len().saturating_sub(max);
    if over > 0 {
        items.truncate(max);
        items.shrink_to_fit();
    }
    over
}

/// Warnings collected by a decoder as it reads: the first [`MAX_WARNINGS`] - 1 kept, the rest
/// counted (and said in one more by [`WarningCap::finish`]). The message is built only when
/// it is kept.
#[derive(Debug)]
pub struct WarningCap {
    kept: Vec<String>,
    room: usize,
    omitted: usize,
}

impl Default for WarningCap {
    fn default() -> Self {
        Self::with_room(MAX_WARNINGS)
    }
}

impl WarningCap {
    /// Nothing collected yet, room for [`MAX_WARNINGS`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Room for `room` warnings in all (the count of the rest included; at least one kept):
    /// for a record that has some already.
    pub fn with_room(room: usize) -> Self {
        WarningCap {
            kept: Vec::new(),
            room: room.max(2),
            omitted: 0,
        }
    }

    /// Keeps the warning `make` builds, or counts it once the cap is reached.
    pub fn push(&mut self, make: impl FnOnce() -> String) {
        if self.kept.len() + 1 < self.room {
            self.kept.push(make());
        } else {
            self.omitted = self.omitted.saturating_add(1);
        }
    }

    /// Counts `n` more warnings not kept (a decoder that dropped them before).
    pub fn omitted(&mut self, n: usize) {
        self.omitted = self.omitted.saturating_add(n);
    }

    /// Appends what was kept to `out`, and one warning for the count of the rest (`and N
    /// more …`, `what` naming them).
    pub fn finish(self, out: &mut Vec<String>, what: &str) {
        out.extend(self.kept);
        if self.omitted > 0 {
            out.push(format!("and {} more {what}", self.omitted));
        }
    }
}

impl ServerInfo {
    /// Bounds the record (a listed server is anyone's): at most [`MAX_PLAYERS`] players (one warning
    /// says how many more there were) and [`MAX_WARNINGS`] warnings (the last one says how
    /// many more). The counts (`num_players`, `num_bots`, `num_spectators`) are left as the
    /// server gave them. True when anything was dropped.
    pub fn cap(&mut self) -> bool {
        let mut capped = false;
        if let Some(players) = self.players.as_mut() {
            let n = keep_first(players, MAX_PLAYERS);
            if n > 0 {
                capped = true;
                self.warnings
                    .push(format!("{n} more players not kept (at most {MAX_PLAYERS})"));
            }
        }
        if self.warnings.len() > MAX_WARNINGS {
            let n = keep_first(&mut self.warnings, MAX_WARNINGS - 1);
            self.warnings.push(format!("and {n} more warnings"));
            capped = true;
        }
        capped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Player, Text};

    fn player(i: usize) -> Player {
        Player::new(Text::new(format!("p{i}"), crate::model::Dialect::Plain))
    }

    #[test]
    fn cap_keeps_at_most_the_bounds_and_counts_the_rest() {
        let mut info = ServerInfo {
            num_players: 5000,
            players: Some((0..5000).map(player).collect()),
            warnings: (0..40_000).map(|i| format!("w{i}")).collect(),
            ..ServerInfo::default()
        };
        assert!(info.cap());
        assert_eq!(info.players.as_ref().map(Vec::len), Some(MAX_PLAYERS));
        assert_eq!(info.num_players, 5000, "the count stays the server's");
        assert_eq!(info.warnings.len(), MAX_WARNINGS);
        assert_eq!(info.warnings[0], "w0");
        // 40,000 warnings and the players' one: 31 kept, 39,970 more.
        assert_eq!(info.warnings.last().unwrap(), "and 39970 more warnings");
        assert!(!info.cap(), "a capped record stays as it is");
    }

    #[test]
    fn a_record_within_the_bounds_is_untouched() {
        let mut info = ServerInfo {
            players: Some((0..MAX_PLAYERS).map(player).collect()),
            warnings: (0..MAX_WARNINGS).map(|i| format!("w{i}")).collect(),
            ..ServerInfo::default()
        };
        let before = info.clone();
        assert!(!info.cap());
        assert_eq!(info, before);
    }

    #[test]
    fn warning_cap_keeps_the_first_and_counts_the_rest() {
        let mut w = WarningCap::new();
        let mut built = 0;
        for i in 0..100 {
            w.push(|| {
                built += 1;
                format!("line {i}")
            });
        }
        w.omitted(900);
        let mut out = vec!["before".to_string()];
        w.finish(&mut out, "lines skipped");
        assert_eq!(
            built,
            MAX_WARNINGS - 1,
            "messages past the cap are never built"
        );
        assert_eq!(out.len(), 1 + MAX_WARNINGS);
        assert_eq!(out.last().unwrap(), "and 969 more lines skipped");
    }
}
