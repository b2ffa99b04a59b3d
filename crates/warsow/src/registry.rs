//! The family in the game registry: `warsow`, `warfork` and `nexuiz`.

use std::sync::Arc;

use fragstat_core::model::ServerInfo;
use fragstat_core::registry::{
    Ask, Decoded, EmuError, EmuMaster, EmuServer, EndMarker, Family, Game as RegistryGame, GameRef,
    MasterOptions, MasterQuery,
};
use fragstat_core::service::Service;
use fragstat_core::{BoxError, DecodeError, Exchange};
use fragstat_quake3_oob::emulate::EmulatedMaster;
use fragstat_quake3_oob::{EotStyle, Quake3Entry, Quake3Game as Q3Game};
use serde::Serialize;

use crate::emulate::{default_map, EmulatedServer, ServerConfig};
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
#[derive(Debug, Clone, Copy)]
pub struct WarsowEntry {
    game: WarsowGame,
}

impl WarsowEntry {
    /// The registry object of `game`.
    pub fn new(game: WarsowGame) -> Self {
        WarsowEntry { game }
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

/// Longest name or map an emulated server takes (qfusion copies the name into 64 bytes for
/// the short reply; infostring values are at most 64 characters in the Warsow docs).
const MAX_TEXT: usize = 63;

fn check_text(field: &str, value: &[u8]) -> Result<(), EmuError> {
    EmuError::check_text(field, value, b"\\\"\n\r\0;", MAX_TEXT, "an infostring")
}

impl RegistryGame for WarsowEntry {
    fn id(&self) -> &str {
        self.game.id()
    }

    fn title(&self) -> &str {
        self.game.title()
    }

    fn aliases(&self) -> &[&str] {
        self.game.aliases()
    }

    fn family(&self) -> &'static str {
        FAMILY.id
    }

    fn default_port(&self) -> u16 {
        self.game.default_port()
    }

    fn master_port(&self) -> Option<u16> {
        Some(self.game.master_port())
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

    fn emulated_server(&self, config: &EmuServer) -> Result<Box<dyn Service>, EmuError> {
        check_text("the server name", &config.name)?;
        check_text("the map name", &config.map)?;
        config.check_slots(256, false, "the emulator")?;
        if config.password && !self.game.is_qfusion() {
            return Err(EmuError(
                "a DarkPlaces server does not say whether it needs a password".into(),
            ));
        }
        let mut c = ServerConfig::sample(self.game, &config.name, 0);
        if let Some(gt) = &config.gametype {
            check_text("the game type", gt.as_bytes())?;
            if gt.is_empty() || gt.contains(':') {
                return Err(EmuError(format!(
                    "game type {gt:?}: a short name such as dm, ca or ctf"
                )));
            }
            c.gametype = gt.as_bytes().to_vec();
        }
        c.map = if config.map.is_empty() {
            default_map(self.game).to_vec()
        } else {
            config.map.clone()
        };
        c.max_clients = config.max_players;
        c.password = config.password;
        c.set_players(config.players, config.seed);
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
        let protocol = self.game.protocol();
        Ok(Box::new(EmulatedMaster::new(
            config.servers.iter().map(|a| (*a, protocol)).collect(),
            style,
        )))
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

    #[test]
    fn refuses_what_cannot_be_served() {
        let w = WarsowEntry::new(WarsowGame::Warsow);
        assert!(w.emulated_server(&EmuServer::new("a\\b", "", 0)).is_err());
        assert!(w
            .emulated_server(&EmuServer::new("x", "", 0).with_gametype(Some("a:b".into())))
            .is_err());
        let n = WarsowEntry::new(WarsowGame::Nexuiz);
        assert!(n
            .emulated_server(&EmuServer::new("x", "", 0).with_password(true))
            .is_err());
        assert!(n.emulated_server(&EmuServer::new("x", "", 2)).is_ok());
    }
}
