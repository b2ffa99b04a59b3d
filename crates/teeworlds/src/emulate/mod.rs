//! Sans-IO emulated servers and masters: a vanilla Teeworlds 0.6 server, a Teeworlds 0.7
//! server (token handshake), a DDNet server (vanilla, extended and legacy 64 info, and
//! 0.7 "sixup"; DDNet 16.4's version string, DDNet 20's limits), and the 0.6 and 0.7 UDP
//! masters.
//!
//! They answer as the engines do (ddnet `server.cpp` `CacheServerInfo`,
//! `CacheServerInfoSixup`, `SendServerInfo`; teeworlds `server.cpp` `GenerateServerInfo`,
//! `network_token.cpp`; `mastersrv.cpp`): DDNet splits an extended reply when a datagram
//! reaches `NET_MAX_CONNLESS_PAYLOAD − 18` bytes, sends 24 clients per `dtsf`, caps the
//! vanilla reply at 16 clients with the real count in the name, serves up to 128 clients,
//! cuts its 0.7 reply to the clients that fit one datagram with the real count in the name
//! ([`sixup`]), and limits its info replies ([`InfoLimits`]: above 50 a second without
//! clients, above 500 none); 0.7 servers answer nothing without the handshake and a token
//! request under 512 bytes of data.

use crate::Encode;
use std::net::SocketAddr;
use std::time::Instant;

use fragstat_core::service::{Outbox, Service};

use crate::http;
use crate::seven::{self, Body};
use crate::six::{self, Client, Info, More};

mod limit;
mod registry;
pub mod sixup;

pub use limit::{Answer, InfoLimits};

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
    /// Limits on info replies ([`InfoLimits::DDNET`] for DDNet, else none).
    pub info_limits: InfoLimits,
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
            info_limits: match flavor {
                Flavor::Ddnet => InfoLimits::DDNET,
                _ => InfoLimits::OFF,
            },
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
use crate::partial::VANILLA_MAX_CLIENTS;

/// An emulated server. [`EmulatedServer::respond`] answers every request in full; as a
/// [`Service`] it keeps its [`InfoLimits`] ([`EmulatedServer::respond_at`]).
#[derive(Debug, Clone)]
pub struct EmulatedServer {
    config: ServerConfig,
    secret: u64,
    window: limit::Window,
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
            window: limit::Window::default(),
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
        self.vanilla_reply(token, Answer::Full)
    }

    /// The `inf3`; without clients unless `answer` is [`Answer::Full`] (ddnet server.cpp at
    /// 28baa427, lines 2348-2363: the name with ` [N/M]` when over 16 slots, at most 64
    /// bytes; 2383-2400: the counts capped; 2431-2435: no clients over the rate limit).
    fn vanilla_reply(&self, token: i32, answer: Answer) -> Info {
        let c = &self.config;
        let mut clients = c.clients.len();
        let mut players = c.num_players();
        let mut max_clients = Self::int_u32(c.max_clients);
        let mut max_players = Self::int_u32(c.max_players);
        let mut name = c.name.clone();
        if c.flavor == Flavor::Ddnet {
            if c.max_clients as usize > VANILLA_MAX_CLIENTS {
                let slots = (c.max_clients as usize).max(clients);
                name = sixup::with_count(&c.name, clients, slots, 64);
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
        let listed = if answer == Answer::Full {
            VANILLA_MAX_CLIENTS
        } else {
            0
        };
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
                .take(listed)
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
        self.extended_reply(token, Answer::Full)
    }

    /// The extended reply; the `iext` alone (counts, no client) unless `answer` is
    /// [`Answer::Full`].
    fn extended_reply(&self, token: i32, answer: Answer) -> Vec<six::Packet> {
        let mut main = self.header_info(token);
        main.map_crc = Some(self.config.map_crc as i32);
        main.map_size = Some(Self::int_u32(self.config.map_size));
        main.reserved = Some(Vec::new());
        if answer != Answer::Full {
            return vec![six::Packet::InfoExtended(main)];
        }
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

    /// DDNet's legacy 64 reply for `token`: 24 clients per `dtsf` (all of them: DDNet 20
    /// sends 128 this way too, server.cpp line 2447).
    pub fn legacy_info(&self, token: i32) -> Vec<Info> {
        self.legacy_reply(token, Answer::Full)
    }

    /// The legacy reply; one `dtsf` at offset 0 without clients unless `answer` is
    /// [`Answer::Full`].
    fn legacy_reply(&self, token: i32, answer: Answer) -> Vec<Info> {
        let chunks: Vec<&[EmuClient]> = if self.config.clients.is_empty() || answer != Answer::Full
        {
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
            country: None,
        }
    }

    /// Answers one datagram from `from`, every info request in full (no [`InfoLimits`]).
    pub fn respond(&self, from: SocketAddr, datagram: &[u8]) -> Vec<Vec<u8>> {
        self.respond_with(from, datagram, &mut || Answer::Full)
    }

    /// Answers one datagram from `from` at `now` within the server's [`InfoLimits`] (what
    /// the server does as a [`Service`]): each info request counts in the one window of
    /// every requester; the 0.7 handshake does not.
    pub fn respond_at(&mut self, now: Instant, from: SocketAddr, datagram: &[u8]) -> Vec<Vec<u8>> {
        let limits = self.config.info_limits;
        let mut window = self.window;
        let out = self.respond_with(from, datagram, &mut || window.answer(limits, now));
        self.window = window;
        out
    }

    /// Answers `datagram`; `answer` is asked once per info request (and only then).
    fn respond_with(
        &self,
        from: SocketAddr,
        datagram: &[u8],
        answer: &mut dyn FnMut() -> Answer,
    ) -> Vec<Vec<u8>> {
        let flavor = self.config.flavor;
        match datagram.first() {
            Some(&seven::CONTROL | &seven::CONNLESS) if flavor != Flavor::Vanilla06 => {
                self.respond7(from, datagram, answer)
            }
            Some(0xFF | b'x') if flavor != Flavor::Teeworlds07 => self.respond6(datagram, answer),
            _ => Vec::new(),
        }
    }

    fn respond6(&self, datagram: &[u8], answer: &mut dyn FnMut() -> Answer) -> Vec<Vec<u8>> {
        let ddnet = self.config.flavor == Flavor::Ddnet;
        let packets = match six::decode(datagram) {
            Ok(six::Packet::GetInfo { token, extra_token }) => match (answer(), extra_token) {
                (Answer::Nothing, _) => Vec::new(),
                (a, Some(extra)) if ddnet => {
                    self.extended_reply(i32::from(token) | i32::from(extra) << 8, a)
                }
                // A vanilla server does not know the extended header and answers the
                // request behind it.
                (a, _) => vec![six::Packet::Info(self.vanilla_reply(i32::from(token), a))],
            },
            Ok(six::Packet::GetInfo64 { token }) if ddnet => match answer() {
                Answer::Nothing => Vec::new(),
                a => self
                    .legacy_reply(i32::from(token), a)
                    .into_iter()
                    .map(six::Packet::Info64)
                    .collect(),
            },
            _ => Vec::new(),
        };
        packets.iter().filter_map(|p| p.to_bytes().ok()).collect()
    }

    fn respond7(
        &self,
        from: SocketAddr,
        datagram: &[u8],
        answer: &mut dyn FnMut() -> Answer,
    ) -> Vec<Vec<u8>> {
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
            }) if token == mine => match answer() {
                Answer::Nothing => return Vec::new(),
                a => seven::Packet::Connless {
                    token: response_token,
                    response_token: mine,
                    body: Body::Info(self.seven_reply(browse, a)),
                },
            },
            _ => return Vec::new(),
        };
        reply.to_bytes().ok().into_iter().collect()
    }
}

impl Service for EmulatedServer {
    fn handle(&mut self, now: Instant, from: SocketAddr, datagram: &[u8], out: &mut Outbox) {
        let replies = self.respond_at(now, from, datagram);
        out.extend(replies.into_iter().map(|d| (from, d)));
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
#[cfg(test)]
mod tests_ddnet20;
