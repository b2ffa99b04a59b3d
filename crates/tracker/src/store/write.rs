//! Writing: what changed in a round, on the writer's own connection, in one transaction.
//!
//! The writer keeps in memory what the database says now — every server's id, last state and
//! open player sessions — loaded from the database when it first writes (so a restarted
//! tracker continues where the last one stopped). A round then writes only:
//!
//! - one `series` row per server (its numbers this round),
//! - a `server_changes` row and a `servers` upsert for each server whose state changed (name,
//!   map, gametype, slots, password, up/down, status, record, country); the browser's numbers
//!   (last seen, players, bots, ping) are read from the latest series row, so an unchanged
//!   server's row is not written at all,
//! - the sessions that opened (and their players' identities) and closed,
//! - the scores and last-seen times of a rotating `1/flush_rounds` of the open sessions,
//! - the round's row.
//!
//! Numbers go into the statements as SQL literals (an `i64` or a finite `f64` written by
//! Rust cannot inject anything), so a statement of 500 rows costs the parser, not 3,000
//! bound values through sqlx's `Any` layer; text and bytes are always bound.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};

use fragstat::core::model::Dialect;
use fragstat::core::record::{Record, Status};
use sqlx::{Connection as _, Row};

use super::{PlayerRow, RoundData, Store, StoreError};

/// Most players of one server stored per round (R8): a hostile server can list ~9,000 in a
/// datagram.
pub const MAX_PLAYERS: usize = 1024;
/// Most warnings kept in a record (R8); the rest are counted in one more ("and N more").
pub const MAX_WARNINGS: usize = 32;
/// Most bytes of a server's stored JSON record (R8).
pub const MAX_RECORD_BYTES: usize = 64 * 1024;
/// Most bytes of a player's or clan's name stored (a name is an index key: PostgreSQL's
/// B-tree entries are limited to about 2.7 KB).
pub const MAX_NAME_BYTES: usize = 256;

/// Rows of literal values in one statement.
const LITERAL_ROWS: usize = 500;

fn status_str(s: Status) -> &'static str {
    match s {
        Status::Online => "online",
        Status::Timeout => "timeout",
        Status::Down => "down",
        _ => "error",
    }
}

/// The series' status code.
pub(super) fn status_code(s: &str) -> i64 {
    match s {
        "online" => 0,
        "timeout" => 1,
        "down" => 2,
        _ => 3,
    }
}

/// The status a series code stands for.
pub(super) fn code_status(c: i64) -> &'static str {
    match c {
        0 => "online",
        1 => "timeout",
        2 => "down",
        _ => "error",
    }
}

/// The dialect as stored: its id (`quake`, `plain`, `idq3`, `dp`…; `Dialect::id`).
fn dialect_str(d: Dialect) -> &'static str {
    d.id()
}

/// Caps what a server controls in a record (R8): at most [`MAX_PLAYERS`] players and
/// [`MAX_WARNINGS`] warnings (the rest said in one more warning). The round applies it to
/// every record as it arrives, so a round holds no more than that per server; the store
/// applies it again before writing.
pub fn cap_record(rec: &mut Record) {
    let Some(info) = rec.info.as_mut() else {
        return;
    };
    if let Some(players) = info.players.as_mut() {
        if players.len() > MAX_PLAYERS {
            let n = players.len() - MAX_PLAYERS;
            players.truncate(MAX_PLAYERS);
            info.warnings.push(format!(
                "{n} more players not stored (at most {MAX_PLAYERS})"
            ));
        }
    }
    if info.warnings.len() > MAX_WARNINGS {
        let n = info.warnings.len() - MAX_WARNINGS;
        info.warnings.truncate(MAX_WARNINGS);
        info.warnings.push(format!("and {n} more"));
    }
}

/// The JSON record stored on the server's row: players left out (they are sessions), and the
/// numbers that change every round (`rtt_ms`, `num_players`, `num_bots`, `num_spectators`:
/// they are the row's columns and the series), so the record is rewritten only when the
/// rest changes. At most [`MAX_RECORD_BYTES`]: a bigger one loses its rules and extra
/// fields, then everything but its address, game and status, and says so.
pub fn stored_record(rec: &Record) -> Result<String, StoreError> {
    let over = rec.info.as_ref().is_some_and(|i| {
        i.warnings.len() > MAX_WARNINGS || i.players.as_ref().is_some_and(|p| p.len() > MAX_PLAYERS)
    });
    let capped;
    let rec = if over {
        let mut r = rec.clone();
        cap_record(&mut r);
        capped = r;
        &capped
    } else {
        rec
    };
    let mut v = serde_json::to_value(rec)?;
    if let Some(o) = v.as_object_mut() {
        for k in [
            "players",
            "rtt_ms",
            "num_players",
            "num_bots",
            "num_spectators",
        ] {
            o.remove(k);
        }
    }
    let json = v.to_string();
    if json.len() <= MAX_RECORD_BYTES {
        return Ok(json);
    }
    let note = format!(
        "record of {} bytes over the store's {MAX_RECORD_BYTES}: rules and extra fields not stored",
        json.len()
    );
    if let Some(o) = v.as_object_mut() {
        o.insert("rules".into(), serde_json::json!({}));
        o.remove("extra");
        let warnings = o
            .entry("warnings")
            .or_insert_with(|| serde_json::Value::Array(Vec::new()));
        if let Some(w) = warnings.as_array_mut() {
            w.push(note.into());
        }
    }
    let json = v.to_string();
    if json.len() <= MAX_RECORD_BYTES {
        return Ok(json);
    }
    Ok(serde_json::json!({
        "address": rec.address,
        "game": rec.game,
        "status": rec.status,
        "warnings": [format!("record of {} bytes over the store's {MAX_RECORD_BYTES}: not stored", json.len())],
    })
    .to_string())
}

/// A hash of what [`stored_record`] keeps of a record, computed without writing the JSON (a
/// round writes the record only of the servers whose hash changed).
pub(super) fn record_hash(rec: &Record) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    (&rec.address, &rec.game, rec.status, &rec.error).hash(&mut h);
    if let Some(i) = &rec.info {
        (i.name.as_bytes(), i.name.dialect().id(), i.map.as_bytes()).hash(&mut h);
        (&i.gametype, &i.version, i.max_players, i.password).hash(&mut h);
        (&i.warnings, i.truncated, i.unverified, i.rules.len()).hash(&mut h);
        for pair in i.rules.pairs() {
            pair.hash(&mut h);
        }
        if let Some(e) = &i.extra {
            serde_json::to_vec(&**e).ok().hash(&mut h);
        }
    }
    h.finish()
}

/// PostgreSQL's `TEXT` cannot hold U+0000, which a server can send in a name or a map
/// (DDNet's JSON, a reply's fields): text columns get U+FFFD in its place. Nothing is lost —
/// `name_raw` keeps the bytes and `record` the JSON, where it is written `\u0000`.
fn no_nul(s: String) -> String {
    if s.contains('\0') {
        s.replace('\0', "\u{FFFD}")
    } else {
        s
    }
}

fn capped(bytes: &[u8]) -> Vec<u8> {
    bytes.get(..MAX_NAME_BYTES).unwrap_or(bytes).to_vec()
}

/// One value of a row to insert with bound parameters.
enum Val {
    I(Option<i64>),
    F(Option<f64>),
    S(Option<String>),
    B(Option<Vec<u8>>),
}

/// Most bound values in one statement. SQLite allows 32,766 and PostgreSQL 65,535, but
/// binding costs grow faster than linearly with a statement's parameters in sqlx's SQLite
/// path (docs/tracker.md), and PostgreSQL is as fast with 250.
const MAX_BINDS: usize = 250;

type Tx<'c> = sqlx::Transaction<'c, sqlx::Any>;

/// Inserts `rows` (all of one width) as `head (…), (…) … tail` statements of up to
/// [`MAX_BINDS`] values, numbered `$1…`; returns the rows the statements return.
async fn insert_rows(
    tx: &mut Tx<'_>,
    head: &str,
    tail: &str,
    rows: Vec<Vec<Val>>,
) -> Result<Vec<sqlx::any::AnyRow>, sqlx::Error> {
    let mut out = Vec::new();
    let Some(width) = rows.first().map(Vec::len).filter(|w| *w > 0) else {
        return Ok(out);
    };
    let per = (MAX_BINDS / width).max(1);
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let chunk: Vec<Vec<Val>> = rows.by_ref().take(per).collect();
        let mut sql = String::from(head);
        let mut n = 0usize;
        let mut literal = false;
        for (i, row) in chunk.iter().enumerate() {
            sql.push_str(if i > 0 { ", (" } else { "(" });
            for (j, v) in row.iter().enumerate() {
                if j > 0 {
                    sql.push_str(", ");
                }
                // Floats go in as literals: sqlx 0.8's `Any` binds a NULL double to
                // PostgreSQL as a `float4`, so a statement first prepared with a NULL there
                // refuses every 8-byte double bound to it later ("incorrect binary data
                // format in bind parameter").
                if let Val::F(f) = v {
                    literal = true;
                    match f.filter(|f| f.is_finite()) {
                        Some(f) => {
                            let _ = write!(sql, "CAST({f:?} AS DOUBLE PRECISION)");
                        }
                        None => sql.push_str("CAST(NULL AS DOUBLE PRECISION)"),
                    }
                    continue;
                }
                n += 1;
                let _ = write!(sql, "${n}");
            }
            sql.push(')');
        }
        sql.push_str(tail);
        // A statement with literals is new text each time: not prepared and cached.
        let mut q = sqlx::query(&sql).persistent(!literal);
        for v in chunk.into_iter().flatten() {
            q = match v {
                Val::I(x) => q.bind(x),
                Val::F(_) => q,
                Val::S(x) => q.bind(x.map(no_nul)),
                Val::B(x) => q.bind(x),
            };
        }
        out.extend(q.fetch_all(&mut **tx).await?);
    }
    Ok(out)
}

/// A number as an SQL literal: `NULL` typed as `BIGINT` (PostgreSQL types an untyped `NULL`
/// in `VALUES` as text).
fn lit(v: Option<i64>) -> String {
    v.map_or_else(|| "CAST(NULL AS BIGINT)".into(), |v| v.to_string())
}

/// Runs `head (row), (row)… tail` for rows of literal SQL values, [`LITERAL_ROWS`] a
/// statement.
async fn literal_rows(
    tx: &mut Tx<'_>,
    head: &str,
    tail: &str,
    rows: &[String],
) -> Result<(), sqlx::Error> {
    for chunk in rows.chunks(LITERAL_ROWS) {
        let mut sql = String::with_capacity(head.len() + tail.len() + chunk.len() * 40);
        sql.push_str(head);
        for (i, r) in chunk.iter().enumerate() {
            sql.push_str(if i > 0 { ", (" } else { "(" });
            sql.push_str(r);
            sql.push(')');
        }
        sql.push_str(tail);
        // Not prepared and cached: each of these statements is new text.
        sqlx::query(&sql)
            .persistent(false)
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

fn hash_of(v: impl Hash) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

/// A player on a server: its name's bytes, dialect, and which of that name (0 for the
/// first).
type PlayerKey = (Vec<u8>, String, i64);

/// An open session as the writer remembers it.
#[derive(Debug, Clone)]
struct Session {
    player_id: i64,
    joined: i64,
    last_seen: i64,
    score: Option<i64>,
    team: Option<i64>,
    /// `last_seen` as written.
    written_seen: i64,
}

/// A server as the writer remembers it.
#[derive(Debug, Clone)]
struct ServerState {
    id: i64,
    status: String,
    error: Option<String>,
    /// Hash of what a `server_changes` row holds.
    change: u64,
    /// Hash of the stored record.
    record: u64,
    country: Option<String>,
    last_online: Option<i64>,
    up_since: Option<i64>,
    down_since: Option<i64>,
    sessions: HashMap<PlayerKey, Session>,
}

impl ServerState {
    /// Ends every open session at the last round its player was seen in (the tracker did
    /// not see them leave), as updates for `closes`.
    fn end_sessions(&mut self, closes: &mut Vec<SessionUpdate>) {
        for ((_, _, nth), s) in self.sessions.drain() {
            closes.push(SessionUpdate {
                server_id: self.id,
                player_id: s.player_id,
                nth,
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
pub(super) struct State {
    servers: HashMap<String, ServerState>,
    last_round: Option<i64>,
    /// Sessions were loaded from the database, not yet checked against the gap.
    resumed: bool,
    rounds: u64,
}

/// Hash of a server's change-row state.
fn change_hash(
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

impl State {
    /// Loads the servers, the open sessions and the last round.
    pub(super) async fn load(conn: &mut sqlx::AnyConnection) -> Result<State, StoreError> {
        let mut st = State::default();
        let rows = sqlx::query(
            // `last_online` as of the series: an unchanged server's row is not rewritten, so
            // its column says when it last changed (the last series row of an online server;
            // for one down, the row before its offline spell began).
            "SELECT id, addr, status, error, country, COALESCE(CASE WHEN down_since IS NULL \
             THEN (SELECT MAX(y.at) FROM series y WHERE y.server_id = servers.id) \
             ELSE (SELECT MAX(y.at) FROM series y WHERE y.server_id = servers.id \
             AND y.at < servers.down_since) END, last_online), up_since, down_since, \
             name_raw, dialect, map, gametype, max_players, password, record_hash FROM servers",
        )
        .fetch_all(&mut *conn)
        .await?;
        let mut by_id = HashMap::new();
        for r in &rows {
            let addr: String = r.try_get(1)?;
            let status: String = r.try_get(2)?;
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
                    sessions: HashMap::new(),
                },
            );
        }
        let rows = sqlx::query(
            "SELECT s.server_id, s.player_id, s.nth, s.joined, s.last_seen, s.last_score, \
             s.team, p.name_raw, p.dialect FROM sessions s JOIN players p ON p.id = s.player_id \
             WHERE s.left_at IS NULL",
        )
        .fetch_all(&mut *conn)
        .await?;
        for r in &rows {
            let server_id: i64 = r.try_get(0)?;
            let Some(srv) = by_id.get(&server_id).and_then(|a| st.servers.get_mut(a)) else {
                continue;
            };
            let last_seen: i64 = r.try_get(4)?;
            srv.sessions.insert(
                (r.try_get(7)?, r.try_get(8)?, r.try_get(2)?),
                Session {
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

fn id_in(servers: &HashMap<String, ServerState>, addr: &str) -> i64 {
    servers.get(addr).map_or(0, |s| s.id)
}

/// A session to close or refresh: its key and the values to write.
struct SessionUpdate {
    server_id: i64,
    player_id: i64,
    nth: i64,
    last_seen: i64,
    left: Option<i64>,
    score: Option<i64>,
    team: Option<i64>,
}

/// A session to open, once its player has an id.
struct NewSession {
    addr: String,
    key: PlayerKey,
    name: String,
    score: Option<i64>,
    team: Option<i64>,
    is_bot: Option<bool>,
    clan: Option<Vec<u8>>,
}

/// How the writer keeps history: the session gap and how often open sessions are refreshed.
#[derive(Debug, Clone, Copy)]
pub(super) struct WriteParams {
    pub(super) session_gap_ms: i64,
    pub(super) flush_rounds: u64,
}

/// The players on each server that answered, in its order, as the round saw them.
pub(super) type Live = HashMap<String, Vec<PlayerRow>>;

/// The player list a record gives: its list, none when it says it has no players, or `None`
/// when the players are unknown this round (a Quake III `getinfo` answered and its
/// `getstatus` was lost): then sessions and the live list stay as they were.
fn listed(info: &fragstat::ServerInfo) -> Option<&[fragstat::Player]> {
    match info.players.as_deref() {
        Some(l) => Some(l),
        None if info.num_players == 0 => Some(&[]),
        None => None,
    }
}

/// Writes `round` given the database's state `st` (updated in place; the caller drops it
/// when the transaction fails, so it is reloaded). Returns the players on each server that
/// answered.
pub(super) async fn write(
    tx: &mut Tx<'_>,
    st: &mut State,
    round: &RoundData,
    p: WriteParams,
) -> Result<(Live, Vec<String>), StoreError> {
    let at = round.at;
    st.rounds += 1;
    let mut closes: Vec<SessionUpdate> = Vec::new();
    // A restart after a long pause: the sessions open in the database ended, at the last
    // round each was seen in (the tracker did not see them leave).
    if st.resumed {
        st.resumed = false;
        if st.last_round.is_none_or(|l| at - l > p.session_gap_ms) {
            for srv in st.servers.values_mut() {
                srv.end_sessions(&mut closes);
            }
        }
    }

    let mut online = 0i64;
    let mut players_total = 0i64;
    let mut seen: HashSet<&str> = HashSet::new();
    let mut upserts: Vec<Vec<Val>> = Vec::new();
    // (addr, series row without the id)
    let mut series: Vec<(String, String)> = Vec::new();
    let mut changes: Vec<(String, Vec<Val>)> = Vec::new();
    let mut opens: Vec<NewSession> = Vec::new();
    let mut flushes: Vec<SessionUpdate> = Vec::new();
    let mut records: Vec<&Record> = Vec::new();

    for rec in &round.records {
        let Some(addr) = rec.address.as_deref() else {
            continue;
        };
        // One row per address and round.
        if !seen.insert(addr) {
            continue;
        }
        records.push(rec);
    }

    for &rec in &records {
        let Some(addr) = rec.address.as_deref() else {
            continue;
        };
        let is_online = rec.status == Status::Online;
        let status = status_str(rec.status);
        let info = rec.info.as_ref().filter(|_| is_online);
        let num_players = info.map(|i| i64::from(i.num_players));
        let num_bots = info.and_then(|i| i.num_bots.map(i64::from));
        if is_online {
            online += 1;
            players_total += num_players.unwrap_or(0);
        }
        let name = info.map(|i| i.name.as_bytes().to_vec());
        let dialect = info.map(|i| dialect_str(i.name.dialect()));
        let map = info.map(|i| no_nul(i.map.display()));
        let gametype = info.and_then(|i| i.gametype.clone()).map(no_nul);
        let max_players = info.map(|i| i64::from(i.max_players));
        let password = info.and_then(|i| i.password);
        let change = change_hash(
            is_online,
            name.as_deref(),
            dialect,
            map.as_deref(),
            gametype.as_deref(),
            max_players,
            password,
        );
        let country = round.countries.get(addr).cloned();
        let record_hash = record_hash(rec);
        let rtt = rec.rtt_ms.filter(|r| r.is_finite());
        let rtt_tenths = rtt.map(|r| (r * 10.0).round() as i64);
        series.push((
            addr.to_string(),
            format!(
                "{at}, {}, {}, {}, {}",
                status_code(status),
                lit(num_players),
                lit(num_bots),
                lit(rtt_tenths)
            ),
        ));

        let known = st.servers.get(addr);
        let changed = known.is_none_or(|s| s.change != change);
        let upsert = changed
            || known.is_some_and(|s| {
                s.status != status
                    || s.error != rec.error
                    || s.record != record_hash
                    || (country.is_some() && s.country != country)
            });
        let was_online = known.is_some_and(|s| s.status == "online");
        let (up_since, down_since) = match known {
            Some(s) if was_online == is_online => (s.up_since, s.down_since),
            _ if is_online => (Some(at), None),
            _ => (None, Some(at)),
        };
        let last_online = if is_online {
            Some(at)
        } else {
            known.and_then(|s| s.last_online)
        };
        if upsert {
            upserts.push(vec![
                Val::S(Some(addr.to_string())),
                Val::S(Some(rec.game.clone())),
                Val::I(Some(at)),
                Val::I(Some(at)),
                Val::I(last_online),
                Val::S(Some(status.to_string())),
                Val::S(rec.error.clone()),
                Val::B(name.clone()),
                Val::S(info.map(|i| i.name.display().to_lowercase())),
                Val::S(dialect.map(str::to_string)),
                Val::S(map.clone()),
                Val::S(gametype.clone()),
                Val::I(num_players),
                Val::I(max_players),
                Val::I(num_bots),
                Val::F(rtt),
                Val::I(password.map(i64::from)),
                Val::S(country.clone()),
                Val::I(up_since),
                Val::I(down_since),
                Val::S(Some(stored_record(rec)?)),
                // The hash as its bits.
                Val::I(Some(i64::from_ne_bytes(record_hash.to_ne_bytes()))),
            ]);
        }
        if changed {
            changes.push((
                addr.to_string(),
                vec![
                    Val::I(Some(at)),
                    Val::I(Some(i64::from(is_online))),
                    Val::B(name),
                    Val::S(dialect.map(str::to_string)),
                    Val::S(map),
                    Val::S(gametype),
                    Val::I(max_players),
                    Val::I(password.map(i64::from)),
                ],
            ));
        }

        // Sessions.
        let entry = st
            .servers
            .entry(addr.to_string())
            .or_insert_with(|| ServerState {
                id: 0,
                status: String::new(),
                error: None,
                change: 0,
                record: 0,
                country: None,
                last_online: None,
                up_since: None,
                down_since: None,
                sessions: HashMap::new(),
            });
        entry.status = status.to_string();
        entry.error.clone_from(&rec.error);
        entry.change = change;
        entry.record = record_hash;
        if country.is_some() {
            entry.country = country;
        }
        entry.last_online = last_online;
        entry.up_since = up_since;
        entry.down_since = down_since;
        let server_id = entry.id;
        if let Some(list) = info.and_then(listed) {
            let mut now: HashMap<PlayerKey, &fragstat::Player> = HashMap::new();
            let mut nths: HashMap<(Vec<u8>, &str), i64> = HashMap::new();
            for pl in list.iter().take(MAX_PLAYERS) {
                let bytes = capped(pl.name.as_bytes());
                let d = dialect_str(pl.name.dialect());
                let n = nths.entry((bytes.clone(), d)).or_insert(0);
                now.insert((bytes, d.to_string(), *n), pl);
                *n += 1;
            }
            // Gone: the round saw them gone.
            let gone: Vec<PlayerKey> = entry
                .sessions
                .keys()
                .filter(|k| !now.contains_key(*k))
                .cloned()
                .collect();
            for k in gone {
                if let Some(s) = entry.sessions.remove(&k) {
                    closes.push(SessionUpdate {
                        server_id,
                        player_id: s.player_id,
                        nth: k.2,
                        last_seen: s.last_seen,
                        left: Some(at),
                        score: s.score,
                        team: s.team,
                    });
                }
            }
            for (k, pl) in now {
                let score = pl.score.map(i64::from);
                let team = pl.team.map(i64::from);
                match entry.sessions.get_mut(&k) {
                    Some(s) => {
                        s.last_seen = at;
                        s.score = score;
                        s.team = team;
                        let turn = (s.player_id.unsigned_abs() + st.rounds) % p.flush_rounds == 0;
                        if turn && s.written_seen != at {
                            s.written_seen = at;
                            flushes.push(SessionUpdate {
                                server_id,
                                player_id: s.player_id,
                                nth: k.2,
                                last_seen: at,
                                left: None,
                                score,
                                team,
                            });
                        }
                    }
                    None => opens.push(NewSession {
                        addr: addr.to_string(),
                        name: no_nul(pl.name.display().to_lowercase()),
                        key: k,
                        score,
                        team,
                        is_bot: pl.is_bot,
                        clan: pl.clan.as_ref().map(|c| capped(c.as_bytes())),
                    }),
                }
            }
        }
    }
    // Servers that did not answer (or were not probed) for longer than the gap: their
    // sessions end at the last round each player was seen in.
    for srv in st.servers.values_mut() {
        if srv.sessions.is_empty() || srv.last_online.is_some_and(|l| at - l <= p.session_gap_ms) {
            continue;
        }
        srv.end_sessions(&mut closes);
    }

    // Servers: new and changed ones with all their columns (and their ids back).
    let rows = insert_rows(
        tx,
        "INSERT INTO servers (addr, game, first_seen, last_seen, last_online, status, error, \
         name_raw, name, dialect, map, gametype, num_players, max_players, num_bots, rtt_ms, \
         password, country, up_since, down_since, record, record_hash) VALUES ",
        " ON CONFLICT (addr) DO UPDATE SET game = excluded.game, \
         last_seen = excluded.last_seen, \
         last_online = COALESCE(excluded.last_online, servers.last_online), \
         status = excluded.status, error = excluded.error, \
         name_raw = COALESCE(excluded.name_raw, servers.name_raw), \
         name = COALESCE(excluded.name, servers.name), \
         dialect = COALESCE(excluded.dialect, servers.dialect), \
         map = COALESCE(excluded.map, servers.map), \
         gametype = COALESCE(excluded.gametype, servers.gametype), \
         num_players = excluded.num_players, \
         max_players = COALESCE(excluded.max_players, servers.max_players), \
         num_bots = excluded.num_bots, rtt_ms = excluded.rtt_ms, \
         password = COALESCE(excluded.password, servers.password), \
         country = COALESCE(excluded.country, servers.country), \
         up_since = excluded.up_since, down_since = excluded.down_since, \
         record = excluded.record, record_hash = excluded.record_hash RETURNING id, addr",
        upserts,
    )
    .await?;
    for r in &rows {
        let id: i64 = r.try_get(0)?;
        let addr: String = r.try_get(1)?;
        if let Some(s) = st.servers.get_mut(&addr) {
            s.id = id;
        }
    }
    let series: Vec<String> = series
        .into_iter()
        .map(|(addr, row)| format!("{}, {row}", id_in(&st.servers, &addr)))
        .collect();
    literal_rows(
        tx,
        "INSERT INTO series (server_id, at, status, players, bots, rtt) VALUES ",
        " ON CONFLICT (server_id, at) DO NOTHING",
        &series,
    )
    .await?;
    let changes: Vec<Vec<Val>> = changes
        .into_iter()
        .map(|(addr, mut row)| {
            row.insert(0, Val::I(Some(id_in(&st.servers, &addr))));
            row
        })
        .collect();
    insert_rows(
        tx,
        "INSERT INTO server_changes (server_id, at, online, name_raw, dialect, map, gametype, \
         max_players, password) VALUES ",
        " ON CONFLICT (server_id, at) DO NOTHING",
        changes,
    )
    .await?;

    // Sessions closed and refreshed (before any opens: a session can end and its player's
    // next begin in one round), and their players' last sighting.
    let mut last_sighting: HashMap<i64, (i64, i64)> = HashMap::new();
    let updates: Vec<String> = closes
        .iter()
        .chain(&flushes)
        .map(|u| {
            let e = last_sighting
                .entry(u.player_id)
                .or_insert((u.last_seen, u.server_id));
            if u.last_seen > e.0 {
                *e = (u.last_seen, u.server_id);
            }
            format!(
                "{}, {}, {}, {}, {}, {}, {}",
                u.server_id,
                u.player_id,
                u.nth,
                u.last_seen,
                lit(u.left),
                lit(u.score),
                lit(u.team)
            )
        })
        .collect();
    literal_rows(
        tx,
        "UPDATE sessions SET last_seen = v.column4, left_at = v.column5, \
         last_score = v.column6, team = v.column7 FROM (VALUES ",
        ") AS v WHERE sessions.server_id = v.column1 AND sessions.player_id = v.column2 \
         AND sessions.nth = v.column3 AND sessions.left_at IS NULL",
        &updates,
    )
    .await?;
    let sightings: Vec<String> = last_sighting
        .into_iter()
        .map(|(id, (seen, server))| format!("{id}, {seen}, {server}"))
        .collect();
    literal_rows(
        tx,
        "UPDATE players SET last_seen = v.column2, last_server_id = v.column3 FROM (VALUES ",
        ") AS v WHERE players.id = v.column1 AND players.last_seen < v.column2",
        &sightings,
    )
    .await?;

    // Players of the new sessions: their identities, ids back.
    let mut identities: HashMap<(Vec<u8>, String), (String, String)> = HashMap::new();
    for o in &opens {
        identities
            .entry((o.key.0.clone(), o.key.1.clone()))
            .or_insert_with(|| (o.name.clone(), o.addr.clone()));
    }
    let rows = insert_rows(
        tx,
        "INSERT INTO players (name_raw, dialect, name, first_seen, last_seen, last_server_id) \
         VALUES ",
        " ON CONFLICT (name_raw, dialect) DO UPDATE SET last_seen = excluded.last_seen, \
         last_server_id = excluded.last_server_id RETURNING id, name_raw, dialect",
        identities
            .into_iter()
            .map(|((bytes, dialect), (name, addr))| {
                vec![
                    Val::B(Some(bytes)),
                    Val::S(Some(dialect)),
                    Val::S(Some(name)),
                    Val::I(Some(at)),
                    Val::I(Some(at)),
                    Val::I(Some(id_in(&st.servers, &addr))),
                ]
            })
            .collect(),
    )
    .await?;
    let mut player_ids: HashMap<(Vec<u8>, String), i64> = HashMap::new();
    for r in &rows {
        player_ids.insert((r.try_get(1)?, r.try_get(2)?), r.try_get(0)?);
    }
    let mut session_rows: Vec<Vec<Val>> = Vec::new();
    for o in opens {
        let Some(&player_id) = player_ids.get(&(o.key.0.clone(), o.key.1.clone())) else {
            continue;
        };
        let server_id = id_in(&st.servers, &o.addr);
        session_rows.push(vec![
            Val::I(Some(player_id)),
            Val::I(Some(server_id)),
            Val::I(Some(o.key.2)),
            Val::I(Some(at)),
            Val::I(Some(at)),
            Val::I(o.score),
            Val::I(o.team),
            Val::I(o.is_bot.map(i64::from)),
            Val::B(o.clan),
        ]);
        if let Some(srv) = st.servers.get_mut(&o.addr) {
            srv.sessions.insert(
                o.key,
                Session {
                    player_id,
                    joined: at,
                    last_seen: at,
                    score: o.score,
                    team: o.team,
                    written_seen: at,
                },
            );
        }
    }
    insert_rows(
        tx,
        "INSERT INTO sessions (player_id, server_id, nth, joined, last_seen, last_score, team, \
         is_bot, clan_raw) VALUES ",
        " ON CONFLICT (server_id, player_id, nth) WHERE left_at IS NULL DO NOTHING",
        session_rows,
    )
    .await?;

    sqlx::query(
        "INSERT INTO rounds (at, finished, servers, online, players) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (at) DO NOTHING",
    )
    .bind(at)
    .bind(round.finished)
    .bind(i64::try_from(records.len()).unwrap_or(i64::MAX))
    .bind(online)
    .bind(players_total)
    .execute(&mut **tx)
    .await?;
    st.last_round = Some(at);

    let mut live = Live::new();
    let mut unlisted = Vec::new();
    for rec in records.iter().filter(|r| r.status == Status::Online) {
        let (Some(addr), Some(info)) = (rec.address.as_deref(), rec.info.as_ref()) else {
            continue;
        };
        let Some(srv) = st.servers.get(addr) else {
            continue;
        };
        let Some(players) = listed(info) else {
            unlisted.push(addr.to_string());
            continue;
        };
        let mut nths: HashMap<(Vec<u8>, &str), i64> = HashMap::new();
        let mut list = Vec::new();
        for pl in players.iter().take(MAX_PLAYERS) {
            let bytes = capped(pl.name.as_bytes());
            let d = dialect_str(pl.name.dialect());
            let n = nths.entry((bytes.clone(), d)).or_insert(0);
            let key = (bytes, d.to_string(), *n);
            *n += 1;
            let Some(s) = srv.sessions.get(&key) else {
                continue;
            };
            list.push(PlayerRow {
                player_id: s.player_id,
                addr: addr.to_string(),
                at,
                joined: s.joined,
                clan_raw: pl.clan.as_ref().map(|c| capped(c.as_bytes())),
                name_raw: key.0,
                dialect: key.1,
                score: pl.score.map(i64::from),
                ping: pl.ping.map(i64::from),
                team: pl.team.map(i64::from),
                is_bot: pl.is_bot,
            });
        }
        live.insert(addr.to_string(), list);
    }
    Ok((live, unlisted))
}

impl Store {
    /// Writes one round in one transaction on the writer's own connection (never the
    /// readers' pool): what changed since the last round, and the round's series (module
    /// docs). Fails only when the database does; the next round then reloads what the
    /// database holds.
    pub async fn write_round(&self, round: &RoundData) -> Result<(), StoreError> {
        let mut w = self.writer.lock().await;
        let params = self.write_params();
        match w.write(round, params, &self.pool).await {
            Ok((mut live, unlisted)) => {
                if let Ok(mut l) = self.live.write() {
                    // Servers whose players are unknown this round keep the last list seen.
                    for addr in unlisted {
                        if let Some(old) = l.remove(&addr) {
                            live.insert(addr, old);
                        }
                    }
                    *l = live;
                }
                Ok(())
            }
            Err(e) => {
                w.reset();
                Err(e)
            }
        }
    }

    /// Deletes rounds, series, changes and sessions older than `before` (Unix ms), players and
    /// servers not seen since; in one transaction. Returns the rows deleted. (A round's
    /// maintenance, [`Store::maintain`], keeps each table for its own time.)
    pub async fn prune(&self, before: i64) -> Result<u64, StoreError> {
        self.prune_tables(&super::Retention::all(before)).await
    }
}

/// Opens `sqlx::Connection::begin` on the writer's connection.
pub(super) async fn begin(conn: &mut sqlx::AnyConnection) -> Result<Tx<'_>, sqlx::Error> {
    conn.begin().await
}
