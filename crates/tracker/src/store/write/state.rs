//! What the writer keeps in memory between rounds (every server's id, last state and open
//! sessions, loaded from the database when it first writes), and the rows a round makes.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};

use fragstat::core::model::Dialect;
use sqlx::Row;

use crate::store::{Backend, PlayerRow, StoreError};

use super::*;

/// The writer's in-memory maps: foldhash, not SipHash (a round looks up every server and
/// every player).
pub(in crate::store) type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// A hasher that hashes alike in every process ([`record_hash`] is stored).
pub(in crate::store) fn stable_hasher() -> impl Hasher {
    foldhash::quality::FixedState::with_seed(0x6672_6167).build_hasher()
}

/// A stable hash of `v` ([`stable_hasher`]).
pub(in crate::store) fn hash_of(v: impl Hash) -> u64 {
    let mut h = stable_hasher();
    v.hash(&mut h);
    h.finish()
}

/// A player on a server ([`fragstat::events::PlayerKey`]: name bytes capped, dialect, nth):
/// the rule the library's differ tells players apart by.
pub(in crate::store) use fragstat::events::PlayerKey;

/// An open session as the writer remembers it.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::store) struct Session {
    /// Its row's id (`sessions.id`).
    pub(in crate::store) id: i64,
    /// Its server's id.
    pub(in crate::store) server_id: i64,
    pub(in crate::store) player_id: i64,
    pub(in crate::store) joined: i64,
    pub(in crate::store) last_seen: i64,
    pub(in crate::store) score: Option<i64>,
    pub(in crate::store) team: Option<i64>,
    pub(in crate::store) is_bot: Option<bool>,
    pub(in crate::store) clan: Option<Vec<u8>>,
    /// `last_seen` as written.
    pub(in crate::store) written_seen: i64,
}

/// What the writer remembers of a server besides its id and sessions (what a round compares
/// its record with).
#[derive(Debug, Clone, Default, PartialEq)]
pub(in crate::store) struct Memo {
    pub(in crate::store) game: String,
    pub(in crate::store) status: &'static str,
    pub(in crate::store) error: Option<String>,
    /// Hash of what a `server_changes` row holds.
    pub(in crate::store) change: u64,
    /// Hash of the stored record.
    pub(in crate::store) record: u64,
    pub(in crate::store) country: Option<String>,
    pub(in crate::store) last_online: Option<i64>,
    pub(in crate::store) up_since: Option<i64>,
    pub(in crate::store) down_since: Option<i64>,
    /// Since when no master lists it (`servers.unlisted_since`).
    pub(in crate::store) unlisted_since: Option<i64>,
}

/// A server as the writer remembers it.
#[derive(Debug, Clone, Default)]
pub(in crate::store) struct ServerState {
    pub(in crate::store) id: i64,
    pub(in crate::store) memo: Memo,
    pub(in crate::store) sessions: Map<PlayerKey, Session>,
}

/// What the database holds now, as far as the writer needs it.
#[derive(Debug, Default)]
pub(in crate::store) struct State {
    pub(in crate::store) servers: Map<String, ServerState>,
    pub(in crate::store) last_round: Option<i64>,
    /// Sessions were loaded from the database, not yet checked against the gap.
    pub(in crate::store) resumed: bool,
    pub(in crate::store) rounds: u64,
    /// The names opted out as of the last round (`None`: not looked at yet).
    pub(in crate::store) opt_out: Option<std::sync::Arc<crate::privacy::OptOut>>,
}

impl State {
    /// The names of `opt` the writer did not know as opted out: their open sessions are
    /// dropped from memory (never closed, never announced), for the caller to delete their
    /// rows. From now on the writer knows `opt`.
    pub(in crate::store) fn opt_out(
        &mut self,
        opt: &std::sync::Arc<crate::privacy::OptOut>,
    ) -> Vec<String> {
        let newly: Vec<String> = match &self.opt_out {
            Some(o) if o == opt => Vec::new(),
            Some(o) => {
                let known: std::collections::HashSet<&String> = o.names().collect();
                opt.names()
                    .filter(|n| !known.contains(n))
                    .cloned()
                    .collect()
            }
            None => opt.names().cloned().collect(),
        };
        if !newly.is_empty() {
            for srv in self.servers.values_mut() {
                srv.sessions.retain(|k, _| {
                    !opt.matches(&fragstat::core::model::Text::new(
                        k.name.to_vec(),
                        k.dialect,
                    ))
                });
            }
        }
        self.opt_out = Some(std::sync::Arc::clone(opt));
        newly
    }
}

/// Hash of a server's change-row state.
pub(in crate::store) fn change_hash(
    online: bool,
    name: Option<&[u8]>,
    dialect: Option<&str>,
    map: Option<&str>,
    gametype: Option<&str>,
    max_players: Option<i64>,
    password: Option<bool>,
) -> u64 {
    if online {
        hash_of((true, name, dialect, map, gametype, max_players, password))
    } else {
        hash_of(false)
    }
}

/// A dialect as stored (an unknown id, which this writer never wrote, as the generic one).
pub(in crate::store) fn dialect_of(id: &str) -> Dialect {
    id.parse().unwrap_or_default()
}

/// A `servers` row as the writer loads it.
#[derive(sqlx::FromRow)]
struct ServerLoad {
    id: i64,
    addr: String,
    game: String,
    status: String,
    error: Option<String>,
    country: Option<String>,
    last_online: Option<i64>,
    up_since: Option<i64>,
    down_since: Option<i64>,
    name_raw: Option<Vec<u8>>,
    dialect: Option<String>,
    map: Option<String>,
    gametype: Option<String>,
    max_players: Option<i64>,
    password: Option<i64>,
    record_hash: Option<i64>,
    unlisted_since: Option<i64>,
}

/// An open session as the writer loads it.
#[derive(sqlx::FromRow)]
struct SessionLoad {
    id: i64,
    server_id: i64,
    player_id: i64,
    nth: i64,
    joined: i64,
    last_seen: i64,
    last_score: Option<i64>,
    team: Option<i64>,
    is_bot: Option<i64>,
    clan_raw: Option<Vec<u8>>,
    name_raw: Vec<u8>,
    dialect: String,
}

impl ServerLoad {
    fn state(self) -> (String, ServerState) {
        let status = code_status(status_code(&self.status));
        let change = change_hash(
            status == "online",
            self.name_raw.as_deref(),
            self.dialect.as_deref(),
            self.map.as_deref(),
            self.gametype.as_deref(),
            self.max_players,
            self.password.map(|p| p != 0),
        );
        let memo = Memo {
            game: self.game,
            status,
            error: self.error,
            change,
            record: self
                .record_hash
                .map_or(0, |h| u64::from_ne_bytes(h.to_ne_bytes())),
            country: self.country,
            last_online: self.last_online,
            up_since: self.up_since,
            down_since: self.down_since,
            unlisted_since: self.unlisted_since,
        };
        let st = ServerState {
            id: self.id,
            memo,
            sessions: Map::default(),
        };
        (self.addr, st)
    }
}

impl State {
    /// Loads the servers, the open sessions and the last round.
    pub(in crate::store) async fn load(
        conn: &mut sqlx::AnyConnection,
    ) -> Result<State, StoreError> {
        let mut st = State::default();
        let rows: Vec<ServerLoad> = sqlx::query_as(
            // `last_online` as of the latest numbers: an unchanged server's row is not
            // rewritten, so its column says when it last changed; an online server last
            // answered in its latest round (a server going down rewrites its row, with the
            // last round it answered in).
            "SELECT s.id, s.addr, s.game, s.status, s.error, s.country, COALESCE(CASE WHEN \
             l.status = 0 THEN l.at END, s.last_online) AS last_online, s.up_since, \
             s.down_since, s.name_raw, s.dialect, s.map, s.gametype, s.max_players, s.password, \
             s.record_hash, s.unlisted_since FROM servers s LEFT JOIN server_latest l ON l.server_id = s.id",
        )
        .fetch_all(&mut *conn)
        .await?;
        let mut by_id = Map::default();
        for r in rows {
            let (addr, srv) = r.state();
            by_id.insert(srv.id, addr.clone());
            st.servers.insert(addr, srv);
        }
        let rows: Vec<SessionLoad> = sqlx::query_as(
            "SELECT s.id, s.server_id, s.player_id, s.nth, s.joined, s.last_seen, s.last_score, \
             s.team, s.is_bot, s.clan_raw, p.name_raw, p.dialect FROM sessions s \
             JOIN players p ON p.id = s.player_id WHERE s.left_at IS NULL",
        )
        .fetch_all(&mut *conn)
        .await?;
        for r in rows {
            let Some(srv) = by_id.get(&r.server_id).and_then(|a| st.servers.get_mut(a)) else {
                continue;
            };
            let key = PlayerKey {
                name: r.name_raw.into_boxed_slice(),
                dialect: dialect_of(&r.dialect),
                nth: u32::try_from(r.nth).unwrap_or(u32::MAX),
            };
            let session = Session {
                id: r.id,
                server_id: r.server_id,
                player_id: r.player_id,
                joined: r.joined,
                last_seen: r.last_seen,
                score: r.last_score,
                team: r.team,
                is_bot: r.is_bot.map(|b| b != 0),
                clan: r.clan_raw,
                written_seen: r.last_seen,
            };
            srv.sessions.insert(key, session);
        }
        st.last_round = sqlx::query("SELECT MAX(at) AS last_at FROM rounds")
            .fetch_one(&mut *conn)
            .await?
            .try_get("last_at")?;
        st.resumed = true;
        Ok(st)
    }
}

/// How the writer keeps history: the session gap, how often open sessions are refreshed,
/// and how many new players a server may bring in a round.
#[derive(Debug, Clone, Copy)]
pub(in crate::store) struct WriteParams {
    pub(in crate::store) session_gap_ms: i64,
    pub(in crate::store) flush_rounds: u64,
    /// New sessions (player identities new to the server) a server may open in one round:
    /// the churn budget (`[history] new_players_per_round`).
    pub(in crate::store) new_players: usize,
    pub(in crate::store) backend: Backend,
}

/// The players on each server that answered, in its order, as the round saw them.
pub(in crate::store) type Live = HashMap<String, Vec<PlayerRow>>;

/// The player list a record gives: its list, none when it says it has no players, or `None`
/// when the players are unknown this round (a Quake III `getinfo` answered and its
/// `getstatus` was lost): then sessions and the live list stay as they were.
pub(in crate::store) fn listed(info: &fragstat::ServerInfo) -> Option<&[fragstat::Player]> {
    match info.players.as_deref() {
        Some(l) => Some(l),
        None if info.num_players == 0 => Some(&[]),
        None => None,
    }
}
