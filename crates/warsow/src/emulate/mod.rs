//! Sans-IO emulated servers that answer like qfusion (Warsow, Warfork) and DarkPlaces
//! (Nexuiz, Xonotic) do, byte for byte where it matters: the challenge's place, the `bots`
//! and `clients` keys, the player line forms and the short `info` reply.
//!
//! DarkPlaces servers echo the raw rest of the request after `getstatus ` / `getinfo ` as
//! the challenge (a trailing newline included), write `qcstatus` per game type, put each
//! player's team before the name in team games, name bots `[BOT]…` with ping 0, and turn a
//! status whose player lines do not fit their reply buffer into an infoResponse.
//!
//! Sources: qfusion `source/server/sv_oob.c` (`SVC_SendInfoString`, `SV_LongInfoString`,
//! `SVC_InfoResponse`, `SV_ShortInfoString`, `SV_MasterHeartbeat`); DarkPlaces `netconn.c`
//! (`NetConn_ServerParsePacket`, `NetConn_BuildStatusResponse`); Nexuiz 2.5.2's
//! `defaultNexuiz.cfg` and `bots.txt`, Xonotic's `defaultXonotic.cfg` and `bots.txt`; real
//! Nexuiz 2.5.2 replies (tests/fixtures/warsow/ok/nexuiz-*) and a public Xonotic 0.7.0 one.

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
    /// DarkPlaces `teamplay`: the team goes on player lines (set by
    /// [`ServerConfig::set_players`] from the game type, [`WarsowGame::team_column`]).
    pub teamplay: bool,
    /// DarkPlaces: the reply buffer (`response[…]` in `NetConn_ServerParsePacket`): a status
    /// whose player lines do not fit is sent as an infoResponse. 1400 bytes in the engine of
    /// Nexuiz 2.5.2 (Debian's 2018 DarkPlaces, and 2009's), 2800 in today's (Xonotic).
    pub reply_buffer: usize,
}

/// qfusion's team game types (`GS_TeamBasedGametype`), for the sample players' teams.
const TEAM_GAMETYPES: [&str; 6] = ["ca", "tdm", "ctf", "bomb", "ctftactics", "headhunt"];

impl ServerConfig {
    /// A server named `hostname` with `players` generated clients: every second one a bot
    /// (ping 0), every fourth a spectator (qfusion: the fourth of four, a bot; DarkPlaces: the
    /// third, a human, with score −666); in team game types the others alternate between the
    /// two teams.
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
            reply_buffer: darkplaces_reply_buffer(game),
        };
        c.set_players(players, 0);
        c
    }

    /// Regenerates the players (see [`ServerConfig::sample`]), varied by `seed`; on a
    /// DarkPlaces game also sets [`ServerConfig::teamplay`] from the game type.
    pub fn set_players(&mut self, players: usize, seed: u64) {
        if self.game.is_darkplaces() {
            self.set_darkplaces_players(players, seed);
            return;
        }
        let team_game = TEAM_GAMETYPES
            .iter()
            .any(|t| t.as_bytes() == self.gametype.as_slice());
        let shift = i32::try_from(seed % 7).unwrap_or(0);
        self.players = (0..players)
            .map(|i| {
                let n = i32::try_from(i).unwrap_or(i32::MAX);
                let bot = i % 2 == 1;
                let spectator = i % 4 == 3;
                let team = match (spectator, team_game) {
                    (true, _) => 0,
                    (false, true) => 2 + n % 2,
                    (false, false) => 1,
                };
                EmuPlayer {
                    name: format!("^{}Player^7 {}", n % 8 + 1, n + 1).into_bytes(),
                    score: 30 - n * 3 + shift,
                    ping: if bot { 0 } else { 20 + n },
                    team,
                    bot,
                }
            })
            .collect();
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

    /// DarkPlaces players: bots named `[BOT]` + a name of the game's `bots.txt` with ping 0,
    /// humans with ping 20 and up; every fourth client (the third of four, a human) a
    /// spectator with frags −666; in team game types the others take the teams in turn (red
    /// 1, blue 2, then yellow 3 and pink 4 where the game type has more), as the real server
    /// fills its teams.
    fn set_darkplaces_players(&mut self, players: usize, seed: u64) {
        let gametype = String::from_utf8_lossy(&self.gametype).into_owned();
        self.teamplay = self.game.team_column(&gametype);
        let teams = usize::from(self.game.gametype(&gametype).map_or(0, |g| g.teams)).max(1);
        self.match_time = None;
        self.scores = Vec::new();
        let shift = i32::try_from(seed % 7).unwrap_or(0);
        let offset = usize::try_from(seed).unwrap_or(0);
        let mut playing = 0usize;
        self.players = (0..players)
            .map(|i| {
                let n = i32::try_from(i).unwrap_or(i32::MAX);
                let bot = i % 2 == 1;
                let spectator = i % 4 == 2;
                let name = if bot {
                    let pick = (i / 2 + offset) % BOT_NAMES.len();
                    format!("[BOT]{}", BOT_NAMES.get(pick).copied().unwrap_or("Bot"))
                } else {
                    format!("^{}Player^7 {}", n % 8 + 1, n + 1)
                };
                let team = if spectator {
                    0
                } else {
                    playing += 1;
                    i32::try_from((playing - 1) % teams + 1).unwrap_or(1)
                };
                EmuPlayer {
                    name: name.into_bytes(),
                    score: if spectator {
                        crate::view::SPECTATOR_SCORE
                    } else {
                        30 - n * 3 + shift
                    },
                    ping: if bot { 0 } else { 20 + n },
                    team,
                    bot,
                }
            })
            .collect();
    }
}

/// The score labels of a DarkPlaces `qcstatus` for a game type: the players' and, in team
/// games, the teams'. As a real Nexuiz 2.5.2 server writes them: `score!!` (`<` marks a
/// label where less is better), `rank<!!` in `lms`, `fastest<!!` in `rc`, and for the teams
/// `score!!`, `caps!!` in `ctf`, `score!!,caps!` in `kh`. Xonotic's game types of the same
/// names are given the same (its 0.7.0 CTF reply agrees); its others `score!!`.
fn score_labels(gametype: &[u8], teams: bool) -> (&'static str, Option<&'static str>) {
    let team = |label| teams.then_some(label);
    match gametype {
        b"lms" => ("rank<!!", None),
        b"rc" | b"race" | b"cts" => ("fastest<!!", None),
        b"ctf" => ("score!!", team("caps!!")),
        b"kh" => ("score!!", team("score!!,caps!")),
        _ => ("score!!", team("score!!")),
    }
}

/// The team numbers DarkPlaces games use in `qcstatus` for teams 1 to 4 (red, blue,
/// yellow, pink): the colour + 1 (`NUM_TEAM_1`… 5, 14, 13, 10), written in increasing order
/// (`kh:2.5.2::score!!:score!!,caps!:5:0,0:13:0,0:14:0,0`).
const TEAM_NUMBERS: [(i32, i32); 4] = [(1, 5), (2, 14), (3, 13), (4, 10)];

/// The bot names of Nexuiz 2.5.2's `bots.txt` (Debian `nexuiz-data`), which Xonotic's keeps;
/// the engine adds `bot_prefix`, `[BOT]` (defaultNexuiz.cfg:354), as the real replies show
/// (`[BOT]Hellfire`, `[BOT]Resurrection`).
const BOT_NAMES: [&str; 18] = [
    "Hellfire",
    "Toxic",
    "Discovery",
    "Pegasus",
    "Eureka",
    "Airhead",
    "Gator",
    "Delirium",
    "Death",
    "Scorcher",
    "Necrotic",
    "Dominator",
    "Thunderstorm",
    "Mystery",
    "Lion",
    "Sensible",
    "Shadow",
    "Resurrection",
];

/// The reply buffer of `game`'s engine ([`ServerConfig::reply_buffer`]); 0 for qfusion,
/// whose emulated replies do not use it.
pub fn darkplaces_reply_buffer(game: WarsowGame) -> usize {
    match game {
        WarsowGame::Nexuiz => 1400,
        WarsowGame::Xonotic => 2800,
        WarsowGame::Warsow | WarsowGame::Warfork => 0,
    }
}

/// The version a DarkPlaces game reports: its human version (the second field of
/// `qcstatus`, the default host name's) and `gameversion`; `None` for qfusion. Nexuiz 2.5.2:
/// `g_nexuizversion 2.5.2`, `gameversion 20000` (defaultNexuiz.cfg:1, 31). Xonotic 0.8.6,
/// the current release: `gameversion` by the rule of defaultXonotic.cfg (version a.b.c is
/// a0b0c: "gameversion 801 // 0.8.1").
pub fn darkplaces_version(game: WarsowGame) -> Option<(&'static str, u32)> {
    match game {
        WarsowGame::Nexuiz => Some(("2.5.2", 20000)),
        WarsowGame::Xonotic => Some(("0.8.6", 806)),
        WarsowGame::Warsow | WarsowGame::Warfork => None,
    }
}

/// The host name a server of `game` has when none is set: DarkPlaces games' configs set
/// `hostname "<Game> $version Server"` (defaultNexuiz.cfg:253 `Nexuiz 2.5.2 Server`, as a
/// real server shows; defaultXonotic.cfg `Xonotic $g_xonoticversion Server`); qfusion's
/// `sv_hostname` default, `APPLICATION " server"`.
pub fn default_hostname(game: WarsowGame) -> String {
    match darkplaces_version(game) {
        Some((version, _)) => format!("{} {version} Server", game.title()),
        None => format!("{} server", game.title()),
    }
}

/// The map a server of `game` starts on when none is given.
pub fn default_map(game: WarsowGame) -> &'static [u8] {
    match game {
        WarsowGame::Warsow => b"wca1",
        WarsowGame::Warfork => b"wfca1",
        WarsowGame::Nexuiz => b"downer",
        WarsowGame::Xonotic => b"solarium",
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

    /// DarkPlaces' `qcstatus` (the game's `worldstatus`): `gametype:version:…:` + the
    /// player score label, then in team games the team score label and each team's number
    /// and score (5 red, 14 blue, 13 yellow, 10 pink). Nexuiz 2.5.2 as its real servers send
    /// it: `dm:2.5.2::score!!`, `tdm:2.5.2::score!!:score!!:5:5:14:6` (a team's score is its
    /// players' frags: 4 + 1 and 2 + 4 there), `ctf:2.5.2::score!!:caps!!:5:0:14:0`. Xonotic
    /// as its 0.7.0 reply has it (`ctf:0.7.0:P315:S2:F6:MMinstaGib::score!!:caps!!:5:9:14:8`):
    /// `P` then pure changes, `S` free slots (14 − 12 there), `F` the server flags (2 teams,
    /// 4 player stats), `M` the mod (none here). CTF captures are counted here as one per 20
    /// points, and key hunt's second number (`score,caps`) as 0.
    pub fn darkplaces_qcstatus(&self) -> Vec<u8> {
        let c = &self.config;
        let (version, _) = darkplaces_version(c.game).unwrap_or_default();
        let mut qc = c.gametype.clone();
        qc.push(b':');
        qc.extend_from_slice(version.as_bytes());
        if c.game == WarsowGame::Xonotic {
            let slots = usize::try_from(c.max_clients).unwrap_or(usize::MAX);
            let free = slots.saturating_sub(c.players.len());
            let flags = if c.teamplay { 2 } else { 0 };
            qc.extend_from_slice(format!(":P0:S{free}:F{flags}:M").as_bytes());
        }
        let (player_label, team_label) = score_labels(&c.gametype, c.teamplay);
        qc.extend_from_slice(b"::");
        qc.extend_from_slice(player_label.as_bytes());
        if let Some(label) = team_label {
            qc.push(b':');
            qc.extend_from_slice(label.as_bytes());
            let gametype = String::from_utf8_lossy(&c.gametype);
            let teams = usize::from(c.game.gametype(&gametype).map_or(2, |g| g.teams));
            let mut numbers: Vec<(i32, i32)> = TEAM_NUMBERS
                .iter()
                .copied()
                .take(teams.clamp(2, 4))
                .collect();
            numbers.sort_by_key(|&(_, number)| number);
            for (team, number) in numbers {
                let points: i64 = c
                    .players
                    .iter()
                    .filter(|p| p.team == team)
                    .map(|p| i64::from(p.score))
                    .sum();
                let score = match c.gametype.as_slice() {
                    // One capture per 20 points: a fresh server's 0, as the real ones show.
                    b"ctf" => format!("{}", points.max(0) / 20),
                    b"kh" => format!("{points},0"),
                    _ => points.to_string(),
                };
                qc.extend_from_slice(format!(":{number}:{score}").as_bytes());
            }
        }
        qc
    }

    /// DarkPlaces' serverinfo, in `NetConn_BuildStatusResponse`'s fixed order, with the
    /// challenge written whenever the request had one, even empty.
    fn darkplaces_serverinfo(&self, out: &mut Vec<u8>, challenge: Option<&[u8]>) {
        let c = &self.config;
        kv(out, "gamename", c.game.master_gamename());
        kv(out, "modname", "data");
        let (_, gameversion) = darkplaces_version(c.game).unwrap_or_default();
        kv(out, "gameversion", gameversion.to_string());
        kv(out, "sv_maxclients", c.max_clients.to_string());
        kv(out, "clients", c.players.len().to_string());
        kv(out, "bots", self.bots().to_string());
        kv(out, "mapname", &c.map);
        kv(out, "hostname", &c.hostname);
        kv(out, "protocol", c.game.protocol().to_string());
        // `char qcstatus[256]`: at most 255 bytes.
        let qc = self.darkplaces_qcstatus();
        kv(out, "qcstatus", qc.get(..255).unwrap_or(&qc));
        if let Some(ch) = challenge {
            kv(out, "challenge", ch);
        }
    }

    /// DarkPlaces' reply: `None` when even the serverinfo does not fit the reply buffer (a
    /// long challenge); a status whose player lines do not fit becomes an infoResponse as
    /// the engine makes it (netconn.c:2851-2858): `infoResponse\n` written over
    /// `statusResponse\n`, the text moved two bytes to the left and the length kept, so the
    /// serverinfo's newline is followed by its last two bytes again.
    fn darkplaces_reply(&self, status: bool, challenge: Option<&[u8]>) -> Option<Vec<u8>> {
        let c = &self.config;
        let mut out = b"\xff\xff\xff\xff".to_vec();
        out.extend_from_slice(if status {
            b"statusResponse\n"
        } else {
            b"infoResponse\n"
        });
        self.darkplaces_serverinfo(&mut out, challenge);
        if status {
            out.push(b'\n');
        }
        // dpsnprintf fails when the text and its NUL do not fit.
        let room = c.reply_buffer.saturating_sub(1);
        if out.len() > room {
            return None;
        }
        if !status {
            return Some(out);
        }
        let saved = out.len();
        for p in &c.players {
            let team = if c.teamplay {
                format!(" {}", p.team)
            } else {
                String::new()
            };
            let mut line = format!("{} {}{team} \"", p.score, p.ping).into_bytes();
            line.extend_from_slice(&p.name);
            line.extend_from_slice(b"\"\n");
            if out.len() + line.len() > room {
                let head = b"\xff\xff\xff\xffstatusResponse\n".len();
                let mut info = b"\xff\xff\xff\xffinfoResponse\n".to_vec();
                info.extend_from_slice(out.get(head..saved).unwrap_or_default());
                info.extend_from_slice(out.get(saved.saturating_sub(2)..saved).unwrap_or_default());
                return Some(info);
            }
            out.extend_from_slice(&line);
        }
        Some(out)
    }

    /// The reply to `getinfo` (`players == false`) or `getstatus`, with `challenge` echoed;
    /// `None` when the server would not answer (a DarkPlaces reply whose serverinfo does not
    /// fit [`ServerConfig::reply_buffer`]).
    pub fn reply(&self, players: bool, challenge: Option<&[u8]>) -> Option<Vec<u8>> {
        let c = &self.config;
        if c.game.is_darkplaces() {
            return self.darkplaces_reply(players, challenge);
        }
        let mut out = b"\xff\xff\xff\xff".to_vec();
        out.extend_from_slice(if players {
            b"statusResponse\n"
        } else {
            b"infoResponse\n"
        });
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
        Some(out)
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
        if c.game.is_darkplaces() {
            let (status, challenge) = darkplaces_request(datagram)?;
            return self.reply(status, challenge);
        }
        // A challenge that would break the infostring gets no reply.
        let fits = |ch: &Option<Vec<u8>>| {
            ch.as_ref()
                .is_none_or(|ch| !ch.iter().any(|&b| matches!(b, b'\\' | 0 | b'\n')))
        };
        match decode(datagram).ok()? {
            Packet::Oob(Oob::GetInfo { challenge }) if fits(&challenge) => {
                self.reply(false, challenge.as_deref())
            }
            Packet::Oob(Oob::GetStatus { challenge }) if fits(&challenge) => {
                self.reply(true, challenge.as_deref())
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

/// A request as DarkPlaces reads it (`NetConn_ServerParsePacket`): after the header, a
/// `getinfo` or `getstatus` prefix (compared with `memcmp`, so `getstatusX` is one too), and
/// as the challenge everything after the single space that follows it up to the first NUL
/// (`challenge = string + 10`: a trailing newline, further spaces and words included; a
/// request that ends at the space has an empty one). Returns whether it asks for the status,
/// and the challenge; `None` for anything else.
pub fn darkplaces_request(datagram: &[u8]) -> Option<(bool, Option<&[u8]>)> {
    // `length >= 5` with the header, then the 16 KiB string buffer.
    let string = datagram.strip_prefix(&fragstat_quake3_oob::OOB_HEADER)?;
    let string = string.get(..string.len().min(16383))?;
    let (status, command) = if string.starts_with(b"getinfo") {
        (false, 7)
    } else if string.starts_with(b"getstatus") {
        (true, 9)
    } else {
        return None;
    };
    let challenge = match (string.len() > command + 1, string.get(command)) {
        (true, Some(b' ')) => {
            let rest = string.get(command + 1..).unwrap_or_default();
            Some(rest.split(|&b| b == 0).next().unwrap_or_default())
        }
        _ => None,
    };
    Some((status, challenge))
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

    /// DarkPlaces heartbeats twice when its server shuts down (`SV_Shutdown`,
    /// `DarkPlacesEngine/DarkPlaces` @ `c6b823ca`, `sv_main.c:2139-2140`), so the master
    /// checks it and drops it. qfusion is left as it was (not checked).
    fn stop(&mut self, _now: Instant, out: &mut Outbox) {
        if !self.config.game.is_darkplaces() {
            return;
        }
        let hb = Oob::Heartbeat(Heartbeat::new(self.config.game.heartbeat().as_bytes())).to_bytes();
        if let Ok(b) = hb {
            out.extend(
                self.heartbeats
                    .at_shutdown()
                    .into_iter()
                    .map(|m| (m, b.clone())),
            );
        }
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
        config.check_no_private_slots(self.title())?;
        if config.password && !self.is_qfusion() {
            return Err(EmuError::Config(
                "a DarkPlaces server does not say whether it needs a password".into(),
            ));
        }
        // An empty name: the one the game's own configuration gives a server.
        let name = if config.name.is_empty() {
            default_hostname(*self).into_bytes()
        } else {
            config.name.clone()
        };
        let mut c = ServerConfig::sample(*self, &name, 0);
        if let Some(gt) = &config.gametype {
            check_text("the game type", gt.as_bytes())?;
            if gt.is_empty() || gt.contains(':') {
                return Err(EmuError::Config(format!(
                    "game type {gt:?}: a short name such as dm, ca or ctf"
                )));
            }
            if self.is_darkplaces() && self.gametype(gt).is_none() {
                let names: Vec<&str> = self.gametypes().iter().map(|g| g.name).collect();
                return Err(EmuError::Config(format!(
                    "{self} has no game type {gt:?}: one of {}",
                    names.join(", ")
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
        let server = EmulatedServer::new(c).with_heartbeats(config.heartbeats());
        Ok(config.guarded(
            fragstat_core::registry::FamilyGame::meta(*self).engine,
            Box::new(server),
        ))
    }

    /// The Quake III master protocol with this game's protocol number: the same list.
    fn emulated_master(&self, config: &EmuMaster) -> Result<Box<dyn Service>, EmuError> {
        Quake3Game::Other(self.protocol()).emulated_master(config)
    }
}

#[cfg(test)]
mod tests;
