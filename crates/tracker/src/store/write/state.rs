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
pub(super) type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// A hasher that hashes alike in every process ([`record_hash`] is stored).
pub(super) fn stable_hasher() -> impl Hasher {
    foldhash::quality::FixedState::with_seed(0x6672_6167).build_hasher()
}

/// A stable hash of `v` ([`stable_hasher`]).
pub(super) fn hash_of(v: impl Hash) -> u64 {
    let mut h = stable_hasher();
    v.hash(&mut h);
    h.finish()
}

/// A player on a server: its name's bytes (at most [`MAX_NAME_BYTES`]), dialect, and which
/// of that name (0 for the first).
pub(super) type PlayerKey = (Box<[u8]>, Dialect, i64);

/// An open session as the writer remembers it.
#[derive(Debug, Clone)]
pub(super) struct Session {
    /// Its row's id (`sessions.id`).
    pub(super) id: i64,
    pub(super) player_id: i64,
    pub(super) joined: i64,
    pub(super) last_seen: i64,
    pub(super) score: Option<i64>,
    pub(super) team: Option<i64>,
    /// `last_seen` as written.
    pub(super) written_seen: i64,
}

/// A server as the writer remembers it.
#[derive(Debug, Clone)]
pub(super) struct ServerState {
    pub(super) id: i64,
    pub(super) status: &'static str,
    pub(super) error: Option<String>,
    /// Hash of what a `server_changes` row holds.
    pub(super) change: u64,
    /// Hash of the stored record.
    pub(super) record: u64,
    pub(super) country: Option<String>,
    pub(super) last_online: Option<i64>,
    pub(super) up_since: Option<i64>,
    pub(super) down_since: Option<i64>,
    /// Since when no master lists it (`servers.unlisted_since`).
    pub(super) unlisted_since: Option<i64>,
    pub(super) sessions: Map<PlayerKey, Session>,
}

impl ServerState {
    /// Ends every open session at the last round its player was seen in (the tracker did
    /// not see them leave), as updates for `closes`.
    pub(super) fn end_sessions(&mut self, closes: &mut Vec<SessionUpdate>) {
        for (_, s) in self.sessions.drain() {
            closes.push(SessionUpdate {
                id: s.id,
                server_id: self.id,
                player_id: s.player_id,
                last_seen: s.last_seen,
                left: Some(s.last_seen),
                score: s.score,
                team: s.team,
            });
        }
    }
}

/// What the database holds now, as far as the writer needs it.
#[derive(Debug, Default)]
pub(in crate::store) struct State {
    pub(super) servers: Map<String, ServerState>,
    pub(super) last_round: Option<i64>,
    /// Sessions were loaded from the database, not yet checked against the gap.
    pub(super) resumed: bool,
    pub(super) rounds: u64,
}

/// Hash of a server's change-row state.
pub(super) fn change_hash(
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
pub(super) fn dialect_of(id: &str) -> Dialect {
    id.parse().unwrap_or_default()
}

impl State {
    /// Loads the servers, the open sessions and the last round.
    pub(in crate::store) async fn load(
        conn: &mut sqlx::AnyConnection,
    ) -> Result<State, StoreError> {
        let mut st = State::default();
        let rows = sqlx::query(
            // `last_online` as of the latest numbers: an unchanged server's row is not
            // rewritten, so its column says when it last changed; an online server last
            // answered in its latest round (a server going down rewrites its row, with the
            // last round it answered in).
            "SELECT s.id, s.addr, s.status, s.error, s.country, COALESCE(CASE WHEN l.status = 0 \
             THEN l.at END, s.last_online), s.up_since, s.down_since, s.name_raw, s.dialect, \
             s.map, s.gametype, s.max_players, s.password, s.record_hash, s.unlisted_since \
             FROM servers s \
             LEFT JOIN server_latest l ON l.server_id = s.id",
        )
        .fetch_all(&mut *conn)
        .await?;
        let mut by_id = Map::default();
        for r in &rows {
            let addr: String = r.try_get(1)?;
            let status: String = r.try_get(2)?;
            let status = code_status(status_code(&status));
            let name: Option<Vec<u8>> = r.try_get(8)?;
            let dialect: Option<String> = r.try_get(9)?;
            let map: Option<String> = r.try_get(10)?;
            let gametype: Option<String> = r.try_get(11)?;
            let password: Option<i64> = r.try_get(13)?;
            let record: Option<i64> = r.try_get(14)?;
            let id: i64 = r.try_get(0)?;
            by_id.insert(id, addr.clone());
            st.servers.insert(
                addr,
                ServerState {
                    id,
                    change: change_hash(
                        status == "online",
                        name.as_deref(),
                        dialect.as_deref(),
                        map.as_deref(),
                        gametype.as_deref(),
                        r.try_get(12)?,
                        password.map(|p| p != 0),
                    ),
                    status,
                    error: r.try_get(3)?,
                    record: record.map_or(0, |h| u64::from_ne_bytes(h.to_ne_bytes())),
                    country: r.try_get(4)?,
                    last_online: r.try_get(5)?,
                    up_since: r.try_get(6)?,
                    down_since: r.try_get(7)?,
                    unlisted_since: r.try_get(15)?,
                    sessions: Map::default(),
                },
            );
        }
        let rows = sqlx::query(
            "SELECT s.server_id, s.player_id, s.nth, s.joined, s.last_seen, s.last_score, \
             s.team, p.name_raw, p.dialect, s.id FROM sessions s \
             JOIN players p ON p.id = s.player_id WHERE s.left_at IS NULL",
        )
        .fetch_all(&mut *conn)
        .await?;
        for r in &rows {
            let server_id: i64 = r.try_get(0)?;
            let Some(srv) = by_id.get(&server_id).and_then(|a| st.servers.get_mut(a)) else {
                continue;
            };
            let last_seen: i64 = r.try_get(4)?;
            let name: Vec<u8> = r.try_get(7)?;
            let dialect: String = r.try_get(8)?;
            srv.sessions.insert(
                (name.into_boxed_slice(), dialect_of(&dialect), r.try_get(2)?),
                Session {
                    id: r.try_get(9)?,
                    player_id: r.try_get(1)?,
                    joined: r.try_get(3)?,
                    last_seen,
                    score: r.try_get(5)?,
                    team: r.try_get(6)?,
                    written_seen: last_seen,
                },
            );
        }
        st.last_round = sqlx::query("SELECT MAX(at) FROM rounds")
            .fetch_one(&mut *conn)
            .await?
            .try_get(0)?;
        st.resumed = true;
        Ok(st)
    }
}

/// A session to close or refresh: its key and the values to write.
pub(super) struct SessionUpdate {
    /// The session's row.
    pub(super) id: i64,
    pub(super) server_id: i64,
    pub(super) player_id: i64,
    pub(super) last_seen: i64,
    pub(super) left: Option<i64>,
    pub(super) score: Option<i64>,
    pub(super) team: Option<i64>,
}

/// A session to open, once its player has an id.
pub(super) struct NewSession {
    /// The server, an index into the round's records.
    pub(super) server: usize,
    pub(super) key: PlayerKey,
    pub(super) name: String,
    pub(super) score: Option<i64>,
    pub(super) team: Option<i64>,
    pub(super) is_bot: Option<bool>,
    pub(super) clan: Option<Vec<u8>>,
}

/// How the writer keeps history: the session gap and how often open sessions are refreshed.
#[derive(Debug, Clone, Copy)]
pub(in crate::store) struct WriteParams {
    pub(in crate::store) session_gap_ms: i64,
    pub(in crate::store) flush_rounds: u64,
    pub(in crate::store) backend: Backend,
}

/// The players on each server that answered, in its order, as the round saw them.
pub(in crate::store) type Live = HashMap<String, Vec<PlayerRow>>;

/// The player list a record gives: its list, none when it says it has no players, or `None`
/// when the players are unknown this round (a Quake III `getinfo` answered and its
/// `getstatus` was lost): then sessions and the live list stay as they were.
pub(super) fn listed(info: &fragstat::ServerInfo) -> Option<&[fragstat::Player]> {
    match info.players.as_deref() {
        Some(l) => Some(l),
        None if info.num_players == 0 => Some(&[]),
        None => None,
    }
}

/// The keys of a server's listed players, in its order: the name's bytes (capped), its
/// dialect, and which of that name it is.
pub(super) fn player_keys(list: &[fragstat::Player]) -> Vec<PlayerKey> {
    let mut keys: Vec<PlayerKey> = Vec::with_capacity(list.len());
    // Small lists (nearly all) count earlier equal names; long ones (up to MAX_PLAYERS) a map.
    let mut counts: Option<Map<(&[u8], Dialect), i64>> = (list.len() > 16).then(Map::default);
    for pl in list {
        let bytes = pl.name.as_bytes();
        let bytes = bytes.get(..MAX_NAME_BYTES).unwrap_or(bytes);
        let d = pl.name.dialect();
        let nth = match counts.as_mut() {
            Some(c) => {
                let n = c.entry((bytes, d)).or_insert(0);
                *n += 1;
                *n - 1
            }
            None => keys.iter().filter(|k| k.1 == d && *k.0 == *bytes).count() as i64,
        };
        keys.push((bytes.into(), d, nth));
    }
    keys
}

/// A listed player of a server that answered, for the live list: its session when it was
/// open already, else the index of the session it opens.
pub(super) enum Slot {
    Known { player_id: i64, joined: i64 },
    Opened(usize),
}

/// One server's numbers this round: its `series` row once its id is known (copied into
/// `server_latest` from there).
pub(super) struct SeriesRow {
    pub(super) server: usize,
    pub(super) status: i64,
    pub(super) players: Option<i64>,
    pub(super) bots: Option<i64>,
    pub(super) rtt: Option<i64>,
}
