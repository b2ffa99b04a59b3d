//! Sans-IO emulated servers that answer like qfusion (Warsow, Warfork) and DarkPlaces
//! (Nexuiz) do, byte for byte where it matters: the challenge's place, the `bots` and
//! `clients` keys, the player line forms and the short `info` reply.
//!
//! Sources: qfusion `source/server/sv_oob.c` (`SVC_SendInfoString`, `SV_LongInfoString`,
//! `SVC_InfoResponse`, `SV_ShortInfoString`, `SV_MasterHeartbeat`); DarkPlaces `netconn.c`
//! (`NetConn_BuildStatusResponse`); a real Nexuiz 2.5.2 server's replies.

use fragstat_core::registry::{EmuError, EmuMaster, EmuServer, Emulate};
use fragstat_quake3_oob::Quake3Game;

use crate::Encode;
use std::net::SocketAddr;
use std::time::Instant;

use fragstat_core::service::{Heartbeats, Outbox, Service};
use fragstat_quake3_oob::{Heartbeat, Packet as Oob};

use crate::game::WarsowGame;
use crate::matchstate::{MatchTime, TeamScore};
use crate::packet::{decode, Packet};
use crate::short::ShortInfo;

/// A client the emulated server lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmuPlayer {
    /// Raw name (no `"` or `\`).
    pub name: Vec<u8>,
    /// Score (frags; DarkPlaces spectators −666).
    pub score: i32,
    /// Ping (bots 0; qfusion sends −9999 for a client still connecting).
    pub ping: i32,
    /// Team (qfusion: 0 spectator, 1 players, 2 and up the teams; DarkPlaces team games: 0
    /// spectator, 1 red, 2 blue…). DarkPlaces writes it only when `teamplay` is on.
    pub team: i32,
    /// A bot (counted in `bots`).
    pub bot: bool,
}

/// What an emulated server reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The game.
    pub game: WarsowGame,
    /// Server name, raw (colour codes allowed).
    pub hostname: Vec<u8>,
    /// Map.
    pub map: Vec<u8>,
    /// Game type name (`ca`, `dm`…).
    pub gametype: Vec<u8>,
    /// Slots.
    pub max_clients: u32,
    /// Needs a password (qfusion `g_needpass`, the short reply's `p`).
    pub password: bool,
    /// Clients in slot order.
    pub players: Vec<EmuPlayer>,
    /// qfusion `g_match_time`.
    pub match_time: Option<MatchTime>,
    /// qfusion `g_match_score`.
    pub scores: Vec<TeamScore>,
    /// qfusion `g_instagib`.
    pub instagib: bool,
    /// qfusion `sv_skilllevel`.
    pub skill_level: i32,
    /// DarkPlaces `teamplay`: the team goes on player lines.
    pub teamplay: bool,
}

/// qfusion's team game types (`GS_TeamBasedGametype`), for the sample players' teams.
const TEAM_GAMETYPES: [&str; 6] = ["ca", "tdm", "ctf", "bomb", "ctftactics", "headhunt"];

impl ServerConfig {
    /// A server named `hostname` with `players` generated clients: every second one a bot
    /// (ping 0), every fourth a spectator; in team game types the others alternate between
    /// the two teams.
    pub fn sample(game: WarsowGame, hostname: &[u8], players: usize) -> Self {
        let gametype: &[u8] = if game.is_qfusion() { b"ca" } else { b"dm" };
        let mut c = ServerConfig {
            game,
            hostname: hostname.to_vec(),
            map: default_map(game).to_vec(),
            gametype: gametype.to_vec(),
            max_clients: u32::try_from(players.max(8)).unwrap_or(u32::MAX),
            password: false,
            players: Vec::new(),
            match_time: None,
            scores: Vec::new(),
            instagib: false,
            skill_level: 1,
            teamplay: false,
        };
        c.set_players(players, 0);
        c
    }

    /// Regenerates the players (see [`ServerConfig::sample`]), varied by `seed`.
    pub fn set_players(&mut self, players: usize, seed: u64) {
        let team_game = self.game.is_qfusion()
            && TEAM_GAMETYPES
                .iter()
                .any(|t| t.as_bytes() == self.gametype.as_slice());
        let shift = i32::try_from(seed % 7).unwrap_or(0);
        self.players = (0..players)
            .map(|i| {
                let n = i32::try_from(i).unwrap_or(i32::MAX);
                let bot = i % 2 == 1;
                let spectator = i % 4 == 3;
                let name = match (self.game.is_qfusion(), bot) {
                    (true, _) => format!("^{}Player^7 {}", n % 8 + 1, n + 1),
                    (false, true) => format!("[BOT]Bot{}", n + 1),
                    (false, false) => format!("^{}Player^7 {}", n % 8 + 1, n + 1),
                };
                let team = match (spectator, team_game) {
                    (true, _) => 0,
                    (false, true) => 2 + n % 2,
                    (false, false) => 1,
                };
                let score = if spectator && !self.game.is_qfusion() {
                    crate::view::SPECTATOR_SCORE
                } else {
                    30 - n * 3 + shift
                };
                EmuPlayer {
                    name: name.into_bytes(),
                    score,
                    ping: if bot { 0 } else { 20 + n },
                    team,
                    bot,
                }
            })
            .collect();
        if self.game.is_qfusion() {
            let playing = self.players.iter().any(|p| p.team != 0);
            self.match_time = Some(if playing {
                MatchTime::Playing {
                    elapsed_secs: 187 + u32::try_from(seed % 600).unwrap_or(0),
                    limit_secs: Some(1200),
                    overtime: false,
                    sudden_death: false,
                    timeout: false,
                }
            } else {
                MatchTime::Warmup
            });
            self.scores = if team_game && playing {
                vec![
                    TeamScore {
                        team: "ALPHA".into(),
                        score: 3 + shift,
                    },
                    TeamScore {
                        team: "BETA".into(),
                        score: 5,
                    },
                ]
            } else {
                Vec::new()
            };
        }
    }
}

/// The map a server of `game` starts on when none is given.
pub fn default_map(game: WarsowGame) -> &'static [u8] {
    match game {
        WarsowGame::Warsow => b"wca1",
        WarsowGame::Warfork => b"wfca1",
        WarsowGame::Nexuiz => b"downer",
    }
}

/// An emulated game server.
#[derive(Debug, Clone)]
pub struct EmulatedServer {
    config: ServerConfig,
    heartbeats: Heartbeats,
}

fn kv(out: &mut Vec<u8>, k: &str, v: impl AsRef<[u8]>) {
    out.push(b'\\');
    out.extend_from_slice(k.as_bytes());
    out.push(b'\\');
    out.extend_from_slice(v.as_ref());
}

impl EmulatedServer {
    /// A server reporting `config`.
    pub fn new(config: ServerConfig) -> Self {
        EmulatedServer {
            config,
            heartbeats: Heartbeats::default(),
        }
    }

    /// Heartbeats `master` at start and every [`HEARTBEAT_INTERVAL`](fragstat_core::service::HEARTBEAT_INTERVAL).
    pub fn with_master(self, master: Option<SocketAddr>) -> Self {
        self.with_heartbeats(Heartbeats::new(master))
    }

    /// Heartbeats on `schedule` (a master and a period).
    pub fn with_heartbeats(mut self, schedule: Heartbeats) -> Self {
        self.heartbeats = schedule;
        self
    }

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    fn bots(&self) -> usize {
        self.config.players.iter().filter(|p| p.bot).count()
    }

    /// qfusion's `Cvar_Serverinfo()` with `g_gametype` turned into `gametype` at the end.
    fn qfusion_serverinfo(&self, out: &mut Vec<u8>) {
        let c = &self.config;
        kv(out, "version", "2.1 x86_64 fragstat emulator");
        kv(
            out,
            "fs_game",
            if c.game == WarsowGame::Warfork {
                "basewf"
            } else {
                "basewsw"
            },
        );
        kv(out, "g_antilag", "1");
        kv(out, "g_gametypes_available", "");
        kv(out, "g_instagib", if c.instagib { "1" } else { "0" });
        kv(out, "g_match_score", TeamScore::to_value(&c.scores));
        kv(
            out,
            "g_match_time",
            c.match_time
                .as_ref()
                .map(MatchTime::to_value)
                .unwrap_or_default(),
        );
        kv(out, "g_needpass", if c.password { "1" } else { "0" });
        kv(out, "g_race_gametype", "0");
        kv(out, "gamename", c.game.master_gamename());
        kv(out, "mapname", &c.map);
        kv(out, "protocol", c.game.protocol().to_string());
        kv(out, "sv_hostname", &c.hostname);
        kv(out, "sv_maxclients", c.max_clients.to_string());
        kv(out, "sv_pure", "1");
        kv(out, "sv_skilllevel", c.skill_level.to_string());
        kv(out, "gametype", &c.gametype);
        let bots = self.bots();
        if bots > 0 {
            kv(out, "bots", bots.to_string());
        }
        kv(out, "clients", c.players.len().to_string());
    }

    fn darkplaces_serverinfo(&self, out: &mut Vec<u8>, challenge: Option<&[u8]>) {
        let c = &self.config;
        kv(out, "gamename", c.game.master_gamename());
        kv(out, "modname", "data");
        kv(out, "gameversion", "20000");
        kv(out, "sv_maxclients", c.max_clients.to_string());
        kv(out, "clients", c.players.len().to_string());
        kv(out, "bots", self.bots().to_string());
        kv(out, "mapname", &c.map);
        kv(out, "hostname", &c.hostname);
        kv(out, "protocol", c.game.protocol().to_string());
        let mut qc = c.gametype.clone();
        qc.extend_from_slice(b":2.5.2::score!!");
        kv(out, "qcstatus", qc);
        if let Some(ch) = challenge.filter(|c| !c.is_empty()) {
            kv(out, "challenge", ch);
        }
    }

    /// The reply to `getinfo` (`players == false`) or `getstatus`, with `challenge` echoed.
    pub fn reply(&self, players: bool, challenge: Option<&[u8]>) -> Vec<u8> {
        let c = &self.config;
        let mut out = b"\xff\xff\xff\xff".to_vec();
        out.extend_from_slice(if players {
            b"statusResponse\n"
        } else {
            b"infoResponse\n"
        });
        if c.game.is_qfusion() {
            // "%s\n\\challenge\\%s%s": the argument (or nothing) first.
            kv(&mut out, "challenge", challenge.unwrap_or_default());
            self.qfusion_serverinfo(&mut out);
            if players {
                out.push(b'\n');
                for p in &c.players {
                    out.extend_from_slice(format!("{} {} \"", p.score, p.ping).as_bytes());
                    out.extend_from_slice(&p.name);
                    out.extend_from_slice(format!("\" {}\n", p.team).as_bytes());
                }
            }
        } else {
            self.darkplaces_serverinfo(&mut out, challenge);
            if players {
                out.push(b'\n');
                for p in &c.players {
                    let team = if c.teamplay {
                        format!(" {}", p.team)
                    } else {
                        String::new()
                    };
                    out.extend_from_slice(format!("{} {}{team} \"", p.score, p.ping).as_bytes());
                    out.extend_from_slice(&p.name);
                    out.extend_from_slice(b"\"\n");
                }
            }
        }
        out
    }

    /// The short `info` reply (qfusion `SV_ShortInfoString`).
    pub fn short_info(&self) -> ShortInfo {
        let c = &self.config;
        ShortInfo::build(
            &c.hostname,
            &c.map,
            u32::try_from(c.players.len()).unwrap_or(u32::MAX),
            c.max_clients,
            &c.gametype,
            c.skill_level,
            c.password,
            u32::try_from(self.bots()).unwrap_or(u32::MAX),
            c.instagib,
        )
    }

    /// Answers one datagram; `None` for what the server ignores.
    pub fn respond(&self, datagram: &[u8]) -> Option<Vec<u8>> {
        let c = &self.config;
        // A challenge that would break the infostring gets no reply.
        let fits = |ch: &Option<Vec<u8>>| {
            ch.as_ref()
                .is_none_or(|ch| !ch.iter().any(|&b| matches!(b, b'\\' | 0 | b'\n')))
        };
        match decode(datagram).ok()? {
            Packet::Oob(Oob::GetInfo { challenge }) if fits(&challenge) => {
                Some(self.reply(false, challenge.as_deref()))
            }
            Packet::Oob(Oob::GetStatus { challenge }) if fits(&challenge) => {
                Some(self.reply(true, challenge.as_deref()))
            }
            // SVC_InfoResponse: silent unless the protocol matches, and when full or empty
            // unless asked; never for a single-slot server.
            Packet::Info(r) if c.game.is_qfusion() => {
                let n = c.players.len();
                let full = u32::try_from(n).is_ok_and(|n| n >= c.max_clients);
                let silent = r.protocol != c.game.protocol()
                    || c.max_clients == 1
                    || (full && !r.full)
                    || (n == 0 && !r.empty);
                if silent {
                    return None;
                }
                Packet::InfoReply(self.short_info()).to_bytes().ok()
            }
            _ => None,
        }
    }

    fn heartbeat(&mut self, now: Instant, out: &mut Outbox) {
        if let Some(m) = self.heartbeats.due(now) {
            if let Ok(b) =
                Oob::Heartbeat(Heartbeat::new(self.config.game.heartbeat().as_bytes())).to_bytes()
            {
                out.push((m, b));
            }
        }
    }
}

impl Service for EmulatedServer {
    fn start(&mut self, now: Instant, out: &mut Outbox) {
        self.heartbeat(now, out);
    }

    fn handle(&mut self, _now: Instant, from: SocketAddr, datagram: &[u8], out: &mut Outbox) {
        if let Some(reply) = self.respond(datagram) {
            out.push((from, reply));
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.heartbeats.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Instant, out: &mut Outbox) {
        self.heartbeat(now, out);
    }
}

/// Longest name or map an emulated server takes (qfusion copies the name into 64 bytes for
/// the short reply; infostring values are at most 64 characters in the Warsow docs).
const MAX_TEXT: usize = 63;

fn check_text(field: &str, value: &[u8]) -> Result<(), EmuError> {
    EmuError::check_text(field, value, b"\\\"\n\r\0;", MAX_TEXT, "an infostring")
}

impl Emulate for WarsowGame {
    fn emulated_server(&self, config: &EmuServer) -> Result<Box<dyn Service>, EmuError> {
        check_text("the server name", &config.name)?;
        check_text("the map name", &config.map)?;
        config.check_slots(256, false, "the emulator")?;
        if config.password && !self.is_qfusion() {
            return Err(EmuError(
                "a DarkPlaces server does not say whether it needs a password".into(),
            ));
        }
        let mut c = ServerConfig::sample(*self, &config.name, 0);
        if let Some(gt) = &config.gametype {
            check_text("the game type", gt.as_bytes())?;
            if gt.is_empty() || gt.contains(':') {
                return Err(EmuError(format!(
                    "game type {gt:?}: a short name such as dm, ca or ctf"
                )));
            }
            c.gametype = gt.as_bytes().to_vec();
        }
        c.map = if config.map.is_empty() {
            default_map(*self).to_vec()
        } else {
            config.map.clone()
        };
        c.max_clients = config.max_players;
        c.password = config.password;
        c.set_players(config.players, config.seed);
        Ok(Box::new(
            EmulatedServer::new(c).with_heartbeats(config.heartbeats()),
        ))
    }

    /// The Quake III master protocol with this game's protocol number: the same list.
    fn emulated_master(&self, config: &EmuMaster) -> Result<Box<dyn Service>, EmuError> {
        Quake3Game::Other(self.protocol()).emulated_master(config)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn refuses_what_cannot_be_served() {
        let w = WarsowGame::Warsow;
        assert!(w.emulated_server(&EmuServer::new("a\\b", "", 0)).is_err());
        assert!(w
            .emulated_server(&EmuServer::new("x", "", 0).with_gametype(Some("a:b".into())))
            .is_err());
        let n = WarsowGame::Nexuiz;
        assert!(n
            .emulated_server(&EmuServer::new("x", "", 0).with_password(true))
            .is_err());
        assert!(n.emulated_server(&EmuServer::new("x", "", 2)).is_ok());
    }

    use super::*;
    use fragstat_core::service::HEARTBEAT_INTERVAL;
    use fragstat_quake3_oob::{Quake3Game as Q3Game, ServerReply};

    fn status(s: &EmulatedServer, bytes: &[u8]) -> fragstat_quake3_oob::StatusResponse {
        let reply = s.respond(bytes).unwrap();
        match decode(&reply).unwrap() {
            Packet::Oob(Oob::StatusResponse(st)) => st,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn qfusion_puts_the_challenge_first_and_teams_last() {
        let s = EmulatedServer::new(ServerConfig::sample(WarsowGame::Warsow, b"^1W", 4));
        let reply = s.respond(b"\xff\xff\xff\xffgetinfo 123\n").unwrap();
        assert!(reply.starts_with(b"\xff\xff\xff\xffinfoResponse\n\\challenge\\123\\version\\"));
        assert!(
            reply.ends_with(b"\\bots\\2\\clients\\4"),
            "{}",
            reply.escape_ascii()
        );
        let st = status(&s, b"\xff\xff\xff\xffgetstatus");
        assert_eq!(
            st.info.pairs().next().unwrap(),
            (&b"challenge"[..], &b""[..])
        );
        assert_eq!(st.players.len(), 4);
        assert_eq!(
            st.players.iter().map(|p| p.team).collect::<Vec<_>>(),
            [Some(2), Some(3), Some(2), Some(0)]
        );
        let info = crate::view::adapt(
            WarsowGame::Warsow,
            ServerReply {
                info: None,
                status: Some(st),
                unverified: false,
            }
            .into_server_info(Q3Game::Other(22)),
        );
        assert_eq!(
            (info.num_players, info.num_bots, info.num_spectators),
            (4, Some(2), Some(1))
        );
        assert_eq!(info.gametype.as_deref(), Some("ca"));
    }

    #[test]
    fn short_info_follows_the_filters() {
        let empty = EmulatedServer::new(ServerConfig::sample(WarsowGame::Warsow, b"e", 0));
        assert!(empty.respond(b"\xff\xff\xff\xffinfo 22 full").is_none());
        assert!(empty.respond(b"\xff\xff\xff\xffinfo 21 empty").is_none());
        assert!(empty.respond(b"\xff\xff\xff\xffinfo 22 empty").is_some());
        let mut c = ServerConfig::sample(WarsowGame::Warsow, b"f", 8);
        c.max_clients = 8;
        let full = EmulatedServer::new(c);
        assert!(full.respond(b"\xff\xff\xff\xffinfo 22 empty").is_none());
        let Packet::InfoReply(i) =
            decode(&full.respond(b"\xff\xff\xff\xffinfo 22 full").unwrap()).unwrap()
        else {
            panic!()
        };
        assert_eq!((i.clients(), i.bots()), (Some((8, 8)), Some(4)));
        let nexuiz = EmulatedServer::new(ServerConfig::sample(WarsowGame::Nexuiz, b"n", 2));
        assert!(nexuiz
            .respond(b"\xff\xff\xff\xffinfo 3 full empty")
            .is_none());
    }

    #[test]
    fn darkplaces_puts_the_challenge_last() {
        let mut c = ServerConfig::sample(WarsowGame::Nexuiz, b"^1Nex", 4);
        c.teamplay = true;
        let s = EmulatedServer::new(c);
        let reply = s.respond(b"\xff\xff\xff\xffgetinfo abc").unwrap();
        assert!(reply.ends_with(b"\\qcstatus\\dm:2.5.2::score!!\\challenge\\abc"));
        let st = status(&s, b"\xff\xff\xff\xffgetstatus xyz");
        assert_eq!(st.info.pairs().next_back().unwrap().1, b"xyz");
        assert!(st.players.iter().all(|p| p.team_before_name));
        assert_eq!(st.players[3].score, Some(-666));
    }

    #[test]
    fn heartbeats_at_start_and_on_time() {
        let master: SocketAddr = "127.0.0.1:27950".parse().unwrap();
        let mut s = EmulatedServer::new(ServerConfig::sample(WarsowGame::Warsow, b"h", 0))
            .with_master(Some(master));
        let t0 = Instant::now();
        let mut out = Outbox::new();
        s.start(t0, &mut out);
        assert_eq!(
            out,
            vec![(master, b"\xff\xff\xff\xffheartbeat DarkPlaces\n".to_vec())]
        );
        assert_eq!(s.poll_timeout(), Some(t0 + HEARTBEAT_INTERVAL));
        out.clear();
        s.handle_timeout(t0 + HEARTBEAT_INTERVAL, &mut out);
        assert_eq!(out.len(), 1);
    }
}
