//! The family in the game registry: `teeworlds` (0.6, DDNet's extended request; vanilla
//! replies accepted), `teeworlds07` (0.7 with the token handshake) and `ddnet` (the extended
//! query and DDNet's HTTP master).

use std::sync::Arc;

use fragstat_core::model::{MasterEntry, ServerInfo};
use fragstat_core::registry::MasterQueryError;
use fragstat_core::registry::{
    Ask, Decoded, Family, FamilyGame, GameMeta, MasterOptions, MasterQuery,
};
use fragstat_core::{DecodeError, Exchange, ExchangeExt};
use serde::Serialize;

use crate::exchange::{Master6, Master7, Mode, Query6, Query7};
use crate::game::TeeworldsGame;
use crate::packet::{decode, Packet};
use crate::seven::{self, Body};
use crate::six;
use crate::view::{from_seven, from_six, Form};

/// The family as the facade registers it.
pub const FAMILY: Family = Family::of::<TeeworldsGame>();

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

impl FamilyGame for TeeworldsGame {
    const FAMILY: &'static str = "teeworlds";
    const FAMILY_TITLE: &'static str = "Teeworlds 0.6 and 0.7, DDNet";
    const ALL: &'static [Self] = &TeeworldsGame::ALL;

    fn meta(self) -> GameMeta {
        let (title, aliases, master_port) = match self {
            // teeworlds 0.6 mastersrv.h MASTERSERVER_PORT.
            TeeworldsGame::Teeworlds => (
                "Teeworlds 0.6",
                &["tees", "tee", "teeworlds06", "tw"][..],
                Some(8300),
            ),
            // teeworlds 0.7 mastersrv.h MASTERSERVER_PORT.
            TeeworldsGame::Teeworlds07 => {
                ("Teeworlds 0.7", &["tw07", "teeworlds7"][..], Some(8283))
            }
            // DDNet's master is HTTP.
            TeeworldsGame::Ddnet => ("DDraceNetwork", &["ddrace", "ddracenetwork"][..], None),
        };
        // 0.6 (and DDNet) and 0.7 servers do not answer each other's queries.
        let hint = match self {
            TeeworldsGame::Teeworlds | TeeworldsGame::Ddnet => {
                "a Teeworlds 0.7 server? query it as teeworlds07"
            }
            TeeworldsGame::Teeworlds07 => "a 0.6 or DDNet server? query it as teeworlds or ddnet",
        };
        // ddnet/ddnet `src/engine/client/client.h` (`CONNECTLINK_DOUBLE_SLASH "ddnet://"`,
        // handled in `client.cpp`); the DDNet client joins Teeworlds 0.6 servers too. It joins
        // 0.7 servers (`tw-0.7+udp://`) only from its own list, not from a link.
        let join = match self {
            TeeworldsGame::Teeworlds | TeeworldsGame::Ddnet => Some("ddnet://"),
            TeeworldsGame::Teeworlds07 => None,
        };
        GameMeta::new(Self::FAMILY, self.id(), title, 8303)
            .aliases(aliases)
            .master_port(master_port)
            .unanswered_hint(hint)
            .join_scheme(join)
            // The DDNet client's rule (`IsRace`/`IsDDNet`, src/game/client/gameclient.cpp):
            // "race", "fastcap" and DDNet's own game types score times.
            .race_gametypes(&["race", "fastcap", "ddnet"])
            // DDNet's `client_score_kind`, 0.7's time-score flag.
            .declares_score_kind(true)
            .engine(match self {
                TeeworldsGame::Ddnet => fragstat_core::manners::ServerEngine::Ddnet,
                _ => fragstat_core::manners::ServerEngine::Teeworlds,
            })
    }

    fn server_query(self, _ask: Ask) -> Box<dyn Exchange<Output = ServerInfo>> {
        // Every reply carries the clients: nothing to ask for separately.
        match self {
            TeeworldsGame::Teeworlds07 => Query7::new().boxed(),
            TeeworldsGame::Teeworlds | TeeworldsGame::Ddnet => Query6::new(Mode::Extended).boxed(),
        }
    }

    fn master_query(self, options: &MasterOptions) -> Result<MasterQuery, MasterQueryError> {
        if options.ext || options.gamename.is_some() {
            return Err(MasterQueryError::option(
                self.id(),
                "the Teeworlds masters take no extended form or game name",
            ));
        }
        Ok(match self {
            TeeworldsGame::Teeworlds => MasterQuery::Udp(Master6::new().boxed()),
            TeeworldsGame::Teeworlds07 => MasterQuery::Udp(Master7::new().boxed()),
            TeeworldsGame::Ddnet => MasterQuery::Http {
                default_url: Some(crate::http::DEFAULT_URL),
                parse: crate::http::parse,
            },
        })
    }

    fn decode(self, datagram: &[u8]) -> Result<Decoded, DecodeError> {
        decoded(datagram)
    }

    /// DDNet's extended info (`iext` + `iex+`) and legacy 64-client info (`dtsf` parts) are
    /// put together as the client does ([`crate::assemble`]); master lists merged.
    fn decode_parts(self, datagrams: &[&[u8]]) -> Result<Decoded, DecodeError> {
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
                _ => {
                    return fragstat_core::registry::decode_list_parts(
                        |d| self.decode(d),
                        datagrams,
                    )
                }
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

    #[cfg(feature = "emulate")]
    fn emulator(&self) -> Option<&dyn fragstat_core::registry::Emulate> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DDNet's client joins DDNet and 0.6 servers by link, not 0.7 ones; every game of the
    /// family may say its score kind, and race game types score times.
    #[test]
    fn join_scheme_and_race_rule() {
        use fragstat_core::model::ScoreKind;
        for (g, link) in [
            (TeeworldsGame::Ddnet, Some("ddnet://127.0.0.1:8303")),
            (TeeworldsGame::Teeworlds, Some("ddnet://127.0.0.1:8303")),
            (TeeworldsGame::Teeworlds07, None),
        ] {
            let m = g.meta();
            assert_eq!(m.join_url("127.0.0.1:8303").as_deref(), link, "{g:?}");
            assert!(m.declares_score_kind, "{g:?}");
            assert!(m.scores_are_times(Some("DDraceNetwork"), None), "{g:?}");
            assert!(m.scores_are_times(Some("iFastCap"), None), "{g:?}");
            assert!(!m.scores_are_times(Some("CTF"), None), "{g:?}");
            assert!(!m.scores_are_times(Some("Race"), Some(ScoreKind::Points)));
        }
    }

    #[test]
    fn ddnet_lists_over_http() {
        let g = TeeworldsGame::Ddnet;
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
    }
}
