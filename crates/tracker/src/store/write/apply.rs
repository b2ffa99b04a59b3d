//! Writing a [`RoundPlan`] in the caller's transaction, and nothing else: every decision was
//! the plan's. Returns the ids the database gave its rows ([`Ids`]). Rows the database
//! returns are read by name.

use sqlx::Row;

use crate::store::{Backend, StoreError};

use super::*;

/// A server's row as an upsert returns it.
#[derive(sqlx::FromRow)]
struct ServerId {
    id: i64,
    addr: String,
}

/// A player identity's row as its insert returns it.
#[derive(sqlx::FromRow)]
struct PlayerId {
    id: i64,
    name_raw: Vec<u8>,
    dialect: String,
}

/// A session's row as its insert returns it.
#[derive(sqlx::FromRow)]
struct SessionId {
    id: i64,
    server_id: i64,
    player_id: i64,
    nth: i64,
}

/// The servers' upsert's `ON CONFLICT` clause: what a new round replaces of a known server.
const SERVER_CONFLICT: &str = " ON CONFLICT (addr) DO UPDATE SET game = excluded.game, \
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
     record = excluded.record, record_hash = excluded.record_hash, \
     unlisted_since = excluded.unlisted_since RETURNING id, addr";

/// Writes `plan` in `tx` (the caller commits): the servers, their numbers and changes, the
/// sessions closed and refreshed, the players and sessions opened, the round.
pub(in crate::store) async fn apply(
    tx: &mut Tx<'_>,
    plan: &RoundPlan<'_>,
    backend: Backend,
) -> Result<Ids, StoreError> {
    let mut ids = Ids {
        servers: plan.servers.iter().map(|s| s.id).collect(),
        ..Ids::default()
    };
    servers(tx, plan, &mut ids).await?;
    numbers(tx, plan, backend, &ids).await?;
    insert(
        tx,
        "server_changes",
        " ON CONFLICT (server_id, at) DO NOTHING",
        &plan.changes,
        &ids,
    )
    .await?;
    // Sessions closed and refreshed (before any opens: a session can end and its player's
    // next begin in one round), and their players' last sighting.
    let updates: Vec<SessionUpdate> = plan.closes.iter().chain(&plan.flushes).cloned().collect();
    number_rows(
        tx,
        backend,
        "UPDATE sessions SET last_seen = v.last_seen, left_at = v.left_at, \
         last_score = v.last_score, team = v.team, \
         is_bot = COALESCE(v.is_bot, sessions.is_bot) FROM ROWS \
         WHERE sessions.id = v.id AND sessions.left_at IS NULL",
        &updates,
        &ids,
    )
    .await?;
    number_rows(
        tx,
        backend,
        "UPDATE players SET last_seen = v.last_seen, last_server_id = v.last_server_id \
         FROM ROWS WHERE players.id = v.id AND players.last_seen < v.last_seen",
        &plan.sightings,
        &ids,
    )
    .await?;
    players(tx, plan, &mut ids).await?;
    sessions(tx, plan, &mut ids).await?;
    let r = &plan.round;
    sqlx::query(&format!(
        "INSERT INTO rounds ({}) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (at) DO NOTHING",
        RoundInsert::COLUMNS.join(", ")
    ))
    .bind(r.at)
    .bind(r.finished)
    .bind(r.servers)
    .bind(r.online)
    .bind(r.players)
    .execute(&mut **tx)
    .await?;
    crate::store::truth::write_masters(tx, plan.at, &plan.masters).await?;
    Ok(ids)
}

/// The new and changed servers' rows, and the new ones' ids.
async fn servers(tx: &mut Tx<'_>, plan: &RoundPlan<'_>, ids: &mut Ids) -> Result<(), StoreError> {
    let rows = insert(tx, "servers", SERVER_CONFLICT, &plan.upserts, ids).await?;
    if rows.is_empty() {
        return Ok(());
    }
    let index: Map<&str, usize> = plan
        .servers
        .iter()
        .enumerate()
        .map(|(i, s)| (s.addr, i))
        .collect();
    for r in &rows {
        let r: ServerId = sqlx::FromRow::from_row(r)?;
        if let Some(&i) = index.get(r.addr.as_str()) {
            ids.servers[i] = r.id;
        }
    }
    Ok(())
}

/// The round's series rows, copied as each server's latest.
async fn numbers(
    tx: &mut Tx<'_>,
    plan: &RoundPlan<'_>,
    backend: Backend,
    ids: &Ids,
) -> Result<(), StoreError> {
    let cols = SeriesRow::COLUMNS.join(", ");
    let vcols = SeriesRow::COLUMNS
        .iter()
        .map(|c| format!("v.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    number_rows(
        tx,
        backend,
        &format!(
            "INSERT INTO series ({cols}) SELECT {vcols} FROM ROWS WHERE true \
             ON CONFLICT (at, server_id) DO NOTHING"
        ),
        &plan.series,
        ids,
    )
    .await?;
    // The same numbers, copied from the round's series rows, as each server's latest (an
    // older round written late by another tracker does not replace a newer one).
    sqlx::query(
        "INSERT INTO server_latest (server_id, at, status, players, bots, rtt) \
         SELECT server_id, at, status, players, bots, rtt FROM series WHERE at = $1 \
         ON CONFLICT (server_id) DO UPDATE SET at = excluded.at, status = excluded.status, \
         players = excluded.players, bots = excluded.bots, rtt = excluded.rtt \
         WHERE excluded.at >= server_latest.at",
    )
    .bind(plan.at)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The identities of the players whose sessions open, and their ids.
async fn players(tx: &mut Tx<'_>, plan: &RoundPlan<'_>, ids: &mut Ids) -> Result<(), StoreError> {
    let rows = insert(
        tx,
        "players",
        " ON CONFLICT (name_raw, dialect) DO UPDATE SET last_seen = excluded.last_seen, \
         last_server_id = excluded.last_server_id RETURNING id, name_raw, dialect",
        &plan.players,
        ids,
    )
    .await?;
    ids.players = vec![None; plan.players.len()];
    for r in &rows {
        let r: PlayerId = sqlx::FromRow::from_row(r)?;
        let key = (r.name_raw.into_boxed_slice(), dialect_of(&r.dialect));
        if let Some(p) = plan.identities.get(&key) {
            ids.players[p.0] = Some(r.id);
        }
    }
    Ok(())
}

/// The sessions opened, and their ids (a session another tracker opened first: that row).
async fn sessions(tx: &mut Tx<'_>, plan: &RoundPlan<'_>, ids: &mut Ids) -> Result<(), StoreError> {
    // A session whose player has no id (none is missing: every identity is returned) is not
    // opened.
    let opens: Vec<SessionOpen> = plan
        .opens
        .iter()
        .filter(|o| ids.players.get(o.player.0).copied().flatten().is_some())
        .cloned()
        .collect();
    let rows = insert(
        tx,
        "sessions",
        " ON CONFLICT (server_id, player_id, nth) WHERE left_at IS NULL DO NOTHING \
         RETURNING id, server_id, player_id, nth",
        &opens,
        ids,
    )
    .await?;
    let mut by_key: Map<(i64, i64, i64), i64> = Map::default();
    for r in &rows {
        let r: SessionId = sqlx::FromRow::from_row(r)?;
        by_key.insert((r.server_id, r.player_id, r.nth), r.id);
    }
    ids.sessions = Vec::with_capacity(plan.opens.len());
    for o in &plan.opens {
        let server = ids.servers.get(o.server.0).copied().unwrap_or(0);
        let Some(player) = ids.players.get(o.player.0).copied().flatten() else {
            ids.sessions.push(None);
            continue;
        };
        let id = match by_key.get(&(server, player, o.nth)) {
            Some(&id) => Some(id),
            None => open_session(tx, server, player, o.nth).await?,
        };
        ids.sessions.push(id);
    }
    Ok(())
}

/// The open session of a player on a server (another tracker opened it first).
async fn open_session(
    tx: &mut Tx<'_>,
    server: i64,
    player: i64,
    nth: i64,
) -> Result<Option<i64>, StoreError> {
    let row = sqlx::query(
        "SELECT id FROM sessions WHERE server_id = $1 AND player_id = $2 AND nth = $3 \
         AND left_at IS NULL",
    )
    .bind(server)
    .bind(player)
    .bind(nth)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(row.map(|r| r.try_get("id")).transpose()?)
}
