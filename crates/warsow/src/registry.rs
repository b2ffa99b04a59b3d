//! The family in the game registry: `warsow`, `warfork` and `nexuiz`.

use std::sync::Arc;

use fragstat_core::model::ServerInfo;
use fragstat_core::registry::{
    Ask, Decoded, Family, Game as RegistryGame, GameMeta, GameRef, MasterOptions, MasterQuery,
};
use fragstat_core::{BoxError, DecodeError, Exchange};
use fragstat_quake3_oob::{Quake3Entry, Quake3Game as Q3Game};
use serde::Serialize;

use crate::exchange::{master_query, server_query};
use crate::game::WarsowGame;
use crate::packet::{decode, Packet};
use crate::view::{adapt, short_info};

/// The family as the facade registers it.
pub const FAMILY: Family = Family {
    id: "warsow",
    title: "qfusion and DarkPlaces on Quake III out-of-band (Warsow, Warfork, Nexuiz)",
    games,
    find,
};

fn games() -> Vec<GameRef> {
    WarsowGame::ALL
        .into_iter()
        .map(|g| Arc::new(WarsowEntry::new(g)) as GameRef)
        .collect()
}

fn find(id: &str) -> Option<GameRef> {
    fragstat_core::registry::find_in(games(), id)
}

/// A game of the family as a registry [`RegistryGame`].
#[derive(Debug, Clone)]
pub struct WarsowEntry {
    game: WarsowGame,
    meta: GameMeta,
}

impl WarsowEntry {
    /// The registry object of `game`.
    pub fn new(game: WarsowGame) -> Self {
        let meta = GameMeta::new(FAMILY.id, game.id(), game.title(), game.default_port())
            .aliases(game.aliases())
            .master_port(game.master_port());
        WarsowEntry { game, meta }
    }

    /// The game.
    pub fn game(&self) -> WarsowGame {
        self.game
    }
}

#[derive(Debug, PartialEq, Serialize)]
struct InfoRequestFields {
    protocol: i32,
    full: bool,
    empty: bool,
}

impl RegistryGame for WarsowEntry {
    fn meta(&self) -> &GameMeta {
        &self.meta
    }

    fn server_query(&self, ask: Ask) -> Box<dyn Exchange<Output = ServerInfo>> {
        server_query(self.game, ask.players || ask.rules)
    }

    fn master_query(&self, options: &MasterOptions) -> Result<MasterQuery, BoxError> {
        Ok(MasterQuery::Udp(master_query(
            self.game,
            options.ext,
            options.gamename.as_deref(),
        )?))
    }

    fn decode(&self, datagram: &[u8]) -> Result<Decoded, DecodeError> {
        match decode(datagram)? {
            Packet::InfoReply(i) => Ok(Decoded::Server(Box::new(short_info(&i)))),
            Packet::Info(r) => Ok(Decoded::Packet {
                kind: "info".into(),
                fields: Arc::new(InfoRequestFields {
                    protocol: r.protocol,
                    full: r.full,
                    empty: r.empty,
                }),
            }),
            // Everything else is a Quake III packet: decoded the same way, then read with
            // this engine's meanings.
            Packet::Oob(_) => {
                let q3 = Quake3Entry::new(Q3Game::Other(self.game.protocol()));
                Ok(match q3.decode(datagram)? {
                    Decoded::Server(info) => Decoded::Server(Box::new(adapt(self.game, *info))),
                    other => other,
                })
            }
        }
    }

    #[cfg(feature = "emulate")]
    fn emulator(&self) -> Option<&dyn fragstat_core::registry::Emulate> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_games_by_id_and_alias() {
        assert_eq!(find("WARSOWS").unwrap().id(), "warsow");
        assert_eq!(find("nexuizs").unwrap().id(), "nexuiz");
        assert_eq!(find("warfork").unwrap().default_port(), 44400);
        assert!(find("q3").is_none());
    }
}
