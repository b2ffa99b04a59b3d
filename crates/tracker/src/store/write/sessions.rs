//! The plan's sessions: who continues, opens and closes on each server (the one place joins
//! and leaves are decided), the churn budget, and the sessions of silent servers; then
//! [`State::commit`], which makes the writer's memory what a written plan says.

use std::collections::HashSet;

use fragstat::core::model::Text;
use fragstat::core::record::Record;
use fragstat::events::{player_keys, Event, EventKind, EventPlayer};

use super::*;

impl RoundPlan {
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
        let addr = self.servers[ix.0].addr.clone();
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
                slots.push(Slot::Known {
                    player_id: s.player_id,
                    joined: s.joined,
                });
                let written = self.flush(s, p, score, team);
                self.touches.push(Touch::Seen {
                    server: ix,
                    key: key.clone(),
                    score,
                    team,
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
            self.open(ix, key.clone(), pl);
            joins.push(Event::new(
                self.at,
                &addr,
                &rec.game,
                EventKind::PlayerJoined(EventPlayer::of(pl)),
            ));
        }
        // Gone: the open sessions this round did not continue.
        if let Some(open) = open.filter(|o| continued < o.len()) {
            let listed: HashSet<&PlayerKey, foldhash::fast::RandomState> = keys.iter().collect();
            for (key, s) in open {
                if !listed.contains(key) {
                    self.close(&addr, &rec.game, key, s, self.at);
                }
            }
        }
        // A server's leaves come before its joins (as the library's differ orders them).
        self.events.append(&mut joins);
        self.live.push((ix, slots));
    }

    /// A continued session's refresh, on its turn (every `flush_rounds` rounds): whether one
    /// was planned.
    fn flush(
        &mut self,
        s: &Session,
        p: &WriteParams,
        score: Option<i64>,
        team: Option<i64>,
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
        });
        self.sighting(s.player_id, self.at, s.server_id);
        true
    }

    /// A session opens for `pl` (its identity inserted once per round).
    fn open(&mut self, ix: ServerIx, key: PlayerKey, pl: &fragstat::Player) {
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
        self.touches.push(Touch::Opened {
            server: ix,
            key: key.clone(),
            open: self.opens.len(),
        });
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
        });
        self.sighting(s.player_id, s.last_seen, s.server_id);
        self.touches.push(Touch::Closed {
            addr: addr.to_string(),
            key: key.clone(),
        });
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
    pub(in crate::store) fn end_silent(
        &mut self,
        st: &State,
        online: &HashSet<&str, foldhash::fast::RandomState>,
        pause: bool,
        gap: i64,
    ) {
        let mut ended: Vec<(&String, &ServerState)> = st
            .servers
            .iter()
            .filter(|(addr, srv)| {
                !srv.sessions.is_empty()
                    && (pause
                        || (!online.contains(addr.as_str())
                            && srv.memo.last_online.is_none_or(|l| self.at - l > gap)))
            })
            .collect();
        // In a stable order (the map's is random).
        ended.sort_unstable_by_key(|(addr, _)| *addr);
        // Their memory is cleared whole ([`RoundPlan::ended`]), not session by session.
        let touches = self.touches.len();
        for (addr, srv) in ended {
            let mut sessions: Vec<(&PlayerKey, &Session)> = srv.sessions.iter().collect();
            sessions.sort_unstable_by_key(|(_, s)| s.id);
            for (key, s) in sessions {
                self.close(addr, &srv.memo.game, key, s, s.last_seen);
            }
            self.ended.push(addr.clone());
        }
        self.touches.truncate(touches);
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
    pub(in crate::store) fn commit(&mut self, plan: RoundPlan, ids: &Ids) {
        let at = plan.at;
        self.rounds = plan.rounds;
        self.resumed = false;
        self.last_round = Some(at);
        for addr in &plan.ended {
            if let Some(s) = self.servers.get_mut(addr) {
                s.sessions.clear();
            }
        }
        let mut addrs = Vec::with_capacity(plan.servers.len());
        for (i, ps) in plan.servers.into_iter().enumerate() {
            let id = ids
                .servers
                .get(i)
                .copied()
                .filter(|id| *id != 0)
                .unwrap_or(ps.id);
            let e = self.servers.entry(ps.addr.clone()).or_default();
            e.id = id;
            e.memo = ps.memo;
            addrs.push(ps.addr);
        }
        for t in plan.touches {
            match t {
                Touch::Seen {
                    server,
                    key,
                    score,
                    team,
                    written,
                } => {
                    let s = self
                        .servers
                        .get_mut(&addrs[server.0])
                        .and_then(|srv| srv.sessions.get_mut(&key));
                    if let Some(s) = s {
                        s.last_seen = at;
                        s.score = score;
                        s.team = team;
                        if written {
                            s.written_seen = at;
                        }
                    }
                }
                Touch::Closed { addr, key } => {
                    if let Some(srv) = self.servers.get_mut(&addr) {
                        srv.sessions.remove(&key);
                    }
                }
                Touch::Opened { server, key, open } => {
                    let Some(o) = plan.opens.get(open) else {
                        continue;
                    };
                    let Some(player_id) = ids.players.get(o.player.0).copied().flatten() else {
                        continue;
                    };
                    let Some(srv) = self.servers.get_mut(&addrs[server.0]) else {
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
            }
        }
    }
}
