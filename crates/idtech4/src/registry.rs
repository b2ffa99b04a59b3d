//! The idTech 4 family in the game registry: `doom3`, `quake4`, `prey`.

use std::net::SocketAddr;
use std::sync::Arc;

use fragstat_core::model::{MasterEntry, ServerInfo};
use fragstat_core::registry::{
    Ask, Decoded, EmuError, EmuMaster, EmuServer, Family, Game as RegistryGame, GameRef,
    MasterOptions, MasterQuery,
};
use fragstat_core::service::Service;
use fragstat_core::text::latin1;
use fragstat_core::{BoxError, DecodeError, Exchange, ExchangeExt};
use serde::Serialize;

use crate::dict::hex;
use crate::emulate::{EmulatedMaster, EmulatedServer, ServerConfig};
use crate::exchange::{MasterExchange, ServerExchange};
use crate::game::{Idtech4Game, Protocol};
use crate::master::GetServers;
use crate::packet::{decode_as, Packet, END_OF_PLAYERS};
use crate::view::server_info;

/// The family as the facade registers it.
pub const FAMILY: Family = Family {
    id: "idtech4",
    title: "idTech 4 (Doom 3, Quake 4, Prey)",
    games,
    find,
};

fn games() -> Vec<GameRef> {
    Idtech4Game::ALL
        .into_iter()
        .map(|g| Arc::new(Idtech4Entry::new(g)) as GameRef)
        .collect()
}

fn find(id: &str) -> Option<GameRef> {
    fragstat_core::registry::find_in(games(), id)
}

/// An idTech 4 game as a registry [`RegistryGame`].
#[derive(Debug, Clone)]
pub struct Idtech4Entry {
    game: Idtech4Game,
}

impl Idtech4Entry {
    /// The registry object of `game`.
    pub fn new(game: Idtech4Game) -> Self {
        Idtech4Entry { game }
    }

    /// The game.
    pub fn game(&self) -> Idtech4Game {
        self.game
    }
}

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

/// Longest name or map an emulated server takes (`MAX_STRING_CHARS` is 1024).
const MAX_TEXT: usize = 256;

fn check_text(field: &str, value: &[u8]) -> Result<(), EmuError> {
    EmuError::check_text(field, value, b"\0", MAX_TEXT, "an idTech 4 string")
}

impl RegistryGame for Idtech4Entry {
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

    fn server_query(&self, _ask: Ask) -> Box<dyn Exchange<Output = ServerInfo>> {
        // One getInfo carries everything: server info, players and rules.
        let game = self.game;
        ServerExchange::new(game)
            .map_output(move |reply| server_info(game, &reply))
            .boxed()
    }

    fn master_query(&self, options: &MasterOptions) -> Result<MasterQuery, BoxError> {
        if options.ext {
            return Err(
                format!("{}: the idTech 4 master has no extended request", self.id()).into(),
            );
        }
        // Protocol 0 asks for every protocol (qstat's default request).
        let mut request = GetServers::new(self.game, 0);
        if let Some(m) = &options.gamename {
            request.game = m.as_bytes().to_vec();
        }
        let ex = MasterExchange::new(self.game, &request)?.map_output(|list| {
            list.into_iter()
                .map(|a| MasterEntry::new(SocketAddr::V4(a)))
                .collect()
        });
        Ok(MasterQuery::Udp(Box::new(ex)))
    }

    fn decode(&self, datagram: &[u8]) -> Result<Decoded, DecodeError> {
        let game = self.game;
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

    fn emulated_server(&self, config: &EmuServer) -> Result<Box<dyn Service>, EmuError> {
        check_text("the server name", &config.name)?;
        check_text("the map name", &config.map)?;
        config.check_slots(
            u32::from(END_OF_PLAYERS),
            true,
            "an idTech 4 server (MAX_ASYNC_CLIENTS)",
        )?;
        let mut c = ServerConfig::sample(
            self.game,
            &config.name,
            &config.map,
            config.players,
            config.max_players,
        );
        c.set("si_usepass", if config.password { "1" } else { "0" });
        if let Some(gt) = &config.gametype {
            check_text("the game type", gt.as_bytes())?;
            c.set("si_gameType", gt);
        }
        // Vary pings between servers, deterministically.
        let shift = i16::try_from(config.seed % 11).unwrap_or(0);
        for p in &mut c.players {
            p.ping = p.ping.saturating_add(shift);
        }
        c.heartbeats = config.heartbeats();
        EmulatedServer::new(c)
            .map(|s| Box::new(s) as Box<dyn Service>)
            .map_err(|e| EmuError(e.to_string()))
    }

    fn emulated_master(&self, config: &EmuMaster) -> Result<Box<dyn Service>, EmuError> {
        let mut servers = Vec::with_capacity(config.servers.len());
        for a in &config.servers {
            match a {
                SocketAddr::V4(v4) => servers.push((*v4, self.game.protocol())),
                SocketAddr::V6(_) => {
                    return Err(EmuError(format!(
                        "{a}: an idTech 4 master list carries IPv4 addresses only"
                    )))
                }
            }
        }
        Ok(Box::new(EmulatedMaster::new(self.game, servers)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_games_by_id_and_qstat_alias() {
        assert_eq!(find("dm3s").unwrap().id(), "doom3");
        assert_eq!(find("Q4S").unwrap().id(), "quake4");
        assert_eq!(find("preys").unwrap().id(), "prey");
        assert!(find("q3").is_none());
        assert_eq!(games().len(), 3);
    }

    #[test]
    fn refuses_what_the_protocol_cannot_carry() {
        let g = Idtech4Entry::new(Idtech4Game::Doom3);
        let err = g
            .emulated_server(&EmuServer::new("x", "a\0b", 0))
            .err()
            .unwrap();
        assert!(err.0.contains("map name"), "{err}");
        let err = g
            .emulated_server(&EmuServer::new("x", "", 33))
            .err()
            .unwrap();
        assert!(err.0.contains("at most 32"), "{err}");
        assert!(g.emulated_server(&EmuServer::new("x", "", 32)).is_ok());
        let err = g
            .emulated_master(&EmuMaster::new(vec!["[::1]:1".parse().unwrap()]))
            .err()
            .unwrap();
        assert!(err.0.contains("IPv4"), "{err}");
    }
}
