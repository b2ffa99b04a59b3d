//! Stats: each game's totals per round (players over time, peaks, records), time played per
//! player per game and per map in calendar weeks and months, and the reads of the stats
//! pages. The totals are written by the upkeep after each round ([`upkeep`], inside
//! [`Store::maintain`](crate::store::Store::maintain)'s transaction) into small tables of their own (schema 4), so every read
//! here is a range of a table with a row per game (or per player of a game, or per map), never
//! of the per-server series or of every session; a server's top players are its own sessions
//! (an index range). Reads are cached per round
//! ([`Store::cached`](crate::store::Store::cached)).

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::Serialize;

mod read;
mod upkeep;

pub(super) use upkeep::upkeep;

const DAY: i64 = 86_400_000;

/// A calendar period of the top players and the maps: UTC weeks from Monday, UTC months.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Period {
    /// From Monday 00:00 UTC.
    Week,
    /// From the 1st, 00:00 UTC.
    Month,
}

impl Period {
    /// Both, in the order pages show them.
    pub const ALL: [Period; 2] = [Period::Week, Period::Month];

    /// `week` or `month`.
    pub fn key(self) -> &'static str {
        match self {
            Period::Week => "week",
            Period::Month => "month",
        }
    }

    /// The period named `s` (`week`, `month`).
    pub fn parse(s: &str) -> Option<Period> {
        Period::ALL.into_iter().find(|p| p.key() == s)
    }

    /// The number stored for it (`play_time.span`, `map_time.span`).
    fn span(self) -> i64 {
        match self {
            Period::Week => 7,
            Period::Month => 30,
        }
    }

    /// The start (Unix ms) of the period that holds `at`.
    pub fn start(self, at: i64) -> i64 {
        match self {
            Period::Week => {
                let day = at.div_euclid(DAY);
                // 1970-01-01 was a Thursday: Monday is 0.
                (day - (day + 3).rem_euclid(7)).saturating_mul(DAY)
            }
            Period::Month => month_start(at),
        }
    }

    /// The start of the period after the one that starts at `start`.
    pub fn next(self, start: i64) -> i64 {
        match self {
            Period::Week => start.saturating_add(7 * DAY),
            Period::Month => month_start(start.saturating_add(32 * DAY)),
        }
    }
}

/// The first of `at`'s month, 00:00 UTC (Unix ms), by its RFC 3339 text.
fn month_start(at: i64) -> i64 {
    let text = fragstat::time_text(at);
    let first = format!("{}-01T00:00:00Z", text.get(..7).unwrap_or("1970-01"));
    humantime::parse_rfc3339(&first)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Periods kept (their start within this of now): this month and the one before.
const KEEP_PERIODS: i64 = 70 * DAY;

/// A point of a players-over-time chart: averages over the rounds it stands for.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StatsPoint {
    /// Its start (Unix ms).
    pub at: i64,
    /// Rounds it stands for.
    pub rounds: i64,
    /// Humans online (players less bots), on average.
    pub humans: f64,
    /// Bots online (where the games say), on average.
    pub bots: f64,
    /// The most humans online in one of its rounds (for downsampled history, the bucket
    /// averages' sum).
    pub humans_max: i64,
    /// Servers that answered, on average.
    pub servers_online: f64,
}

/// A most-humans-at-once figure and when.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Peak {
    /// Humans online at once.
    pub humans: i64,
    /// When (the round, or a downsampled bucket's start; Unix ms).
    pub at: i64,
}

/// A game's numbers now and its peaks (or the site's, `game` `*`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GameStats {
    /// Registry id, or `*` for every game.
    pub game: String,
    /// Servers that answered in the latest round.
    pub servers_online: i64,
    /// Humans on them.
    pub humans: i64,
    /// Bots on them (where the games say).
    pub bots: i64,
    /// The most humans at once in the last 24 hours.
    pub peak_24h: Option<Peak>,
    /// The most humans at once ever (since stats were kept).
    pub record: Option<Peak>,
}

/// A player's time in a period.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TopPlayer {
    /// Rank, from 1.
    pub rank: i64,
    /// The player's id.
    pub player_id: i64,
    /// Name bytes.
    #[serde(skip)]
    pub name_raw: Vec<u8>,
    /// Its dialect.
    #[serde(skip)]
    pub dialect: String,
    /// Seconds played.
    pub seconds: i64,
}

impl TopPlayer {
    /// The name as text in its dialect.
    pub fn name_text(&self) -> fragstat::core::model::Text {
        crate::store::text_of(self.name_raw.clone(), Some(&self.dialect))
    }
}

/// A page of top players.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TopPage {
    /// The time counted from (Unix ms): the period's start, or for a server the oldest
    /// session kept if later.
    pub since: i64,
    /// Players ranked in all (at most [`MAX_RANKED`]).
    pub total: i64,
    /// This page's players.
    pub players: Vec<TopPlayer>,
}

/// Most players a ranking counts (and pages through).
pub const MAX_RANKED: i64 = 10_000;

/// A map in a period: where it runs now and the time it ran.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MapStats {
    /// Registry id of the game.
    pub game: String,
    /// The map.
    pub map: String,
    /// Servers on it now (that answered in the latest round).
    pub servers: i64,
    /// Humans on them.
    pub humans: i64,
    /// Seconds servers ran it in the period.
    pub server_seconds: i64,
    /// Seconds humans played on it in the period.
    pub player_seconds: i64,
}

/// The stats' cache: entries of the latest round, dropped when a round is written.
#[derive(Debug, Default)]
pub(super) struct Cache {
    round: Option<i64>,
    entries: HashMap<String, Arc<dyn Any + Send + Sync>>,
}

/// Entries the cache holds at most (then it starts over).
const CACHE_ENTRIES: usize = 512;

/// The shared cache.
pub(super) type SharedCache = Arc<Mutex<Cache>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_start_on_monday_and_the_first() {
        // 2026-11-28 (a Saturday) 12:00 UTC.
        let at = 1_795_867_200_000;
        assert_eq!(fragstat::time_text(at), "2026-11-28T12:00:00Z");
        assert_eq!(
            fragstat::time_text(Period::Week.start(at)),
            "2026-11-23T00:00:00Z"
        );
        assert_eq!(
            fragstat::time_text(Period::Month.start(at)),
            "2026-11-01T00:00:00Z"
        );
        let next = Period::Month.next(Period::Month.start(at));
        assert_eq!(fragstat::time_text(next), "2026-12-01T00:00:00Z");
        let dec = Period::Month.next(next);
        assert_eq!(fragstat::time_text(dec), "2027-01-01T00:00:00Z");
        assert_eq!(
            Period::Week.start(Period::Week.start(at)),
            Period::Week.start(at)
        );
        // Out of any sensible range, no panic.
        let _ = Period::Week.start(i64::MIN);
        let _ = Period::Month.next(i64::MAX);
        assert_eq!(Period::parse("month"), Some(Period::Month));
        assert_eq!(Period::parse("year"), None);
    }
}
