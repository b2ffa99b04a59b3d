//! Sans-IO emulated game server and master server, built on the encoders.
//!
//! They answer like ioq3 does (key order, challenge placement, player lines) so that real
//! clients such as qstat can be pointed at them. No sockets here: feed datagrams to
//! [`EmulatedServer::handle`] / [`EmulatedMaster::handle`] and send what they return.

use crate::Encode;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use fragstat_core::registry::{EmuError, EmuMaster, EmuServer, Emulate, EndMarker};
use fragstat_core::service::{Heartbeats, Outbox, Service};

use crate::game::Quake3Game;
use crate::info::InfoString;
use crate::master::{encode_server_list, EotStyle, MAX_MASTER_PACKET};
use crate::packet::{
    decode, ChallengeResponse, InfoResponse, Packet, StatusPlayer, StatusResponse,
};

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
    /// `g_gametype`.
    pub gametype: i32,
    /// `sv_maxclients`.
    pub max_clients: u32,
    /// `g_needpass`.
    pub needpass: bool,
    /// Players in slot order.
    pub players: Vec<EmuPlayer>,
    /// Further serverinfo cvars, appended to the status infostring.
    pub extra: InfoString,
}

impl ServerConfig {
    /// A server named `hostname` on `map` with `players` generated players (`Player1`…, every
    /// second one a bot), for demos and benchmarks.
    pub fn sample(game: Quake3Game, hostname: &[u8], players: usize) -> Self {
        ServerConfig {
            game,
            hostname: hostname.to_vec(),
            map: b"q3dm17".to_vec(),
            gametype: 0,
            max_clients: u32::try_from(players.max(8)).unwrap_or(u32::MAX),
            needpass: false,
            players: (0..players)
                .map(|i| {
                    let n = i32::try_from(i).unwrap_or(i32::MAX);
                    EmuPlayer {
                        name: format!("^{}Player^7{}", n % 8 + 1, n + 1).into_bytes(),
                        score: 30 - n * 3,
                        ping: if i % 2 == 1 { 0 } else { 20 + n },
                        bot: i % 2 == 1,
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
    challenge_counter: u32,
    /// The encoded replies without a challenge: only the challenge changes per request, so
    /// `handle` splices it in instead of rebuilding (thousands of emulated servers stay cheap).
    info_wire: Option<Vec<u8>>,
    status_wire: Option<Vec<u8>>,
    /// The master it heartbeats, and when next.
    heartbeats: Heartbeats,
}

const STATUS_HEAD: &[u8] = b"\xff\xff\xff\xffstatusResponse\n";

impl EmulatedServer {
    /// A server reporting `config`.
    pub fn new(config: ServerConfig) -> Self {
        let mut s = EmulatedServer {
            config,
            challenge_counter: 0x1234_5678,
            info_wire: None,
            status_wire: None,
            heartbeats: Heartbeats::default(),
        };
        s.info_wire = Packet::InfoResponse(s.info_response(None)).to_bytes().ok();
        s.status_wire = Packet::StatusResponse(s.status_response(None))
            .to_bytes()
            .ok();
        s
    }

    /// The infoResponse with `challenge` spliced in last, byte for byte what
    /// [`EmulatedServer::info_response`] encodes to.
    fn info_reply(&self, challenge: Option<&[u8]>) -> Option<Vec<u8>> {
        let wire = self.info_wire.as_ref()?;
        let mut out = Vec::with_capacity(wire.len() + 80);
        out.extend_from_slice(wire);
        if let Some(c) = challenge.filter(|c| !c.is_empty()) {
            out.extend_from_slice(b"\\challenge\\");
            out.extend_from_slice(c);
        }
        Some(out)
    }

    /// The statusResponse with `challenge` spliced in first.
    fn status_reply(&self, challenge: Option<&[u8]>) -> Option<Vec<u8>> {
        let wire = self.status_wire.as_ref()?;
        let body = wire.strip_prefix(STATUS_HEAD)?;
        let mut out = Vec::with_capacity(wire.len() + 80);
        out.extend_from_slice(STATUS_HEAD);
        if let Some(c) = challenge.filter(|c| !c.is_empty()) {
            out.extend_from_slice(b"\\challenge\\");
            out.extend_from_slice(c);
        }
        out.extend_from_slice(body);
        Some(out)
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

    /// The `infoResponse` ioq3 `SVC_Info` would build (keys inserted in engine order, so
    /// `challenge` ends up last on the wire).
    pub fn info_response(&self, challenge: Option<&[u8]>) -> InfoResponse {
        let c = &self.config;
        let humans = c.players.iter().filter(|p| !p.bot).count();
        let mut info = InfoString::new();
        info.set_like_engine("challenge", challenge.unwrap_or_default());
        info.set_like_engine(
            "gamename",
            c.game.master_gamename().unwrap_or("Quake3Arena"),
        );
        info.set_like_engine("protocol", c.game.protocol().to_string());
        info.set_like_engine("hostname", c.hostname.clone());
        info.set_like_engine("mapname", c.map.clone());
        info.set_like_engine("clients", c.players.len().to_string());
        info.set_like_engine("g_humanplayers", humans.to_string());
        info.set_like_engine("sv_maxclients", c.max_clients.to_string());
        info.set_like_engine("gametype", c.gametype.to_string());
        info.set_like_engine("pure", "1");
        info.set_like_engine("g_needpass", if c.needpass { "1" } else { "0" });
        InfoResponse { info }
    }

    /// The `statusResponse` ioq3 `SVC_Status` would build (`challenge` first).
    pub fn status_response(&self, challenge: Option<&[u8]>) -> StatusResponse {
        let c = &self.config;
        let mut info = InfoString::new();
        for (k, v) in c.extra.pairs().rev() {
            info.set_like_engine(k, v);
        }
        info.set_like_engine("version", "fragstat-emulator 0.1");
        info.set_like_engine("protocol", c.game.protocol().to_string());
        info.set_like_engine(
            "gamename",
            c.game.master_gamename().unwrap_or("Quake3Arena"),
        );
        info.set_like_engine("g_needpass", if c.needpass { "1" } else { "0" });
        info.set_like_engine("g_gametype", c.gametype.to_string());
        info.set_like_engine("sv_maxclients", c.max_clients.to_string());
        info.set_like_engine("mapname", c.map.clone());
        info.set_like_engine("sv_hostname", c.hostname.clone());
        info.set_like_engine("challenge", challenge.unwrap_or_default());
        StatusResponse {
            info,
            players: c
                .players
                .iter()
                .map(|p| StatusPlayer {
                    score: Some(p.score),
                    ping: p.ping,
                    name: p.name.clone(),
                    team: None,
                    team_before_name: false,
                    extra: Vec::new(),
                })
                .collect(),
            skipped: Vec::new(),
            truncated: false,
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
                return self.info_reply(challenge.as_deref())
            }
            Packet::GetStatus { challenge } if fits(&challenge) => {
                return self.status_reply(challenge.as_deref())
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

/// How long a heartbeat's challenge stays valid (dpmaster: 2 s by default; we allow more).
pub const CHALLENGE_TTL: Duration = Duration::from_secs(5);

/// A challenge not answered within this is sent again until it lapses (a server may drop it:
/// DarkPlaces ignores a `getinfo` that comes within its flood window after another query from
/// the same IP address).
pub const CHALLENGE_RESEND: Duration = Duration::from_millis(1500);

/// At most this many challenges pending at once: a flood of spoofed heartbeats cannot grow
/// the master's memory.
pub const MAX_PENDING: usize = 4096;

impl Service for EmulatedServer {
    fn start(&mut self, now: Instant, out: &mut Outbox) {
        if let Some(m) = self.heartbeats.due(now) {
            out.extend(self.heartbeat().map(|hb| (m, hb)));
        }
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
        self.start(now, out);
    }
}

impl Service for EmulatedMaster {
    fn handle(&mut self, now: Instant, from: SocketAddr, datagram: &[u8], out: &mut Outbox) {
        out.extend(self.respond(now, from, datagram));
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.pending
            .values()
            .map(|p| p.resend_at.map_or(p.until, |r| r.min(p.until)))
            .min()
    }

    fn handle_timeout(&mut self, now: Instant, out: &mut Outbox) {
        self.expire(now);
        for (to, p) in &mut self.pending {
            if p.resend_at.is_some_and(|r| r <= now) {
                let next = now + CHALLENGE_RESEND;
                p.resend_at = (next < p.until).then_some(next);
                if let Ok(b) = (Packet::GetInfo {
                    challenge: Some(p.challenge.clone()),
                })
                .to_bytes()
                {
                    out.push((*to, b));
                }
            }
        }
    }
}

/// A challenge sent to a server that heartbeated.
#[derive(Debug, Clone)]
struct Pending {
    challenge: Vec<u8>,
    /// When it lapses.
    until: Instant,
    /// When it is sent again, if still unanswered.
    resend_at: Option<Instant>,
}

/// A master server: lists configured servers, and registers servers that heartbeat and then
/// answer its `getinfo` challenge (as dpmaster does; unanswered challenges are sent again
/// every [`CHALLENGE_RESEND`] until they lapse).
#[derive(Debug, Clone)]
pub struct EmulatedMaster {
    /// `(address, protocol)` of every listed server.
    servers: Vec<(SocketAddr, i32)>,
    /// Challenges sent to servers that heartbeated.
    pending: HashMap<SocketAddr, Pending>,
    style: EotStyle,
    max_packet: usize,
    counter: u64,
}

impl EmulatedMaster {
    /// A master listing `servers` (address and protocol), marking lists with `style`.
    pub fn new(servers: Vec<(SocketAddr, i32)>, style: EotStyle) -> Self {
        EmulatedMaster {
            servers,
            pending: HashMap::new(),
            style,
            max_packet: MAX_MASTER_PACKET,
            counter: 0,
        }
    }

    /// Sets the largest datagram (default 1400 bytes, dpmaster's).
    pub fn with_max_packet(mut self, max_packet: usize) -> Self {
        self.max_packet = max_packet;
        self
    }

    /// The servers listed now.
    pub fn servers(&self) -> &[(SocketAddr, i32)] {
        &self.servers
    }

    /// Challenges awaiting an answer (each lapses [`CHALLENGE_TTL`] after it was sent).
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Drops the challenges that have lapsed by `now`.
    pub fn expire(&mut self, now: Instant) {
        self.pending.retain(|_, p| p.until > now);
    }

    /// Handles one datagram from `from` at `now`; returns the datagrams to send and where.
    pub fn respond(
        &mut self,
        now: Instant,
        from: SocketAddr,
        datagram: &[u8],
    ) -> Vec<(SocketAddr, Vec<u8>)> {
        match decode(datagram) {
            Ok(Packet::GetServers(req)) => {
                let want_v4 = !req.ext || !req.has_option("ipv6") || req.has_option("ipv4");
                let want_v6 = req.ext && (!req.has_option("ipv4") || req.has_option("ipv6"));
                let list: Vec<SocketAddr> = self
                    .servers
                    .iter()
                    .filter(|(a, p)| {
                        *p == req.protocol && if a.is_ipv4() { want_v4 } else { want_v6 }
                    })
                    .map(|(a, _)| *a)
                    .collect();
                encode_server_list(&list, req.ext, self.style, self.max_packet)
                    .into_iter()
                    .map(|p| (from, p))
                    .collect()
            }
            Ok(Packet::Heartbeat(h)) if !h.is_flatline() => {
                self.expire(now);
                if self.pending.len() >= MAX_PENDING && !self.pending.contains_key(&from) {
                    return Vec::new();
                }
                self.counter += 1;
                let challenge = format!("m{:x}{:x}", self.counter, from.port()).into_bytes();
                self.pending.insert(
                    from,
                    Pending {
                        challenge: challenge.clone(),
                        until: now + CHALLENGE_TTL,
                        resend_at: Some(now + CHALLENGE_RESEND),
                    },
                );
                Packet::GetInfo {
                    challenge: Some(challenge),
                }
                .to_bytes()
                .map(|b| vec![(from, b)])
                .unwrap_or_default()
            }
            Ok(Packet::InfoResponse(r)) => {
                let expected = self
                    .pending
                    .get(&from)
                    .filter(|p| p.until > now)
                    .map(|p| p.challenge.as_slice());
                if expected.is_some() && r.info.get("challenge") == expected {
                    self.pending.remove(&from);
                    let protocol = r
                        .info
                        .get_int(&["protocol"])
                        .and_then(|p| i32::try_from(p).ok());
                    let max = r.info.get_int(&["sv_maxclients"]).unwrap_or(0);
                    if let (Some(p), true) = (protocol, max > 0) {
                        self.servers.retain(|(a, _)| *a != from);
                        self.servers.push((from, p));
                    }
                }
                Vec::new()
            }
            _ => Vec::new(),
        }
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
    fn emulated_server(&self, config: &EmuServer) -> Result<Box<dyn Service>, EmuError> {
        check_text("the server name", &config.name)?;
        check_text("the map name", &config.map)?;
        config.check_slots(256, false, "a Quake III status reply")?;
        let mut c = ServerConfig::sample(*self, &config.name, config.players);
        if !config.map.is_empty() {
            c.map = config.map.clone();
        }
        c.max_clients = config.max_players;
        c.needpass = config.password;
        if let Some(gt) = &config.gametype {
            c.gametype = gt.trim().parse().map_err(|_| {
                EmuError(format!(
                    "game type {gt:?}: a Quake III game type is a number"
                ))
            })?;
        }
        Ok(Box::new(
            EmulatedServer::new(c).with_heartbeats(config.heartbeats()),
        ))
    }

    fn emulated_master(&self, config: &EmuMaster) -> Result<Box<dyn Service>, EmuError> {
        let style = match config.end_marker {
            EndMarker::Last => EotStyle::LastPacket,
            EndMarker::Every => EotStyle::EveryPacket,
            EndMarker::Alternative => EotStyle::EofLast,
            _ => EotStyle::None,
        };
        let protocol = self.protocol();
        Ok(Box::new(EmulatedMaster::new(
            config.servers.iter().map(|a| (*a, protocol)).collect(),
            style,
        )))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn refuses_unservable_text() {
        let g = Quake3Game::Quake3;
        let err = g
            .emulated_server(&EmuServer::new("x", "a\\b", 0))
            .err()
            .unwrap();
        assert!(err.0.contains("map name"), "{err}");
        assert!(g.emulated_server(&EmuServer::new("x", "q3dm17", 2)).is_ok());
    }

    use super::*;
    use crate::packet::Heartbeat;

    #[test]
    fn server_answers_like_ioq3() {
        let mut s = EmulatedServer::new(ServerConfig::sample(Quake3Game::OpenArena, b"My ^1OA", 3));
        let reply = s.respond(b"\xff\xff\xff\xffgetinfo abc\n").unwrap();
        let Packet::InfoResponse(r) = decode(&reply).unwrap() else {
            panic!()
        };
        assert_eq!(r.info.pairs().next_back().unwrap().0, b"challenge");
        assert_eq!(r.info.get("clients"), Some(&b"3"[..]));
        assert_eq!(r.info.get("g_humanplayers"), Some(&b"2"[..]));
        let reply = s.respond(b"\xff\xff\xff\xffgetstatus xyz").unwrap();
        let Packet::StatusResponse(st) = decode(&reply).unwrap() else {
            panic!()
        };
        assert_eq!(st.info.pairs().next().unwrap().1, b"xyz");
        assert_eq!(st.players.len(), 3);
        assert!(s.respond(b"\xff\xff\xff\xffrcon x").is_none());
    }

    #[test]
    fn spliced_replies_equal_the_built_ones() {
        let s = EmulatedServer::new(ServerConfig::sample(Quake3Game::EnemyTerritory, b"^1x", 5));
        for c in [None, Some(&b"abc-1"[..])] {
            let built = Packet::InfoResponse(s.info_response(c)).to_bytes().unwrap();
            assert_eq!(s.info_reply(c).unwrap(), built);
            let built = Packet::StatusResponse(s.status_response(c))
                .to_bytes()
                .unwrap();
            assert_eq!(s.status_reply(c).unwrap(), built);
        }
        assert!(s
            .info_reply(None)
            .unwrap()
            .starts_with(b"\xff\xff\xff\xffinfoResponse\n"));
    }
    #[test]
    fn heartbeats_at_start_and_then_every_period() {
        let master: SocketAddr = "127.0.0.1:27950".parse().unwrap();
        let every = Duration::from_secs(2);
        let mut s = EmulatedServer::new(ServerConfig::sample(Quake3Game::Quake3, b"x", 0))
            .with_heartbeats(Heartbeats::new(Some(master)).every(every));
        let t0 = Instant::now();
        let mut out = Outbox::new();
        s.start(t0, &mut out);
        assert_eq!(
            out,
            vec![(master, b"\xff\xff\xff\xffheartbeat QuakeArena-1\n".to_vec())]
        );
        assert_eq!(s.poll_timeout(), Some(t0 + every));
        out.clear();
        s.handle_timeout(t0 + Duration::from_secs(1), &mut out);
        assert!(out.is_empty(), "not due yet");
        s.handle_timeout(t0 + every, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(s.poll_timeout(), Some(t0 + every + every));
        // Without a master: nothing, and no timer.
        let mut quiet = EmulatedServer::new(ServerConfig::sample(Quake3Game::Quake3, b"x", 0));
        out.clear();
        quiet.start(t0, &mut out);
        assert!(out.is_empty());
        assert_eq!(quiet.poll_timeout(), None);
    }

    #[test]
    fn master_registers_after_challenge() {
        let mut m = EmulatedMaster::new(Vec::new(), EotStyle::LastPacket);
        let server: SocketAddr = "127.0.0.1:27960".parse().unwrap();
        let now = Instant::now();
        let out = m.respond(
            now,
            server,
            &Packet::Heartbeat(Heartbeat {
                name: b"QuakeArena-1".to_vec(),
            })
            .to_bytes()
            .unwrap(),
        );
        let Packet::GetInfo { challenge } = decode(&out[0].1).unwrap() else {
            panic!()
        };
        // A wrong challenge does not register.
        let mut emu = EmulatedServer::new(ServerConfig::sample(Quake3Game::Quake3, b"x", 0));
        let wrong = Packet::InfoResponse(emu.info_response(Some(b"nope")))
            .to_bytes()
            .unwrap();
        m.respond(now, server, &wrong);
        assert!(m.servers().is_empty());
        let reply = emu
            .respond(&Packet::GetInfo { challenge }.to_bytes().unwrap())
            .unwrap();
        // Too late: the challenge lapsed.
        m.respond(now + CHALLENGE_TTL, server, &reply);
        assert!(m.servers().is_empty());
        assert_eq!(m.poll_timeout(), Some(now + CHALLENGE_RESEND));
        m.respond(now, server, &reply);
        assert_eq!(m.servers(), &[(server, 68)]);
        assert_eq!(m.pending(), 0);
        let out = m.respond(
            now,
            "127.0.0.1:5000".parse().unwrap(),
            b"\xff\xff\xff\xffgetservers 68 empty full",
        );
        let Packet::ServersResponse(l) = decode(&out[0].1).unwrap() else {
            panic!()
        };
        assert_eq!(l.servers, vec![server]);
    }
}

#[cfg(test)]
mod expiry {
    use super::*;
    use crate::packet::Heartbeat;

    #[test]
    fn spoofed_heartbeats_expire_and_are_bounded() {
        let mut m = EmulatedMaster::new(Vec::new(), EotStyle::LastPacket);
        let hb = Packet::Heartbeat(Heartbeat {
            name: b"QuakeArena-1".to_vec(),
        })
        .to_bytes()
        .unwrap();
        let now = Instant::now();
        for port in 1..=(MAX_PENDING as u16 + 100) {
            let mut out = Outbox::new();
            m.handle(now, SocketAddr::from(([10, 0, 0, 1], port)), &hb, &mut out);
        }
        assert_eq!(m.pending(), MAX_PENDING, "bounded");
        // Each unanswered challenge is sent again a bounded number of times, then lapses.
        let mut resent = 0;
        while let Some(due) = m.poll_timeout() {
            let mut out = Outbox::new();
            m.handle_timeout(due, &mut out);
            resent += out.len();
        }
        assert_eq!(m.pending(), 0, "expired");
        assert_eq!(resent, 3 * MAX_PENDING, "at 1.5, 3 and 4.5 s of a 5 s life");
    }

    #[test]
    fn unanswered_challenges_are_sent_again_until_they_lapse() {
        let mut m = EmulatedMaster::new(Vec::new(), EotStyle::LastPacket);
        let server: SocketAddr = "127.0.0.1:26000".parse().unwrap();
        let hb = Packet::Heartbeat(Heartbeat {
            name: b"DarkPlaces".to_vec(),
        })
        .to_bytes()
        .unwrap();
        let now = Instant::now();
        let first = m.respond(now, server, &hb);
        let mut out = Outbox::new();
        m.handle_timeout(now + CHALLENGE_RESEND, &mut out);
        // The same getinfo, to the same server (the first was dropped by its flood guard).
        assert_eq!(out, first);
        let mut emu = EmulatedServer::new(ServerConfig::sample(Quake3Game::Quake3, b"x", 0));
        let reply = emu.respond(&out[0].1).unwrap();
        m.respond(now + CHALLENGE_RESEND * 2, server, &reply);
        assert_eq!(m.servers(), &[(server, 68)]);
        assert_eq!(m.poll_timeout(), None, "nothing left to resend");
    }
}
