//! The family's game.

/// The family's one game, a type of its own as in every family (what the registry's
/// [`Entry`](fragstat_core::registry::Entry) wraps).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum EtqwGame {
    /// Enemy Territory: Quake Wars (1.4 and 1.5 servers).
    #[default]
    Etqw,
}

impl EtqwGame {
    /// Every game.
    pub const ALL: [EtqwGame; 1] = [EtqwGame::Etqw];
}
