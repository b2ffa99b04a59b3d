//! Sans-IO emulated servers and masters: a vanilla Teeworlds 0.6 server, a Teeworlds 0.7
//! server (token handshake), a DDNet 16 server (vanilla, extended and legacy 64 info, and
//! 0.7 "sixup"), and the 0.6 and 0.7 UDP masters.
//!
//! They answer as the engines do (ddnet `server.cpp` `CacheServerInfo`,
//! `CacheServerInfoSixup`, `SendServerInfo`; teeworlds `server.cpp` `GenerateServerInfo`,
//! `network_token.cpp`; `mastersrv.cpp`): DDNet splits an extended reply when a datagram
//! reaches `NET_MAX_CONNLESS_PAYLOAD − 18` bytes, sends 24 clients per `dtsf`, caps the
//! vanilla reply at 16 clients with the real count in the name; 0.7 servers answer nothing
//! without the handshake and a token request under 512 bytes of data.

use fragstat_core::registry::{EmuError, EmuMaster, EmuServer, Emulate, FamilyGame, HttpBody};

use crate::game::TeeworldsGame;
use crate::Encode;
use std::net::SocketAddr;
use std::time::Instant;

use fragstat_core::service::{Outbox, Service};

use crate::http;
use crate::seven::{self, Body};
use crate::six::{self, Client, Info, More};

/// Which engine an emulated server is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Flavor {
    /// Teeworlds 0.6: `inf3` only, at most 16 clients.
    Vanilla06,
    /// Teeworlds 0.7: the token handshake, then the varint `inf3`.
    Teeworlds07,
    /// DDNet 16: vanilla `inf3`, extended `iext`/`iex+`, legacy `dtsf`, and 0.7 (sixup).
    Ddnet,
}

impl Flavor {
    /// Most clients the engine serves (vanilla `MAX_CLIENTS` 16, 0.7 `NET_MAX_CLIENTS` 64,
    /// DDNet `MAX_CLIENTS` 128).
    pub fn max_clients(&self) -> usize {
        match self {
            Flavor::Vanilla06 => 16,
            Flavor::Teeworlds07 => 64,
            Flavor::Ddnet => 128,
        }
    }
}

/// A client the emulated server lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmuClient {
    /// Name (UTF-8, at most 15 bytes in the engines).
    pub name: Vec<u8>,
    /// Clan.
    pub clan: Vec<u8>,
    /// Country.
    pub country: i32,
    /// Score.
    pub score: i32,
    /// Playing (not spectating).
    pub player: bool,
    /// A bot (0.7 says so; 0.6 cannot).
    pub bot: bool,
}

/// What an emulated server reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The engine.
    pub flavor: Flavor,
    /// `sv_name`.
    pub name: Vec<u8>,
    /// `sv_hostname` (0.7).
    pub hostname: Vec<u8>,
    /// Map.
    pub map: Vec<u8>,
    /// Map CRC (DDNet extended).
    pub map_crc: u32,
    /// Map size (DDNet extended).
    pub map_size: u32,
    /// Game type.
    pub gametype: Vec<u8>,
    /// Version string (the 0.7 side of DDNet prefixes `0.7↔`).
    pub version: Vec<u8>,
    /// Client slots.
    pub max_clients: u32,
    /// Player slots.
    pub max_players: u32,
    /// Needs a password.
    pub password: bool,
    /// 0.7 skill level.
    pub skill_level: i32,
    /// Clients in slot order.
    pub clients: Vec<EmuClient>,
}

const COUNTRIES: [i32; 6] = [-1, 276, 840, 250, 643, 36];

impl ServerConfig {
    /// A server of `flavor` named `name` with `clients` generated clients (every fourth a
    /// spectator; on 0.7 every second one a bot).
    pub fn sample(flavor: Flavor, name: &[u8], clients: usize) -> Self {
        let (map, gametype, version): (&[u8], &[u8], &[u8]) = match flavor {
            Flavor::Vanilla06 => (b"dm1", b"DM", b"0.6.4"),
            Flavor::Teeworlds07 => (b"dm1", b"DM", b"0.7.5"),
            Flavor::Ddnet => (b"Tutorial", b"DDraceNetwork", b"0.6.4, 16.4"),
        };
        let mut c = ServerConfig {
            flavor,
            name: name.to_vec(),
            hostname: Vec::new(),
            map: map.to_vec(),
            // The stock `Tutorial.map` of the real DDNet 16.4 (Debian ddnet-data 16.4-1.1,
            // `/usr/share/games/ddnet/data/maps/Tutorial.map`): its CRC-32, which DDNet
            // reports as `-1924373370`, and its size in bytes.
            map_crc: 0x8d4c_6486,
            map_size: 1_082_711,
            gametype: gametype.to_vec(),
            version: version.to_vec(),
            max_clients: u32::try_from(clients.max(16)).unwrap_or(u32::MAX),
            max_players: u32::try_from(clients.max(16)).unwrap_or(u32::MAX),
            password: false,
            skill_level: 1,
            clients: Vec::new(),
        };
        c.set_clients(clients, 0);
        c
    }

    /// Regenerates the clients (see [`ServerConfig::sample`]), varied by `seed`.
    pub fn set_clients(&mut self, clients: usize, seed: u64) {
        let shift = i32::try_from(seed % 7).unwrap_or(0);
        self.clients = (0..clients)
            .map(|i| {
                let n = i32::try_from(i).unwrap_or(i32::MAX);
                EmuClient {
                    name: if i % 5 == 4 {
                        format!("Tëe ☃{}", n + 1).into_bytes()
                    } else {
                        format!("Player {}", n + 1).into_bytes()
                    },
                    clan: if i % 3 == 0 {
                        b"fs".to_vec()
                    } else {
                        Vec::new()
                    },
                    country: COUNTRIES.get(i % COUNTRIES.len()).copied().unwrap_or(-1),
                    score: if self.flavor == Flavor::Ddnet && i % 2 == 1 {
                        -9999
                    } else {
                        20 - n + shift
                    },
                    player: i % 4 != 3,
                    bot: self.flavor == Flavor::Teeworlds07 && i % 2 == 1,
                }
            })
            .collect();
    }

    fn num_players(&self) -> usize {
        self.clients.iter().filter(|c| c.player).count()
    }

    fn client06(c: &EmuClient, extended: bool) -> Client {
        Client {
            name: c.name.clone(),
            clan: c.clan.clone(),
            country: c.country,
            score: c.score,
            is_player: i32::from(c.player),
            reserved: extended.then(Vec::new),
        }
    }

    fn int(n: impl TryInto<i32>) -> i32 {
        n.try_into().unwrap_or(i32::MAX)
    }
}

/// Largest payload of a 0.6 connectionless datagram (`NET_MAX_CONNLESS_PAYLOAD`).
const MAX_CONNLESS_PAYLOAD: usize = 1394;

/// DDNet: at most 16 clients in the vanilla reply (`VANILLA_MAX_CLIENTS`).
const VANILLA_MAX_CLIENTS: usize = 16;

/// An emulated server.
#[derive(Debug, Clone)]
pub struct EmulatedServer {
    config: ServerConfig,
    secret: u64,
}

/// A 0.7 token for `addr` derived from a secret (stateless, like teeworlds'
/// `CNetTokenManager::GenerateToken`), never `NET_TOKEN_NONE`.
fn token_for(secret: u64, addr: &SocketAddr) -> u32 {
    // FNV-1a over the secret and the address.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |b: u8| {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    };
    secret.to_be_bytes().into_iter().for_each(&mut feed);
    addr.to_string().bytes().for_each(&mut feed);
    let t = (h ^ (h >> 32)) as u32;
    if t == seven::TOKEN_NONE {
        0
    } else {
        t
    }
}

impl EmulatedServer {
    /// A server reporting `config`.
    pub fn new(config: ServerConfig) -> Self {
        EmulatedServer {
            config,
            secret: fastrand::u64(..),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The token this server gives `addr` in the 0.7 handshake.
    pub fn token_for(&self, addr: &SocketAddr) -> u32 {
        token_for(self.secret, addr)
    }

    /// The `inf3` this server sends for `token` (DDNet: the capped vanilla form).
    pub fn vanilla_info(&self, token: i32) -> Info {
        let c = &self.config;
        let mut clients = c.clients.len();
        let mut players = c.num_players();
        let mut max_clients = Self::int_u32(c.max_clients);
        let mut max_players = Self::int_u32(c.max_players);
        let mut name = c.name.clone();
        if c.flavor == Flavor::Ddnet {
            if c.max_clients as usize > VANILLA_MAX_CLIENTS {
                name.extend_from_slice(format!(" [{}/{}]", clients, c.max_clients).as_bytes());
            }
            if clients >= VANILLA_MAX_CLIENTS {
                clients = if clients < c.max_clients as usize {
                    VANILLA_MAX_CLIENTS - 1
                } else {
                    VANILLA_MAX_CLIENTS
                };
            }
            players = players.min(clients);
            max_clients = max_clients.min(16);
            max_players = max_players.min(16);
        }
        Info {
            token,
            version: c.version.clone(),
            name,
            map: c.map.clone(),
            gametype: c.gametype.clone(),
            flags: i32::from(c.password),
            num_players: ServerConfig::int(players),
            max_players,
            num_clients: ServerConfig::int(clients),
            max_clients,
            clients: c
                .clients
                .iter()
                .take(VANILLA_MAX_CLIENTS)
                .map(|cl| ServerConfig::client06(cl, false))
                .collect(),
            ..Info::default()
        }
    }

    fn int_u32(v: u32) -> i32 {
        i32::try_from(v).unwrap_or(i32::MAX)
    }

    fn header_info(&self, token: i32) -> Info {
        let c = &self.config;
        Info {
            token,
            version: c.version.clone(),
            name: c.name.clone(),
            map: c.map.clone(),
            gametype: c.gametype.clone(),
            flags: i32::from(c.password),
            num_players: ServerConfig::int(c.num_players()),
            max_players: Self::int_u32(c.max_players),
            num_clients: ServerConfig::int(c.clients.len()),
            max_clients: Self::int_u32(c.max_clients),
            ..Info::default()
        }
    }

    /// DDNet's extended reply for `token`: an `iext` and as many `iex+` as the clients need.
    pub fn extended_info(&self, token: i32) -> Vec<six::Packet> {
        let mut main = self.header_info(token);
        main.map_crc = Some(self.config.map_crc as i32);
        main.map_size = Some(Self::int_u32(self.config.map_size));
        main.reserved = Some(Vec::new());
        // The cache holds everything after the type and the token; a chunk is closed when it
        // reaches the limit, the client that overflowed it starting the next one.
        let limit = MAX_CONNLESS_PAYLOAD - 18;
        let mut prefix = Vec::new();
        let _ = six::Packet::InfoExtended(main.clone()).encode(&mut prefix);
        let head = 6 + 8 + format!("{token}").len() + 1;
        let mut size = prefix.len().saturating_sub(head);
        let mut packets = vec![six::Packet::InfoExtended(main)];
        for cl in &self.config.clients {
            let client = ServerConfig::client06(cl, true);
            let mut bytes = Vec::new();
            let _ = six::put_clients(&mut bytes, std::slice::from_ref(&client), true);
            if size + bytes.len() >= limit {
                let packet_no = ServerConfig::int(packets.len());
                packets.push(six::Packet::InfoMore(More {
                    token,
                    packet_no,
                    ..More::default()
                }));
                size = format!("{packet_no}").len() + 1 + 1;
            }
            size += bytes.len();
            match packets.last_mut() {
                Some(six::Packet::InfoExtended(i)) => i.clients.push(client),
                Some(six::Packet::InfoMore(m)) => m.clients.push(client),
                _ => {}
            }
        }
        packets
    }

    /// DDNet's legacy 64 reply for `token`: 24 clients per `dtsf`.
    pub fn legacy_info(&self, token: i32) -> Vec<Info> {
        let chunks: Vec<&[EmuClient]> = if self.config.clients.is_empty() {
            vec![&[]]
        } else {
            self.config.clients.chunks(24).collect()
        };
        chunks
            .into_iter()
            .enumerate()
            .map(|(i, chunk)| {
                let mut info = self.header_info(token);
                info.offset = Some(ServerConfig::int(i * 24));
                info.clients = chunk
                    .iter()
                    .map(|c| ServerConfig::client06(c, false))
                    .collect();
                info
            })
            .collect()
    }

    /// The 0.7 `inf3` for `browse_token` (DDNet sixup: `0.7↔` version, time scores).
    pub fn seven_info(&self, browse_token: i32) -> seven::Info {
        let c = &self.config;
        let ddnet = c.flavor == Flavor::Ddnet;
        let mut version = c.version.clone();
        let mut flags = i32::from(c.password) * seven::server_flags::PASSWORD;
        if ddnet {
            version = ["0.7↔".as_bytes(), &c.version].concat();
            flags |= seven::server_flags::TIMESCORE;
        }
        seven::Info {
            token: browse_token,
            version,
            name: c.name.clone(),
            hostname: c.hostname.clone(),
            map: c.map.clone(),
            gametype: c.gametype.clone(),
            flags,
            skill_level: c.skill_level,
            num_players: ServerConfig::int(c.num_players()),
            max_players: Self::int_u32(c.max_players),
            num_clients: ServerConfig::int(c.clients.len()),
            max_clients: Self::int_u32(c.max_clients),
            clients: c
                .clients
                .iter()
                .map(|cl| seven::Client {
                    name: cl.name.clone(),
                    clan: cl.clan.clone(),
                    country: cl.country,
                    score: cl.score,
                    flags: if cl.player {
                        0
                    } else {
                        seven::client_flags::SPECTATOR
                    } | if cl.bot { seven::client_flags::BOT } else { 0 },
                })
                .collect(),
            truncated: false,
        }
    }

    /// What DDNet's HTTP master would list for this server.
    pub fn http_info(&self) -> http::Info {
        let c = &self.config;
        http::Info {
            max_clients: i64::from(c.max_clients),
            max_players: i64::from(c.max_players),
            passworded: c.password,
            game_type: String::from_utf8_lossy(&c.gametype).into_owned(),
            name: String::from_utf8_lossy(&c.name).into_owned(),
            map: http::Map {
                name: String::from_utf8_lossy(&c.map).into_owned(),
                sha256: None,
                size: Some(u64::from(c.map_size)),
            },
            version: String::from_utf8_lossy(&c.version).into_owned(),
            clients: c
                .clients
                .iter()
                .map(|cl| http::Client {
                    name: String::from_utf8_lossy(&cl.name).into_owned(),
                    clan: String::from_utf8_lossy(&cl.clan).into_owned(),
                    country: i64::from(cl.country),
                    score: i64::from(cl.score),
                    is_player: cl.player,
                    afk: None,
                })
                .collect(),
            client_score_kind: (c.flavor == Flavor::Ddnet).then(|| "time".to_string()),
            requires_login: None,
        }
    }

    /// Answers one datagram from `from`.
    pub fn respond(&self, from: SocketAddr, datagram: &[u8]) -> Vec<Vec<u8>> {
        let flavor = self.config.flavor;
        match datagram.first() {
            Some(&seven::CONTROL | &seven::CONNLESS) if flavor != Flavor::Vanilla06 => {
                self.respond7(from, datagram)
            }
            Some(0xFF | b'x') if flavor != Flavor::Teeworlds07 => self.respond6(datagram),
            _ => Vec::new(),
        }
    }

    fn respond6(&self, datagram: &[u8]) -> Vec<Vec<u8>> {
        let packets = match six::decode(datagram) {
            Ok(six::Packet::GetInfo { token, extra_token }) => {
                match (self.config.flavor, extra_token) {
                    (Flavor::Ddnet, Some(extra)) => {
                        self.extended_info(i32::from(token) | i32::from(extra) << 8)
                    }
                    // A vanilla server does not know the extended header and answers the
                    // request behind it.
                    _ => vec![six::Packet::Info(self.vanilla_info(i32::from(token)))],
                }
            }
            Ok(six::Packet::GetInfo64 { token }) if self.config.flavor == Flavor::Ddnet => self
                .legacy_info(i32::from(token))
                .into_iter()
                .map(six::Packet::Info64)
                .collect(),
            _ => Vec::new(),
        };
        packets.iter().filter_map(|p| p.to_bytes().ok()).collect()
    }

    fn respond7(&self, from: SocketAddr, datagram: &[u8]) -> Vec<Vec<u8>> {
        let mine = self.token_for(&from);
        let reply = match seven::decode(datagram) {
            // network_token.cpp: under 512 bytes of data, no answer (anti-amplification).
            Ok(seven::Packet::TokenRequest {
                token,
                padded: true,
            }) => seven::Packet::Token {
                to: token,
                token: mine,
            },
            Ok(seven::Packet::Connless {
                token,
                response_token,
                body: Body::GetInfo { token: browse },
            }) if token == mine => seven::Packet::Connless {
                token: response_token,
                response_token: mine,
                body: Body::Info(self.seven_info(browse)),
            },
            _ => return Vec::new(),
        };
        reply.to_bytes().ok().into_iter().collect()
    }
}

impl Service for EmulatedServer {
    fn handle(&mut self, _now: Instant, from: SocketAddr, datagram: &[u8], out: &mut Outbox) {
        out.extend(self.respond(from, datagram).into_iter().map(|d| (from, d)));
    }
}

/// An emulated UDP master listing fixed servers: 0.6 (`req2`, `cou2`, `reqt`) or 0.7 (the
/// same after the token handshake).
#[derive(Debug, Clone)]
pub struct EmulatedMaster {
    servers: Vec<SocketAddr>,
    seven: bool,
    secret: u64,
}

impl EmulatedMaster {
    /// A 0.6 master (`seven == false`) or a 0.7 one listing `servers`.
    pub fn new(servers: Vec<SocketAddr>, seven: bool) -> Self {
        EmulatedMaster {
            servers,
            seven,
            secret: fastrand::u64(..),
        }
    }

    fn count(&self) -> u16 {
        u16::try_from(self.servers.len()).unwrap_or(u16::MAX)
    }

    /// Answers one datagram from `from`.
    pub fn respond(&self, from: SocketAddr, datagram: &[u8]) -> Vec<Vec<u8>> {
        if self.seven {
            return self.respond7(from, datagram);
        }
        let packets = match six::decode(datagram) {
            Ok(six::Packet::GetCount) => vec![six::Packet::Count(self.count())],
            Ok(six::Packet::GetList) => self
                .servers
                .chunks(six::MAX_SERVERS_PER_PACKET)
                .map(|c| six::Packet::List(c.to_vec()))
                .collect(),
            Ok(six::Packet::GetList5) => {
                let v4: Vec<SocketAddr> = self
                    .servers
                    .iter()
                    .copied()
                    .filter(SocketAddr::is_ipv4)
                    .collect();
                v4.chunks(six::MAX_SERVERS_PER_PACKET)
                    .map(|c| six::Packet::List5(c.to_vec()))
                    .collect()
            }
            _ => Vec::new(),
        };
        packets.iter().filter_map(|p| p.to_bytes().ok()).collect()
    }

    fn respond7(&self, from: SocketAddr, datagram: &[u8]) -> Vec<Vec<u8>> {
        let mine = token_for(self.secret, &from);
        let bodies = match seven::decode(datagram) {
            Ok(seven::Packet::TokenRequest {
                token,
                padded: true,
            }) => {
                return seven::Packet::Token {
                    to: token,
                    token: mine,
                }
                .to_bytes()
                .ok()
                .into_iter()
                .collect()
            }
            Ok(seven::Packet::Connless {
                token,
                response_token,
                body,
            }) if token == mine => {
                let bodies = match body {
                    Body::GetCount => vec![Body::Count(self.count())],
                    Body::GetList => self
                        .servers
                        .chunks(six::MAX_SERVERS_PER_PACKET)
                        .map(|c| Body::List(c.to_vec()))
                        .collect(),
                    _ => Vec::new(),
                };
                (response_token, bodies)
            }
            _ => return Vec::new(),
        };
        let (to, bodies) = bodies;
        bodies
            .into_iter()
            .filter_map(|body| {
                seven::Packet::Connless {
                    token: to,
                    response_token: mine,
                    body,
                }
                .to_bytes()
                .ok()
            })
            .collect()
    }
}

impl Service for EmulatedMaster {
    fn handle(&mut self, _now: Instant, from: SocketAddr, datagram: &[u8], out: &mut Outbox) {
        out.extend(self.respond(from, datagram).into_iter().map(|d| (from, d)));
    }
}

#[cfg(test)]
mod tests;
impl TeeworldsGame {
    /// The emulator that plays the game.
    pub(crate) fn flavor(&self) -> Flavor {
        match self {
            TeeworldsGame::Teeworlds => Flavor::Vanilla06,
            TeeworldsGame::Teeworlds07 => Flavor::Teeworlds07,
            TeeworldsGame::Ddnet => Flavor::Ddnet,
        }
    }

    /// The emulator's configuration for `config`, or why the protocol cannot carry it.
    pub(crate) fn server_config(&self, config: &EmuServer) -> Result<ServerConfig, EmuError> {
        let flavor = self.flavor();
        let limit = flavor.max_clients();
        if config.players > limit {
            return Err(EmuError::Config(format!(
                "{} clients: a {} server has at most {limit}",
                config.players,
                self.meta().title
            )));
        }
        if u64::from(config.max_players) < config.players as u64 {
            return Err(EmuError::Config(format!(
                "{} client slots cannot hold {} clients",
                config.max_players, config.players
            )));
        }
        for (field, v, max) in [("server name", &config.name, 63), ("map", &config.map, 31)] {
            if v.contains(&0) || v.len() > max {
                return Err(EmuError::Config(format!(
                    "the {field} must be at most {max} bytes without NUL"
                )));
            }
        }
        if config.heartbeat_to.is_some() {
            return Err(EmuError::Config(
                "Teeworlds emulators do not register with masters".into(),
            ));
        }
        config.check_no_private_slots(&self.meta().title)?;
        let mut c = ServerConfig::sample(flavor, &config.name, 0);
        if !config.map.is_empty() {
            c.map = config.map.clone();
        }
        if let Some(gt) = &config.gametype {
            if gt.contains('\0') || gt.len() > 15 {
                return Err(EmuError::Config(
                    "the game type must be at most 15 bytes".into(),
                ));
            }
            c.gametype = gt.as_bytes().to_vec();
        }
        c.max_clients = config.max_players;
        c.max_players = config.max_players;
        c.password = config.password;
        c.set_clients(config.players, config.seed);
        Ok(c)
    }
}

impl Emulate for TeeworldsGame {
    /// Teeworlds and DDNet draw no colour codes: a `^1` would show as text.
    fn default_name(&self) -> &'static str {
        "fragstat emulated server"
    }

    fn emulated_server(&self, config: &EmuServer) -> Result<Box<dyn Service>, EmuError> {
        let server = EmulatedServer::new(self.server_config(config)?);
        Ok(config.guarded(
            fragstat_core::registry::FamilyGame::meta(*self).engine,
            Box::new(server),
        ))
    }

    fn emulated_master(&self, config: &EmuMaster) -> Result<Box<dyn Service>, EmuError> {
        // DDNet's own master is HTTP ([`Self::emulated_http_list`]); the emulated UDP one is
        // the 0.6 master DDNet used before it (read it as `teeworlds`).
        Ok(Box::new(EmulatedMaster::new(
            config.servers.clone(),
            *self == TeeworldsGame::Teeworlds07,
        )))
    }

    /// DDNet's `servers.json`: each server with the info its emulator answers with.
    fn emulated_http_list(
        &self,
        servers: &[(SocketAddr, EmuServer)],
    ) -> Result<HttpBody, EmuError> {
        if *self != TeeworldsGame::Ddnet {
            return Err(EmuError::Unsupported(format!(
                "{}: the master is a UDP master (serve it without an HTTP list)",
                self.id()
            )));
        }
        let mut list = crate::http::List::default();
        for (addr, config) in servers {
            let c = self.server_config(config)?;
            list.servers.push(crate::http::Server::new(
                vec![format!("tw-0.6+udp://{addr}")],
                Some("eu:de".into()),
                &crate::http::Info::of_emulated(&c),
            ));
        }
        Ok(HttpBody {
            content_type: "application/json",
            body: crate::http::render(&list),
        })
    }
}
