//! The family in the game registry: `teeworlds` (0.6, DDNet's extended request; vanilla
//! replies accepted), `teeworlds07` (0.7 with the token handshake) and `ddnet` (the extended
//! query and DDNet's HTTP master).

use std::net::SocketAddr;
use std::sync::Arc;

use fragstat_core::model::{MasterEntry, ServerInfo};
use fragstat_core::registry::{
    Ask, Decoded, EmuError, EmuMaster, EmuServer, Family, Game as RegistryGame, GameRef, HttpBody,
    MasterOptions, MasterQuery,
};
use fragstat_core::service::Service;
use fragstat_core::{BoxError, DecodeError, Exchange, ExchangeExt};
use serde::Serialize;

use crate::emulate::{EmulatedMaster, EmulatedServer, Flavor, ServerConfig};
use crate::exchange::{Master6, Master7, Mode, Query6, Query7};
use crate::packet::{decode, Packet};
use crate::seven::{self, Body};
use crate::six;
use crate::view::{from_seven, from_six, Form};

/// The family as the facade registers it.
pub const FAMILY: Family = Family {
    id: "teeworlds",
    title: "Teeworlds 0.6 and 0.7, DDNet",
    games,
    find,
};

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

    fn flavor(&self) -> Flavor {
        match self {
            TeeworldsGame::Teeworlds => Flavor::Vanilla06,
            TeeworldsGame::Teeworlds07 => Flavor::Teeworlds07,
            TeeworldsGame::Ddnet => Flavor::Ddnet,
        }
    }
}

fn games() -> Vec<GameRef> {
    TeeworldsGame::ALL
        .into_iter()
        .map(|g| Arc::new(TeeworldsEntry::new(g)) as GameRef)
        .collect()
}

fn find(id: &str) -> Option<GameRef> {
    fragstat_core::registry::find_in(games(), id)
}

/// A game of the family as a registry [`RegistryGame`].
#[derive(Debug, Clone, Copy)]
pub struct TeeworldsEntry {
    game: TeeworldsGame,
}

impl TeeworldsEntry {
    /// The registry object of `game`.
    pub fn new(game: TeeworldsGame) -> Self {
        TeeworldsEntry { game }
    }

    /// The game.
    pub fn game(&self) -> TeeworldsGame {
        self.game
    }
}

#[derive(Debug, PartialEq, Serialize)]
struct RequestFields {
    token: Option<i64>,
    extra_token: Option<u16>,
}

#[derive(Debug, PartialEq, Serialize)]
struct MoreFields {
    token: i32,
    packet_no: i32,
    clients: Vec<ClientFields>,
    truncated: bool,
}

#[derive(Debug, PartialEq, Serialize)]
struct ClientFields {
    name: String,
    clan: String,
    country: i32,
    score: i32,
    is_player: i32,
}

#[derive(Debug, PartialEq, Serialize)]
struct CountFields {
    count: u16,
}

#[derive(Debug, PartialEq, Serialize)]
struct PortFields {
    port: u16,
}

#[derive(Debug, PartialEq, Serialize)]
struct TokenFields {
    to: Option<u32>,
    token: u32,
    padded: Option<bool>,
}

#[derive(Debug, PartialEq, Serialize)]
struct ListDetails {
    packet: &'static str,
    protocol: &'static str,
}

fn packet(kind: &str, fields: impl fragstat_core::model::Extra) -> Decoded {
    Decoded::Packet {
        kind: kind.into(),
        fields: Arc::new(fields),
    }
}

fn servers(
    list: Vec<std::net::SocketAddr>,
    packet: &'static str,
    protocol: &'static str,
) -> Decoded {
    Decoded::Servers {
        servers: list.into_iter().map(MasterEntry::new).collect(),
        details: Some(Arc::new(ListDetails { packet, protocol })),
    }
}

fn request(token: Option<i64>, extra_token: Option<u16>) -> RequestFields {
    RequestFields { token, extra_token }
}

fn complete(i: &six::Info) -> bool {
    usize::try_from(i.num_clients).is_ok_and(|n| i.clients.len() >= n)
}

/// Decodes any datagram of the family into what `fragstat decode` shows.
pub(crate) fn decoded(datagram: &[u8]) -> Result<Decoded, DecodeError> {
    Ok(match decode(datagram)? {
        Packet::Six(p) => match p {
            six::Packet::Info(i) => Decoded::Server(Box::new(from_six(&i, Form::Vanilla, 1, true))),
            six::Packet::InfoExtended(i) => {
                let c = complete(&i);
                Decoded::Server(Box::new(from_six(&i, Form::Extended, 1, c)))
            }
            six::Packet::Info64(i) => {
                let c = complete(&i);
                Decoded::Server(Box::new(from_six(&i, Form::Legacy64, 1, c)))
            }
            six::Packet::InfoMore(m) => packet(
                "iex+",
                MoreFields {
                    token: m.token,
                    packet_no: m.packet_no,
                    clients: m
                        .clients
                        .iter()
                        .map(|c| ClientFields {
                            name: String::from_utf8_lossy(&c.name).into_owned(),
                            clan: String::from_utf8_lossy(&c.clan).into_owned(),
                            country: c.country,
                            score: c.score,
                            is_player: c.is_player,
                        })
                        .collect(),
                    truncated: m.truncated,
                },
            ),
            six::Packet::GetInfo { token, extra_token } => {
                packet("gie3", request(Some(i64::from(token)), extra_token))
            }
            six::Packet::GetInfo64 { token } => {
                packet("fstd", request(Some(i64::from(token)), None))
            }
            six::Packet::List(l) => servers(l, "lis2", "0.6"),
            six::Packet::List5(l) => servers(l, "list", "0.5"),
            six::Packet::Count(count) => packet("siz2", CountFields { count }),
            six::Packet::GetList => packet("req2", request(None, None)),
            six::Packet::GetCount => packet("cou2", request(None, None)),
            six::Packet::GetList5 => packet("reqt", request(None, None)),
            six::Packet::Heartbeat { port } => packet("bea2", PortFields { port }),
        },
        Packet::Seven(p) => match p {
            seven::Packet::TokenRequest { token, padded } => packet(
                "token request",
                TokenFields {
                    to: None,
                    token,
                    padded: Some(padded),
                },
            ),
            seven::Packet::Token { to, token } => packet(
                "token",
                TokenFields {
                    to: Some(to),
                    token,
                    padded: None,
                },
            ),
            seven::Packet::Connless { body, .. } => match body {
                Body::Info(i) => Decoded::Server(Box::new(from_seven(&i))),
                Body::GetInfo { token } => packet("gie3", request(Some(i64::from(token)), None)),
                Body::List(l) => servers(l, "lis2", "0.7"),
                Body::Count(count) => packet("siz2", CountFields { count }),
                Body::GetList => packet("req2", request(None, None)),
                Body::GetCount => packet("cou2", request(None, None)),
            },
        },
    })
}

impl RegistryGame for TeeworldsEntry {
    fn id(&self) -> &str {
        self.game.id()
    }

    fn title(&self) -> &str {
        match self.game {
            TeeworldsGame::Teeworlds => "Teeworlds 0.6",
            TeeworldsGame::Teeworlds07 => "Teeworlds 0.7",
            TeeworldsGame::Ddnet => "DDraceNetwork",
        }
    }

    fn aliases(&self) -> &[&str] {
        match self.game {
            TeeworldsGame::Teeworlds => &["tees", "tee", "teeworlds06", "tw"],
            TeeworldsGame::Teeworlds07 => &["tw07", "teeworlds7"],
            TeeworldsGame::Ddnet => &["ddrace", "ddracenetwork"],
        }
    }

    fn family(&self) -> &'static str {
        FAMILY.id
    }

    /// 0.6 (and DDNet) and 0.7 servers do not answer each other's queries.
    fn unanswered_hint(&self) -> Option<&'static str> {
        Some(match self.game {
            TeeworldsGame::Teeworlds | TeeworldsGame::Ddnet => {
                "a Teeworlds 0.7 server? query it as teeworlds07"
            }
            TeeworldsGame::Teeworlds07 => "a 0.6 or DDNet server? query it as teeworlds or ddnet",
        })
    }

    fn default_port(&self) -> u16 {
        8303
    }

    fn master_port(&self) -> Option<u16> {
        match self.game {
            // teeworlds 0.6 mastersrv.h MASTERSERVER_PORT.
            TeeworldsGame::Teeworlds => Some(8300),
            // teeworlds 0.7 mastersrv.h MASTERSERVER_PORT.
            TeeworldsGame::Teeworlds07 => Some(8283),
            TeeworldsGame::Ddnet => None,
        }
    }

    fn server_query(&self, _ask: Ask) -> Box<dyn Exchange<Output = ServerInfo>> {
        // Every reply carries the clients: nothing to ask for separately.
        match self.game {
            TeeworldsGame::Teeworlds07 => Query7::new().boxed(),
            TeeworldsGame::Teeworlds | TeeworldsGame::Ddnet => Query6::new(Mode::Extended).boxed(),
        }
    }

    fn master_query(&self, options: &MasterOptions) -> Result<MasterQuery, BoxError> {
        if options.ext || options.gamename.is_some() {
            return Err(format!(
                "{}: the Teeworlds masters take no extended form or game name",
                self.game.id()
            )
            .into());
        }
        Ok(match self.game {
            TeeworldsGame::Teeworlds => MasterQuery::Udp(Master6::new().boxed()),
            TeeworldsGame::Teeworlds07 => MasterQuery::Udp(Master7::new().boxed()),
            TeeworldsGame::Ddnet => MasterQuery::Http {
                default_url: Some(crate::http::DEFAULT_URL),
                parse: crate::http::parse,
            },
        })
    }

    fn decode(&self, datagram: &[u8]) -> Result<Decoded, DecodeError> {
        decoded(datagram)
    }

    /// DDNet's extended info (`iext` + `iex+`) and legacy 64-client info (`dtsf` parts) are
    /// put together as the client does ([`crate::assemble`]); master lists merged.
    fn decode_parts(&self, datagrams: &[&[u8]]) -> Result<Decoded, DecodeError> {
        let mut assembly = crate::assemble::Assembly::new();
        let mut form = None;
        for d in datagrams {
            match decode(d)? {
                Packet::Six(six::Packet::InfoExtended(i)) => {
                    assembly.add_main(i);
                    form = Some(Form::Extended);
                }
                Packet::Six(six::Packet::InfoMore(m)) => {
                    assembly.add_more(m);
                    form = form.or(Some(Form::Extended));
                }
                Packet::Six(six::Packet::Info64(i)) => {
                    assembly.add_legacy(i);
                    form = Some(Form::Legacy64);
                }
                _ => return fragstat_core::registry::decode_list_parts(self, datagrams),
            }
        }
        let datagram_count = assembly.datagrams();
        let (Some(form), Some((info, complete))) = (form, assembly.finish()) else {
            return Err(DecodeError::Invalid {
                field: "iext",
                offset: 0,
                reason:
                    "the parts of a reply need its first datagram (iext, or the dtsf with offset 0)",
            });
        };
        Ok(Decoded::Server(Box::new(from_six(
            &info,
            form,
            datagram_count,
            complete,
        ))))
    }

    fn emulated_server(&self, config: &EmuServer) -> Result<Box<dyn Service>, EmuError> {
        Ok(Box::new(EmulatedServer::new(self.server_config(config)?)))
    }

    fn emulated_master(&self, config: &EmuMaster) -> Result<Box<dyn Service>, EmuError> {
        // DDNet's own master is HTTP ([`Self::emulated_http_list`]); the emulated UDP one is
        // the 0.6 master DDNet used before it (read it as `teeworlds`).
        Ok(Box::new(EmulatedMaster::new(
            config.servers.clone(),
            self.game == TeeworldsGame::Teeworlds07,
        )))
    }

    /// DDNet's `servers.json`: each server with the info its emulator answers with.
    fn emulated_http_list(
        &self,
        servers: &[(SocketAddr, EmuServer)],
    ) -> Result<HttpBody, EmuError> {
        if self.game != TeeworldsGame::Ddnet {
            return Err(EmuError(format!(
                "{}: the master is a UDP master (serve it without an HTTP list)",
                self.game.id()
            )));
        }
        let mut list = crate::http::List::default();
        for (addr, config) in servers {
            let c = self.server_config(config)?;
            list.servers.push(crate::http::Server::new(
                vec![format!("tw-0.6+udp://{addr}")],
                Some("eu:de".into()),
                &crate::http::Info::of_emulated(&c),
            ));
        }
        Ok(HttpBody {
            content_type: "application/json",
            body: crate::http::render(&list),
        })
    }
}

impl TeeworldsEntry {
    /// The emulator's configuration for `config`, or why the protocol cannot carry it.
    fn server_config(&self, config: &EmuServer) -> Result<ServerConfig, EmuError> {
        let flavor = self.game.flavor();
        let limit = flavor.max_clients();
        if config.players > limit {
            return Err(EmuError(format!(
                "{} clients: a {} server has at most {limit}",
                config.players,
                self.title()
            )));
        }
        if u64::from(config.max_players) < config.players as u64 {
            return Err(EmuError(format!(
                "{} client slots cannot hold {} clients",
                config.max_players, config.players
            )));
        }
        for (field, v, max) in [("server name", &config.name, 63), ("map", &config.map, 31)] {
            if v.contains(&0) || v.len() > max {
                return Err(EmuError(format!(
                    "the {field} must be at most {max} bytes without NUL"
                )));
            }
        }
        if config.heartbeat_to.is_some() {
            return Err(EmuError(
                "Teeworlds emulators do not register with masters".into(),
            ));
        }
        let mut c = ServerConfig::sample(flavor, &config.name, 0);
        if !config.map.is_empty() {
            c.map = config.map.clone();
        }
        if let Some(gt) = &config.gametype {
            if gt.contains('\0') || gt.len() > 15 {
                return Err(EmuError("the game type must be at most 15 bytes".into()));
            }
            c.gametype = gt.as_bytes().to_vec();
        }
        c.max_clients = config.max_players;
        c.max_players = config.max_players;
        c.password = config.password;
        c.set_clients(config.players, config.seed);
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_games_by_id_and_alias() {
        assert_eq!(find("tees").unwrap().id(), "teeworlds");
        assert_eq!(find("DDNet").unwrap().id(), "ddnet");
        assert_eq!(find("tw07").unwrap().master_port(), Some(8283));
        assert!(find("q3").is_none());
    }

    #[test]
    fn ddnet_lists_over_http() {
        let g = TeeworldsEntry::new(TeeworldsGame::Ddnet);
        assert!(matches!(
            g.master_query(&MasterOptions::default()).unwrap(),
            MasterQuery::Http {
                default_url: Some(_),
                ..
            }
        ));
        assert!(g
            .master_query(&MasterOptions::default().with_ext(true))
            .is_err());
        assert!(g.emulated_server(&EmuServer::new("x", "", 129)).is_err());
        assert!(TeeworldsEntry::new(TeeworldsGame::Teeworlds)
            .emulated_server(&EmuServer::new("x", "", 17).with_max_players(20))
            .is_err());
    }
}
