//! The idTech 4 family in the game registry: `doom3`, `quake4`, `prey`.

use std::net::SocketAddr;
use std::sync::Arc;

use fragstat_core::model::{MasterEntry, ServerInfo};
use fragstat_core::registry::MasterQueryError;
use fragstat_core::registry::{
    Ask, Decoded, Family, FamilyGame, GameMeta, MasterOptions, MasterQuery,
};
use fragstat_core::text::latin1;
use fragstat_core::{DecodeError, Exchange, ExchangeExt};
use serde::Serialize;

use crate::dict::hex;
use crate::exchange::{MasterExchange, ServerExchange};
use crate::game::{Idtech4Game, Protocol};
use crate::master::GetServers;
use crate::packet::{decode_as, Packet};
use crate::view::server_info;

/// The family as the facade registers it.
pub const FAMILY: Family = Family::of::<Idtech4Game>();

#[derive(Debug, PartialEq, Serialize)]
struct GetInfoFields {
    challenge: Option<i32>,
    trailing: Option<String>,
}

#[derive(Debug, PartialEq, Serialize)]
struct FilterFields {
    raw: u8,
    password: u8,
    players: u8,
    gametype: u8,
}

#[derive(Debug, PartialEq, Serialize)]
struct GetServersFields {
    protocol: String,
    third_party_flag: bool,
    fs_game: String,
    player: Option<String>,
    clan: Option<String>,
    filter: Option<FilterFields>,
    trailing: Option<String>,
}

#[derive(Debug, PartialEq, Serialize)]
struct HeartbeatFields {
    server: Option<ServerInfo>,
}

#[derive(Debug, PartialEq, Serialize)]
struct ListDetails {
    trailing: Option<String>,
}

fn opt_hex(b: &[u8]) -> Option<String> {
    (!b.is_empty()).then(|| hex(b))
}

impl FamilyGame for Idtech4Game {
    const FAMILY: &'static str = "idtech4";
    const FAMILY_TITLE: &'static str = "idTech 4 (Doom 3, Quake 4, Prey)";
    const ALL: &'static [Self] = &Idtech4Game::ALL;

    fn meta(self) -> GameMeta {
        GameMeta::new(Self::FAMILY, self.id(), self.title(), self.default_port())
            .aliases(self.aliases())
            .master_port(self.master_port())
            .engine(fragstat_core::manners::ServerEngine::IdTech4)
    }

    fn server_query(self, _ask: Ask) -> Box<dyn Exchange<Output = ServerInfo>> {
        // One getInfo carries everything: server info, players and rules.
        let game = self;
        ServerExchange::new(game)
            .map_output(move |reply| server_info(game, &reply))
            .boxed()
    }

    fn master_query(self, options: &MasterOptions) -> Result<MasterQuery, MasterQueryError> {
        if options.ext {
            return Err(MasterQueryError::option(
                self.id(),
                "the idTech 4 master has no extended request",
            ));
        }
        // Protocol 0 asks for every protocol (qstat's default request).
        let mut request = GetServers::new(self, 0);
        if let Some(m) = &options.gamename {
            request.game = m.as_bytes().to_vec();
        }
        let ex = MasterExchange::new(self, &request)?
            .with_quiet(options.quiet)
            .map_output(|list| {
                list.into_iter()
                    .map(|a| MasterEntry::new(SocketAddr::V4(a)))
                    .collect()
            });
        Ok(MasterQuery::Udp(Box::new(ex)))
    }

    fn decode(self, datagram: &[u8]) -> Result<Decoded, DecodeError> {
        let game = self;
        Ok(match decode_as(game, datagram)? {
            Packet::InfoResponse(r) => Decoded::Server(Box::new(server_info(game, &r))),
            Packet::Servers(l) => Decoded::Servers {
                details: Some(Arc::new(ListDetails {
                    trailing: opt_hex(&l.trailing),
                })),
                servers: l
                    .servers
                    .into_iter()
                    .map(|a| MasterEntry::new(SocketAddr::V4(a)))
                    .collect(),
            },
            Packet::GetInfo(g) => Decoded::Packet {
                kind: "getInfo".into(),
                fields: Arc::new(GetInfoFields {
                    challenge: g.challenge,
                    trailing: opt_hex(&g.trailing),
                }),
            },
            Packet::GetServers(g) => Decoded::Packet {
                kind: "getServers".into(),
                fields: Arc::new(GetServersFields {
                    protocol: Protocol(g.protocol_version()).to_string(),
                    third_party_flag: g.protocol & 0x8000_0000 != 0,
                    fs_game: latin1(&g.game),
                    player: g.player.as_deref().map(latin1),
                    clan: g.clan.as_deref().map(latin1),
                    filter: g.filter.map(|raw| FilterFields {
                        raw,
                        password: g.password_filter(),
                        players: g.players_filter(),
                        gametype: g.gametype_filter(),
                    }),
                    trailing: opt_hex(&g.trailing),
                }),
            },
            Packet::Heartbeat(h) => Decoded::Packet {
                kind: "heartbeat".into(),
                fields: Arc::new(HeartbeatFields {
                    server: h.state.map(|state| {
                        server_info(
                            game,
                            &crate::packet::InfoResponse {
                                challenge: 0,
                                state,
                            },
                        )
                    }),
                }),
            },
        })
    }

    #[cfg(feature = "emulate")]
    fn emulator(&self) -> Option<&dyn fragstat_core::registry::Emulate> {
        Some(self)
    }
}
