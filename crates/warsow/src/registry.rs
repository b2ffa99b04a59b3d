//! The family in the game registry: `warsow`, `warfork` and `nexuiz`.

use std::sync::Arc;

use fragstat_core::model::ServerInfo;
use fragstat_core::registry::{
    Ask, Decoded, Family, FamilyGame, GameMeta, MasterOptions, MasterQuery,
};
use fragstat_core::{BoxError, DecodeError, Exchange};
use fragstat_quake3_oob::Quake3Game as Q3Game;
use serde::Serialize;

use crate::exchange::{master_query, server_query};
use crate::game::WarsowGame;
use crate::packet::{decode, Packet};
use crate::view::{adapt, short_info};

/// The family as the facade registers it.
pub const FAMILY: Family = Family::of::<WarsowGame>();

#[derive(Debug, PartialEq, Serialize)]
struct InfoRequestFields {
    protocol: i32,
    full: bool,
    empty: bool,
}

impl FamilyGame for WarsowGame {
    const FAMILY: &'static str = "warsow";
    const FAMILY_TITLE: &'static str =
        "qfusion and DarkPlaces on Quake III out-of-band (Warsow, Warfork, Nexuiz)";
    const ALL: &'static [Self] = &WarsowGame::ALL;

    fn meta(self) -> GameMeta {
        GameMeta::new(Self::FAMILY, self.id(), self.title(), self.default_port())
            .aliases(self.aliases())
            .master_port(self.master_port())
    }

    fn server_query(self, ask: Ask) -> Box<dyn Exchange<Output = ServerInfo>> {
        server_query(self, ask.players || ask.rules)
    }

    fn master_query(self, options: &MasterOptions) -> Result<MasterQuery, BoxError> {
        Ok(MasterQuery::Udp(master_query(
            self,
            options.ext,
            options.gamename.as_deref(),
        )?))
    }

    fn decode(self, datagram: &[u8]) -> Result<Decoded, DecodeError> {
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
                let q3 = Q3Game::Other(self.protocol());
                Ok(match q3.decode(datagram)? {
                    Decoded::Server(info) => Decoded::Server(Box::new(adapt(self, *info))),
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
