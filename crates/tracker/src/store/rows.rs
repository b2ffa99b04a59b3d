//! The row types: what a round writes and what the queries read.

use std::collections::{HashMap, HashSet};
use std::str::FromStr;

use fragstat::core::model::Dialect;
use fragstat::core::record::Record;
use serde::Serialize;

/// What one round saw.
#[derive(Debug, Clone, Default)]
pub struct RoundData {
    /// When the round started (Unix ms): the key of its rows.
    pub at: i64,
    /// When it finished probing (Unix ms).
    pub finished: i64,
    /// Every server probed.
    pub records: Vec<Record>,
    /// Each server's country (ISO 3166 alpha-2), by address as stored (`Record::address`),
    /// where known (GeoIP or the server's own word): stored in `servers.country`.
    pub countries: HashMap<String, String>,
    /// The servers probed only because they were seen lately (listed or answering within
    /// `session_gap_secs`): no master listed them this round and the configuration does not
    /// name them. Each is marked as unlisted ([`ServerRow::unlisted_since`]); one that does
    /// not answer either leaves the live list.
    pub unlisted: HashSet<String>,
    /// Every master's answer this round (`masters`; `up_since`/`down_since` are kept by
    /// the writer).
    pub masters: Vec<MasterRow>,
}

/// A master as it answered in the latest round.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct MasterRow {
    /// Registry id of the game asked for.
    pub game: String,
    /// The master as configured.
    pub master: String,
    /// Whether it gave a list.
    pub up: bool,
    /// Servers it listed, when up.
    pub listed: Option<i64>,
    /// Of those, left out by the list filter and caps.
    pub dropped: i64,
    /// Why it gave no list.
    pub error: Option<String>,
    /// The round it was last asked in (Unix ms).
    pub checked_at: i64,
    /// The first round of its current answering run; `None` while down.
    pub up_since: Option<i64>,
    /// The first round of its current silent run; `None` while up.
    pub down_since: Option<i64>,
}

/// A server as the browser lists it (its latest state).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ServerRow {
    /// The server's id (sessions, changes and series key on it).
    pub id: i64,
    /// `ip:port`.
    pub addr: String,
    /// Registry id.
    pub game: String,
    /// `online`, `timeout` or `error`.
    pub status: String,
    /// Why not online.
    pub error: Option<String>,
    /// The name's bytes, lossless.
    #[serde(skip)]
    pub name_raw: Option<Vec<u8>>,
    /// How to show the name: the dialect's id (`quake`, `plain`, `idq3`, `dp`…).
    pub dialect: Option<String>,
    /// Map.
    pub map: Option<String>,
    /// Game type.
    pub gametype: Option<String>,
    /// Players (bots included).
    pub num_players: Option<i64>,
    /// Slots.
    pub max_players: Option<i64>,
    /// Bots, where known.
    pub num_bots: Option<i64>,
    /// Round-trip time (ms) in the last round.
    pub rtt_ms: Option<f64>,
    /// First round it was seen in (Unix ms).
    pub first_seen: i64,
    /// Last round it was probed in.
    pub last_seen: i64,
    /// Last round it answered in.
    pub last_online: Option<i64>,
    /// Country, ISO 3166 alpha-2, where known.
    pub country: Option<String>,
    /// Whether it asks for a password, where the game says.
    pub password: Option<bool>,
    /// The first round of its current offline spell; `None` while online.
    pub down_since: Option<i64>,
    /// The first round of its current online spell; `None` while offline.
    pub up_since: Option<i64>,
    /// Since when no master lists it (and the configuration does not name it); `None` while
    /// listed. An unlisted server is still probed for `session_gap_secs` after it was last
    /// seen; one that is neither listed nor online is not in the live list.
    pub unlisted_since: Option<i64>,
}

impl ServerRow {
    /// The name as stored, with its dialect, for display.
    pub fn name_text(&self) -> fragstat::core::model::Text {
        text_of(
            self.name_raw.clone().unwrap_or_default(),
            self.dialect.as_deref(),
        )
    }
}

/// Rebuilds a [`fragstat::core::model::Text`] from stored bytes and dialect id. Rows written
/// before the per-engine dialects say `quake` or `plain`, which read as they did; an id this
/// build does not know, or none, reads as [`Dialect::Quake`] (the generic rule).
pub fn text_of(bytes: Vec<u8>, dialect: Option<&str>) -> fragstat::core::model::Text {
    let d = dialect
        .and_then(|d| d.parse().ok())
        .unwrap_or(Dialect::Quake);
    fragstat::core::model::Text::new(bytes, d)
}

/// One point of a server's history.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HistoryPoint {
    /// The round (Unix ms).
    pub at: i64,
    /// `online`, `timeout` or `error`.
    pub status: String,
    /// Players, when online.
    pub num_players: Option<i64>,
    /// Slots, when online.
    pub max_players: Option<i64>,
    /// Round-trip time (ms), when online.
    pub rtt_ms: Option<f64>,
    /// Map, when online.
    pub map: Option<String>,
    /// Bots, where known.
    pub num_bots: Option<f64>,
    /// Rounds this point stands for: 1 for a round, more for a downsampled bucket (whose
    /// `num_players` is the average, `status` `online` when it answered in any of them).
    pub rounds: i64,
    /// Of those, rounds it answered in.
    pub online_rounds: i64,
    /// Fewest players in the bucket (a downsampled point only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub players_min: Option<i64>,
    /// Most players in the bucket (a downsampled point only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub players_max: Option<i64>,
}

/// A player on a server now (an open session).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PlayerRow {
    /// The player's id (`Store::player`).
    pub player_id: i64,
    /// The server.
    pub addr: String,
    /// The last round it was seen in (Unix ms).
    pub at: i64,
    /// When the session began (the first round it was seen in).
    pub joined: i64,
    /// The clan's bytes, where the game has clans.
    #[serde(skip)]
    pub clan_raw: Option<Vec<u8>>,
    /// The name's bytes, lossless.
    #[serde(skip)]
    pub name_raw: Vec<u8>,
    /// How to show the name.
    pub dialect: String,
    /// Score, where sent.
    pub score: Option<i64>,
    /// Ping, where sent.
    pub ping: Option<i64>,
    /// Team, where sent.
    pub team: Option<i64>,
    /// A bot, where the game says.
    pub is_bot: Option<bool>,
}

impl PlayerRow {
    /// The name, for display.
    pub fn name_text(&self) -> fragstat::core::model::Text {
        text_of(self.name_raw.clone(), Some(&self.dialect))
    }
}

/// One round's totals.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RoundRow {
    /// When it started (Unix ms).
    pub at: i64,
    /// When it was written.
    pub finished: i64,
    /// Servers probed.
    pub servers: i64,
    /// Servers that answered.
    pub online: i64,
    /// Players seen.
    pub players: i64,
}

/// What the browser asks for.
#[derive(Debug, Clone, Default)]
pub struct ServerFilter {
    /// Only this game.
    pub game: Option<String>,
    /// Map contains this (case-insensitive).
    pub map: Option<String>,
    /// Name (colours stripped) contains this (case-insensitive).
    pub name: Option<String>,
    /// Only servers that answered in the last round they were probed in.
    pub online_only: bool,
    /// Servers that no master lists and that do not answer too (the live list leaves them
    /// out).
    pub include_unlisted: bool,
    /// Order.
    pub sort: Sort,
    /// Descending (`Some(true)`), ascending (`Some(false)`) or the sort's own default.
    pub desc: Option<bool>,
    /// At most this many rows.
    pub limit: Option<i64>,
    /// Rows skipped first (pagination).
    pub offset: i64,
}

impl ServerFilter {
    /// The `ORDER BY` clause: servers that answered first, then the sort key (missing
    /// values last in either direction), then the address, so pages are stable.
    pub fn order_sql(&self) -> String {
        let desc = self.desc.unwrap_or(self.sort.default_desc());
        let dir = if desc { "DESC" } else { "ASC" };
        // A key and the value that puts its NULLs last in this direction.
        let (key, null_last) = match self.sort {
            Sort::Players => ("COALESCE(num_players, 0) - COALESCE(num_bots, 0)", None),
            Sort::Bots => ("num_bots", Some(if desc { "-1" } else { "1e9" })),
            Sort::Ping => ("rtt_ms", Some(if desc { "-1" } else { "1e9" })),
            Sort::Name => ("name", Some(if desc { "''" } else { "'\u{10FFFF}'" })),
            Sort::Map => ("lower(map)", Some(if desc { "''" } else { "'\u{10FFFF}'" })),
            Sort::Game => ("game", None),
            Sort::Gametype => (
                "lower(gametype)",
                Some(if desc { "''" } else { "'\u{10FFFF}'" }),
            ),
            Sort::Addr => ("addr", None),
            Sort::Country => ("country", Some(if desc { "''" } else { "'\u{10FFFF}'" })),
            Sort::Password => ("password", Some(if desc { "-1" } else { "2" })),
        };
        let key = match null_last {
            Some(v) => format!("COALESCE({key}, {v})"),
            None => key.to_string(),
        };
        let then = if self.sort == Sort::Players {
            format!(", COALESCE(num_players, -1) {dir}")
        } else {
            String::new()
        };
        format!(" ORDER BY (status = 'online') DESC, {key} {dir}{then}, addr")
    }
}

/// Row order of the browser.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Sort {
    /// Most humans first (players less bots), then most players.
    #[default]
    Players,
    /// Most bots first.
    Bots,
    /// Lowest ping first.
    Ping,
    /// By name.
    Name,
    /// By map.
    Map,
    /// By game id.
    Game,
    /// By game type.
    Gametype,
    /// By address.
    Addr,
    /// By country code (servers without one last).
    Country,
    /// Open servers first (ascending), or those asking for a password (descending); those
    /// whose game does not say last.
    Password,
}

impl Sort {
    /// Every sort key, as `sort=` takes it.
    pub const KEYS: [&'static str; 10] = [
        "players", "bots", "ping", "name", "map", "game", "gametype", "addr", "country", "password",
    ];

    /// The key as `sort=` takes it.
    pub fn key(self) -> &'static str {
        match self {
            Sort::Players => "players",
            Sort::Bots => "bots",
            Sort::Ping => "ping",
            Sort::Name => "name",
            Sort::Map => "map",
            Sort::Game => "game",
            Sort::Gametype => "gametype",
            Sort::Addr => "addr",
            Sort::Country => "country",
            Sort::Password => "password",
        }
    }

    /// Whether this key sorts descending when no order is asked for (counts: most first).
    pub fn default_desc(self) -> bool {
        matches!(self, Sort::Players | Sort::Bots)
    }
}

impl FromStr for Sort {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "players" => Sort::Players,
            "bots" => Sort::Bots,
            "ping" => Sort::Ping,
            "name" => Sort::Name,
            "map" => Sort::Map,
            "game" => Sort::Game,
            "gametype" => Sort::Gametype,
            "addr" => Sort::Addr,
            "country" => Sort::Country,
            "password" => Sort::Password,
            _ => {
                return Err(format!(
                    "unknown sort {s:?}: one of {}",
                    Sort::KEYS.join(", ")
                ))
            }
        })
    }
}

/// Row counts of every table (for metrics and tests).
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Counts {
    /// Rounds kept.
    pub rounds: i64,
    /// Servers known.
    pub servers: i64,
    /// Per-round series rows kept (one per server per round, until downsampled).
    pub series: i64,
    /// The players those rows counted, summed (each round's `players` adds up to it while
    /// its rows are per-round: a whole round or none).
    pub series_players: i64,
    /// Downsampled series rows.
    pub series_agg: i64,
    /// Server state changes.
    pub changes: i64,
    /// Player identities.
    pub players: i64,
    /// Player sessions (open and closed).
    pub sessions: i64,
    /// Of those, open.
    pub open_sessions: i64,
}

/// A player the search found: one row per distinct player.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PlayerHit {
    /// The player's id (`Store::player`).
    pub player_id: i64,
    /// The name's bytes, lossless.
    #[serde(skip)]
    pub name_raw: Vec<u8>,
    /// How to show the name.
    pub dialect: String,
    /// When last seen (Unix ms; refreshed at least every `flush_rounds` rounds while on).
    pub last_seen: i64,
    /// The server it was last seen on.
    pub addr: Option<String>,
    /// On a server now (an open session).
    pub online: bool,
    /// A bot: every session kept of this name was a bot's ([`crate::store::BOT_PLAYER`]).
    pub is_bot: bool,
}

impl PlayerHit {
    /// The name, for display.
    pub fn name_text(&self) -> fragstat::core::model::Text {
        text_of(self.name_raw.clone(), Some(&self.dialect))
    }
}

/// A player's page: who, and where and when seen.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PlayerProfile {
    /// The player's id.
    pub player_id: i64,
    /// The name's bytes, lossless.
    #[serde(skip)]
    pub name_raw: Vec<u8>,
    /// How to show the name.
    pub dialect: String,
    /// First seen (Unix ms).
    pub first_seen: i64,
    /// Last seen.
    pub last_seen: i64,
    /// Time played in the sessions kept, seconds (open sessions up to their last round).
    pub seconds_played: i64,
    /// A bot: every session kept was a bot's ([`crate::store::BOT_PLAYER`]).
    pub is_bot: bool,
    /// The latest sessions, newest first.
    pub sessions: Vec<SessionRow>,
}

impl PlayerProfile {
    /// The name, for display.
    pub fn name_text(&self) -> fragstat::core::model::Text {
        text_of(self.name_raw.clone(), Some(&self.dialect))
    }
}

/// A player's time on a server.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SessionRow {
    /// The server.
    pub addr: String,
    /// The server's name's bytes (its latest).
    #[serde(skip)]
    pub server_name_raw: Option<Vec<u8>>,
    /// How to show it.
    pub server_dialect: Option<String>,
    /// The first round it was seen in.
    pub joined: i64,
    /// The round that saw it gone; `None` while on.
    pub left: Option<i64>,
    /// Its score when last written.
    pub last_score: Option<i64>,
    /// Seconds on the server (to `left`, or to the last round it was seen in).
    pub seconds: i64,
    /// A bot, where the game says.
    pub is_bot: Option<bool>,
}

impl SessionRow {
    /// The server's name, for display.
    pub fn server_name_text(&self) -> Option<fragstat::core::model::Text> {
        self.server_name_raw
            .clone()
            .map(|b| text_of(b, self.server_dialect.as_deref()))
    }
}

/// A map's time on a server.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MapSpan {
    /// The map.
    pub map: String,
    /// The game type, where known.
    pub gametype: Option<String>,
    /// From (Unix ms).
    pub from: i64,
    /// To: the next change (another map, or the server down); `None` while it lasts.
    pub to: Option<i64>,
}

/// How much of the time a server answered.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Uptime {
    /// From (Unix ms): the window asked for.
    pub since: i64,
    /// Rounds it answered in / rounds it was probed in, in the window; `None` when never
    /// probed in it.
    pub fraction: Option<f64>,
    /// The first round of its current offline spell; `None` while online.
    pub down_since: Option<i64>,
    /// The first round of its current online spell; `None` while offline.
    pub up_since: Option<i64>,
}
