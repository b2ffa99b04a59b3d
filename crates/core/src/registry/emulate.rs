//! The emulators' side of the registry: what an emulated server and master serve
//! ([`EmuServer`], [`EmuMaster`]), the checks every emulator makes ([`EmuError`]), and the
//! [`Emulate`] trait a family crate implements with its `emulate` feature.

use std::net::SocketAddr;
use std::time::Duration;

#[cfg(doc)]
use super::MasterQuery;
use super::{Game, HttpBody};
use crate::manners::ServerEngine;
use crate::service::Service;

/// What an emulated game server serves.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EmuServer {
    /// Server name (raw bytes: colour codes allowed where the game has them).
    pub name: Vec<u8>,
    /// Map; empty for the game's usual first map.
    pub map: Vec<u8>,
    /// Players (every second one a bot with ping 0, where the game has bots).
    pub players: usize,
    /// Player slots (at least `players`).
    pub max_players: u32,
    /// Slots of `max_players` reserved for a private password (Quake III `sv_privateClients`;
    /// 0: none). Only the Quake III family emulates them; the others refuse a non-zero value.
    pub private_slots: u32,
    /// Needs a password.
    pub password: bool,
    /// The game type value as the game sends it (Quake III `4` for CTF); the game's default
    /// when `None`.
    pub gametype: Option<String>,
    /// Varies names and scores deterministically between servers.
    pub seed: u64,
    /// A master to heartbeat (register with) at start and periodically, for games that
    /// register that way.
    pub heartbeat_to: Option<SocketAddr>,
    /// How often to heartbeat (the engines' 5 minutes by default; at least 100 ms).
    pub heartbeat_every: Duration,
    /// Drop queries as the game's engine does past its limits ([`crate::manners`]: ioquake3's
    /// per-address and global buckets, DarkPlaces' flood block, DDNet's count per second).
    /// On by default; off for benchmarks and floods that need every query answered.
    pub rate_limit: bool,
    /// Trackers to push events to (ET: Legacy's `sv_tracker`; its emulator only, the others
    /// refuse a non-empty list).
    pub trackers: Vec<SocketAddr>,
}

impl Default for EmuServer {
    fn default() -> Self {
        EmuServer {
            name: b"fragstat emulated server".to_vec(),
            map: Vec::new(),
            players: 0,
            max_players: 8,
            private_slots: 0,
            password: false,
            gametype: None,
            seed: 0,
            heartbeat_to: None,
            heartbeat_every: crate::service::HEARTBEAT_INTERVAL,
            rate_limit: true,
            trackers: Vec::new(),
        }
    }
}

impl EmuServer {
    /// A server with this name, map and player count (slots: at least 8 and at least the
    /// players).
    pub fn new(name: impl Into<Vec<u8>>, map: impl Into<Vec<u8>>, players: usize) -> Self {
        EmuServer {
            name: name.into(),
            map: map.into(),
            players,
            max_players: u32::try_from(players.max(8)).unwrap_or(u32::MAX),
            ..EmuServer::default()
        }
    }

    /// Sets the slots.
    pub fn with_max_players(mut self, max_players: u32) -> Self {
        self.max_players = max_players;
        self
    }

    /// Sets the seed.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets the game type value.
    pub fn with_gametype(mut self, gametype: Option<String>) -> Self {
        self.gametype = gametype;
        self
    }

    /// Heartbeats to `master` (see [`EmuServer::heartbeat_to`]).
    pub fn with_heartbeat_to(mut self, master: Option<SocketAddr>) -> Self {
        self.heartbeat_to = master;
        self
    }

    /// Heartbeats every `every` instead of every 5 minutes.
    pub fn with_heartbeat_every(mut self, every: Duration) -> Self {
        self.heartbeat_every = every;
        self
    }

    /// The heartbeat schedule this configuration asks for.
    pub fn heartbeats(&self) -> crate::service::Heartbeats {
        crate::service::Heartbeats::new(self.heartbeat_to).every(self.heartbeat_every)
    }

    /// Checks the players fit the slots, at most `limit` players, and with `slots_too` at most
    /// `limit` slots as well (`game` names the limit in the message: `"an ETQW server"`).
    ///
    /// ```
    /// use fragstat_core::registry::EmuServer;
    /// assert!(EmuServer::new("x", "", 4).check_slots(32, true, "a server").is_ok());
    /// let e = EmuServer::new("x", "", 33).check_slots(32, true, "a server").unwrap_err();
    /// assert_eq!(e.to_string(), "33 players in 33 slots: a server has at most 32");
    /// let many_slots = EmuServer::new("x", "", 3).with_max_players(40);
    /// assert!(many_slots.check_slots(32, false, "a reply").is_ok());
    /// let e = EmuServer::new("x", "", 9).with_max_players(8).check_slots(32, true, "a server");
    /// assert_eq!(e.unwrap_err().to_string(), "8 player slots cannot hold 9 players");
    /// ```
    pub fn check_slots(&self, limit: u32, slots_too: bool, game: &str) -> Result<(), EmuError> {
        let slots_over = slots_too && self.max_players > limit;
        if slots_over || self.players > limit as usize {
            return Err(EmuError::TooManyPlayers {
                players: self.players,
                slots: self.max_players,
                game: game.to_string(),
                limit,
            });
        }
        if u64::from(self.max_players) < self.players as u64 {
            return Err(EmuError::SlotsTooFew {
                slots: self.max_players,
                players: self.players,
            });
        }
        Ok(())
    }

    /// Sets the password flag.
    pub fn with_password(mut self, password: bool) -> Self {
        self.password = password;
        self
    }

    /// Reserves `private_slots` of the slots (see [`EmuServer::private_slots`]).
    pub fn with_private_slots(mut self, private_slots: u32) -> Self {
        self.private_slots = private_slots;
        self
    }

    /// For the emulators of games without private slots: refuses a non-zero
    /// [`EmuServer::private_slots`] instead of ignoring it (`game` names the game).
    ///
    /// ```
    /// use fragstat_core::registry::EmuServer;
    /// assert!(EmuServer::new("x", "", 1).check_no_private_slots("Nexuiz").is_ok());
    /// let e = EmuServer::new("x", "", 1).with_private_slots(2).check_no_private_slots("Nexuiz");
    /// assert_eq!(e.unwrap_err().to_string(), "private slots: not emulated for Nexuiz");
    /// ```
    pub fn check_no_private_slots(&self, game: &str) -> Result<(), EmuError> {
        if self.private_slots == 0 {
            return Ok(());
        }
        Err(EmuError::Unsupported(format!(
            "private slots: not emulated for {game}"
        )))
    }

    /// Pushes events to these trackers (see [`EmuServer::trackers`]).
    pub fn with_trackers(mut self, trackers: Vec<SocketAddr>) -> Self {
        self.trackers = trackers;
        self
    }

    /// Sets [`EmuServer::rate_limit`].
    pub fn with_rate_limit(mut self, rate_limit: bool) -> Self {
        self.rate_limit = rate_limit;
        self
    }

    /// `server` behind `engine`'s limits on queries ([`crate::manners::Guarded`]) unless
    /// [`EmuServer::rate_limit`] is off: what a family's emulator returns.
    pub fn guarded(&self, engine: ServerEngine, server: Box<dyn Service>) -> Box<dyn Service> {
        if self.rate_limit {
            crate::manners::Guarded::wrap(engine, server)
        } else {
            server
        }
    }
}

/// Where an emulated master puts its end-of-list marker (for families whose lists have one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum EndMarker {
    /// Only on the last datagram (dpmaster ≥ 2.0).
    #[default]
    Last,
    /// On every datagram (older masters).
    Every,
    /// The alternative marker on the last datagram (Quake III `\EOF`).
    Alternative,
    /// None: clients finish on a timeout.
    None,
    /// A bare `\EOT` on every datagram but the last, whose marker has its NULs
    /// (`\EOT\0\0\0`): Activision's masters (pyq3serverlist reader.py:70-73).
    BareEvery,
}

/// A server an emulated master lists under a protocol and game name of its own (one that
/// registered with them): see [`EmuMaster::listings`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EmuListing {
    /// The server.
    pub addr: SocketAddr,
    /// The protocol it registered with.
    pub protocol: i32,
    /// The game name it registered with; `None`: an anonymous game's (Q3A's, OpenArena's).
    pub gamename: Option<String>,
}

impl EmuListing {
    /// `addr`, registered with `protocol` and `gamename`.
    pub fn new(addr: SocketAddr, protocol: i32, gamename: Option<&str>) -> Self {
        EmuListing {
            addr,
            protocol,
            gamename: gamename.map(str::to_string),
        }
    }
}

/// What an emulated master lists.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct EmuMaster {
    /// The servers it lists.
    pub servers: Vec<SocketAddr>,
    /// Its end-of-list marker.
    pub end_marker: EndMarker,
    /// Answers only the short form, `getservers <protocol>` with no game name (id's RtCW
    /// master: nksmnf/iortcw docs/RU/server.md §2); requests naming a game get nothing.
    pub short_only: bool,
    /// Servers listed only to requests for their own protocol and game name (an anonymous
    /// request gets the anonymous ones: dpmaster's rule, which is why Q3Rally must name
    /// itself), besides [`EmuMaster::servers`], which every request for the game's protocol
    /// gets.
    pub listings: Vec<EmuListing>,
    /// A featured group, for masters that have them (Unvanquished's: its servers are sent
    /// in their own packets under the label): the label and the servers in it.
    pub featured: Option<(String, Vec<SocketAddr>)>,
}

impl EmuMaster {
    /// A master listing `servers`.
    pub fn new(servers: Vec<SocketAddr>) -> Self {
        EmuMaster {
            servers,
            end_marker: EndMarker::default(),
            short_only: false,
            listings: Vec::new(),
            featured: None,
        }
    }

    /// Sets [`EmuMaster::short_only`].
    pub fn with_short_only(mut self, short_only: bool) -> Self {
        self.short_only = short_only;
        self
    }

    /// Sets [`EmuMaster::listings`].
    pub fn with_listings(mut self, listings: Vec<EmuListing>) -> Self {
        self.listings = listings;
        self
    }

    /// Sets the end marker.
    pub fn with_end_marker(mut self, end_marker: EndMarker) -> Self {
        self.end_marker = end_marker;
        self
    }

    /// Sets the featured group: `label` and the servers in it.
    pub fn with_featured(mut self, featured: Option<(String, Vec<SocketAddr>)>) -> Self {
        self.featured = featured;
        self
    }
}

/// Why an emulator cannot be built with the configuration given (a map name the protocol
/// cannot carry, more players than it can list…), or the game has no such emulator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EmuError {
    /// A text setting holds a byte the protocol cannot carry ([`EmuError::check_text`]).
    #[error("{field} contains {byte:?}, which {format} cannot carry")]
    Forbidden {
        /// The setting.
        field: String,
        /// The byte.
        byte: char,
        /// The wire form that cannot carry it (`an infostring`).
        format: String,
    },
    /// A text setting is longer than the protocol carries ([`EmuError::check_text`]).
    #[error("{field} is {len} bytes long, at most {max}")]
    TooLong {
        /// The setting.
        field: String,
        /// Its length in bytes.
        len: usize,
        /// The most the protocol carries.
        max: usize,
    },
    /// More players (or slots) than the game's replies can list
    /// ([`EmuServer::check_slots`]).
    #[error("{players} players in {slots} slots: {game} has at most {limit}")]
    TooManyPlayers {
        /// Players asked for.
        players: usize,
        /// Slots asked for.
        slots: u32,
        /// What has the limit (`a Quake III server`).
        game: String,
        /// The limit.
        limit: u32,
    },
    /// Fewer slots than players ([`EmuServer::check_slots`]).
    #[error("{slots} player slots cannot hold {players} players")]
    SlotsTooFew {
        /// Slots asked for.
        slots: u32,
        /// Players asked for.
        players: usize,
    },
    /// Another setting the emulated engine cannot hold (a game type it does not know, a
    /// password flag its replies cannot say…): the message names it and says why.
    #[error("{0}")]
    Config(String),
    /// The game has no emulator of this kind (no UDP master, no HTTP list), or its crate was
    /// built without emulators.
    #[error("{0}")]
    Unsupported(String),
    /// The emulated server's replies cannot be encoded.
    #[error("the emulated replies cannot be encoded: {0}")]
    Encode(#[from] crate::encode::EncodeError),
}

impl EmuError {
    /// Checks a text an emulator is asked to send: at most `max` bytes and none of
    /// `forbidden` (the bytes the protocol's `format` cannot carry, as `"a Quake III
    /// infostring"` names it in the message).
    ///
    /// ```
    /// use fragstat_core::registry::EmuError;
    /// let e = EmuError::check_text("map", b"a\\b", b"\\\0", 63, "an infostring").unwrap_err();
    /// assert_eq!(e.to_string(), "map contains '\\\\', which an infostring cannot carry");
    /// assert!(EmuError::check_text("map", &[b'x'; 64], b"", 63, "an infostring").is_err());
    /// ```
    pub fn check_text(
        field: &str,
        value: &[u8],
        forbidden: &[u8],
        max: usize,
        format: &str,
    ) -> Result<(), EmuError> {
        if let Some(b) = value.iter().find(|b| forbidden.contains(b)) {
            return Err(EmuError::Forbidden {
                field: field.to_string(),
                byte: char::from(*b),
                format: format.to_string(),
            });
        }
        if value.len() > max {
            return Err(EmuError::TooLong {
                field: field.to_string(),
                len: value.len(),
                max,
            });
        }
        Ok(())
    }
}

/// A game's emulated server and master (`fragstat serve`, tests, benchmarks): what its
/// family crate builds only with its `emulate` feature, reached through [`Game::emulator`].
pub trait Emulate: Send + Sync {
    /// The name `fragstat serve` gives a server when none is asked for: with Quake colour
    /// codes, except for games that draw none (where they would show as text).
    fn default_name(&self) -> &'static str {
        "^1fragstat ^7emulated server"
    }

    /// An emulated server.
    fn emulated_server(&self, config: &EmuServer) -> Result<Box<dyn Service>, EmuError>;
    /// An emulated master.
    fn emulated_master(&self, config: &EmuMaster) -> Result<Box<dyn Service>, EmuError>;
    /// For games whose master is an HTTP list ([`MasterQuery::Http`]): the body that list
    /// would have for these emulated servers (each with the configuration it was started
    /// with), as `fragstat serve --master` serves it at the path of the public list's URL.
    fn emulated_http_list(
        &self,
        servers: &[(SocketAddr, EmuServer)],
    ) -> Result<HttpBody, EmuError> {
        let _ = servers;
        Err(EmuError::Unsupported(
            "the game has no HTTP master list".into(),
        ))
    }
    /// For games whose master is a TCP stream ([`MasterQuery::Tcp`]): the bytes the master
    /// sends every client that asks, listing `servers`, as `fragstat serve --master` serves it.
    fn emulated_tcp_list(&self, servers: &[SocketAddr]) -> Result<Vec<u8>, EmuError> {
        let _ = servers;
        Err(EmuError::Unsupported("the game has no TCP master".into()))
    }
}

/// The emulators of `game`, or an [`EmuError`] naming the game when its crate was built
/// without them.
pub fn emulator(game: &dyn Game) -> Result<&dyn Emulate, EmuError> {
    game.emulator().ok_or_else(|| {
        EmuError::Unsupported(format!(
            "{}: built without emulators (the {} crate's `emulate` feature)",
            game.id(),
            game.family()
        ))
    })
}
