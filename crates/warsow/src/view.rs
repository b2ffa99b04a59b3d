//! The shared record ([`ServerInfo`]) of a qfusion or DarkPlaces server.
//!
//! The Quake III view ([`fragstat_quake3_oob::view::server_info`]) reads the common keys and
//! player lines; [`adapt`] then applies what these engines mean by them:
//!
//! * qfusion (Warsow, Warfork): `clients` counts every connected client, bots included, and
//!   `bots` is sent only when there are bots (absent = 0, qfusion `SV_LongInfoString`). The
//!   game type is a name (`ca`, `bomb`), never a number. Team 0 is a spectator; ping −9999 is
//!   a player still connecting (its ping is then unknown). `g_match_time`, `g_match_score`,
//!   `g_instagib`, `sv_skilllevel` and `g_race_gametype` go into [`ServerExtra`].
//! * DarkPlaces (Nexuiz, Xonotic): `clients` and `bots` are always sent; bots have ping 0 and humans at
//!   least 1 (netconn.c `pingvalue = bound(1, …, 9999)` only with a connection); score −666
//!   or team 0 is a spectator; the game type and version come from `qcstatus`
//!   ([`QcStatus`]).

use fragstat_core::model::{Dialect, ServerInfo, Text};
use serde::Serialize;

use crate::game::WarsowGame;
use crate::matchstate::{MatchTime, TeamScore};
use crate::short::ShortInfo;

/// What a qfusion server says about its match, in the record's `extra`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ServerExtra {
    /// `g_match_time` parsed (`None` when not sent or empty).
    pub match_time: Option<MatchTime>,
    /// `g_match_score` parsed: the teams' scores (empty outside team play); `None` when the
    /// key is missing or in an unknown form.
    pub scores: Option<Vec<TeamScore>>,
    /// `g_instagib` (or the short reply's `ig`).
    pub instagib: Option<bool>,
    /// `sv_skilllevel` (or `s`): 1 easy, 2 normal, 3 hard.
    pub skill_level: Option<i32>,
    /// `g_race_gametype`: a race game (scores are times).
    pub race: Option<bool>,
}

/// Per-player fields of qfusion, in the player's `extra`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PlayerExtra {
    /// Still connecting (sent with ping −9999; the ping is then left unknown).
    pub connecting: bool,
}

/// DarkPlaces' `qcstatus`: `gametype:version:…` (Nexuiz `dm:2.5.2::score!!`; Xonotic adds
/// `P<pure>:S<slots>:F<flags>:M<modifications>` and score columns).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct QcStatus {
    /// Game type short name (`dm`, `ctf`…).
    pub gametype: String,
    /// Game version (`2.5.2`).
    pub version: String,
    /// Everything after the version, raw.
    pub rest: String,
}

impl QcStatus {
    /// Parses a `qcstatus` value; `None` when it has no `:`.
    pub fn parse(value: &[u8]) -> Option<QcStatus> {
        let text = String::from_utf8_lossy(value);
        let (gametype, rest) = text.split_once(':')?;
        let (version, rest) = rest.split_once(':').unwrap_or((rest, ""));
        Some(QcStatus {
            gametype: gametype.to_string(),
            version: version.to_string(),
            rest: rest.to_string(),
        })
    }
}

/// The qfusion ping of a player still connecting.
pub const CONNECTING_PING: i32 = -9999;

/// The DarkPlaces score of a spectator.
pub const SPECTATOR_SCORE: i32 = -666;

fn flag(v: Option<i64>) -> Option<bool> {
    v.map(|v| v != 0)
}

fn count(v: Option<i64>) -> Option<u32> {
    v.and_then(|v| u32::try_from(v).ok())
}

/// Applies the engine's meanings to a record the Quake III view made (see the module docs).
pub fn adapt(game: WarsowGame, mut info: ServerInfo) -> ServerInfo {
    // Names in the engine's own colour rule (qfusion `Q_GrabCharFromColorString`, DarkPlaces
    // `COM_StringDecolorize`).
    let dialect = game.dialect();
    for t in [&mut info.name, &mut info.map] {
        *t = Text::new(std::mem::take(t).into_bytes(), dialect);
    }
    if let Some(players) = &mut info.players {
        for p in players.iter_mut() {
            p.name = Text::new(std::mem::take(&mut p.name).into_bytes(), dialect);
        }
    }
    let clients = count(info.rules.get_int(&["clients"]));
    let bots = count(info.rules.get_int(&["bots"]));
    if let Some(c) = clients {
        info.num_players = c;
    }
    if game.is_qfusion() {
        info.num_bots = bots.or(clients.map(|_| 0));
        info.gametype = info
            .rules
            .get_any(&["gametype", "g_gametype"])
            .map(|g| String::from_utf8_lossy(g).trim().to_string());
        let extra = ServerExtra {
            match_time: info.rules.get("g_match_time").and_then(MatchTime::parse),
            scores: info
                .rules
                .get("g_match_score")
                .and_then(TeamScore::parse_all),
            instagib: flag(info.rules.get_int(&["g_instagib"])),
            skill_level: info
                .rules
                .get_int(&["sv_skilllevel"])
                .and_then(|v| i32::try_from(v).ok()),
            race: flag(info.rules.get_int(&["g_race_gametype"])),
        };
        info.set_extra(extra);
        if let Some(players) = &mut info.players {
            for p in players.iter_mut() {
                let connecting = p.ping == Some(CONNECTING_PING);
                if connecting {
                    p.ping = None;
                }
                p.is_spectator = p.team.map(|t| t == 0);
                p.extra = Some(std::sync::Arc::new(PlayerExtra { connecting }));
            }
        }
    } else {
        info.num_bots = bots;
        let qc = info.rules.get("qcstatus").and_then(QcStatus::parse);
        if let Some(qc) = &qc {
            info.gametype = Some(qc.gametype.clone());
            info.version = Some(qc.version.clone());
        }
        if let Some(players) = &mut info.players {
            for p in players.iter_mut() {
                p.is_bot = p.ping.map(|ping| ping == 0);
                p.is_spectator = Some(p.score == Some(SPECTATOR_SCORE) || p.team == Some(0));
            }
        }
        if let Some(qc) = qc {
            info.set_extra(qc);
        }
    }
    if let Some(players) = &info.players {
        if players.iter().all(|p| p.is_spectator.is_some()) {
            let specs = players
                .iter()
                .filter(|p| p.is_spectator == Some(true))
                .count();
            info.num_spectators = u32::try_from(specs).ok();
        }
    }
    info
}

/// The record of a short `info` reply. It carries no challenge (the request has none), so
/// it is always [`ServerInfo::unverified`].
pub fn short_info(info: &ShortInfo) -> ServerInfo {
    let mut out = ServerInfo::default();
    out.unverified = true;
    let text = |b: Option<&[u8]>| Text::new(b.unwrap_or_default().to_vec(), Dialect::Qfusion);
    out.name = text(info.name());
    out.map = text(info.map());
    out.gametype = info
        .gametype()
        .map(|g| String::from_utf8_lossy(g).into_owned());
    if let Some((c, m)) = info.clients() {
        out.num_players = c;
        out.max_players = m;
    }
    out.num_bots = info.bots();
    out.password = Some(info.password());
    out.rules = info.pairs.clone();
    if !info.terminated {
        out.truncated = true;
        out.warnings
            .push("short info reply without its EOT terminator".into());
    }
    out.set_extra(ServerExtra {
        instagib: Some(info.instagib()),
        skill_level: info.skill_level(),
        ..ServerExtra::default()
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use fragstat_quake3_oob::{decode, Packet, Quake3Game as Q3Game, ServerReply};

    fn status(game: WarsowGame, bytes: &[u8]) -> ServerInfo {
        let Packet::StatusResponse(st) = decode(bytes).unwrap() else {
            panic!()
        };
        let reply = ServerReply {
            info: None,
            status: Some(st),
            unverified: false,
        };
        adapt(game, reply.into_server_info(Q3Game::Other(game.protocol())))
    }

    #[test]
    fn qfusion_connecting_players_and_spectators() {
        let s = status(
            WarsowGame::Warsow,
            b"\xff\xff\xff\xffstatusResponse\n\\challenge\\1\\sv_hostname\\x\\g_match_time\\12:01 / 20:00 overtime (in timeout)\\g_match_score\\ RED: 1 BLUE: 2\\gametype\\ctf\\bots\\1\\clients\\3\n5 40 \"a\" 2\n0 -9999 \"b\" 0\n1 0 \"bot\" 3\n",
        );
        assert_eq!(
            (s.num_players, s.num_bots, s.num_spectators),
            (3, Some(1), Some(1))
        );
        let players = s.players.as_ref().unwrap();
        assert_eq!(players[1].ping, None, "still connecting");
        let b = players[1].extra.as_ref().unwrap().as_any();
        assert_eq!(
            b.downcast_ref::<PlayerExtra>(),
            Some(&PlayerExtra { connecting: true })
        );
        assert_eq!(players[1].is_spectator, Some(true));
        let x = s.extra_as::<ServerExtra>().unwrap();
        assert_eq!(
            x.match_time,
            Some(MatchTime::Playing {
                elapsed_secs: 721,
                limit_secs: Some(1200),
                overtime: true,
                sudden_death: false,
                timeout: true
            })
        );
        assert_eq!(x.scores.as_ref().map(Vec::len), Some(2));
        assert_eq!(s.gametype.as_deref(), Some("ctf"));
    }

    #[test]
    fn darkplaces_bots_and_spectators() {
        let s = status(
            WarsowGame::Nexuiz,
            b"\xff\xff\xff\xffstatusResponse\n\\gamename\\Nexuiz\\clients\\3\\bots\\1\\qcstatus\\ctf:2.5.2::score!!\\challenge\\x\n3 0 1 \"[BOT]a\"\n-666 55 0 \"spec\"\n7 31 2 \"human\"\n",
        );
        assert_eq!(
            (s.num_players, s.num_bots, s.num_spectators),
            (3, Some(1), Some(1))
        );
        let p = s.players.as_ref().unwrap();
        assert_eq!(
            p.iter()
                .map(|p| (p.team, p.is_bot, p.is_spectator))
                .collect::<Vec<_>>(),
            [
                (Some(1), Some(true), Some(false)),
                (Some(0), Some(false), Some(true)),
                (Some(2), Some(false), Some(false))
            ]
        );
        assert_eq!(
            (s.gametype.as_deref(), s.version.as_deref()),
            (Some("ctf"), Some("2.5.2"))
        );
    }

    #[test]
    fn qcstatus_forms() {
        let q = QcStatus::parse(b"dm:2.5.2::score!!").unwrap();
        assert_eq!((q.gametype.as_str(), q.version.as_str()), ("dm", "2.5.2"));
        assert_eq!(q.rest, ":score!!");
        let q = QcStatus::parse(b"ctf:0.7.0:P315:S2:F6:MMinstaGib::score!!").unwrap();
        assert_eq!(q.gametype, "ctf");
        assert!(QcStatus::parse(b"plain").is_none());
    }
}
