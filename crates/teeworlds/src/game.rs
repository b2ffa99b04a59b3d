//! The family's games.

/// A game of the family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TeeworldsGame {
    /// Teeworlds 0.6 servers (and DDNet's 0.6 side): DDNet's extended request, which vanilla
    /// servers answer with their `inf3`; the 0.6 UDP master.
    Teeworlds,
    /// Teeworlds 0.7 servers (and DDNet's 0.7 side, "sixup"); the 0.7 UDP master.
    Teeworlds07,
    /// DDNet: the extended request; the HTTP master (`servers.json`).
    Ddnet,
}

impl TeeworldsGame {
    /// Every game.
    pub const ALL: [TeeworldsGame; 3] = [
        TeeworldsGame::Teeworlds,
        TeeworldsGame::Teeworlds07,
        TeeworldsGame::Ddnet,
    ];

    /// The registry id.
    pub fn id(&self) -> &'static str {
        match self {
            TeeworldsGame::Teeworlds => "teeworlds",
            TeeworldsGame::Teeworlds07 => "teeworlds07",
            TeeworldsGame::Ddnet => "ddnet",
        }
    }
}
