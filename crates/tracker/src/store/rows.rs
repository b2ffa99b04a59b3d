//! The row types: what a round writes and what the queries read.

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
    /// Servers' countries (`addr` → ISO 3166-1 alpha-2, upper case), where known
    /// ([`crate::geoip::Countries`]).
    pub countries: std::collections::HashMap<String, String>,
}

/// A server as the browser lists it (its latest state).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ServerRow {
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
}

/// A player seen on a server in one round.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PlayerRow {
    /// The server.
    pub addr: String,
    /// The round it was seen in (Unix ms).
    pub at: i64,
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
            Sort::Players => (
                "COALESCE(num_players, 0) - COALESCE(num_bots, 0)",
                None,
            ),
            Sort::Bots => ("num_bots", Some(if desc { "-1" } else { "1e9" })),
            Sort::Ping => ("rtt_ms", Some(if desc { "-1" } else { "1e9" })),
            Sort::Name => ("name", Some(if desc { "''" } else { "'\u{10FFFF}'" })),
            Sort::Map => ("lower(map)", Some(if desc { "''" } else { "'\u{10FFFF}'" })),
            Sort::Game => ("game", None),
            Sort::Gametype => ("lower(gametype)", Some(if desc { "''" } else { "'\u{10FFFF}'" })),
            Sort::Addr => ("addr", None),
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
}

impl Sort {
    /// Every sort key, as `sort=` takes it.
    pub const KEYS: [&'static str; 8] = [
        "players", "bots", "ping", "name", "map", "game", "gametype", "addr",
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
    /// Server snapshots kept.
    pub snapshots: i64,
    /// Player snapshots kept.
    pub player_snapshots: i64,
}
