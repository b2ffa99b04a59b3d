//! Who is on a server: the one rule both [`Differ`](super::Differ) and the tracker's sessions
//! tell players apart by. A player is its name's bytes (at most [`NAME_KEY_BYTES`]), the
//! name's dialect, and which of that name it is on the server (0 for the first): two players
//! named `Player` are two, and `^1Sarge` in Quake's colours and `^1Sarge` in plain text are
//! two different players.

use std::collections::HashMap;

use fragstat_core::model::{Dialect, Text};

/// Most bytes of a name that tell players apart (a longer name is the same player as
/// another with the same first bytes): a name is an index key where it is stored.
pub const NAME_KEY_BYTES: usize = 256;

/// One player of a server's list: its name's bytes, dialect and which of that name it is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PlayerKey {
    /// The name's bytes, at most [`NAME_KEY_BYTES`].
    pub name: Box<[u8]>,
    /// The name's dialect.
    pub dialect: Dialect,
    /// Which of the players with this name and dialect (0 for the first, in list order).
    pub nth: u32,
}

/// `bytes` capped to [`NAME_KEY_BYTES`].
pub fn key_bytes(bytes: &[u8]) -> &[u8] {
    bytes.get(..NAME_KEY_BYTES).unwrap_or(bytes)
}

/// The keys of a list of names, in its order.
pub fn player_keys<'a>(names: impl IntoIterator<Item = &'a Text>) -> Vec<PlayerKey> {
    let names: Vec<&'a Text> = names.into_iter().collect();
    let mut keys: Vec<PlayerKey> = Vec::with_capacity(names.len());
    // Small lists (nearly all) count earlier equal names; long ones a map.
    let mut counts: Option<HashMap<(&'a [u8], Dialect), u32>> =
        (names.len() > 16).then(HashMap::new);
    for name in names {
        let bytes = key_bytes(name.as_bytes());
        let dialect = name.dialect();
        let nth = match counts.as_mut() {
            Some(c) => {
                let n = c.entry((bytes, dialect)).or_insert(0);
                *n += 1;
                *n - 1
            }
            None => keys
                .iter()
                .filter(|k| k.dialect == dialect && *k.name == *bytes)
                .count() as u32,
        };
        keys.push(PlayerKey {
            name: bytes.into(),
            dialect,
            nth,
        });
    }
    keys
}
