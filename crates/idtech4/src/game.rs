//! The idTech 4 games this crate speaks for, their ports, and which player layout each
//! protocol version uses.
//!
//! The reply does not describe its own layout: Quake 4 adds a clan string after each name,
//! Doom 3 and Prey do not, and a wrong guess shifts every later byte. The layout is therefore
//! chosen by the game the caller names **and** the protocol major the server sends; an
//! unknown pair is never guessed (see [`Idtech4Game::layout`]).

use std::fmt;

/// An idTech 4 game.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Idtech4Game {
    /// Doom 3 (and Resurrection of Evil, dhewm3): protocol major 1.
    Doom3,
    /// Quake 4: protocol major 2.
    Quake4,
    /// Prey: protocol major 3 (retail) or 4 (demo).
    Prey,
}

/// How each player entry of an `infoResponse` is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    /// `u8 slot, i16 ping, i32 rate, str name` (Doom 3, Prey; dhewm3
    /// `idAsyncServer::ProcessGetInfoMessage`).
    Doom3,
    /// As [`Layout::Doom3`] plus `str clan` (Quake 4 `idAsyncServer::WriteInfo`).
    Quake4,
}

/// A protocol version as sent: `major << 16 | minor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Protocol(pub u32);

impl Protocol {
    /// A version from its parts.
    pub const fn new(major: u16, minor: u16) -> Self {
        Protocol(((major as u32) << 16) | minor as u32)
    }
    /// The major version (upper 16 bits).
    pub const fn major(self) -> u16 {
        (self.0 >> 16) as u16
    }
    /// The minor version (lower 16 bits).
    pub const fn minor(self) -> u16 {
        (self.0 & 0xffff) as u16
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major(), self.minor())
    }
}

impl Idtech4Game {
    /// Every game, in the order the registry lists them.
    pub const ALL: [Idtech4Game; 3] = [Idtech4Game::Doom3, Idtech4Game::Quake4, Idtech4Game::Prey];

    /// The registry id.
    pub fn id(self) -> &'static str {
        match self {
            Idtech4Game::Doom3 => "doom3",
            Idtech4Game::Quake4 => "quake4",
            Idtech4Game::Prey => "prey",
        }
    }

    /// A human title.
    pub fn title(self) -> &'static str {
        match self {
            Idtech4Game::Doom3 => "Doom 3",
            Idtech4Game::Quake4 => "Quake 4",
            Idtech4Game::Prey => "Prey",
        }
    }

    /// Other names (qstat's server types among them).
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            Idtech4Game::Doom3 => &["dm3s"],
            Idtech4Game::Quake4 => &["q4s"],
            Idtech4Game::Prey => &["preys"],
        }
    }

    /// Default server port (qstat doom3.h; Quake 4 `idAsyncServer::InitPort` 28004).
    pub fn default_port(self) -> u16 {
        match self {
            Idtech4Game::Doom3 => 27666,
            Idtech4Game::Quake4 => 28004,
            Idtech4Game::Prey => 27719,
        }
    }

    /// Default master port (qstat doom3.h: `DOOM3_MASTER_DEFAULT_PORT`,
    /// `QUAKE4_MASTER_DEFAULT_PORT`, `PREY_MASTER_DEFAULT_PORT`).
    pub fn master_port(self) -> u16 {
        match self {
            Idtech4Game::Doom3 | Idtech4Game::Quake4 => 27650,
            Idtech4Game::Prey => 27655,
        }
    }

    /// The game whose protocol major `protocol` has (Doom 3 1, Quake 4 2, Prey 3 and 4; bit 31,
    /// which qstat sets in master requests, ignored), or `None` for a major no game uses.
    pub fn of_protocol(protocol: Protocol) -> Option<Idtech4Game> {
        match Protocol(protocol.0 & 0x7fff_ffff).major() {
            1 => Some(Idtech4Game::Doom3),
            2 => Some(Idtech4Game::Quake4),
            3 | 4 => Some(Idtech4Game::Prey),
            _ => None,
        }
    }

    /// The player layout of protocol `protocol` in this game, or `None` when the pair is not
    /// known (the player list is then left undecoded, never guessed).
    ///
    /// Keyed by major: within a game's major the entry has not changed in any source (dhewm3
    /// 1.41–1.43; Quake 4 2.64 in the 1.0 binary and 2.85 in real 1.4.2 replies). Prey's
    /// retail (3) and demo (4) majors use the Doom 3 entry (qstat `deal_with_prey_packet`).
    pub fn layout(self, protocol: Protocol) -> Option<Layout> {
        match (self, protocol.major()) {
            (Idtech4Game::Doom3, 1) => Some(Layout::Doom3),
            (Idtech4Game::Quake4, 2) => Some(Layout::Quake4),
            (Idtech4Game::Prey, 3 | 4) => Some(Layout::Doom3),
            _ => None,
        }
    }

    /// The protocol the emulated server sends: Doom 3 1.3.1 (1.41) and Quake 4 1.4.2 (2.85) as
    /// in real replies; Prey retail major 3 with minor 0 (no real Prey packet is known, so the
    /// minor is a placeholder).
    pub fn protocol(self) -> Protocol {
        match self {
            Idtech4Game::Doom3 => Protocol::new(1, 41),
            Idtech4Game::Quake4 => Protocol::new(2, 85),
            Idtech4Game::Prey => Protocol::new(3, 0),
        }
    }

    /// True for Quake 4, whose `getServers` request carries player and clan filters.
    pub fn master_filters_players(self) -> bool {
        self == Idtech4Game::Quake4
    }

    /// The usual first map, for emulated servers.
    pub fn default_map(self) -> &'static str {
        match self {
            Idtech4Game::Doom3 => "game/mp/d3dm1",
            Idtech4Game::Quake4 => "mp/q4dm1",
            Idtech4Game::Prey => "game/dmmp/roadhouse",
        }
    }

    /// The default `si_gameType` value, for emulated servers.
    pub fn default_gametype(self) -> &'static str {
        match self {
            Idtech4Game::Doom3 => "deathmatch",
            Idtech4Game::Quake4 => "DM",
            Idtech4Game::Prey => "Deathmatch",
        }
    }

    /// The `gamename` value the game's servers send.
    pub fn gamename(self) -> &'static str {
        match self {
            Idtech4Game::Doom3 => "baseDOOM-1",
            Idtech4Game::Quake4 => "Q4MP 1.4.2",
            Idtech4Game::Prey => "basePrey-1",
        }
    }
}

impl fmt::Display for Idtech4Game {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_by_game_and_major() {
        assert_eq!(
            Idtech4Game::Doom3.layout(Protocol(0x10029)),
            Some(Layout::Doom3)
        );
        assert_eq!(
            Idtech4Game::Quake4.layout(Protocol(0x20055)),
            Some(Layout::Quake4)
        );
        assert_eq!(
            Idtech4Game::Prey.layout(Protocol::new(4, 1)),
            Some(Layout::Doom3)
        );
        assert_eq!(
            Idtech4Game::Doom3.layout(Protocol(0x20055)),
            None,
            "never guessed"
        );
        assert_eq!(Idtech4Game::Quake4.layout(Protocol(0xa0015)), None);
        assert_eq!(
            Idtech4Game::of_protocol(Protocol(0x8002_0055)),
            Some(Idtech4Game::Quake4)
        );
        assert_eq!(
            Idtech4Game::of_protocol(Protocol::new(4, 1)),
            Some(Idtech4Game::Prey)
        );
        assert_eq!(Idtech4Game::of_protocol(Protocol(0)), None);
        assert_eq!(Protocol(0x20055).to_string(), "2.85");
    }
}
