//! ET: Legacy's `sv_tracker` in the emulated server: with tracker endpoints it pushes what the
//! engine pushes, in the engine's formats ([`crate::push`]), from its own socket (whatever the
//! [`Service`](fragstat_core::service::Service) pushes onto the outbox goes out of the
//! server's socket, as the engine's `NET_OutOfBandPrint(NS_SERVER, …)` does).
//!
//! What is sent when (etlegacy/etlegacy `a8e5f856`, `src/server/sv_tracker.c` unless named):
//! at start, `start` (`SV_Startup`, `sv_init.c:408`), `map <map>` (`SV_InitGameProgs`,
//! `sv_game.c:843`) and a `connect` per player already configured (bots connect through
//! `Tracker_catchBotConnect` the same way, :403-407); every [`KEEPALIVE`] a `p` (:409-419)
//! and a stats round: `wsc <active clients>` (:365), then a row per client. The engine sends
//! its own zero row (`ws <slot> 0 0 0\<client info>`, :374) for spectators and the mod's row
//! for the others; the emulator sends the zero row for everyone. [`EmulatedServer::connect`],
//! [`EmulatedServer::disconnect`], [`EmulatedServer::rename`] and
//! [`EmulatedServer::change_map`] change the server and push `connect`, `disconnect`, `name`
//! and `map` (:220, :234, :253, :267); at shutdown, `stop` (`SV_Shutdown`, `sv_init.c:1367`).
//! A player's GUID is 32 hex digits made from its name (ET: Legacy's `cl_guid` form), a bot's
//! the engine's `unknown` (no `cl_guid`, `n_guid` or `sil_guid`, :495-516). Slots are the
//! engine's: a new client takes the lowest free one (`SV_DirectConnect`).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use fragstat_core::service::Outbox;

use super::{EmuPlayer, EmulatedServer};
use crate::push::{Push, PushClient, StatsRow, MAX_CLIENTS};
use crate::Encode;

/// The keep-alive period: `Tracker_Frame` sends `p` once `time(0) - 15 > t` (`waittime = 15`
/// seconds, :42, :409-419), so every 16 s.
pub const KEEPALIVE: Duration = Duration::from_secs(16);
/// Endpoints at most (`MAX_TRACKERS`, :66).
pub const MAX_TRACKERS: usize = 8;

/// The endpoints pushed to and the engine slots of the players.
#[derive(Debug, Clone)]
pub(super) struct Trackers {
    endpoints: Vec<SocketAddr>,
    next: Option<Instant>,
    /// Each player's slot, in `config.players` order.
    slots: Vec<u8>,
}

impl Trackers {
    /// No endpoint; `players` clients in slots 0, 1, 2…
    pub(super) fn seated(players: usize) -> Self {
        Trackers {
            endpoints: Vec::new(),
            next: None,
            slots: (0..players)
                .map(|i| u8::try_from(i).unwrap_or(u8::MAX))
                .collect(),
        }
    }

    fn send(&self, push: &Push, out: &mut Outbox) {
        let Ok(bytes) = push.to_bytes() else { return };
        for e in &self.endpoints {
            out.push((*e, bytes.clone()));
        }
    }

    /// When the next keep-alive is due (none without endpoints).
    pub(super) fn poll_timeout(&self) -> Option<Instant> {
        self.next.filter(|_| !self.endpoints.is_empty())
    }
}

/// A player's GUID: a bot's `unknown`; a human's 32 hex digits from its name.
fn guid(p: &EmuPlayer) -> Vec<u8> {
    if p.bot {
        return b"unknown".to_vec();
    }
    // FNV-1a, twice with two offsets: stable, and the same name gives the same GUID.
    let fnv = |basis: u64| {
        p.name.iter().fold(basis, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    format!(
        "{:016X}{:016X}",
        fnv(0xcbf2_9ce4_8422_2325),
        fnv(0x8422_2325_cbf2_9ce4)
    )
    .into_bytes()
}

impl EmulatedServer {
    /// Pushes to these trackers (at most [`MAX_TRACKERS`], as `sv_tracker`'s list) the
    /// events the engine pushes (module docs).
    pub fn with_trackers(mut self, endpoints: Vec<SocketAddr>) -> Self {
        self.trackers.endpoints = endpoints.into_iter().take(MAX_TRACKERS).collect();
        self
    }

    /// The trackers pushed to.
    pub fn trackers(&self) -> &[SocketAddr] {
        &self.trackers.endpoints
    }

    /// The replies' cached bodies made again after the players or the map changed.
    fn rebuild(&mut self) {
        let fresh = EmulatedServer::new(self.config.clone());
        self.info_body = fresh.info_body;
        self.status_body = fresh.status_body;
        self.status_lines = fresh.status_lines;
    }

    fn client(&self, slot: u8, p: &EmuPlayer, name: Option<Vec<u8>>) -> PushClient {
        PushClient {
            slot,
            guid: guid(p),
            name: name.unwrap_or_else(|| p.name.clone()),
        }
    }

    /// `start`, `map` and a `connect` per player; the first keep-alive [`KEEPALIVE`] on.
    pub(super) fn tracker_start(&mut self, now: Instant, out: &mut Outbox) {
        if self.trackers.endpoints.is_empty() {
            return;
        }
        self.trackers.send(&Push::Start, out);
        self.trackers.send(
            &Push::Map {
                map: self.config.map.clone(),
            },
            out,
        );
        for (p, &slot) in self.config.players.iter().zip(&self.trackers.slots) {
            self.trackers
                .send(&Push::Connect(self.client(slot, p, None)), out);
        }
        self.trackers.next = Some(now + KEEPALIVE);
    }

    /// The keep-alive and its stats round when due.
    pub(super) fn tracker_due(&mut self, now: Instant, out: &mut Outbox) {
        if self.trackers.next.is_none_or(|t| t > now) || self.trackers.endpoints.is_empty() {
            return;
        }
        self.trackers.next = Some(now + KEEPALIVE);
        self.trackers.send(&Push::KeepAlive, out);
        let n = self.config.players.len().min(usize::from(MAX_CLIENTS));
        if n == 0 {
            return;
        }
        self.trackers.send(
            &Push::StatsCount {
                clients: u8::try_from(n).unwrap_or(MAX_CLIENTS),
            },
            out,
        );
        for (p, &slot) in self.config.players.iter().zip(&self.trackers.slots) {
            let row = StatsRow {
                slot,
                stats: b"0 0 0".to_vec(),
                ping: p.ping,
                score: p.score,
                team: b'0' + u8::try_from(p.team.clamp(0, 3)).unwrap_or(0),
                class: 0,
                name: p.name.clone(),
            };
            self.trackers.send(&Push::StatsRow(row), out);
        }
    }

    /// `stop`, at shutdown.
    pub(super) fn tracker_stop(&mut self, out: &mut Outbox) {
        self.trackers.send(&Push::Stop, out);
    }

    /// A client connects: it takes the lowest free slot and the server pushes `connect`.
    /// `None` when every slot is taken.
    pub fn connect(&mut self, player: EmuPlayer, out: &mut Outbox) -> Option<u8> {
        let max = self.config.max_clients.min(u32::from(MAX_CLIENTS));
        let slot = (0..max)
            .filter_map(|s| u8::try_from(s).ok())
            .find(|s| !self.trackers.slots.contains(s))?;
        let client = self.client(slot, &player, None);
        self.config.players.push(player);
        self.trackers.slots.push(slot);
        self.rebuild();
        self.trackers.send(&Push::Connect(client), out);
        Some(slot)
    }

    /// The client in `slot` leaves (`disconnect`); false when the slot is free.
    pub fn disconnect(&mut self, slot: u8, out: &mut Outbox) -> bool {
        let Some(i) = self.trackers.slots.iter().position(|&s| s == slot) else {
            return false;
        };
        self.trackers.slots.remove(i);
        self.config.players.remove(i);
        self.rebuild();
        self.trackers.send(&Push::Disconnect { slot }, out);
        true
    }

    /// The client in `slot` takes `name` (`name`); false when the slot is free.
    pub fn rename(&mut self, slot: u8, name: Vec<u8>, out: &mut Outbox) -> bool {
        let Some(i) = self.trackers.slots.iter().position(|&s| s == slot) else {
            return false;
        };
        let Some(p) = self.config.players.get(i) else {
            return false;
        };
        // The GUID stays the client's (its userinfo's `cl_guid`).
        let client = self.client(slot, p, Some(name.clone()));
        if let Some(p) = self.config.players.get_mut(i) {
            p.name = name;
        }
        self.rebuild();
        self.trackers.send(&Push::Name(client), out);
        true
    }

    /// The server loads `map` (`map`); its clients stay.
    pub fn change_map(&mut self, map: Vec<u8>, out: &mut Outbox) {
        self.config.map = map.clone();
        self.rebuild();
        self.trackers.send(&Push::Map { map }, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emulate::ServerConfig;
    use crate::push::decode_push;
    use crate::Quake3Game;
    use fragstat_core::service::Service;

    fn texts(out: &Outbox, to: SocketAddr) -> Vec<String> {
        out.iter()
            .filter(|(a, _)| *a == to)
            .map(|(_, d)| {
                decode_push(d).expect("the engine's format");
                String::from_utf8_lossy(&d[4..]).into_owned()
            })
            .collect()
    }

    /// Start, the keep-alive with its stats round, joins, leaves, renames, a map change and
    /// the shutdown, to every endpoint, in the engine's formats.
    #[test]
    fn pushes_what_the_engine_pushes() {
        let t1: SocketAddr = "127.0.0.1:4444".parse().unwrap();
        let t2: SocketAddr = "127.0.0.1:27960".parse().unwrap();
        let mut c = ServerConfig::sample(Quake3Game::EtLegacy, b"x", 1);
        c.players[0].name = b"^1Foo".to_vec();
        let mut s = EmulatedServer::new(c).with_trackers(vec![t1, t2]);
        let t0 = Instant::now();
        let mut out = Outbox::new();
        s.start(t0, &mut out);
        let start = texts(&out, t1);
        assert_eq!(start[..2], ["start", "map oasis"]);
        assert!(start[2].starts_with("connect 0 ") && start[2].ends_with(" ^1Foo"));
        assert_eq!(texts(&out, t2), start, "every endpoint gets the same");
        assert_eq!(s.poll_timeout(), Some(t0 + KEEPALIVE));
        out.clear();
        s.handle_timeout(t0 + KEEPALIVE, &mut out);
        let round = texts(&out, t1);
        assert_eq!(round[..2], ["p", "wsc 1"]);
        assert!(round[2].starts_with("ws 0 0 0 0\\"), "{round:?}");
        out.clear();
        let bot = EmuPlayer {
            name: b"[BOT]Ricky".to_vec(),
            score: 0,
            ping: 0,
            bot: true,
            team: 2,
        };
        assert_eq!(s.connect(bot, &mut out), Some(1));
        assert!(s.rename(1, b"[BOT]Rick".to_vec(), &mut out));
        s.change_map(b"supply".to_vec(), &mut out);
        assert!(s.disconnect(0, &mut out));
        assert!(!s.disconnect(0, &mut out));
        s.stop(t0, &mut out);
        assert_eq!(
            texts(&out, t1),
            [
                "connect 1 unknown [BOT]Ricky",
                "name 1 unknown [BOT]Rick",
                "map supply",
                "disconnect 0",
                "stop"
            ]
        );
        // The replies follow: one player, the bot renamed, on supply.
        let info = s.info_response(None);
        assert_eq!(info.info.get("mapname"), Some(&b"supply"[..]));
        assert_eq!(info.info.get("clients"), Some(&b"1"[..]));
        let status = s.status_response(None);
        assert_eq!(status.players[0].name, b"[BOT]Rick");
        // The lowest free slot is taken again.
        let p = s.config().players[0].clone();
        assert_eq!(s.connect(p, &mut out), Some(0));
    }

    /// Without endpoints nothing is pushed and no keep-alive is scheduled.
    #[test]
    fn no_trackers_no_pushes() {
        let mut s = EmulatedServer::new(ServerConfig::sample(Quake3Game::EtLegacy, b"x", 2));
        let mut out = Outbox::new();
        s.start(Instant::now(), &mut out);
        s.change_map(b"goldrush".to_vec(), &mut out);
        assert!(out.is_empty());
        assert_eq!(s.poll_timeout(), None);
    }
}
