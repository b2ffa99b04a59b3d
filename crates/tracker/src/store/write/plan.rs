//! The round's plan: what to write, worked out from the writer's memory ([`State`]) and the
//! round's records alone — no database, no clock but the round's own time — so every rule
//! of the history (what changed, who joined and left, when sessions end, the churn budget) is
//! tested without a database (tests.rs). [`apply`](super::apply) writes a plan, and
//! [`State::commit`] makes its memory what the plan says the database now holds.
//!
//! Joins and leaves are decided here, once: a listed player continues its open session or
//! opens one (its key is the library's [`PlayerKey`], the rule its `Differ` follows too), an
//! open session not listed closes; and the events of `/api/events` and the webhook are
//! these same opens and closes ([`RoundPlan::events`]), so a `player_joined` and a session
//! never disagree.

use std::collections::HashSet;

use fragstat::core::model::Dialect;
use fragstat::core::record::{Record, Status};
use fragstat::events::Event;

use super::*;

/// A server of the round as planned: its address, its id when the writer knows it (0: new),
/// and what the writer will remember of it.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::store) struct PlannedServer<'r> {
    pub(in crate::store) addr: &'r str,
    /// Its record this round.
    pub(in crate::store) rec: &'r Record,
    pub(in crate::store) id: i64,
    pub(in crate::store) next: Next<'r>,
}

/// What the writer remembers of a server after the round ([`Memo`]): the numbers, and the
/// text only where it changed (`None`: as remembered), so an unchanged server costs no copy.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::store) struct Next<'r> {
    pub(in crate::store) status: &'static str,
    pub(in crate::store) change: u64,
    pub(in crate::store) record: u64,
    pub(in crate::store) last_online: Option<i64>,
    pub(in crate::store) up_since: Option<i64>,
    pub(in crate::store) down_since: Option<i64>,
    pub(in crate::store) unlisted_since: Option<i64>,
    pub(in crate::store) game: Option<&'r str>,
    pub(in crate::store) error: Option<Option<&'r str>>,
    pub(in crate::store) country: Option<&'r str>,
}

impl Next<'_> {
    /// `memo` as the round leaves it.
    pub(in crate::store) fn apply(&self, memo: &mut Memo) {
        memo.status = self.status;
        memo.change = self.change;
        memo.record = self.record;
        memo.last_online = self.last_online;
        memo.up_since = self.up_since;
        memo.down_since = self.down_since;
        memo.unlisted_since = self.unlisted_since;
        if let Some(g) = self.game {
            memo.game = g.to_string();
        }
        if let Some(e) = self.error {
            memo.error = e.map(str::to_string);
        }
        if let Some(c) = self.country {
            memo.country = Some(c.to_string());
        }
    }
}

/// A listed player of a server that answered, for the live list and the writer's memory: its
/// open session seen again (its score and team now, and whether its `last_seen` is written),
/// the one it opens (an index into [`RoundPlan::opens`]), or none (over the churn budget).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::store) enum Slot {
    Known {
        player_id: i64,
        joined: i64,
        score: Option<i64>,
        team: Option<i64>,
        /// A bot, as this round decided (`None`: as the session said).
        is_bot: Option<bool>,
        written: bool,
    },
    Opened(usize),
    Refused,
}

/// A server's listed players this round: their keys and slots, in its list's order.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::store) struct Listed {
    pub(in crate::store) server: ServerIx,
    pub(in crate::store) keys: Vec<PlayerKey>,
    pub(in crate::store) slots: Vec<Slot>,
}

/// Everything one round writes ([module docs](self)), in typed rows.
#[derive(Debug, Clone, Default, PartialEq)]
pub(in crate::store) struct RoundPlan<'r> {
    pub(in crate::store) at: i64,
    /// The writer's round counter after this one.
    pub(in crate::store) rounds: u64,
    /// The round's servers, one per address, in the records' order ([`ServerIx`]).
    pub(in crate::store) servers: Vec<PlannedServer<'r>>,
    pub(in crate::store) upserts: Vec<ServerUpsert>,
    pub(in crate::store) changes: Vec<ChangeRow>,
    pub(in crate::store) series: Vec<SeriesRow>,
    /// Sessions closed.
    pub(in crate::store) closes: Vec<SessionUpdate>,
    /// Open sessions refreshed (on their turn, every `flush_rounds` rounds).
    pub(in crate::store) flushes: Vec<SessionUpdate>,
    pub(in crate::store) sightings: Vec<Sighting>,
    /// The identities of the players whose sessions open.
    pub(in crate::store) players: Vec<PlayerInsert>,
    pub(in crate::store) opens: Vec<SessionOpen>,
    pub(in crate::store) round: RoundInsert,
    /// Sessions closed on servers that answered (their server, their key).
    pub(in crate::store) closed: Vec<(String, PlayerKey)>,
    /// Servers whose every open session ends (silent past the gap, or a long pause).
    pub(in crate::store) ended: Vec<String>,
    /// The live list: each answering server with a list, its players.
    pub(in crate::store) live: Vec<Listed>,
    /// Servers that answered without saying who plays (their live list stays).
    pub(in crate::store) unlisted: Vec<String>,
    /// The players' joins and leaves: the sessions opened and closed, as events.
    pub(in crate::store) events: Vec<Event>,
    /// Players refused this round: new to their server past its churn budget.
    pub(in crate::store) refused: u64,
    /// Every master's answer this round (the `masters` table).
    pub(in crate::store) masters: Vec<crate::store::MasterRow>,
    /// Each new identity's row ([`RoundPlan::players`]).
    pub(in crate::store) identities: Map<(Box<[u8]>, Dialect), PlayerIx>,
    /// Each player's latest sighting so far: (last seen, server id).
    pub(in crate::store) sighted: Map<i64, (i64, i64)>,
}

/// The round's records, one per address (the first), with their addresses.
pub(in crate::store) fn records(round: &RoundData) -> Vec<(&str, &Record)> {
    let mut seen: HashSet<&str, foldhash::fast::RandomState> = HashSet::default();
    round
        .records
        .iter()
        .filter_map(|rec| {
            let addr = rec.address.as_deref()?;
            seen.insert(addr).then_some((addr, rec))
        })
        .collect()
}

/// Plans `round` given what the database holds (`st`): pure, the round's time its only
/// clock. `Err` only when a record cannot be written as JSON.
pub(in crate::store) fn plan<'r>(
    st: &State,
    round: &'r RoundData,
    p: &WriteParams,
) -> Result<RoundPlan<'r>, StoreError> {
    let at = round.at;
    let records = records(round);
    let mut plan = RoundPlan {
        at,
        rounds: st.rounds + 1,
        masters: round.masters.clone(),
        ..RoundPlan::default()
    };
    // A restart after a long pause: the sessions open in the database ended, at the last
    // round each was seen in (the tracker did not see them leave).
    let pause = st.resumed && st.last_round.is_none_or(|l| at - l > p.session_gap_ms);
    let (mut online, mut players) = (0i64, 0i64);
    for (i, &(addr, rec)) in records.iter().enumerate() {
        let known = st.servers.get(addr);
        let ix = ServerIx(i);
        let next = plan.server(ix, addr, rec, known.map(|s| &s.memo), round)?;
        plan.servers.push(PlannedServer {
            addr,
            rec,
            id: known.map_or(0, |s| s.id),
            next,
        });
        let info = rec.info.as_ref().filter(|_| rec.status == Status::Online);
        let Some(info) = info else {
            // Not answering and no longer listed, or definitely down (nothing listens): gone,
            // its sessions end at once (a listed server that only timed out keeps them for
            // `session_gap`, against lost datagrams).
            let gone = plan.servers[i].next.unlisted_since.is_some() || rec.status == Status::Down;
            if let Some(srv) = known.filter(|s| gone && !pause && !s.sessions.is_empty()) {
                plan.end_all(addr, srv);
            }
            continue;
        };
        online += 1;
        players += i64::from(info.num_players);
        let Some(list) = listed(info) else {
            plan.unlisted.push(addr.to_string());
            continue;
        };
        let list = list.get(..MAX_PLAYERS).unwrap_or(list);
        let open = known.filter(|_| !pause).map(|s| &s.sessions);
        plan.sessions(ix, rec, list, open, p);
    }
    plan.end_silent(st, &records, pause, p.session_gap_ms);
    if st.resumed {
        // The first round after the writer loaded the database is the events' baseline (as
        // the library's differ takes its first scan): its sessions are written, not announced.
        plan.events.clear();
    }
    plan.round = RoundInsert {
        at,
        finished: round.finished,
        servers: i64::try_from(records.len()).unwrap_or(i64::MAX),
        online,
        players,
    };
    plan.sightings();
    Ok(plan)
}

/// What a round's record says of its server's columns.
struct Shape<'a> {
    online: bool,
    status: &'static str,
    name: Option<&'a [u8]>,
    dialect: Option<&'static str>,
    map: Option<String>,
    gametype: Option<String>,
    max_players: Option<i64>,
    password: Option<bool>,
}

impl<'a> Shape<'a> {
    fn of(rec: &'a Record) -> Self {
        let online = rec.status == Status::Online;
        let info = rec.info.as_ref().filter(|_| online);
        Shape {
            online,
            status: status_str(rec.status),
            name: info.map(|i| i.name.as_bytes()),
            dialect: info.map(|i| dialect_str(i.name.dialect())),
            map: info.map(|i| no_nul(i.map.display())),
            gametype: info.and_then(|i| i.gametype.clone()).map(no_nul),
            max_players: info.map(|i| i64::from(i.max_players)),
            password: info.and_then(|i| i.password),
        }
    }

    fn change(&self) -> u64 {
        change_hash(
            self.online,
            self.name,
            self.dialect,
            self.map.as_deref(),
            self.gametype.as_deref(),
            self.max_players,
            self.password,
        )
    }
}

impl<'r> RoundPlan<'r> {
    /// One server's rows (its series row, and its upsert and change row when it changed),
    /// and what the writer remembers of it from now on.
    fn server(
        &mut self,
        ix: ServerIx,
        addr: &'r str,
        rec: &'r Record,
        known: Option<&Memo>,
        round: &'r RoundData,
    ) -> Result<Next<'r>, StoreError> {
        let at = self.at;
        let shape = Shape::of(rec);
        let info = rec.info.as_ref().filter(|_| shape.online);
        let players = info.map(|i| i64::from(i.num_players));
        let bots = info.and_then(|i| i.num_bots.map(i64::from));
        let rtt = rec.rtt_ms.filter(|r| r.is_finite());
        self.series.push(SeriesRow {
            server: ix,
            at,
            status: status_code(shape.status),
            players,
            bots,
            rtt: rtt.map(|r| (r * 10.0).round() as i64),
        });
        let country = round.countries.get(addr);
        let was_online = known.is_some_and(|s| s.status == "online");
        let (up_since, down_since) = match known {
            Some(s) if was_online == shape.online => (s.up_since, s.down_since),
            _ if shape.online => (Some(at), None),
            _ => (None, Some(at)),
        };
        // Listed (by a master, or named in the configuration), or since when not.
        let unlisted_since = if round.unlisted.contains(addr) {
            known.and_then(|s| s.unlisted_since).or(Some(at))
        } else {
            None
        };
        let error = rec.error.as_deref();
        let next = Next {
            status: shape.status,
            change: shape.change(),
            record: record_hash(rec),
            last_online: if shape.online {
                Some(at)
            } else {
                known.and_then(|s| s.last_online)
            },
            up_since,
            down_since,
            unlisted_since,
            game: Some(rec.game.as_str()).filter(|g| known.is_none_or(|s| s.game != *g)),
            error: Some(error).filter(|e| known.is_none_or(|s| s.error.as_deref() != *e)),
            country: country
                .map(String::as_str)
                .filter(|c| known.is_none_or(|s| s.country.as_deref() != Some(*c))),
        };
        let changed = known.is_none_or(|s| s.change != next.change);
        let upsert = changed
            || next.error.is_some()
            || next.country.is_some()
            || known.is_some_and(|s| {
                s.unlisted_since != next.unlisted_since
                    || s.status != next.status
                    || s.record != next.record
            });
        if upsert {
            self.upsert(addr, rec, &shape, &next, country.cloned())?;
        }
        if changed {
            self.changes.push(ChangeRow {
                server: ix,
                at,
                online: shape.online,
                name_raw: shape.name.map(<[u8]>::to_vec),
                dialect: shape.dialect.map(str::to_string),
                map: shape.map,
                gametype: shape.gametype,
                max_players: shape.max_players,
                password: shape.password,
            });
        }
        Ok(next)
    }

    /// A new or changed server's row, all its columns.
    fn upsert(
        &mut self,
        addr: &str,
        rec: &Record,
        shape: &Shape<'_>,
        next: &Next<'_>,
        country: Option<String>,
    ) -> Result<(), StoreError> {
        let info = rec.info.as_ref().filter(|_| shape.online);
        self.upserts.push(ServerUpsert {
            addr: addr.to_string(),
            game: rec.game.clone(),
            first_seen: self.at,
            last_seen: self.at,
            last_online: next.last_online,
            status: shape.status,
            error: rec.error.clone(),
            name_raw: shape.name.map(<[u8]>::to_vec),
            name: info.map(|i| i.name.display().to_lowercase()),
            dialect: shape.dialect.map(str::to_string),
            map: shape.map.clone(),
            gametype: shape.gametype.clone(),
            num_players: info.map(|i| i64::from(i.num_players)),
            max_players: shape.max_players,
            num_bots: info.and_then(|i| i.num_bots.map(i64::from)),
            rtt_ms: rec.rtt_ms.filter(|r| r.is_finite()),
            password: shape.password,
            country,
            up_since: next.up_since,
            down_since: next.down_since,
            record: stored_record(rec)?,
            record_hash: next.record,
            unlisted_since: next.unlisted_since,
        });
        Ok(())
    }
}
