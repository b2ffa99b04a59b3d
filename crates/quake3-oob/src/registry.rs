//! The Quake III family in the game registry: every named game of [`Quake3Game`] and `oob:NN`.

use std::sync::Arc;

use fragstat_core::model::MasterEntry;
use fragstat_core::registry::MasterQueryError;
use fragstat_core::registry::{
    Ask, Decoded, EndOfList, Family, FamilyGame, GameMeta, ListForm, MasterOptions, MasterQuery,
};
use fragstat_core::text::latin1;
use fragstat_core::{DecodeError, Exchange, ExchangeExt};
use serde::Serialize;

use crate::exchange::{MasterExchange, Request, ServerExchange};
use crate::game::{MasterForm, Quake3Game};
use crate::master::{GetServers, Terminator};
use crate::packet::{decode, Packet};
use crate::view::server_info;

/// The family as the facade registers it.
pub const FAMILY: Family = Family::of::<Quake3Game>();

#[derive(Debug, PartialEq, Serialize)]
struct ChallengeFields {
    challenge: Option<String>,
}

#[derive(Debug, PartialEq, Serialize)]
struct ArgsFields {
    args: Vec<String>,
}

#[derive(Debug, PartialEq, Serialize)]
struct ChallengeResponseFields {
    challenge: String,
    client_challenge: Option<String>,
    protocol: Option<i32>,
}

#[derive(Debug, PartialEq, Serialize)]
struct GetServersFields {
    ext: bool,
    game: Option<String>,
    protocol: i32,
    options: Vec<String>,
}

#[derive(Debug, PartialEq, Serialize)]
struct HeartbeatFields {
    name: String,
    flatline: bool,
}

#[derive(Debug, PartialEq, Serialize)]
struct ListDetails {
    ext: bool,
    terminator: Option<&'static str>,
    trailing: Option<String>,
    /// The Dæmon master's packet number, count and featured label.
    #[serde(skip_serializing_if = "Option::is_none")]
    sequence: Option<SequenceFields>,
}

#[derive(Debug, PartialEq, Serialize)]
struct SequenceFields {
    index: u32,
    count: u32,
    label: String,
}

#[derive(Debug, PartialEq, Serialize)]
struct LinksDetails {
    links: usize,
    trailing: Option<String>,
}

fn terminator_name(t: Terminator) -> &'static str {
    match t {
        Terminator::Eot => "EOT",
        Terminator::EotBare => "EOT (without NULs)",
        Terminator::Eof => "EOF",
    }
}

impl FamilyGame for Quake3Game {
    const FAMILY: &'static str = "quake3";
    const FAMILY_TITLE: &'static str =
        "Quake III out-of-band (Q3A, W:ET, ET: Legacy, RtCW, OpenArena, Urban Terror, Jedi Knight, SoF2, Call of Duty, MoHAA, Unvanquished, Tremulous, ioq3 games)";
    const ALL: &'static [Self] = &Quake3Game::ALL;

    fn meta(self) -> GameMeta {
        let spec = self.spec();
        let meta = GameMeta::new(Self::FAMILY, self.id(), self.title(), self.default_port())
            .aliases(self.aliases())
            .echoes_challenge(self.echoes_challenge())
            .join_scheme(self.join_scheme())
            // ioquake3's limits for the whole family: most of its servers run ioq3 or an engine
            // derived from it, and the limit only spaces an eleventh query within a second.
            .engine(fragstat_core::manners::ServerEngine::Ioq3);
        match spec.master_port {
            Some(port) => meta.master_port(port),
            None => meta,
        }
    }

    /// Also `oob:NN`, a protocol named by its number.
    fn parse(id: &str) -> Option<Self> {
        id.parse().ok()
    }

    fn server_query(
        self,
        ask: Ask,
    ) -> Box<dyn Exchange<Output = fragstat_core::model::ServerInfo>> {
        // getstatus carries the players and every server variable, getinfo only the short
        // info plus the counts behind the bot count (`clients`, `g_humanplayers`). The player
        // list needs getstatus alone: one request and one reply per server. Every variable
        // (`rules`) means both replies, so the bot count comes with --rules
        // (docs/benchmarks.md: getinfo costs the server farm nearly as much as getstatus).
        let q3 = if ask.rules {
            Request::Both
        } else if ask.players {
            Request::Status
        } else {
            Request::Info
        };
        let game = self;
        ServerExchange::new(q3)
            .accept_unverified(!self.echoes_challenge())
            .direction_byte(self.spec().direction_byte)
            .map_output(move |reply| reply.into_server_info(game))
            .boxed()
    }

    fn master_query(self, options: &MasterOptions) -> Result<MasterQuery, MasterQueryError> {
        if self == Quake3Game::Iw4x {
            if options.ext {
                return Err(MasterQueryError::option(
                    self.id(),
                    "IW4x's list is served over HTTP: there is no extended request",
                ));
            }
            return Ok(MasterQuery::Http {
                default_url: Some(crate::iw4x::DEFAULT_URL),
                parse: crate::iw4x::parse,
            });
        }
        // Dæmon's `dual` request and CoD4X's TCP master (crate::daemon, crate::cod4x).
        if self == Quake3Game::Unvanquished {
            return crate::daemon::master_query(self, options);
        }
        if self == Quake3Game::Cod4x {
            return crate::cod4x::master_query(&self.id(), options);
        }
        if self.spec().master == MasterForm::None {
            return Err(MasterQueryError::NoMaster {
                game: self.title().to_string(),
                protocol: "Quake III",
                reason: match self {
                    Quake3Game::Mohaa => "its servers list through GameSpy",
                    _ => "none is known",
                },
            });
        }
        let request = master_request(self, options)?;
        let ex = MasterExchange::new(&request)?
            .with_quiet(options.quiet)
            .bare_eot_ends(options.end != Some(EndOfList::EveryPacket))
            .map_output(|list| list.into_iter().map(MasterEntry::new).collect());
        Ok(MasterQuery::Udp(Box::new(ex)))
    }

    fn decode(self, datagram: &[u8]) -> Result<Decoded, DecodeError> {
        // CoD4X's master list is a TCP stream, not datagrams (crate::cod4x).
        if self == Quake3Game::Cod4x && crate::cod4x::is_stream(datagram) {
            return crate::cod4x::decoded(datagram);
        }
        let game = self;
        Ok(match decode(datagram)? {
            Packet::InfoResponse(i) => Decoded::Server(Box::new(server_info(game, Some(i), None))),
            Packet::StatusResponse(s) => {
                Decoded::Server(Box::new(server_info(game, None, Some(s))))
            }
            Packet::ServersResponse(l) => Decoded::Servers {
                details: Some(Arc::new(ListDetails {
                    ext: l.ext,
                    terminator: l.terminator.map(terminator_name),
                    trailing: (!l.trailing.is_empty()).then(|| latin1(&l.trailing)),
                    sequence: l.sequence.map(|s| SequenceFields {
                        index: s.index,
                        count: s.count,
                        label: latin1(&s.label),
                    }),
                })),
                servers: l.servers.into_iter().map(MasterEntry::new).collect(),
            },
            Packet::ServerLinks(l) => Decoded::Servers {
                details: Some(Arc::new(LinksDetails {
                    links: l.links.len(),
                    trailing: (!l.trailing.is_empty()).then(|| latin1(&l.trailing)),
                })),
                servers: l
                    .links
                    .iter()
                    .map(|k| {
                        let mut e = MasterEntry::new(std::net::SocketAddr::V4(k.v4));
                        e.addresses = vec![k.v4.to_string(), k.v6.to_string()];
                        e
                    })
                    .collect(),
            },
            Packet::GetInfo { challenge } => Decoded::Packet {
                kind: "getinfo".into(),
                fields: Arc::new(ChallengeFields {
                    challenge: challenge.map(|c| latin1(&c)),
                }),
            },
            Packet::GetStatus { challenge } => Decoded::Packet {
                kind: "getstatus".into(),
                fields: Arc::new(ChallengeFields {
                    challenge: challenge.map(|c| latin1(&c)),
                }),
            },
            Packet::GetChallenge { args } => Decoded::Packet {
                kind: "getchallenge".into(),
                fields: Arc::new(ArgsFields {
                    args: args.iter().map(|a| latin1(a)).collect(),
                }),
            },
            Packet::ChallengeResponse(c) => Decoded::Packet {
                kind: "challengeResponse".into(),
                fields: Arc::new(ChallengeResponseFields {
                    challenge: latin1(&c.challenge),
                    client_challenge: c.client_challenge.map(|c| latin1(&c)),
                    protocol: c.protocol,
                }),
            },
            Packet::GetServers(g) => Decoded::Packet {
                kind: if g.ext { "getserversExt" } else { "getservers" }.into(),
                fields: Arc::new(GetServersFields {
                    ext: g.ext,
                    game: g.game.map(|c| latin1(&c)),
                    protocol: g.protocol,
                    options: g.options.iter().map(|o| latin1(o)).collect(),
                }),
            },
            Packet::Heartbeat(h) => Decoded::Packet {
                kind: "heartbeat".into(),
                fields: Arc::new(HeartbeatFields {
                    flatline: h.is_flatline(),
                    name: latin1(&h.name),
                }),
            },
        })
    }

    #[cfg(feature = "emulate")]
    fn emulator(&self) -> Option<&dyn fragstat_core::registry::Emulate> {
        Some(self)
    }
}

/// The `getservers` request `options` ask of `game`'s master: the extended one with `ext`,
/// else the catalogue's form ([`MasterOptions::form`]), else the game's own.
fn master_request(
    game: Quake3Game,
    options: &MasterOptions,
) -> Result<GetServers, MasterQueryError> {
    // Another release of the game: JK2 1.02 is 15, CoD 1.4 is 5, WoP 1.6 is 71…
    let protocol = options.protocol.unwrap_or(game.protocol());
    let ext_name = |name: Option<&str>| {
        options
            .gamename
            .clone()
            .or_else(|| name.map(str::to_string))
            .ok_or_else(|| {
                MasterQueryError::option(
                    game.id(),
                    "the extended master request needs a game name for this game",
                )
            })
    };
    if options.ext {
        return Ok(GetServers::ext(
            &ext_name(game.master_gamename())?,
            protocol,
        ));
    }
    Ok(match options.form {
        None | Some(ListForm::Own) => game.getservers_for(protocol),
        // The game's anonymous keywords (`full empty` for Activision's), or dpmaster's.
        Some(ListForm::Anonymous) => match game.spec().master {
            MasterForm::Anonymous(_) => game.getservers_for(protocol),
            _ => GetServers::anonymous(protocol),
        },
        Some(ListForm::Named(name)) => GetServers::named(name, protocol),
        // RtCW's legacy form (nksmnf/iortcw docs/RU/server.md §2: id's wolfmaster answers
        // `getservers 60` and nothing that names the game); GameserverLister's CoD form
        // (`'keywords': ''`, games/quake3.py:9-35).
        Some(ListForm::Short) => {
            let mut g = GetServers::anonymous(protocol);
            g.options.clear();
            g
        }
        Some(ListForm::Ext(name)) => GetServers::ext(&ext_name(Some(name))?, protocol),
        Some(_) => {
            return Err(MasterQueryError::option(
                game.id(),
                "its masters are asked with getservers, not over HTTP",
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only Quake III Arena's client (ioquake3) registers a URL scheme; no game here scores
    /// race times by its game type.
    #[test]
    fn join_scheme_of_quake3_only() {
        for g in Quake3Game::ALL {
            let m = g.meta();
            let want = (g == Quake3Game::Quake3).then_some("quake3://connect/127.0.0.1:27960");
            assert_eq!(m.join_url("127.0.0.1:27960").as_deref(), want, "{g}");
            assert!(m.race_gametypes.is_empty() && !m.declares_score_kind, "{g}");
        }
    }

    fn request(game: Quake3Game, options: &MasterOptions) -> Vec<u8> {
        let MasterQuery::Udp(mut ex) = game.master_query(options).unwrap() else {
            panic!("{game}")
        };
        ex.requests(0).unwrap().remove(0)
    }

    /// Each game's own master request, for its protocol or another release's.
    #[test]
    fn master_requests_per_game_and_protocol() {
        let plain = MasterOptions::default();
        let cases: [(Quake3Game, Option<i32>, &[u8]); 6] = [
            (Quake3Game::JediOutcast, None, b"getservers 16 empty full"),
            (
                Quake3Game::JediOutcast,
                Some(15),
                b"getservers 15 empty full",
            ),
            (
                Quake3Game::WorldOfPadman,
                Some(71),
                b"getservers WorldofPadman 71 empty full",
            ),
            (Quake3Game::Sof2, None, b"getservers 2004 SOF2FULL"),
            (Quake3Game::Cod2, None, b"getservers 118 full empty"),
            (
                Quake3Game::Unvanquished,
                None,
                b"getserversExt UNVANQUISHED 86 dual empty full",
            ),
        ];
        for (game, protocol, want) in cases {
            let got = request(game, &plain.clone().with_protocol(protocol));
            assert_eq!(
                got,
                [&b"\xff\xff\xff\xff"[..], want, b"\n"].concat(),
                "{game}"
            );
        }
        // The catalogue's forms: RtCW's short form, a name, the anonymous form of a named game.
        let forms: [(Quake3Game, ListForm, Option<i32>, &[u8]); 4] = [
            (
                Quake3Game::Rtcw,
                ListForm::Short,
                Some(57),
                b"getservers 57",
            ),
            (Quake3Game::Cod, ListForm::Short, None, b"getservers 6"),
            (
                Quake3Game::OpenArena,
                ListForm::Named("Quake3Arena"),
                None,
                b"getservers Quake3Arena 71 empty full",
            ),
            (
                Quake3Game::Cod2,
                ListForm::Anonymous,
                None,
                b"getservers 118 full empty",
            ),
        ];
        for (game, form, protocol, want) in forms {
            let o = plain.clone().with_form(Some(form)).with_protocol(protocol);
            let got = request(game, &o);
            assert_eq!(
                got,
                [&b"\xff\xff\xff\xff"[..], want, b"\n"].concat(),
                "{game}"
            );
        }
        let ext = request(Quake3Game::Unvanquished, &plain.clone().with_ext(true));
        assert!(ext.starts_with(b"\xff\xff\xff\xffgetserversExt UNVANQUISHED 86 "));
        assert!(Quake3Game::Mohaa.master_query(&plain).is_err());
        // CoD4X's client: TCP, `getservers 21 full empty \0` (cl_main.c:1414-1422).
        let MasterQuery::Tcp { request, .. } = Quake3Game::Cod4x.master_query(&plain).unwrap()
        else {
            panic!("cod4x lists over TCP")
        };
        assert_eq!(request, b"\xff\xff\xff\xffgetservers 21 full empty \0");
        assert!(matches!(
            Quake3Game::Iw4x.master_query(&plain).unwrap(),
            MasterQuery::Http { .. }
        ));
    }
}
