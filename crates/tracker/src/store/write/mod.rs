//! Writing: what changed in a round, on the writer's own connection, in one transaction.
//!
//! The writer keeps in memory what the database says now — every server's id, last state and
//! open player sessions — loaded from the database when it first writes (so a restarted
//! tracker continues where the last one stopped). A round then writes only:
//!
//! - one `series` row per server (its numbers this round), appended at the table's end (its
//!   key is the round first), and the same numbers as the server's `server_latest` row,
//! - a `server_changes` row and a `servers` upsert for each server whose state changed (name,
//!   map, gametype, slots, password, up/down, status, record, country); the browser's numbers
//!   (last seen, players, bots, ping) are read from `server_latest`, so an unchanged
//!   server's row is not written at all,
//! - the sessions that opened (and their players' identities) and closed,
//! - the scores and last-seen times of a rotating `1/flush_rounds` of the open sessions,
//! - the round's row.
//!
//! Numbers go into the statements as SQL literals (an `i64` or a finite `f64` written by
//! Rust cannot inject anything), so a statement of 500 rows costs the parser, not 3,000
//! bound values through sqlx's `Any` layer; text and bytes are always bound.

use std::collections::HashSet;

use fragstat::core::model::Dialect;
use fragstat::core::record::{Record, Status};
use sqlx::Row;

use super::{PlayerRow, RoundData, Store, StoreError};

mod record;
mod sql;
mod state;
pub(super) use record::*;
pub use record::{
    cap_record, stored_record, MAX_NAME_BYTES, MAX_PLAYERS, MAX_RECORD_BYTES, MAX_WARNINGS,
};
pub(super) use sql::*;
pub(super) use state::*;

/// Writes `round` given the database's state `st` (updated in place; the caller drops it
/// when the transaction fails, so it is reloaded). Returns the players on each server that
/// answered, and the servers that answered without saying who plays.
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

    // One row per address and round.
    let mut seen: HashSet<&str, foldhash::fast::RandomState> = HashSet::default();
    let records: Vec<(&str, &Record)> = round
        .records
        .iter()
        .filter_map(|rec| {
            let addr = rec.address.as_deref()?;
            seen.insert(addr).then_some((addr, rec))
        })
        .collect();
    // Each record's server id (0 until a new server's row is written).
    let mut ids: Vec<i64> = vec![0; records.len()];

    let mut online = 0i64;
    let mut players_total = 0i64;
    let mut upserts: Vec<Vec<Val>> = Vec::new();
    let mut series: Vec<SeriesRow> = Vec::with_capacity(records.len());
    let mut changes: Vec<(usize, Vec<Val>)> = Vec::new();
    let mut opens: Vec<NewSession> = Vec::new();
    let mut flushes: Vec<SessionUpdate> = Vec::new();
    // The live list: (record, its listed players and their slots).
    let mut live_slots: Vec<(usize, Vec<Slot>)> = Vec::new();
    let mut unlisted = Vec::new();

    for (i, &(addr, rec)) in records.iter().enumerate() {
        let is_online = rec.status == Status::Online;
        let status = status_str(rec.status);
        let info = rec.info.as_ref().filter(|_| is_online);
        let num_players = info.map(|i| i64::from(i.num_players));
        let num_bots = info.and_then(|i| i.num_bots.map(i64::from));
        if is_online {
            online += 1;
            players_total += num_players.unwrap_or(0);
        }
        let name = info.map(|i| i.name.as_bytes());
        let dialect = info.map(|i| dialect_str(i.name.dialect()));
        let map = info.map(|i| no_nul(i.map.display()));
        let gametype = info.and_then(|i| i.gametype.as_deref());
        let gametype = gametype.map(|g| {
            if g.contains('\0') {
                std::borrow::Cow::Owned(no_nul(g.to_string()))
            } else {
                std::borrow::Cow::Borrowed(g)
            }
        });
        let max_players = info.map(|i| i64::from(i.max_players));
        let password = info.and_then(|i| i.password);
        let change = change_hash(
            is_online,
            name,
            dialect,
            map.as_deref(),
            gametype.as_deref(),
            max_players,
            password,
        );
        let country = round.countries.get(addr);
        let record_hash = record_hash(rec);
        let rtt = rec.rtt_ms.filter(|r| r.is_finite());
        series.push(SeriesRow {
            server: i,
            status: status_code(status),
            players: num_players,
            bots: num_bots,
            rtt: rtt.map(|r| (r * 10.0).round() as i64),
        });

        let known = st.servers.get(addr);
        let changed = known.is_none_or(|s| s.change != change);
        // Listed (by a master, or named in the configuration), or since when not.
        let unlisted_since = if round.unlisted.contains(addr) {
            known.and_then(|s| s.unlisted_since).or(Some(at))
        } else {
            None
        };
        let upsert = changed
            || known.is_some_and(|s| {
                s.unlisted_since != unlisted_since
                    || s.status != status
                    || s.error != rec.error
                    || s.record != record_hash
                    || (country.is_some() && s.country.as_ref() != country)
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
                Val::B(name.map(<[u8]>::to_vec)),
                Val::S(info.map(|i| i.name.display().to_lowercase())),
                Val::S(dialect.map(str::to_string)),
                Val::S(map.clone()),
                Val::S(gametype.as_deref().map(str::to_string)),
                Val::I(num_players),
                Val::I(max_players),
                Val::I(num_bots),
                Val::F(rtt),
                Val::I(password.map(i64::from)),
                Val::S(country.cloned()),
                Val::I(up_since),
                Val::I(down_since),
                Val::S(Some(stored_record(rec)?)),
                // The hash as its bits.
                Val::I(Some(i64::from_ne_bytes(record_hash.to_ne_bytes()))),
                Val::I(unlisted_since),
            ]);
        }
        if changed {
            changes.push((
                i,
                vec![
                    Val::I(Some(at)),
                    Val::I(Some(i64::from(is_online))),
                    Val::B(name.map(<[u8]>::to_vec)),
                    Val::S(dialect.map(str::to_string)),
                    Val::S(map),
                    Val::S(gametype.map(std::borrow::Cow::into_owned)),
                    Val::I(max_players),
                    Val::I(password.map(i64::from)),
                ],
            ));
        }

        // The server as remembered from now on.
        let entry = match st.servers.get_mut(addr) {
            Some(e) => e,
            None => st
                .servers
                .entry(addr.to_string())
                .or_insert_with(|| ServerState {
                    id: 0,
                    status: "",
                    error: None,
                    change: 0,
                    record: 0,
                    country: None,
                    last_online: None,
                    up_since: None,
                    down_since: None,
                    unlisted_since: None,
                    sessions: Map::default(),
                }),
        };
        entry.status = status;
        if entry.error != rec.error {
            entry.error.clone_from(&rec.error);
        }
        entry.change = change;
        entry.record = record_hash;
        if let Some(c) = country.filter(|c| entry.country.as_ref() != Some(*c)) {
            entry.country = Some(c.clone());
        }
        entry.last_online = last_online;
        entry.up_since = up_since;
        entry.down_since = down_since;
        entry.unlisted_since = unlisted_since;
        ids[i] = entry.id;
        let server_id = entry.id;

        // Sessions: each listed player continues its open session or opens one; the open
        // sessions not listed end (the round saw them gone).
        let Some(info) = info else {
            // Not answering and no longer listed, or definitely down (nothing listens):
            // gone, its sessions end at once (a listed server that only timed out keeps
            // them for `session_gap`, against lost datagrams).
            if unlisted_since.is_some() || rec.status == Status::Down {
                entry.end_sessions(&mut closes);
            }
            continue;
        };
        let Some(list) = listed(info) else {
            unlisted.push(addr.to_string());
            continue;
        };
        let list = list.get(..MAX_PLAYERS).unwrap_or(list);
        let mut slots = Vec::with_capacity(list.len());
        let mut continued = 0usize;
        for (key, pl) in player_keys(list).into_iter().zip(list) {
            let score = pl.score.map(i64::from);
            let team = pl.team.map(i64::from);
            match entry.sessions.get_mut(&key) {
                Some(s) => {
                    continued += 1;
                    s.last_seen = at;
                    s.score = score;
                    s.team = team;
                    slots.push(Slot::Known {
                        player_id: s.player_id,
                        joined: s.joined,
                    });
                    let turn = (s.player_id.unsigned_abs() + st.rounds) % p.flush_rounds == 0;
                    if turn && s.written_seen != at {
                        s.written_seen = at;
                        flushes.push(SessionUpdate {
                            id: s.id,
                            server_id,
                            player_id: s.player_id,
                            last_seen: at,
                            left: None,
                            score,
                            team,
                        });
                    }
                }
                None => {
                    slots.push(Slot::Opened(opens.len()));
                    opens.push(NewSession {
                        server: i,
                        name: no_nul(pl.name.display().to_lowercase()),
                        key,
                        score,
                        team,
                        is_bot: pl.is_bot,
                        clan: pl.clan.as_ref().map(|c| capped(c.as_bytes())),
                    });
                }
            }
        }
        // Gone: the open sessions this round did not continue (every continued one was
        // seen this round; a session opened this round is not in the map yet).
        if continued < entry.sessions.len() {
            entry.sessions.retain(|_, s| {
                if s.last_seen == at {
                    return true;
                }
                closes.push(SessionUpdate {
                    id: s.id,
                    server_id,
                    player_id: s.player_id,
                    last_seen: s.last_seen,
                    left: Some(at),
                    score: s.score,
                    team: s.team,
                });
                false
            });
        }
        live_slots.push((i, slots));
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
         password, country, up_since, down_since, record, record_hash, unlisted_since) VALUES ",
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
         record = excluded.record, record_hash = excluded.record_hash, \
         unlisted_since = excluded.unlisted_since RETURNING id, addr",
        upserts,
    )
    .await?;
    if !rows.is_empty() {
        for r in &rows {
            let id: i64 = r.try_get(0)?;
            let addr: String = r.try_get(1)?;
            if let Some(s) = st.servers.get_mut(&addr) {
                s.id = id;
            }
        }
        // The new servers' ids.
        for (i, &(addr, _)) in records.iter().enumerate() {
            if ids[i] == 0 {
                ids[i] = st.servers.get(addr).map_or(0, |s| s.id);
            }
        }
    }
    number_rows(
        tx,
        p.backend,
        "INSERT INTO series (server_id, at, status, players, bots, rtt) \
         SELECT column1, column2, column3, column4, column5, column6 FROM ROWS \
         WHERE true ON CONFLICT (at, server_id) DO NOTHING",
        &series,
        &[
            &|r: &SeriesRow| Some(ids[r.server]),
            &|_| Some(at),
            &|r| Some(r.status),
            &|r| r.players,
            &|r| r.bots,
            &|r| r.rtt,
        ],
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
    .bind(at)
    .execute(&mut **tx)
    .await?;
    let changes: Vec<Vec<Val>> = changes
        .into_iter()
        .map(|(i, mut row)| {
            row.insert(0, Val::I(Some(ids[i])));
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
    let mut last_sighting: Map<i64, (i64, i64)> = Map::default();
    let updates: Vec<&SessionUpdate> = closes.iter().chain(&flushes).collect();
    for u in &updates {
        let e = last_sighting
            .entry(u.player_id)
            .or_insert((u.last_seen, u.server_id));
        if u.last_seen > e.0 {
            *e = (u.last_seen, u.server_id);
        }
    }
    number_rows(
        tx,
        p.backend,
        "UPDATE sessions SET last_seen = v.column2, left_at = v.column3, \
         last_score = v.column4, team = v.column5 FROM ROWS \
         WHERE sessions.id = v.column1 AND sessions.left_at IS NULL",
        &updates,
        &[
            &|u: &&SessionUpdate| Some(u.id),
            &|u| Some(u.last_seen),
            &|u| u.left,
            &|u| u.score,
            &|u| u.team,
        ],
    )
    .await?;
    let sightings: Vec<(i64, (i64, i64))> = last_sighting.into_iter().collect();
    number_rows(
        tx,
        p.backend,
        "UPDATE players SET last_seen = v.column2, last_server_id = v.column3 FROM ROWS \
         WHERE players.id = v.column1 AND players.last_seen < v.column2",
        &sightings,
        &[
            &|s: &(i64, (i64, i64))| Some(s.0),
            &|s| Some(s.1 .0),
            &|s| Some(s.1 .1),
        ],
    )
    .await?;

    // Players of the new sessions: their identities, ids back.
    let mut identities: Map<(&[u8], Dialect), (&str, usize)> = Map::default();
    for o in &opens {
        identities
            .entry((&o.key.0, o.key.1))
            .or_insert((&o.name, o.server));
    }
    let rows = insert_rows(
        tx,
        "INSERT INTO players (name_raw, dialect, name, first_seen, last_seen, last_server_id) \
         VALUES ",
        " ON CONFLICT (name_raw, dialect) DO UPDATE SET last_seen = excluded.last_seen, \
         last_server_id = excluded.last_server_id RETURNING id, name_raw, dialect",
        identities
            .into_iter()
            .map(|((bytes, dialect), (name, server))| {
                vec![
                    Val::B(Some(bytes.to_vec())),
                    Val::S(Some(dialect_str(dialect).to_string())),
                    Val::S(Some(name.to_string())),
                    Val::I(Some(at)),
                    Val::I(Some(at)),
                    Val::I(Some(ids[server])),
                ]
            })
            .collect(),
    )
    .await?;
    let mut player_ids: Map<(Vec<u8>, Dialect), i64> = Map::default();
    for r in &rows {
        let dialect: String = r.try_get(2)?;
        player_ids.insert((r.try_get(1)?, dialect_of(&dialect)), r.try_get(0)?);
    }
    let mut session_rows: Vec<Vec<Val>> = Vec::with_capacity(opens.len());
    // Each opened session's player id and join time, for the live list.
    let mut opened: Vec<Option<(i64, i64)>> = Vec::with_capacity(opens.len());
    // The sessions to remember once their rows' ids are known.
    let mut remember: Vec<(usize, PlayerKey, Session)> = Vec::with_capacity(opens.len());
    for o in opens {
        let player_id = player_ids.get(&(o.key.0.to_vec(), o.key.1)).copied();
        opened.push(player_id.map(|id| (id, at)));
        let Some(player_id) = player_id else {
            continue;
        };
        session_rows.push(vec![
            Val::I(Some(player_id)),
            Val::I(Some(ids[o.server])),
            Val::I(Some(o.key.2)),
            Val::I(Some(at)),
            Val::I(Some(at)),
            Val::I(o.score),
            Val::I(o.team),
            Val::I(o.is_bot.map(i64::from)),
            Val::B(o.clan),
        ]);
        remember.push((
            o.server,
            o.key,
            Session {
                id: 0,
                player_id,
                joined: at,
                last_seen: at,
                score: o.score,
                team: o.team,
                written_seen: at,
            },
        ));
    }
    let rows = insert_rows(
        tx,
        "INSERT INTO sessions (player_id, server_id, nth, joined, last_seen, last_score, team, \
         is_bot, clan_raw) VALUES ",
        " ON CONFLICT (server_id, player_id, nth) WHERE left_at IS NULL DO NOTHING \
         RETURNING id, server_id, player_id, nth",
        session_rows,
    )
    .await?;
    let mut session_ids: Map<(i64, i64, i64), i64> = Map::default();
    for r in &rows {
        session_ids.insert((r.try_get(1)?, r.try_get(2)?, r.try_get(3)?), r.try_get(0)?);
    }
    for (server, key, mut session) in remember {
        let server_id = ids[server];
        let wanted = (server_id, session.player_id, key.2);
        session.id = match session_ids.get(&wanted) {
            Some(&id) => id,
            // Open already (another tracker writing this server): that row.
            None => sqlx::query(
                "SELECT id FROM sessions WHERE server_id = $1 AND player_id = $2 AND nth = $3 \
                 AND left_at IS NULL",
            )
            .bind(server_id)
            .bind(session.player_id)
            .bind(key.2)
            .fetch_optional(&mut **tx)
            .await?
            .map(|r| r.try_get(0))
            .transpose()?
            .unwrap_or(0),
        };
        if let Some(srv) = st.servers.get_mut(records[server].0) {
            srv.sessions.insert(key, session);
        }
    }

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
    crate::store::truth::write_masters(tx, at, &round.masters).await?;

    // The players now, for the pages.
    let mut live = Live::with_capacity(live_slots.len());
    for (i, slots) in live_slots {
        let (addr, rec) = records[i];
        let Some(list) = rec.info.as_ref().and_then(listed) else {
            continue;
        };
        let mut rows = Vec::with_capacity(slots.len());
        for (slot, pl) in slots.into_iter().zip(list) {
            let known = match slot {
                Slot::Known { player_id, joined } => Some((player_id, joined)),
                Slot::Opened(o) => opened.get(o).copied().flatten(),
            };
            let Some((player_id, joined)) = known else {
                continue;
            };
            rows.push(PlayerRow {
                player_id,
                addr: addr.to_string(),
                at,
                joined,
                clan_raw: pl.clan.as_ref().map(|c| capped(c.as_bytes())),
                name_raw: capped(pl.name.as_bytes()),
                dialect: dialect_str(pl.name.dialect()).to_string(),
                score: pl.score.map(i64::from),
                ping: pl.ping.map(i64::from),
                team: pl.team.map(i64::from),
                is_bot: pl.is_bot,
            });
        }
        live.insert(addr.to_string(), rows);
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
