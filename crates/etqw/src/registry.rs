//! ETQW in the game registry: `etqw` (qstat's `etqws`).

use std::sync::Arc;

use fragstat_core::model::ServerInfo;
use fragstat_core::registry::MasterQueryError;
use fragstat_core::registry::{
    Ask, Decoded, Family, FamilyGame, GameMeta, MasterOptions, MasterQuery,
};
use fragstat_core::{DecodeError, Exchange, ExchangeExt};
use fragstat_idtech4::dict::hex;
use serde::Serialize;

use crate::exchange::ServerExchange;
use crate::game::EtqwGame;
use crate::packet::{decode, Packet};
use crate::view::server_info;

/// The family as the facade registers it.
pub const FAMILY: Family = Family::of::<EtqwGame>();

/// Default query port (qstat `ETQW_DEFAULT_PORT`; gamedig).
pub const DEFAULT_PORT: u16 = 27733;

#[derive(Debug, PartialEq, Serialize)]
struct GetInfoFields {
    extended: bool,
    challenge: String,
    echo: String,
}

impl FamilyGame for EtqwGame {
    const FAMILY: &'static str = "etqw";
    const FAMILY_TITLE: &'static str = "Enemy Territory: Quake Wars";
    const ALL: &'static [Self] = &EtqwGame::ALL;

    fn meta(self) -> GameMeta {
        // Real ETQW servers echo something other than the challenge (captures answered a zero
        // challenge with `000000ba…` and `00000002…`): a reply whose echo is not this query's
        // is taken on its source address and marked unverified.
        GameMeta::new(
            Self::FAMILY,
            "etqw",
            "Enemy Territory: Quake Wars",
            DEFAULT_PORT,
        )
        .aliases(&["etqws", "quakewars"])
        .echoes_challenge(false)
        .engine(fragstat_core::manners::ServerEngine::IdTech4)
    }

    fn server_query(self, ask: Ask) -> Box<dyn Exchange<Output = ServerInfo>> {
        // getInfoEx adds each player's xp, team, kills and deaths.
        ServerExchange::new(ask.players || ask.rules)
            .map_output(|r| {
                let mut info = server_info(&r.response, r.datagram_len);
                info.unverified = r.unverified;
                info
            })
            .boxed()
    }

    fn master_query(self, options: &MasterOptions) -> Result<MasterQuery, MasterQueryError> {
        if options.ext || options.gamename.is_some() {
            return Err(MasterQueryError::option(
                "etqw",
                "the server-list feed takes no options",
            ));
        }
        Ok(MasterQuery::Http {
            default_url: Some(crate::feed::DEFAULT_URL),
            parse: crate::feed::parse,
        })
    }

    fn decode(self, datagram: &[u8]) -> Result<Decoded, DecodeError> {
        Ok(match decode(datagram)? {
            Packet::InfoResponse(r) => Decoded::Server(Box::new(server_info(&r, datagram.len()))),
            Packet::GetInfo(g) => Decoded::Packet {
                kind: if g.ex { "getInfoEx" } else { "getInfo" }.into(),
                fields: Arc::new(GetInfoFields {
                    extended: g.ex,
                    challenge: hex(&g.challenge),
                    echo: hex(&g.echo()),
                }),
            },
        })
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
    fn registry_entry() {
        let g = EtqwGame::Etqw;
        assert!(matches!(
            g.master_query(&MasterOptions::default()).unwrap(),
            MasterQuery::Http { default_url: Some(u), .. } if u.starts_with("http://")
        ));
    }
}
