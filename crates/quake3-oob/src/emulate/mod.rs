//! Sans-IO emulated game server and master server, built on the encoders.
//!
//! They answer like each game's engine does (its keys, their order, where the challenge goes,
//! its player lines: see `emulate/look.rs`) so that real clients such as qstat can be pointed at them. No
//! sockets here: feed datagrams to [`EmulatedServer::handle`] / [`EmulatedMaster::handle`]
//! (through [`Service`]) and send what they return.

use crate::Encode;
use std::net::SocketAddr;
use std::time::Instant;

use fragstat_core::registry::{EmuError, EmuMaster, EmuServer, Emulate, EndMarker};
use fragstat_core::service::{Heartbeats, Outbox, Service};

use crate::game::{Gametypes, Quake3Game};
use crate::info::InfoString;
use crate::master::EotStyle;
use crate::packet::{
    decode, ChallengeResponse, InfoResponse, Packet, StatusPlayer, StatusResponse,
};

mod look;
mod master;
mod push;
mod slots;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_quirks;
#[cfg(test)]
mod tests_realism;

use look::Order;
pub use master::{EmulatedMaster, CHALLENGE_RESEND, CHALLENGE_TTL, MAX_PENDING};
pub use push::{KEEPALIVE, MAX_TRACKERS};

/// A player the emulated server reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmuPlayer {
    /// Raw name.
    pub name: Vec<u8>,
    /// Score.
    pub score: i32,
    /// Ping (bots are sent with 0, as real servers do).
    pub ping: i32,
    /// A bot: counted in `clients` but not in `g_humanplayers`.
    pub bot: bool,
    /// Team, as the game numbers them (0 where the game has none): in `P` (W:ET, Dæmon,
    /// Tremulous) and on SoF2's player lines.
    pub team: i32,
}

/// What an emulated server reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The game (protocol number, game name).
    pub game: Quake3Game,
    /// `sv_hostname`, raw (colour codes allowed).
    pub hostname: Vec<u8>,
    /// `mapname`.
    pub map: Vec<u8>,
    /// `g_gametype` as the game sends it: a number, or a name (SoF2, Call of Duty: `dm`).
    pub gametype: Vec<u8>,
    /// `sv_maxclients`: every slot, the private ones included.
    pub max_clients: u32,
    /// `sv_privateClients`: slots reserved for `sv_privatePassword`. Bots fill them first and
    /// other humans skip them, and getinfo counts only the slots above them (`emulate/slots.rs`
    /// has the engine lines). Emulated for ioquake3's games and Tremulous.
    pub private_clients: u32,
    /// `g_needpass`.
    pub needpass: bool,
    /// Players in the order they joined: slot order, unless private slots seat them
    /// otherwise.
    pub players: Vec<EmuPlayer>,
    /// Further serverinfo cvars, appended to the status infostring.
    pub extra: InfoString,
}

impl ServerConfig {
    /// A stock server of `game` named `hostname` with `players` generated players, for demos
    /// and benchmarks: the game's first map and gametype, and, where stock servers have bots,
    /// every second player a bot with ping 0 (named like the game's bots where it ships named
    /// ones); in team games the players alternate between teams 1 and 2.
    pub fn sample(game: Quake3Game, hostname: &[u8], players: usize) -> Self {
        let look = look::of(game);
        let plain = game.dialect(None) == fragstat_core::model::Dialect::Plain;
        ServerConfig {
            game,
            hostname: hostname.to_vec(),
            map: look.map.as_bytes().to_vec(),
            gametype: look.gametype.as_bytes().to_vec(),
            max_clients: u32::try_from(players.max(8)).unwrap_or(u32::MAX),
            private_clients: 0,
            needpass: false,
            players: (0..players)
                .map(|i| {
                    let n = i32::try_from(i).unwrap_or(i32::MAX);
                    let bot = look.bots && i % 2 == 1;
                    let name = match look.bot_names.get(i / 2 % look.bot_names.len().max(1)) {
                        Some(b) if bot => b.as_bytes().to_vec(),
                        // Medal of Honor draws no colour codes: its players use none.
                        _ if plain => format!("Player{}", n + 1).into_bytes(),
                        _ => format!("^{}Player^7{}", n % 8 + 1, n + 1).into_bytes(),
                    };
                    EmuPlayer {
                        name,
                        score: 30 - n * 3,
                        ping: if bot { 0 } else { 20 + n },
                        bot,
                        team: if look.teams { 1 + n % 2 } else { 0 },
                    }
                })
                .collect(),
            extra: InfoString::new(),
        }
    }
}

/// A game server that answers `getinfo`, `getstatus` and `getchallenge`.
#[derive(Debug, Clone)]
pub struct EmulatedServer {
    config: ServerConfig,
    order: Order,
    challenge_counter: u32,
    /// The encoded infostrings and player lines without a challenge: only the challenge
    /// changes per request, so `respond` splices it in instead of rebuilding (thousands of
    /// emulated servers stay cheap).
    info_body: Vec<u8>,
    status_body: Vec<u8>,
    /// The newline ending the status infostring and the player lines.
    status_lines: Vec<u8>,
    /// The master it heartbeats, and when next.
    heartbeats: Heartbeats,
    /// The trackers it pushes events to (ET: Legacy's `sv_tracker`, `emulate/push.rs`).
    trackers: push::Trackers,
}

const INFO_HEAD: &[u8] = b"infoResponse\n";
const STATUS_HEAD: &[u8] = b"statusResponse\n";

impl EmulatedServer {
    /// A server reporting `config`.
    pub fn new(config: ServerConfig) -> Self {
        let order = look::order(config.game);
        let config_players = config.players.len();
        let mut s = EmulatedServer {
            config,
            order,
            challenge_counter: 0x1234_5678,
            info_body: Vec::new(),
            status_body: Vec::new(),
            status_lines: Vec::new(),
            heartbeats: Heartbeats::default(),
            trackers: push::Trackers::seated(config_players),
        };
        let mut body = Vec::new();
        if s.info_pairs(None).encode(&mut body).is_ok() {
            s.info_body = body;
        }
        let mut body = Vec::new();
        if s.status_pairs(None).encode(&mut body).is_ok() {
            s.status_body = body;
        }
        let lines = StatusResponse {
            players: s.player_lines(),
            ..StatusResponse::default()
        };
        if let Ok(bytes) = Packet::StatusResponse(lines).to_bytes() {
            let mut lines = bytes
                .get(4 + STATUS_HEAD.len()..)
                .unwrap_or_default()
                .to_vec();
            if s.order == Order::SortedKeepEmpty {
                // IW4x: `info + "\n" + playerList + "\n"` (ServerInfo.cpp:253).
                lines.push(b'\n');
            }
            s.status_lines = lines;
        }
        s
    }

    /// The marker and, for Medal of Honor, the server's direction byte (OpenMoHAA
    /// `net_chan.c`: 1 from a server).
    fn head(&self, command: &[u8], capacity: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(capacity + 80);
        out.extend_from_slice(&crate::packet::OOB_HEADER);
        if self.config.game.spec().direction_byte {
            out.push(1);
        }
        out.extend_from_slice(command);
        out
    }

    fn info_reply(&self, challenge: Option<&[u8]>) -> Vec<u8> {
        let challenge = challenge.filter(|c| !c.is_empty());
        let mut out = self.head(INFO_HEAD, self.info_body.len());
        match self.order {
            Order::Prepend => {
                out.extend_from_slice(&self.info_body);
                push_pair(&mut out, challenge);
            }
            Order::Append => {
                push_pair(&mut out, challenge);
                out.extend_from_slice(&self.info_body);
            }
            Order::Sorted | Order::SortedKeepEmpty => {
                let _ = self.info_pairs(challenge).encode(&mut out);
            }
        }
        out
    }

    fn status_reply(&self, challenge: Option<&[u8]>) -> Vec<u8> {
        let challenge = challenge.filter(|c| !c.is_empty());
        let mut out = self.head(
            STATUS_HEAD,
            self.status_body.len() + self.status_lines.len(),
        );
        match self.order {
            Order::Prepend => {
                push_pair(&mut out, challenge);
                out.extend_from_slice(&self.status_body);
            }
            Order::Append => {
                out.extend_from_slice(&self.status_body);
                push_pair(&mut out, challenge);
            }
            Order::Sorted | Order::SortedKeepEmpty => {
                let _ = self.status_pairs(challenge).encode(&mut out);
            }
        }
        out.extend_from_slice(&self.status_lines);
        out
    }

    /// Heartbeats `master` when started and every [`HEARTBEAT_INTERVAL`](fragstat_core::service::HEARTBEAT_INTERVAL) (as a `dedicated 2`
    /// server does), and answers its `getinfo` challenge like any other.
    pub fn with_master(self, master: Option<SocketAddr>) -> Self {
        self.with_heartbeats(Heartbeats::new(master))
    }

    /// Heartbeats on `schedule` (a master and a period).
    pub fn with_heartbeats(mut self, schedule: Heartbeats) -> Self {
        self.heartbeats = schedule;
        self
    }

    fn heartbeat(&self) -> Option<Vec<u8>> {
        Packet::Heartbeat(crate::packet::Heartbeat {
            name: self.config.game.heartbeat().as_bytes().to_vec(),
        })
        .to_bytes()
        .ok()
    }

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The infoResponse's pairs in wire order, `challenge` placed as the game's engine puts it.
    fn info_pairs(&self, challenge: Option<&[u8]>) -> InfoString {
        let keys = look::info_keys(&self.config);
        let mut info = InfoString::new();
        match self.order {
            Order::Prepend => {
                // Set in engine order, each put in front: the challenge, set first, ends last.
                info.set_like_engine("challenge", challenge.unwrap_or_default());
                for (k, v) in keys {
                    info.set_like_engine(k, v);
                }
            }
            Order::Append => {
                if let Some(c) = challenge.filter(|c| !c.is_empty()) {
                    info.push("challenge", c);
                }
                for (k, v) in keys.into_iter().filter(|(_, v)| !v.is_empty()) {
                    info.push(k, v);
                }
            }
            Order::Sorted | Order::SortedKeepEmpty => {
                let keys = keys
                    .into_iter()
                    .map(|(k, v)| (k.as_bytes().to_vec(), v))
                    .collect();
                info = sorted(keys, challenge, self.order == Order::SortedKeepEmpty);
            }
        }
        info
    }

    /// The statusResponse's serverinfo in wire order, `challenge` placed as the engine puts it.
    fn status_pairs(&self, challenge: Option<&[u8]>) -> InfoString {
        let mut keys: Vec<(Vec<u8>, Vec<u8>)> = look::status_keys(&self.config)
            .into_iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v))
            .collect();
        keys.extend(
            self.config
                .extra
                .pairs()
                .map(|(k, v)| (k.to_vec(), v.to_vec())),
        );
        let challenge = challenge.filter(|c| !c.is_empty());
        let mut info = InfoString::new();
        match self.order {
            Order::Prepend => {
                if let Some(c) = challenge {
                    info.push("challenge", c);
                }
                for (k, v) in keys.into_iter().filter(|(_, v)| !v.is_empty()) {
                    info.push(k, v);
                }
            }
            Order::Append => {
                for (k, v) in keys.into_iter().filter(|(_, v)| !v.is_empty()) {
                    info.push(k, v);
                }
                if let Some(c) = challenge {
                    info.push("challenge", c);
                }
            }
            Order::Sorted | Order::SortedKeepEmpty => {
                info = sorted(keys, challenge, self.order == Order::SortedKeepEmpty);
            }
        }
        info
    }

    /// The player lines the game writes: `score ping "name"`; SoF2 `score ping team "name"`
    /// (sof2plus `sv_main.c:589-590`); Medal of Honor `ping "name"` (OpenMoHAA
    /// `sv_main.c:545-548`); IW4x leaves its bots out (`ServerInfo.cpp:215-230`).
    fn player_lines(&self) -> Vec<StatusPlayer> {
        let game = self.config.game;
        slots::seated(&self.config)
            .into_iter()
            .map(|(_, p)| p)
            .filter(|p| !(game == Quake3Game::Iw4x && p.bot))
            .map(|p| {
                let sof2 = game == Quake3Game::Sof2;
                StatusPlayer {
                    score: (game != Quake3Game::Mohaa).then_some(p.score),
                    ping: p.ping,
                    name: p.name.clone(),
                    team: sof2.then_some(p.team),
                    team_before_name: sof2,
                    extra: Vec::new(),
                }
            })
            .collect()
    }

    /// The `infoResponse` the game's `SVC_Info` would build for `challenge`.
    pub fn info_response(&self, challenge: Option<&[u8]>) -> InfoResponse {
        InfoResponse {
            info: self.info_pairs(challenge),
        }
    }

    /// The `statusResponse` the game's `SVC_Status` would build for `challenge`.
    pub fn status_response(&self, challenge: Option<&[u8]>) -> StatusResponse {
        StatusResponse {
            info: self.status_pairs(challenge),
            players: self.player_lines(),
            ..StatusResponse::default()
        }
    }

    /// Answers one datagram; `None` for anything a server would ignore.
    pub fn respond(&mut self, datagram: &[u8]) -> Option<Vec<u8>> {
        // A challenge that cannot sit in an infostring gets no reply (ioq3 refuses it too).
        let fits = |c: &Option<Vec<u8>>| {
            c.as_ref()
                .is_none_or(|c| !c.iter().any(|&b| b == b'\\' || b == 0))
        };
        let reply = match decode(datagram).ok()? {
            Packet::GetInfo { challenge } if fits(&challenge) => {
                return Some(self.info_reply(challenge.as_deref()))
            }
            Packet::GetStatus { challenge } if fits(&challenge) => {
                return Some(self.status_reply(challenge.as_deref()))
            }
            Packet::GetChallenge { args } => {
                self.challenge_counter = self
                    .challenge_counter
                    .wrapping_mul(1_103_515_245)
                    .wrapping_add(12345);
                Packet::ChallengeResponse(ChallengeResponse {
                    challenge: (self.challenge_counter & 0x7fff_ffff)
                        .to_string()
                        .into_bytes(),
                    client_challenge: args.into_iter().next(),
                    protocol: Some(self.config.game.protocol()),
                })
            }
            _ => return None,
        };
        reply.to_bytes().ok()
    }
}

/// `\challenge\<c>` when there is one.
fn push_pair(out: &mut Vec<u8>, challenge: Option<&[u8]>) {
    if let Some(c) = challenge {
        out.extend_from_slice(b"\\challenge\\");
        out.extend_from_slice(c);
    }
}

/// Keys sorted, empty values dropped, except an empty challenge where the engine keeps one.
fn sorted(
    mut keys: Vec<(Vec<u8>, Vec<u8>)>,
    challenge: Option<&[u8]>,
    keep_empty_challenge: bool,
) -> InfoString {
    match challenge {
        Some(c) if !c.is_empty() => keys.push((b"challenge".to_vec(), c.to_vec())),
        _ if keep_empty_challenge => keys.push((b"challenge".to_vec(), Vec::new())),
        _ => {}
    }
    keys.sort_by(|a, b| a.0.cmp(&b.0));
    let mut info = InfoString::new();
    for (k, v) in keys {
        if !v.is_empty() || (keep_empty_challenge && k == b"challenge") {
            info.push(k, v);
        }
    }
    info
}

impl EmulatedServer {
    /// The heartbeat, when due.
    fn beat(&mut self, now: Instant, out: &mut Outbox) {
        if let Some(m) = self.heartbeats.due(now) {
            out.extend(self.heartbeat().map(|hb| (m, hb)));
        }
    }
}

impl Service for EmulatedServer {
    fn start(&mut self, now: Instant, out: &mut Outbox) {
        self.beat(now, out);
        self.tracker_start(now, out);
    }

    fn handle(&mut self, _now: Instant, from: SocketAddr, datagram: &[u8], out: &mut Outbox) {
        if let Some(reply) = self.respond(datagram) {
            out.push((from, reply));
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match (self.heartbeats.poll_timeout(), self.trackers.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn handle_timeout(&mut self, now: Instant, out: &mut Outbox) {
        self.beat(now, out);
        self.tracker_due(now, out);
    }

    /// The heartbeat again, twice, as ioq3's `SV_MasterShutdown` sends it (see
    /// [`Heartbeats::at_shutdown`]): the master checks the server, gets no answer and drops it.
    fn stop(&mut self, _now: Instant, out: &mut Outbox) {
        if let Some(hb) = self.heartbeat() {
            out.extend(
                self.heartbeats
                    .at_shutdown()
                    .into_iter()
                    .map(|m| (m, hb.clone())),
            );
        }
        self.tracker_stop(out);
    }
}

/// Longest map or server name an emulated server takes (ioq3 `MAX_INFO_VALUE` is 1024).
const MAX_TEXT: usize = 256;

fn check_text(field: &str, value: &[u8]) -> Result<(), EmuError> {
    EmuError::check_text(
        field,
        value,
        b"\\\"\n\r\0;",
        MAX_TEXT,
        "a Quake III infostring",
    )
}

impl Emulate for Quake3Game {
    /// Medal of Honor draws no colour codes (its dialect is `plain`).
    fn default_name(&self) -> &'static str {
        if self.dialect(None) == fragstat_core::model::Dialect::Plain {
            "fragstat emulated server"
        } else {
            "^1fragstat ^7emulated server"
        }
    }

    fn emulated_server(&self, config: &EmuServer) -> Result<Box<dyn Service>, EmuError> {
        check_text("the server name", &config.name)?;
        check_text("the map name", &config.map)?;
        config.check_slots(256, false, "a Quake III status reply")?;
        let mut c = ServerConfig::sample(*self, &config.name, config.players);
        if !config.map.is_empty() {
            c.map = config.map.clone();
        }
        c.max_clients = config.max_players;
        // Medal of Honor's `password` is a userinfo cvar, not serverinfo (OpenMoHAA
        // `openmoh/openmohaa` @ `44ce0595`, `code/fgame/gamecvars.cpp:337`), and its `SVC_Info`
        // sends no password key: a passworded server looks like any other on this port.
        if config.password && *self == Quake3Game::Mohaa {
            return Err(EmuError::Config(
                "a Medal of Honor server does not say whether it needs a password".into(),
            ));
        }
        c.needpass = config.password;
        slots::reserve(&mut c, config.private_slots)?;
        if let Some(gt) = &config.gametype {
            let gt = gt.trim();
            check_text("the game type", gt.as_bytes())?;
            let number = gt.parse::<i64>();
            match (self.spec().gametypes, number) {
                (Gametypes::Named, _) => {}
                (_, Err(_)) => {
                    return Err(EmuError::Config(format!(
                        "game type {gt:?}: {} game types are numbers",
                        self.title()
                    )))
                }
                (_, Ok(_)) => {}
            }
            c.gametype = gt.as_bytes().to_vec();
        }
        // A server in single player answers no query at all (ioq3 `sv_main.c:544-546`,
        // RtCW `sv_main.c:448-450`): there is nothing to emulate.
        let single = matches!(
            self,
            Quake3Game::Quake3 | Quake3Game::OpenArena | Quake3Game::Rtcw | Quake3Game::Mohaa
        ) && c.gametype
            == if *self == Quake3Game::Mohaa {
                b"0"
            } else {
                b"2"
            };
        if single {
            return Err(EmuError::Config(format!(
                "game type {}: a {} server in single-player mode answers no queries",
                String::from_utf8_lossy(&c.gametype),
                self.title()
            )));
        }
        if !config.trackers.is_empty() && *self != Quake3Game::EtLegacy {
            return Err(EmuError::Unsupported(format!(
                "pushing events to a tracker (sv_tracker): ET: Legacy's, not {}'s",
                self.title()
            )));
        }
        let server = EmulatedServer::new(c)
            .with_heartbeats(config.heartbeats())
            .with_trackers(config.trackers.clone());
        Ok(config.guarded(
            fragstat_core::registry::FamilyGame::meta(*self).engine,
            Box::new(server),
        ))
    }

    fn emulated_http_list(
        &self,
        servers: &[(SocketAddr, EmuServer)],
    ) -> Result<fragstat_core::registry::HttpBody, EmuError> {
        if *self != Quake3Game::Iw4x {
            return Err(EmuError::Unsupported(format!(
                "{}: the master is a UDP master (serve it without an HTTP list)",
                self.id()
            )));
        }
        let addrs: Vec<SocketAddr> = servers.iter().map(|(a, _)| *a).collect();
        Ok(crate::iw4x::render(&addrs, self.protocol()))
    }

    fn emulated_master(&self, config: &EmuMaster) -> Result<Box<dyn Service>, EmuError> {
        let style = match config.end_marker {
            EndMarker::Last => EotStyle::LastPacket,
            EndMarker::Every | EndMarker::BareEvery => EotStyle::EveryPacket,
            EndMarker::Alternative => EotStyle::EofLast,
            _ => EotStyle::None,
        };
        let protocol = self.protocol();
        let named = config
            .listings
            .iter()
            .map(|l| (l.addr, l.protocol, l.gamename.clone()))
            .collect();
        let mut master = EmulatedMaster::new(
            config.servers.iter().map(|a| (*a, protocol)).collect(),
            style,
        )
        .with_quirks(
            config.short_only,
            config.end_marker == EndMarker::BareEvery,
            named,
        )
        .daemon(*self == Quake3Game::Unvanquished);
        if let Some((label, servers)) = &config.featured {
            if *self != Quake3Game::Unvanquished {
                return Err(EmuError::Unsupported(format!(
                    "{}: only Unvanquished's master has featured groups",
                    self.id()
                )));
            }
            master = master.with_featured(label.as_bytes(), servers.clone());
        }
        Ok(Box::new(master))
    }

    fn emulated_tcp_list(&self, servers: &[SocketAddr]) -> Result<Vec<u8>, EmuError> {
        if *self != Quake3Game::Cod4x {
            return Err(EmuError::Unsupported(format!(
                "{}: the master is a UDP master",
                self.id()
            )));
        }
        let entries = servers
            .iter()
            .map(|a| crate::cod4x::Cod4xEntry::new(vec![*a]))
            .collect();
        Ok(crate::cod4x::render(entries))
    }
}
