//! Sans-IO emulated server and master, built on the encoders, answering as the engines do so
//! that real clients (qstat) can be pointed at them.

use fragstat_core::registry::{EmuError, EmuMaster, EmuServer, Emulate};

use crate::Encode;
use std::collections::HashMap;
use std::net::{SocketAddr, SocketAddrV4};
use std::time::{Duration, Instant};

use fragstat_core::model::Rules;
use fragstat_core::service::{Heartbeats, Outbox, Service};

use crate::dict::Dict;
use crate::game::{Idtech4Game, Protocol};
use crate::master::encode_server_list;
use crate::packet::{
    decode_as, Body, GetInfo, Heartbeat, InfoPlayer, InfoResponse, Packet, ServerState,
    END_OF_PLAYERS,
};
use crate::EncodeError;

/// What an emulated server reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The game (layout, protocol, key names).
    pub game: Idtech4Game,
    /// The protocol sent (the game's by default).
    pub protocol: Protocol,
    /// The server-info dictionary, in wire order.
    pub info: Rules,
    /// Players in slot order.
    pub players: Vec<InfoPlayer>,
    /// The OS mask (7, as id's Linux servers send).
    pub os_mask: u32,
    /// The master to heartbeat, if any, and how often.
    pub heartbeats: Heartbeats,
}

impl ServerConfig {
    /// A server of `game` named `name` on `map` (empty: the game's usual first map) with
    /// `players` generated players (`Player1`…; Quake 4 players get clan tags), slot 1 left
    /// free so the slots have a gap as on real servers.
    pub fn sample(
        game: Idtech4Game,
        name: &[u8],
        map: &[u8],
        players: usize,
        max_players: u32,
    ) -> Self {
        let map: &[u8] = if map.is_empty() {
            game.default_map().as_bytes()
        } else {
            map
        };
        let version = match game {
            Idtech4Game::Doom3 => {
                "DOOM 1.3.1.1304 linux-x86 Jan 16 2007 21:53:29 (fragstat emulator)"
            }
            Idtech4Game::Quake4 => "Quake4  V1.4.2 linux-x86 Jun 15 2007 (fragstat emulator)",
            Idtech4Game::Prey => "PREY (fragstat emulator)",
        };
        let mut info = Rules::new();
        info.push("si_version", version);
        info.push("fs_game_base", "");
        info.push(
            "fs_game",
            if game == Idtech4Game::Quake4 {
                "q4mp"
            } else {
                ""
            },
        );
        info.push("net_serverDedicated", "1");
        info.push("si_maxPlayers", max_players.to_string());
        info.push("si_spectators", "1");
        info.push("si_usepass", "0");
        info.push("si_warmup", "0");
        info.push("si_timeLimit", "10");
        info.push("si_fragLimit", "20");
        info.push("si_map", map);
        info.push("si_gameType", game.default_gametype());
        info.push("si_name", name);
        info.push("si_pure", "1");
        info.push("gamename", game.gamename());
        let gap = usize::from(players < usize::from(END_OF_PLAYERS));
        let players = (0..players)
            .map(|i| {
                let n = u32::try_from(i).unwrap_or(0);
                let slot = i + usize::from(i >= 1) * gap;
                InfoPlayer {
                    slot: u8::try_from(slot).unwrap_or(0),
                    ping: i16::try_from(20 + 7 * n).unwrap_or(i16::MAX),
                    rate: if i % 2 == 0 { 25600 } else { 16000 },
                    name: format!("^{}Player^7{}", n % 7 + 1, n + 1).into_bytes(),
                    clan: (game == Idtech4Game::Quake4).then(|| {
                        if i % 3 == 0 {
                            Vec::new()
                        } else {
                            b"^4fs^7".to_vec()
                        }
                    }),
                }
            })
            .collect();
        ServerConfig {
            game,
            protocol: game.protocol(),
            info,
            players,
            os_mask: 7,
            heartbeats: Heartbeats::default(),
        }
    }

    /// Sets a server-info value, replacing the key's first occurrence (or appending it).
    pub fn set(&mut self, key: &str, value: impl AsRef<[u8]>) {
        self.info.set_ci(key, value);
    }

    /// The state every reply carries.
    pub fn state(&self) -> ServerState {
        let layout = self.game.layout(self.protocol);
        ServerState {
            protocol: self.protocol,
            dict: Dict {
                pairs: self.info.clone(),
                deleted: Vec::new(),
            },
            body: match layout {
                Some(layout) => Body::Players {
                    layout,
                    players: self.players.clone(),
                    os_mask: self.os_mask,
                    trailing: Vec::new(),
                },
                None => Body::Undecoded { bytes: Vec::new() },
            },
        }
    }
}

/// A game server answering `getInfo` (case-insensitively, as the engine does), and
/// heartbeating a master when configured to.
#[derive(Debug, Clone)]
pub struct EmulatedServer {
    config: ServerConfig,
    /// The encoded reply after the challenge: only the challenge changes per request.
    tail: Vec<u8>,
}

const INFO_HEAD: &[u8] = b"\xff\xffinfoResponse\0";

impl EmulatedServer {
    /// A server reporting `config`; fails when the configuration cannot be encoded.
    pub fn new(config: ServerConfig) -> Result<Self, EncodeError> {
        if config.game.layout(config.protocol).is_none() {
            return Err(EncodeError::Invalid(
                "the emulated protocol has no known player layout for this game",
            ));
        }
        let full = Packet::InfoResponse(InfoResponse {
            challenge: 0,
            state: config.state(),
        })
        .to_bytes()?;
        let tail = full.get(INFO_HEAD.len() + 4..).unwrap_or_default().to_vec();
        Ok(EmulatedServer { config, tail })
    }

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The reply to `challenge`, byte for byte what encoding the `InfoResponse` gives.
    pub fn reply(&self, challenge: i32) -> Vec<u8> {
        let mut out = Vec::with_capacity(INFO_HEAD.len() + 4 + self.tail.len());
        out.extend_from_slice(INFO_HEAD);
        out.extend_from_slice(&challenge.to_le_bytes());
        out.extend_from_slice(&self.tail);
        out
    }

    /// Answers one datagram; `None` for anything a server ignores.
    pub fn respond(&self, datagram: &[u8]) -> Option<Vec<u8>> {
        match decode_as(self.config.game, datagram).ok()? {
            // A challenge shorter than 4 bytes reads as −1 (idBitMsg past the end).
            Packet::GetInfo(GetInfo { challenge, .. }) => Some(self.reply(challenge.unwrap_or(-1))),
            _ => None,
        }
    }

    fn heartbeat(&self) -> Option<Vec<u8>> {
        // Doom 3 sends the bare command; Quake 4 appends its state (`WriteInfo`).
        let state = (self.config.game == Idtech4Game::Quake4).then(|| self.config.state());
        Packet::Heartbeat(Heartbeat { state }).to_bytes().ok()
    }
}

impl Service for EmulatedServer {
    fn start(&mut self, now: Instant, out: &mut Outbox) {
        if let Some(master) = self.config.heartbeats.due(now) {
            out.extend(self.heartbeat().map(|h| (master, h)));
        }
    }

    fn handle(&mut self, _now: Instant, from: SocketAddr, datagram: &[u8], out: &mut Outbox) {
        if let Some(reply) = self.respond(datagram) {
            out.push((from, reply));
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.config.heartbeats.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Instant, out: &mut Outbox) {
        self.start(now, out);
    }
}

/// How long a heartbeat's challenge stays valid.
pub const CHALLENGE_TTL: Duration = Duration::from_secs(5);

/// At most this many challenges pending: spoofed heartbeats cannot grow the master's memory.
pub const MAX_PENDING: usize = 4096;

/// A master listing configured servers, and servers that heartbeat and then answer its
/// `getInfo` challenge with a matching `infoResponse`.
///
/// A `getServers` for protocol 0 lists every server; any other protocol lists the servers of
/// exactly that protocol (bit 31, qstat's Quake 4 flag, ignored), as a client only joins its
/// own. The filter byte and Quake 4's player and clan filters are decoded but not applied
/// (the master does not follow servers' players).
#[derive(Debug, Clone)]
pub struct EmulatedMaster {
    game: Idtech4Game,
    servers: Vec<(SocketAddrV4, Protocol)>,
    pending: HashMap<SocketAddr, (i32, Instant)>,
    counter: u32,
}

impl EmulatedMaster {
    /// A `game` master listing `servers` with their protocols.
    pub fn new(game: Idtech4Game, servers: Vec<(SocketAddrV4, Protocol)>) -> Self {
        EmulatedMaster {
            game,
            servers,
            pending: HashMap::new(),
            counter: 0,
        }
    }

    /// The servers listed now.
    pub fn servers(&self) -> &[(SocketAddrV4, Protocol)] {
        &self.servers
    }

    /// Challenges awaiting an answer.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Handles one datagram from `from` at `now`.
    pub fn respond(&mut self, now: Instant, from: SocketAddr, datagram: &[u8], out: &mut Outbox) {
        self.pending.retain(|_, (_, until)| *until > now);
        match decode_as(self.game, datagram) {
            Ok(Packet::GetServers(req)) => {
                let want = req.protocol_version();
                let list: Vec<SocketAddrV4> = self
                    .servers
                    .iter()
                    .filter(|(_, p)| want == 0 || p.0 == want)
                    .map(|(a, _)| *a)
                    .collect();
                out.extend(encode_server_list(&list).into_iter().map(|d| (from, d)));
            }
            Ok(Packet::Heartbeat(_)) if from.is_ipv4() => {
                if self.pending.len() >= MAX_PENDING && !self.pending.contains_key(&from) {
                    return;
                }
                self.counter = self.counter.wrapping_add(1);
                let mixed = self.counter.wrapping_mul(0x9e37_79b9) ^ u32::from(from.port());
                let challenge = i32::from_le_bytes(mixed.to_le_bytes());
                self.pending.insert(from, (challenge, now + CHALLENGE_TTL));
                let ask = Packet::GetInfo(GetInfo {
                    challenge: Some(challenge),
                    trailing: Vec::new(),
                });
                out.extend(ask.to_bytes().ok().map(|b| (from, b)));
            }
            Ok(Packet::InfoResponse(r)) => {
                let SocketAddr::V4(addr) = from else { return };
                if self.pending.get(&from).map(|(c, _)| *c) == Some(r.challenge) {
                    self.pending.remove(&from);
                    self.servers.retain(|(a, _)| *a != addr);
                    self.servers.push((addr, r.state.protocol));
                }
            }
            _ => {}
        }
    }
}

impl Service for EmulatedMaster {
    fn handle(&mut self, now: Instant, from: SocketAddr, datagram: &[u8], out: &mut Outbox) {
        self.respond(now, from, datagram, out);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.pending.values().map(|(_, until)| *until).min()
    }

    fn handle_timeout(&mut self, now: Instant, _out: &mut Outbox) {
        self.pending.retain(|_, (_, until)| *until > now);
    }
}

/// Longest name or map an emulated server takes (`MAX_STRING_CHARS` is 1024).
const MAX_TEXT: usize = 256;

fn check_text(field: &str, value: &[u8]) -> Result<(), EmuError> {
    EmuError::check_text(field, value, b"\0", MAX_TEXT, "an idTech 4 string")
}

impl Emulate for Idtech4Game {
    fn emulated_server(&self, config: &EmuServer) -> Result<Box<dyn Service>, EmuError> {
        check_text("the server name", &config.name)?;
        check_text("the map name", &config.map)?;
        config.check_slots(
            u32::from(END_OF_PLAYERS),
            true,
            "an idTech 4 server (MAX_ASYNC_CLIENTS)",
        )?;
        config.check_no_private_slots(self.title())?;
        let mut c = ServerConfig::sample(
            *self,
            &config.name,
            &config.map,
            config.players,
            config.max_players,
        );
        c.set("si_usepass", if config.password { "1" } else { "0" });
        if let Some(gt) = &config.gametype {
            check_text("the game type", gt.as_bytes())?;
            c.set("si_gameType", gt);
        }
        // Vary pings between servers, deterministically.
        let shift = i16::try_from(config.seed % 11).unwrap_or(0);
        for p in &mut c.players {
            p.ping = p.ping.saturating_add(shift);
        }
        c.heartbeats = config.heartbeats();
        EmulatedServer::new(c)
            .map(|s| {
                config.guarded(
                    fragstat_core::registry::FamilyGame::meta(*self).engine,
                    Box::new(s),
                )
            })
            .map_err(EmuError::from)
    }

    fn emulated_master(&self, config: &EmuMaster) -> Result<Box<dyn Service>, EmuError> {
        let mut servers = Vec::with_capacity(config.servers.len());
        for a in &config.servers {
            match a {
                SocketAddr::V4(v4) => servers.push((*v4, self.protocol())),
                SocketAddr::V6(_) => {
                    return Err(EmuError::Config(format!(
                        "{a}: an idTech 4 master list carries IPv4 addresses only"
                    )))
                }
            }
        }
        Ok(Box::new(EmulatedMaster::new(*self, servers)))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn refuses_what_the_protocol_cannot_carry() {
        let g = Idtech4Game::Doom3;
        let err = g
            .emulated_server(&EmuServer::new("x", "a\0b", 0))
            .err()
            .unwrap();
        assert!(err.to_string().contains("map name"), "{err}");
        let err = g
            .emulated_server(&EmuServer::new("x", "", 33))
            .err()
            .unwrap();
        assert!(err.to_string().contains("at most 32"), "{err}");
        assert!(g.emulated_server(&EmuServer::new("x", "", 32)).is_ok());
        let err = g
            .emulated_master(&EmuMaster::new(vec!["[::1]:1".parse().unwrap()]))
            .err()
            .unwrap();
        assert!(err.to_string().contains("IPv4"), "{err}");
    }

    use super::*;
    use fragstat_core::service::HEARTBEAT_INTERVAL;

    #[test]
    fn spliced_reply_equals_the_encoded_one() {
        for game in Idtech4Game::ALL {
            let s = EmulatedServer::new(ServerConfig::sample(game, b"^1x", b"", 5, 8)).unwrap();
            let built = Packet::InfoResponse(InfoResponse {
                challenge: -7,
                state: s.config().state(),
            })
            .to_bytes()
            .unwrap();
            assert_eq!(s.reply(-7), built, "{game}");
            let r = s.respond(b"\xff\xffgetinfo\0\x01\x02").unwrap();
            assert_eq!(
                &r[INFO_HEAD.len()..INFO_HEAD.len() + 4],
                b"\xff\xff\xff\xff"
            );
        }
    }

    #[test]
    fn master_registers_after_challenge_and_filters_protocols() {
        let game = Idtech4Game::Quake4;
        let other: SocketAddrV4 = "10.0.0.9:28004".parse().unwrap();
        let mut m = EmulatedMaster::new(game, vec![(other, Protocol::new(2, 64))]);
        let server: SocketAddr = "127.0.0.1:28004".parse().unwrap();
        let mut emu = EmulatedServer::new(ServerConfig::sample(game, b"x", b"", 1, 8)).unwrap();
        emu.config.heartbeats = Heartbeats::new(Some("127.0.0.1:27650".parse().unwrap()));
        let now = Instant::now();
        let mut out = Outbox::new();
        emu.start(now, &mut out);
        let hb = out.pop().unwrap().1;
        m.respond(now, server, &hb, &mut out);
        let ask = out.pop().unwrap();
        assert_eq!(ask.0, server);
        // A reply with another challenge does not register.
        m.respond(now, server, &emu.reply(12345), &mut out);
        assert_eq!(m.servers().len(), 1);
        let reply = emu.respond(&ask.1).unwrap();
        m.respond(now, server, &reply, &mut out);
        assert_eq!(m.servers().len(), 2);
        assert_eq!(m.pending(), 0);
        let mut req = crate::master::GetServers::new(game, 0x8002_0055);
        let ask = Packet::GetServers(req.clone()).to_bytes().unwrap();
        m.respond(now, "127.0.0.1:5".parse().unwrap(), &ask, &mut out);
        let Packet::Servers(l) = decode_as(game, &out.pop().unwrap().1).unwrap() else {
            panic!()
        };
        assert_eq!(l.servers, vec!["127.0.0.1:28004".parse().unwrap()]);
        req.protocol = 0;
        let ask = Packet::GetServers(req).to_bytes().unwrap();
        m.respond(now, "127.0.0.1:5".parse().unwrap(), &ask, &mut out);
        let Packet::Servers(l) = decode_as(game, &out.pop().unwrap().1).unwrap() else {
            panic!()
        };
        assert_eq!(l.servers.len(), 2);
        assert_eq!(emu.poll_timeout(), Some(now + HEARTBEAT_INTERVAL));
    }

    #[test]
    fn spoofed_heartbeats_are_bounded_and_expire() {
        let mut m = EmulatedMaster::new(Idtech4Game::Doom3, Vec::new());
        let now = Instant::now();
        let mut out = Outbox::new();
        for port in 1..=(MAX_PENDING as u16 + 50) {
            m.respond(
                now,
                SocketAddr::from(([10, 0, 0, 1], port)),
                b"\xff\xffheartbeat\0",
                &mut out,
            );
        }
        assert_eq!(m.pending(), MAX_PENDING);
        let due = m.poll_timeout().unwrap();
        m.handle_timeout(due, &mut out);
        assert_eq!((m.pending(), m.poll_timeout()), (0, None));
    }
}
