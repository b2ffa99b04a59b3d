//! Events from successive scans: a server came up or went down, its map, game type, name or
//! slots changed, a player joined or left.
//!
//! [`Differ`] is sans-IO: feed it each scan's [`Record`]s with the scan's time and it returns
//! the typed [`Event`]s; it keeps what it needs of the last scan (per server, keyed by its
//! address) and nothing else. [`crate::Client::watch`] runs it over a scan every interval
//! and yields the events as a stream; the tracker runs it over its rounds.
//!
//! What it decides:
//!
//! - **The first scan is a baseline**: it is remembered and yields nothing, unless
//!   [`Differ::initial`] is set, when the first scan is compared with an empty world (every
//!   server online yields `server_up` and a `player_joined` per player).
//! - **A server first seen in a later scan** (a master lists it now) is compared with nothing:
//!   online, it yields `server_up` and a `player_joined` per player; not answering, nothing
//!   (it was never up).
//! - **Down keeps the last state**: a server that stops answering yields `server_down` (with
//!   the status, `timeout`, `down` or `error`, and why) and keeps its last known name, map and
//!   players; when it answers again it yields `server_up`, then what changed since that state
//!   (so a restart with another map and one more player reads `server_down`, `server_up`,
//!   `map_changed`, `player_joined`). Its players do not "leave" while it is down.
//! - **Players are a multiset of names** (raw bytes, at most [`NAME_KEY_BYTES`] of them, and
//!   their dialect: [`PlayerKey`], the rule the tracker's sessions follow too): two players
//!   named `Player` are two; one leaving is one `player_left`; the same bytes in two dialects
//!   are two players. A renamed player is one leaving and one joining. Bots are
//!   marked where the game says so (`is_bot`; `null` where it does not, e.g. a Quake III
//!   `getstatus` alone). A scan without a player list (not asked for, or not sent: a Quake
//!   III `getinfo` answered and its `getstatus` lost) makes no player events and keeps the
//!   last known list, so the next list is compared with that one (whoever joined or left
//!   meanwhile is reported then, once); a server saying it has no players needs no list (its
//!   list is empty). Until a server has sent a list, its first one is a baseline.
//! - **A server missing from a scan** (no record for it) yields nothing; after
//!   [`Differ::forget_after`] scans in a row without it, it is forgotten.
//! - **Order within a server**: `server_down`/`server_up`, `name_changed`, `map_changed`,
//!   `gametype_changed`, `slots_changed`, `player_left`, `player_joined`.
//!
//! Bounded: at most [`Differ::max_players`] players of a server are tracked (the rest of a
//! hostile server's list is ignored and counted), and at most [`Differ::max_servers`]
//! servers.
//!
//! Events serialise (serde) as one flat JSON object:
//! `{"event": "map_changed", "server": "ip:port", "game": "q3", "at": 1700000000000,
//! "from": "q3dm6", "to": "q3dm17"}` — names as docs/json.md writes them: `name` for display,
//! `name_raw` lossless, and the `dialect`.
//!
//! ```
//! use fragstat::core::model::{Dialect, Player, ServerInfo, Text};
//! use fragstat::core::record::{Record, Status};
//! use fragstat::events::{Differ, EventKind};
//!
//! fn server(map: &str, players: &[&str]) -> Record {
//!     let mut info = ServerInfo::default();
//!     info.map = Text::new(map, Dialect::Quake);
//!     info.players = Some(
//!         players.iter().map(|p| Player::new(Text::new(*p, Dialect::Quake))).collect(),
//!     );
//!     Record::online(Some("127.0.0.1:27960".into()), "q3", info, None)
//! }
//!
//! let mut differ = Differ::new();
//! assert!(differ.update(1_000, &[server("q3dm6", &["Sarge"])]).is_empty()); // the baseline
//! let events = differ.update(2_000, &[server("q3dm17", &["Sarge", "^1Doom"])]);
//! assert!(matches!(&events[0].kind, EventKind::MapChanged { .. }));
//! assert!(matches!(&events[1].kind, EventKind::PlayerJoined(p) if p.name.display() == "Doom"));
//! let json = serde_json::to_value(&events[1]).unwrap();
//! assert_eq!(json["event"], "player_joined");
//! assert_eq!(json["name_raw"], "^1Doom");
//! ```

use std::collections::{HashMap, HashSet};

use fragstat_core::model::{Player, ServerInfo, Text};
use fragstat_core::record::{Record, Status};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

mod players;
pub use players::{key_bytes, player_keys, PlayerKey, NAME_KEY_BYTES};
#[cfg(feature = "quake3")]
pub mod push;

/// Players of one server tracked at most ([`Differ::max_players`]).
pub const MAX_PLAYERS: usize = 1024;
/// Servers tracked at most ([`Differ::max_servers`]).
pub const MAX_SERVERS: usize = 1 << 18;
/// Scans in a row a server may be missing from before it is forgotten
/// ([`Differ::forget_after`]).
pub const FORGET_AFTER: u32 = 10;

/// One change of one server between two scans.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Event {
    /// When the scan that saw it started (Unix milliseconds).
    pub at: i64,
    /// The server's address as the record names it (`ip:port`, `[v6]:port`).
    pub server: String,
    /// Its game id.
    pub game: String,
    /// What happened.
    pub kind: EventKind,
    /// Pushed by the server itself (ET: Legacy's `sv_tracker`, [`push`]) rather than seen by
    /// a scan: JSON `"pushed": true` (the key is absent from scanned events). `at` is then
    /// when the datagram arrived.
    pub pushed: bool,
}

/// What happened ([`Event::kind`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum EventKind {
    /// The server answers (again, or for the first time).
    ServerUp {
        /// Its name.
        name: Text,
        /// Its map.
        map: Text,
        /// Its game type.
        gametype: Option<String>,
        /// Clients on it.
        num_players: u32,
        /// Its slots.
        max_players: u32,
    },
    /// The server answered before and does not now.
    ServerDown {
        /// `timeout`, `down` (nothing listens) or `error`.
        status: Status,
        /// Why, as the record says.
        reason: Option<String>,
    },
    /// The server's name changed.
    NameChanged {
        /// Before.
        from: Text,
        /// Now.
        to: Text,
    },
    /// The map changed.
    MapChanged {
        /// Before.
        from: Text,
        /// Now.
        to: Text,
    },
    /// The game type changed.
    GametypeChanged {
        /// Before.
        from: Option<String>,
        /// Now.
        to: Option<String>,
    },
    /// The number of slots changed.
    SlotsChanged {
        /// Before.
        from: u32,
        /// Now.
        to: u32,
    },
    /// A player is on the server who was not.
    PlayerJoined(EventPlayer),
    /// A player was on the server and is not.
    PlayerLeft(EventPlayer),
}

/// The player of a `player_joined` or `player_left` event.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EventPlayer {
    /// The name, raw bytes and dialect.
    pub name: Text,
    /// Clan tag, where sent.
    pub clan: Option<Text>,
    /// A bot, where the game says so.
    pub is_bot: Option<bool>,
    /// Score (the last seen, for one who left), where sent.
    pub score: Option<i32>,
    /// Team, where sent.
    pub team: Option<i32>,
    /// The client slot, where the server said it (a pushed event; JSON `slot`, absent
    /// otherwise).
    pub slot: Option<u32>,
    /// The player's GUID as the server sent it, raw (a pushed event; JSON `guid`, lossless
    /// text, absent otherwise).
    pub guid: Option<Vec<u8>>,
}

impl Event {
    /// An event of `server` (of game `game`) seen by the scan at `at`.
    pub fn new(
        at: i64,
        server: impl Into<String>,
        game: impl Into<String>,
        kind: EventKind,
    ) -> Self {
        Event {
            at,
            server: server.into(),
            game: game.into(),
            kind,
            pushed: false,
        }
    }

    /// The same event, marked as pushed by the server ([`Event::pushed`]).
    #[must_use]
    pub fn as_pushed(mut self) -> Self {
        self.pushed = true;
        self
    }
}

impl EventPlayer {
    /// A player named `name`, nothing else known.
    pub fn new(name: Text) -> Self {
        EventPlayer {
            name,
            clan: None,
            is_bot: None,
            score: None,
            team: None,
            slot: None,
            guid: None,
        }
    }

    /// The player as a list gives it.
    pub fn of(p: &Player) -> Self {
        EventPlayer {
            name: p.name.clone(),
            clan: p.clan.clone(),
            is_bot: p.is_bot,
            score: p.score,
            team: p.team,
            slot: None,
            guid: None,
        }
    }
}

impl EventKind {
    /// The name JSON gives it: `server_up`, `server_down`, `name_changed`, `map_changed`,
    /// `gametype_changed`, `slots_changed`, `player_joined`, `player_left`.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::ServerUp { .. } => "server_up",
            EventKind::ServerDown { .. } => "server_down",
            EventKind::NameChanged { .. } => "name_changed",
            EventKind::MapChanged { .. } => "map_changed",
            EventKind::GametypeChanged { .. } => "gametype_changed",
            EventKind::SlotsChanged { .. } => "slots_changed",
            EventKind::PlayerJoined(_) => "player_joined",
            EventKind::PlayerLeft(_) => "player_left",
        }
    }

    /// Every kind's name.
    pub const NAMES: [&'static str; 8] = [
        "server_up",
        "server_down",
        "name_changed",
        "map_changed",
        "gametype_changed",
        "slots_changed",
        "player_joined",
        "player_left",
    ];
}

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Online => "online",
        Status::Timeout => "timeout",
        Status::Down => "down",
        _ => "error",
    }
}

fn opt_text(t: Option<&Text>) -> String {
    t.map_or_else(|| "-".to_string(), Text::display)
}

impl Event {
    /// The event in words for a person (names shown without colour codes), without the
    /// server and time: `map q3dm6 → q3dm17`, `joined: Sarge (bot)`.
    pub fn describe(&self) -> String {
        match &self.kind {
            EventKind::ServerUp {
                name,
                map,
                num_players,
                max_players,
                ..
            } => format!("up: {name} on {map}, {num_players}/{max_players}"),
            EventKind::ServerDown { status, reason } => match reason {
                Some(r) => format!("down ({}): {r}", status_name(*status)),
                None => format!("down ({})", status_name(*status)),
            },
            EventKind::NameChanged { from, to } => format!("name {from} → {to}"),
            EventKind::MapChanged { from, to } => format!("map {from} → {to}"),
            EventKind::GametypeChanged { from, to } => format!(
                "game type {} → {}",
                from.as_deref().unwrap_or("-"),
                to.as_deref().unwrap_or("-")
            ),
            EventKind::SlotsChanged { from, to } => format!("slots {from} → {to}"),
            EventKind::PlayerJoined(p) | EventKind::PlayerLeft(p) => {
                let verb = if matches!(self.kind, EventKind::PlayerJoined(_)) {
                    "joined"
                } else {
                    "left"
                };
                let mut s = format!("{verb}: {}", p.name);
                if let Some(c) = &p.clan {
                    s.push_str(&format!(" [{}]", opt_text(Some(c))));
                }
                if p.is_bot == Some(true) {
                    s.push_str(" (bot)");
                }
                s
            }
        }
    }
}

/// `{"event": …, "server": …, "game": …, "at": …, …}`: the kind's fields follow the four
/// common keys (module docs).
impl Serialize for Event {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("event", self.kind.name())?;
        m.serialize_entry("server", &self.server)?;
        m.serialize_entry("game", &self.game)?;
        m.serialize_entry("at", &self.at)?;
        if self.pushed {
            m.serialize_entry("pushed", &true)?;
        }
        match &self.kind {
            EventKind::ServerUp {
                name,
                map,
                gametype,
                num_players,
                max_players,
            } => {
                m.serialize_entry("name", &name.display_cow())?;
                m.serialize_entry("name_raw", &name.raw_cow())?;
                m.serialize_entry("dialect", &name.dialect())?;
                m.serialize_entry("map", &map.display_cow())?;
                m.serialize_entry("gametype", gametype)?;
                m.serialize_entry("num_players", num_players)?;
                m.serialize_entry("max_players", max_players)?;
            }
            EventKind::ServerDown { status, reason } => {
                m.serialize_entry("status", status)?;
                m.serialize_entry("reason", reason)?;
            }
            EventKind::NameChanged { from, to } => {
                m.serialize_entry("from", &from.display_cow())?;
                m.serialize_entry("from_raw", &from.raw_cow())?;
                m.serialize_entry("to", &to.display_cow())?;
                m.serialize_entry("to_raw", &to.raw_cow())?;
                m.serialize_entry("dialect", &to.dialect())?;
            }
            EventKind::MapChanged { from, to } => {
                m.serialize_entry("from", &from.display_cow())?;
                m.serialize_entry("to", &to.display_cow())?;
            }
            EventKind::GametypeChanged { from, to } => {
                m.serialize_entry("from", from)?;
                m.serialize_entry("to", to)?;
            }
            EventKind::SlotsChanged { from, to } => {
                m.serialize_entry("from", from)?;
                m.serialize_entry("to", to)?;
            }
            EventKind::PlayerJoined(p) | EventKind::PlayerLeft(p) => {
                m.serialize_entry("name", &p.name.display_cow())?;
                m.serialize_entry("name_raw", &p.name.raw_cow())?;
                m.serialize_entry("dialect", &p.name.dialect())?;
                m.serialize_entry("clan", &p.clan.as_ref().map(Text::display_cow))?;
                m.serialize_entry("is_bot", &p.is_bot)?;
                m.serialize_entry("score", &p.score)?;
                m.serialize_entry("team", &p.team)?;
                if let Some(slot) = p.slot {
                    m.serialize_entry("slot", &slot)?;
                }
                if let Some(guid) = &p.guid {
                    m.serialize_entry("guid", &fragstat_core::text::decode_lossless(guid))?;
                }
            }
        }
        m.end()
    }
}

/// What the differ keeps of a server's last answer.
#[derive(Debug)]
struct Known {
    name: Text,
    map: Text,
    gametype: Option<String>,
    max_players: u32,
    /// The last known list; `None`: none known yet (not asked, or not sent).
    players: Option<Vec<EventPlayer>>,
}

#[derive(Debug)]
struct ServerState {
    online: bool,
    known: Option<Known>,
    /// The scan that last had a record of it.
    seen: u64,
}

/// Events from successive scans (module docs): feed it each scan with [`Differ::update`].
#[derive(Debug)]
pub struct Differ {
    servers: HashMap<String, ServerState>,
    scans: u64,
    initial: bool,
    max_players: usize,
    max_servers: usize,
    forget_after: u32,
    untracked_servers: u64,
    untracked_players: u64,
}

impl Default for Differ {
    fn default() -> Self {
        Self::new()
    }
}

impl Differ {
    /// A differ whose first scan is a baseline, with the default bounds.
    pub fn new() -> Self {
        Differ {
            servers: HashMap::new(),
            scans: 0,
            initial: false,
            max_players: MAX_PLAYERS,
            max_servers: MAX_SERVERS,
            forget_after: FORGET_AFTER,
            untracked_servers: 0,
            untracked_players: 0,
        }
    }

    /// Events for the first scan too (compared with an empty world), instead of taking it
    /// as the baseline.
    #[must_use]
    pub fn initial(mut self, initial: bool) -> Self {
        self.initial = initial;
        self
    }

    /// Players of one server tracked at most ([`MAX_PLAYERS`]); the rest of a longer list is
    /// ignored (and counted in [`Differ::untracked_players`]).
    #[must_use]
    pub fn max_players(mut self, n: usize) -> Self {
        self.max_players = n;
        self
    }

    /// Servers tracked at most ([`MAX_SERVERS`]); records of others are ignored (and
    /// counted in [`Differ::untracked_servers`]).
    #[must_use]
    pub fn max_servers(mut self, n: usize) -> Self {
        self.max_servers = n;
        self
    }

    /// Scans in a row a server may be missing from before it is forgotten
    /// ([`FORGET_AFTER`], at least 1).
    #[must_use]
    pub fn forget_after(mut self, scans: u32) -> Self {
        self.forget_after = scans.max(1);
        self
    }

    /// Servers tracked now.
    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// No server tracked.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Scans fed so far.
    pub fn scans(&self) -> u64 {
        self.scans
    }

    /// Records ignored because [`Differ::max_servers`] servers were tracked.
    pub fn untracked_servers(&self) -> u64 {
        self.untracked_servers
    }

    /// Players ignored past [`Differ::max_players`] of their server's list.
    pub fn untracked_players(&self) -> u64 {
        self.untracked_players
    }

    /// Feeds one scan (started at `at`, Unix ms) and returns its events, server by server
    /// in the records' order. Records without an address are ignored.
    pub fn update<'a>(
        &mut self,
        at: i64,
        records: impl IntoIterator<Item = &'a Record>,
    ) -> Vec<Event> {
        self.scans += 1;
        let baseline = self.scans == 1 && !self.initial;
        let scan = self.scans;
        let mut events = Vec::new();
        for r in records {
            let Some(addr) = &r.address else { continue };
            let before = events.len();
            if !self.servers.contains_key(addr) {
                if self.servers.len() >= self.max_servers {
                    self.untracked_servers += 1;
                    continue;
                }
                self.servers.insert(
                    addr.clone(),
                    ServerState {
                        online: false,
                        known: None,
                        seen: scan,
                    },
                );
            }
            let Some(state) = self.servers.get_mut(addr) else {
                continue;
            };
            state.seen = scan;
            let mut push = |kind| events.push(Event::new(at, addr.clone(), r.game.clone(), kind));
            match (&r.info, r.status) {
                (Some(info), Status::Online) => {
                    let (mut now, dropped) = known(info, self.max_players);
                    self.untracked_players += dropped;
                    if !state.online {
                        push(EventKind::ServerUp {
                            name: now.name.clone(),
                            map: now.map.clone(),
                            gametype: now.gametype.clone(),
                            num_players: info.num_players,
                            max_players: info.max_players,
                        });
                    }
                    diff(state.known.as_ref(), &now, &mut push);
                    if now.players.is_none() {
                        // Unknown this scan: the last known list stands.
                        now.players = state.known.as_mut().and_then(|k| k.players.take());
                    }
                    state.known = Some(now);
                    state.online = true;
                }
                (_, status) => {
                    if state.online {
                        push(EventKind::ServerDown {
                            status: if status == Status::Online {
                                Status::Error
                            } else {
                                status
                            },
                            reason: r.error.clone(),
                        });
                    }
                    state.online = false;
                }
            }
            if baseline {
                events.truncate(before);
            }
        }
        let forget = u64::from(self.forget_after);
        self.servers
            .retain(|_, s| scan.saturating_sub(s.seen) < forget);
        events
    }
}

/// What to keep of an answer, and how many players were past the cap. Its players are
/// its list, an empty list when it says it has none, or `None` when they are unknown (no
/// list, clients on it).
fn known(info: &ServerInfo, max_players: usize) -> (Known, u64) {
    let mut dropped = 0;
    let players = match &info.players {
        Some(ps) => {
            dropped = ps.len().saturating_sub(max_players) as u64;
            Some(ps.iter().take(max_players).map(EventPlayer::of).collect())
        }
        None if info.num_players == 0 => Some(Vec::new()),
        None => None,
    };
    (
        Known {
            name: info.name.clone(),
            map: info.map.clone(),
            gametype: info.gametype.clone(),
            max_players: info.max_players,
            players,
        },
        dropped,
    )
}

/// The changes from `old` (`None`: nothing known) to `now`, in the documented order; no
/// player events when either list is unknown.
fn diff(old: Option<&Known>, now: &Known, push: &mut impl FnMut(EventKind)) {
    if let Some(old) = old {
        if old.name != now.name {
            push(EventKind::NameChanged {
                from: old.name.clone(),
                to: now.name.clone(),
            });
        }
        if old.map != now.map {
            push(EventKind::MapChanged {
                from: old.map.clone(),
                to: now.map.clone(),
            });
        }
        if old.gametype != now.gametype {
            push(EventKind::GametypeChanged {
                from: old.gametype.clone(),
                to: now.gametype.clone(),
            });
        }
        if old.max_players != now.max_players {
            push(EventKind::SlotsChanged {
                from: old.max_players,
                to: now.max_players,
            });
        }
    }
    let empty = Vec::new();
    let old_players = match old {
        Some(o) => match &o.players {
            Some(p) => p,
            // No list known before: this one is the baseline.
            None => return,
        },
        None => &empty,
    };
    let Some(new_players) = &now.players else {
        return;
    };
    // Players are their keys (players.rs): name bytes, dialect and which of that name.
    let old_keys = player_keys(old_players.iter().map(|p| &p.name));
    let new_keys = player_keys(new_players.iter().map(|p| &p.name));
    let still: HashSet<&PlayerKey> = new_keys.iter().collect();
    for (p, k) in old_players.iter().zip(&old_keys) {
        if !still.contains(k) {
            push(EventKind::PlayerLeft(p.clone()));
        }
    }
    let was: HashSet<&PlayerKey> = old_keys.iter().collect();
    for (p, k) in new_players.iter().zip(&new_keys) {
        if !was.contains(k) {
            push(EventKind::PlayerJoined(p.clone()));
        }
    }
}

#[cfg(test)]
mod tests;
