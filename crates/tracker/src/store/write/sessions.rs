//! The plan's sessions: who continues, opens and closes on each server (the one place joins
//! and leaves are decided), the churn budget, and the sessions of silent servers; then
//! [`State::commit`], which makes the writer's memory what a written plan says.

use std::collections::HashSet;

use fragstat::core::model::Text;
use fragstat::core::record::Record;
use fragstat::events::{player_keys, Event, EventKind, EventPlayer};

use super::*;

impl<'r> RoundPlan<'r> {
    /// A listed server's players: each continues its open session (in `open`, none when the
    /// server is new or its sessions ended) or opens one — at most `p.new_players` open per
    /// round (the churn budget; the rest are refused and counted) — and the open sessions not
    /// listed close.
    pub(in crate::store) fn sessions(
        &mut self,
        ix: ServerIx,
        rec: &Record,
        list: &[fragstat::Player],
        open: Option<&Map<PlayerKey, Session>>,
        p: &WriteParams,
    ) {
        let addr = self.servers[ix.0].addr;
        let keys = player_keys(list.iter().map(|pl| &pl.name));
        let mut slots = Vec::with_capacity(list.len());
        let mut continued = 0usize;
        let mut new = 0usize;
        let mut joins = Vec::new();
        for (key, pl) in keys.iter().zip(list) {
            let score = pl.score.map(i64::from);
            let team = pl.team.map(i64::from);
            if let Some(s) = open.and_then(|o| o.get(key)) {
                continued += 1;
                let is_bot = pl.is_bot.or(s.is_bot);
                let written = self.flush(s, p, score, team, is_bot);
                slots.push(Slot::Known {
                    player_id: s.player_id,
                    joined: s.joined,
                    score,
                    team,
                    is_bot,
                    written,
                });
                continue;
            }
            if new >= p.new_players {
                self.refused += 1;
                slots.push(Slot::Refused);
                continue;
            }
            new += 1;
            slots.push(Slot::Opened(self.opens.len()));
            self.open(ix, key, pl);
            joins.push(Event::new(
                self.at,
                addr,
                &rec.game,
                EventKind::PlayerJoined(EventPlayer::of(pl)),
            ));
        }
        // Gone: the open sessions this round did not continue.
        if let Some(open) = open.filter(|o| continued < o.len()) {
            let listed: HashSet<&PlayerKey, foldhash::fast::RandomState> = keys.iter().collect();
            for (key, s) in open {
                if !listed.contains(key) {
                    self.close(addr, &rec.game, key, s, self.at);
                    self.closed.push((addr.to_string(), key.clone()));
                }
            }
        }
        // A server's leaves come before its joins (as the library's differ orders them).
        self.events.append(&mut joins);
        self.live.push(Listed {
            server: ix,
            keys,
            slots,
        });
    }

    /// A continued session's refresh, on its turn (every `flush_rounds` rounds): whether one
    /// was planned. A bot flag decided after the session opened is written then.
    fn flush(
        &mut self,
        s: &Session,
        p: &WriteParams,
        score: Option<i64>,
        team: Option<i64>,
        is_bot: Option<bool>,
    ) -> bool {
        let turn = (s.player_id.unsigned_abs() + self.rounds) % p.flush_rounds == 0;
        if !turn || s.written_seen == self.at {
            return false;
        }
        self.flushes.push(SessionUpdate {
            id: s.id,
            last_seen: self.at,
            left: None,
            score,
            team,
            is_bot: is_bot.map(i64::from),
        });
        self.sighting(s.player_id, self.at, s.server_id);
        true
    }

    /// A session opens for `pl` (its identity inserted once per round).
    fn open(&mut self, ix: ServerIx, key: &PlayerKey, pl: &fragstat::Player) {
        let at = self.at;
        let identity = (key.name.clone(), key.dialect);
        let next = PlayerIx(self.players.len());
        let player = *self.identities.entry(identity).or_insert(next);
        if player == next {
            self.players.push(PlayerInsert {
                name_raw: key.name.to_vec(),
                dialect: dialect_str(key.dialect),
                name: no_nul(pl.name.display().to_lowercase()),
                first_seen: at,
                last_seen: at,
                server: ix,
            });
        }
        self.opens.push(SessionOpen {
            player,
            server: ix,
            nth: i64::from(key.nth),
            joined: at,
            last_seen: at,
            score: pl.score.map(i64::from),
            team: pl.team.map(i64::from),
            is_bot: pl.is_bot,
            clan: pl.clan.as_ref().map(|c| capped(c.as_bytes())),
        });
    }

    /// An open session of `addr` closes, `left` at.
    fn close(&mut self, addr: &str, game: &str, key: &PlayerKey, s: &Session, left: i64) {
        self.closes.push(SessionUpdate {
            id: s.id,
            last_seen: s.last_seen,
            left: Some(left),
            score: s.score,
            team: s.team,
            is_bot: s.is_bot.map(i64::from),
        });
        self.sighting(s.player_id, s.last_seen, s.server_id);
        let mut player = EventPlayer::new(Text::new(key.name.to_vec(), key.dialect));
        player.clan = s.clan.as_ref().map(|c| Text::new(c.clone(), key.dialect));
        player.is_bot = s.is_bot;
        player.score = s.score.and_then(|v| i32::try_from(v).ok());
        player.team = s.team.and_then(|v| i32::try_from(v).ok());
        self.events.push(Event::new(
            self.at,
            addr,
            game,
            EventKind::PlayerLeft(player),
        ));
    }

    /// A player's last sighting this round: the latest of its sessions' updates.
    fn sighting(&mut self, player: i64, last_seen: i64, server: i64) {
        let e = self.sighted.entry(player).or_insert((last_seen, server));
        if last_seen > e.0 {
            *e = (last_seen, server);
        }
    }

    /// The servers with open sessions that did not answer this round and whose last answer
    /// is older than the gap (or every server, after a long pause): their sessions end at
    /// the last round each player was seen in.
    pub(super) fn end_silent(
        &mut self,
        st: &State,
        records: &[(&str, &Record)],
        pause: bool,
        gap: i64,
    ) {
        let stale = |srv: &ServerState| {
            !srv.sessions.is_empty()
                && (pause || srv.memo.last_online.is_none_or(|l| self.at - l > gap))
        };
        let mut ended: Vec<(&String, &ServerState)> = st
            .servers
            .iter()
            .filter(|(addr, srv)| stale(srv) && !self.ended.contains(addr))
            .collect();
        if ended.is_empty() {
            return;
        }
        if !pause {
            // Those that answered now go on (few are stale: look the round's up once).
            let answered: HashSet<&str, foldhash::fast::RandomState> = records
                .iter()
                .filter(|(_, r)| r.status == fragstat::Status::Online)
                .map(|(a, _)| *a)
                .collect();
            ended.retain(|(addr, _)| !answered.contains(addr.as_str()));
        }
        // In a stable order (the map's is random).
        ended.sort_unstable_by_key(|(addr, _)| *addr);
        for (addr, srv) in ended {
            self.end_all(addr, srv);
        }
    }

    /// Every open session of `addr` ends, at the last round its player was seen in (the
    /// tracker did not see them leave); the server's memory of them is cleared whole.
    pub(super) fn end_all(&mut self, addr: &str, srv: &ServerState) {
        let mut sessions: Vec<(&PlayerKey, &Session)> = srv.sessions.iter().collect();
        sessions.sort_unstable_by_key(|(_, s)| s.id);
        for (key, s) in sessions {
            self.close(addr, &srv.memo.game, key, s, s.last_seen);
        }
        self.ended.push(addr.to_string());
    }

    /// The players' last sightings as rows.
    pub(in crate::store) fn sightings(&mut self) {
        let mut rows: Vec<Sighting> = std::mem::take(&mut self.sighted)
            .into_iter()
            .map(|(player, (last_seen, server))| Sighting {
                player,
                last_seen,
                server,
            })
            .collect();
        rows.sort_unstable_by_key(|s| s.player);
        self.sightings = rows;
    }
}

impl State {
    /// The writer's memory after `plan` was written and the database gave its rows `ids`.
    pub(in crate::store) fn commit(&mut self, plan: RoundPlan<'_>, ids: &Ids) {
        let at = plan.at;
        self.rounds = plan.rounds;
        self.resumed = false;
        self.last_round = Some(at);
        for addr in &plan.ended {
            if let Some(s) = self.servers.get_mut(addr) {
                s.sessions.clear();
            }
        }
        for (addr, key) in &plan.closed {
            if let Some(srv) = self.servers.get_mut(addr) {
                srv.sessions.remove(key);
            }
        }
        let mut live = plan.live.into_iter().peekable();
        for (i, ps) in plan.servers.iter().enumerate() {
            let id = ids
                .servers
                .get(i)
                .copied()
                .filter(|id| *id != 0)
                .unwrap_or(ps.id);
            let srv = match self.servers.get_mut(ps.addr) {
                Some(s) => s,
                None => self.servers.entry(ps.addr.to_string()).or_default(),
            };
            srv.id = id;
            ps.next.apply(&mut srv.memo);
            if let Some(listed) = live.next_if(|l| l.server.0 == i) {
                remember(srv, listed, &plan.opens, ids, at);
            }
        }
    }
}

/// A listed server's sessions as the round leaves them: those seen again refreshed, those
/// opened remembered with their ids.
fn remember(srv: &mut ServerState, listed: Listed, opens: &[SessionOpen], ids: &Ids, at: i64) {
    for (key, slot) in listed.keys.into_iter().zip(listed.slots) {
        match slot {
            Slot::Known {
                score,
                team,
                is_bot,
                written,
                ..
            } => {
                if let Some(s) = srv.sessions.get_mut(&key) {
                    s.last_seen = at;
                    s.score = score;
                    s.team = team;
                    s.is_bot = is_bot;
                    if written {
                        s.written_seen = at;
                    }
                }
            }
            Slot::Opened(open) => {
                let Some(o) = opens.get(open) else { continue };
                let Some(player_id) = ids.players.get(o.player.0).copied().flatten() else {
                    continue;
                };
                let session = Session {
                    id: ids.sessions.get(open).copied().flatten().unwrap_or(0),
                    server_id: srv.id,
                    player_id,
                    joined: at,
                    last_seen: at,
                    score: o.score,
                    team: o.team,
                    is_bot: o.is_bot,
                    clan: o.clan.clone(),
                    written_seen: at,
                };
                srv.sessions.insert(key, session);
            }
            Slot::Refused => {}
        }
    }
}
