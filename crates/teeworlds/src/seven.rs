//! Teeworlds 0.7 packets (and DDNet's 0.7 "sixup" side): the token handshake and the
//! connectionless server info and master packets.
//!
//! Sources: teeworlds `src/engine/shared/network.h` (`NET_PACKETFLAG_*`, `NET_CTRLMSG_TOKEN`,
//! `NET_TOKENREQUEST_DATASIZE` 512, `NET_TOKEN_NONE`), `network_token.cpp`
//! (`CNetTokenManager::ProcessMessage`: a token request whose data is under 512 bytes gets no
//! answer), `server.cpp` (`GenerateServerInfo`), `scripts/tw_api.py`; ddnet `server.cpp`
//! (`CacheServerInfoSixup`).
//!
//! * Control packet: `(1 << 2) = 0x04`, ack `00`, chunks `00`, the receiver's token (4 bytes,
//!   `FF FF FF FF` when unknown), then the message: `05` (token) + the sender's token.
//! * Connectionless packet: `(8 << 2) | 1 = 0x21`, the receiver's token, the sender's token,
//!   then `FF FF FF FF` + a 4-letter type and the payload. Integers in the payload are
//!   variable-length ([`fragstat_core::wire::Reader::varint`]).

use crate::Encode;
use std::net::SocketAddr;

use fragstat_core::wire::{bounded, excerpt, put_varint, Reader};

use crate::six::{list_entries, put_list_entries, types, MAX_CLIENTS_PER_PACKET};
use crate::DecodeError;
use crate::EncodeError;

/// The token of "no token yet" (`NET_TOKEN_NONE`).
pub const TOKEN_NONE: u32 = 0xFFFF_FFFF;

/// The one browse token never sent: −1, the varint byte `0x40`. Teeworlds 0.7.5's server
/// reads it as "no request" (teeworlds `src/engine/server/server.cpp` at tag 0.7.5 =
/// 4fc25a17, lines 1129 and 1158: `if(Token != -1)` skips `pPacker->Reset()`, then line
/// 1217 packs into the uninitialised `CPacker` of line 1214): Debian's 0.7.5-2 dies of
/// SIGSEGV (observed on loopback, 2026-11-28). Fixed after 0.7.5 by teeworlds 5d682733,
/// never released. [`Packet`]'s encoder refuses it and [`crate::exchange::Query7`] never
/// draws it.
pub const CRASHING_BROWSE_TOKEN: i32 = -1;

/// Bytes of data a token request must carry to be answered (`NET_TOKENREQUEST_DATASIZE`).
pub const TOKEN_REQUEST_DATA: usize = 512;

/// First byte of a control packet (`NET_PACKETFLAG_CONTROL << 2`).
pub const CONTROL: u8 = 0x04;

/// First byte of a connectionless packet (`NET_PACKETFLAG_CONNLESS << 2 | NET_PACKETVERSION`).
pub const CONNLESS: u8 = 0x21;

/// The control message that carries a token (`NET_CTRLMSG_TOKEN`).
pub const CTRL_TOKEN: u8 = 5;

/// Client flags in 0.7 info (`GenerateServerInfo`): 1 spectator, 2 bot.
pub mod client_flags {
    /// A spectator.
    pub const SPECTATOR: i32 = 1;
    /// A bot.
    pub const BOT: i32 = 2;
}

/// Server flags in 0.7 info: 1 password, 2 scores are times.
pub mod server_flags {
    /// A password is needed.
    pub const PASSWORD: i32 = 1;
    /// Scores are race times (DDNet).
    pub const TIMESCORE: i32 = 2;
}

/// A client in a 0.7 info reply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Client {
    /// Name, UTF-8.
    pub name: Vec<u8>,
    /// Clan.
    pub clan: Vec<u8>,
    /// ISO 3166-1 numeric country, −1 none.
    pub country: i32,
    /// Score (DDNet sixup: negated time, −1 none).
    pub score: i32,
    /// Flags: 1 spectator, 2 bot (0 a player).
    pub flags: i32,
}

/// A 0.7 `inf3` reply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Info {
    /// The browse token from the request, echoed.
    pub token: i32,
    /// Version (`0.7.5`; DDNet `0.7↔0.6.4, 16.4`).
    pub version: Vec<u8>,
    /// Server name.
    pub name: Vec<u8>,
    /// The server's host name (`sv_hostname`, often empty).
    pub hostname: Vec<u8>,
    /// Map.
    pub map: Vec<u8>,
    /// Game type.
    pub gametype: Vec<u8>,
    /// Flags: 1 password, 2 time scores.
    pub flags: i32,
    /// Skill level (0 casual, 1 normal, 2 competitive).
    pub skill_level: i32,
    /// Players.
    pub num_players: i32,
    /// Player slots.
    pub max_players: i32,
    /// Clients.
    pub num_clients: i32,
    /// Client slots.
    pub max_clients: i32,
    /// Clients in this datagram.
    pub clients: Vec<Client>,
    /// The datagram ended inside a client.
    pub truncated: bool,
}

/// The payload of a connectionless 0.7 packet.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Body {
    /// `gie3` + varint browse token.
    GetInfo {
        /// The browse token.
        token: i32,
    },
    /// `inf3`.
    Info(Info),
    /// `req2`.
    GetList,
    /// `lis2`.
    List(Vec<SocketAddr>),
    /// `cou2`.
    GetCount,
    /// `siz2`.
    Count(u16),
}

/// One 0.7 datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Packet {
    /// A token request (a control packet to `NET_TOKEN_NONE`) carrying the requester's token.
    TokenRequest {
        /// The requester's token.
        token: u32,
        /// Its data reaches 512 bytes (anything shorter is not answered).
        padded: bool,
    },
    /// A token reply: addressed to `to` (the requester's token), carrying the sender's
    /// `token`.
    Token {
        /// The token this packet is addressed to.
        to: u32,
        /// The sender's token, to put in every later packet to it.
        token: u32,
    },
    /// A connectionless packet.
    Connless {
        /// The receiver's token.
        token: u32,
        /// The sender's token (the token to answer to).
        response_token: u32,
        /// Its payload.
        body: Body,
    },
}

fn client(r: &mut Reader<'_>) -> Result<Client, DecodeError> {
    Ok(Client {
        name: r.cstr("client name")?.to_vec(),
        clan: r.cstr("client clan")?.to_vec(),
        country: r.varint("client country")?,
        score: r.varint("client score")?,
        flags: r.varint("client flags")?,
    })
}

fn info(r: &mut Reader<'_>) -> Result<Info, DecodeError> {
    let mut i = Info {
        token: r.varint("token")?,
        version: r.cstr("version")?.to_vec(),
        name: r.cstr("name")?.to_vec(),
        hostname: r.cstr("hostname")?.to_vec(),
        map: r.cstr("map")?.to_vec(),
        gametype: r.cstr("gametype")?.to_vec(),
        flags: r.varint("flags")?,
        skill_level: r.varint("skill_level")?,
        num_players: r.non_negative("num_players", Reader::varint)?,
        max_players: r.non_negative("max_players", Reader::varint)?,
        num_clients: r.non_negative("num_clients", Reader::varint)?,
        max_clients: r.non_negative("max_clients", Reader::varint)?,
        ..Info::default()
    };
    while !r.is_empty() {
        let at = r.offset();
        bounded(
            i.clients.len() as u64 + 1,
            MAX_CLIENTS_PER_PACKET,
            "clients",
            at,
        )?;
        match client(r) {
            Ok(c) => i.clients.push(c),
            // Cut inside a client (its strings) keeps the complete ones; a bad varint
            // (overlong, over 32 bits, cut inside) is an error.
            Err(DecodeError::Missing { .. }) => {
                i.truncated = true;
                break;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(i)
}

/// Decodes one 0.7 datagram.
///
/// ```
/// use fragstat_teeworlds::seven::{decode, Packet};
/// let p = decode(b"\x04\x00\x00\x0b\xad\xbe\xef\x05\x12\x34\x56\x78")?;
/// assert_eq!(p, Packet::Token { to: 0x0badbeef, token: 0x12345678 });
/// # Ok::<(), fragstat_teeworlds::DecodeError>(())
/// ```
pub fn decode(datagram: &[u8]) -> Result<Packet, DecodeError> {
    let mut r = Reader::new(datagram);
    match r.u8("header")? {
        CONTROL => {
            r.expect("ack", &[0, 0], "control packet with an ack or chunks")?;
            let to = r.u32_be("token")?;
            let at = r.offset();
            let msg = r.u8("control message")?;
            if msg != CTRL_TOKEN {
                return Err(DecodeError::Unsupported {
                    field: "control message",
                    offset: at,
                    value: msg.to_string(),
                });
            }
            let token = r.u32_be("token")?;
            let data = 5 + r.take_rest().len();
            if to == TOKEN_NONE {
                Ok(Packet::TokenRequest {
                    token,
                    padded: data >= TOKEN_REQUEST_DATA,
                })
            } else {
                Ok(Packet::Token { to, token })
            }
        }
        CONNLESS => {
            let token = r.u32_be("token")?;
            let response_token = r.u32_be("response token")?;
            let at = r.offset();
            let ty: [u8; 8] =
                r.take("packet type", 8)?
                    .try_into()
                    .map_err(|_| DecodeError::Missing {
                        field: "packet type",
                        offset: at,
                    })?;
            let body = match ty {
                types::GETINFO => Body::GetInfo {
                    token: r.varint("token")?,
                },
                types::INFO => Body::Info(info(&mut r)?),
                types::GETLIST => Body::GetList,
                types::LIST => Body::List(list_entries(&mut r)?),
                types::GETCOUNT => Body::GetCount,
                types::COUNT => Body::Count(r.u16_be("server count")?),
                _ => {
                    return Err(DecodeError::UnknownCommand {
                        offset: at,
                        command: excerpt(&ty),
                    })
                }
            };
            Ok(Packet::Connless {
                token,
                response_token,
                body,
            })
        }
        _ => Err(DecodeError::BadHeader {
            expected: &[CONNLESS],
            found: datagram.iter().take(1).copied().collect(),
        }),
    }
}

fn put_str(out: &mut Vec<u8>, s: &[u8], field: &'static str) -> Result<(), EncodeError> {
    if s.contains(&0) {
        return Err(EncodeError::forbidden(field));
    }
    out.extend_from_slice(s);
    out.push(0);
    Ok(())
}

impl Packet {
    /// A token request from `token`, padded to be answered.
    pub fn token_request(token: u32) -> Self {
        Packet::TokenRequest {
            token,
            padded: true,
        }
    }
}

impl Encode for Packet {
    /// Appends the datagram to `out`.
    fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        match self {
            Packet::TokenRequest { token, padded } => {
                out.extend_from_slice(&[CONTROL, 0, 0]);
                out.extend_from_slice(&TOKEN_NONE.to_be_bytes());
                let start = out.len();
                out.push(CTRL_TOKEN);
                out.extend_from_slice(&token.to_be_bytes());
                if *padded {
                    out.resize(start + TOKEN_REQUEST_DATA, 0);
                }
            }
            Packet::Token { to, token } => {
                if *to == TOKEN_NONE {
                    return Err(EncodeError::Invalid("a token reply to NET_TOKEN_NONE"));
                }
                out.extend_from_slice(&[CONTROL, 0, 0]);
                out.extend_from_slice(&to.to_be_bytes());
                out.push(CTRL_TOKEN);
                out.extend_from_slice(&token.to_be_bytes());
            }
            Packet::Connless {
                token,
                response_token,
                body,
            } => {
                out.push(CONNLESS);
                out.extend_from_slice(&token.to_be_bytes());
                out.extend_from_slice(&response_token.to_be_bytes());
                match body {
                    Body::GetInfo { token } => {
                        if *token == CRASHING_BROWSE_TOKEN {
                            return Err(EncodeError::Invalid(
                                "browse token -1 (crashes Teeworlds 0.7.5 servers)",
                            ));
                        }
                        out.extend_from_slice(&types::GETINFO);
                        put_varint(out, *token);
                    }
                    Body::Info(i) => {
                        if i.truncated {
                            return Err(EncodeError::Invalid("a truncated reply"));
                        }
                        out.extend_from_slice(&types::INFO);
                        put_varint(out, i.token);
                        put_str(out, &i.version, "version")?;
                        put_str(out, &i.name, "name")?;
                        put_str(out, &i.hostname, "hostname")?;
                        put_str(out, &i.map, "map")?;
                        put_str(out, &i.gametype, "gametype")?;
                        for v in [
                            i.flags,
                            i.skill_level,
                            i.num_players,
                            i.max_players,
                            i.num_clients,
                            i.max_clients,
                        ] {
                            put_varint(out, v);
                        }
                        for c in &i.clients {
                            put_str(out, &c.name, "client name")?;
                            put_str(out, &c.clan, "client clan")?;
                            put_varint(out, c.country);
                            put_varint(out, c.score);
                            put_varint(out, c.flags);
                        }
                    }
                    Body::GetList => out.extend_from_slice(&types::GETLIST),
                    Body::List(s) => {
                        out.extend_from_slice(&types::LIST);
                        put_list_entries(out, s);
                    }
                    Body::GetCount => out.extend_from_slice(&types::GETCOUNT),
                    Body::Count(n) => {
                        out.extend_from_slice(&types::COUNT);
                        out.extend_from_slice(&n.to_be_bytes());
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_bytes_as_observed() {
        let req = Packet::token_request(0x0badbeef).to_bytes().unwrap();
        assert_eq!(req.len(), 519, "7-byte header and 512 data bytes");
        assert_eq!(
            &req[..12],
            b"\x04\x00\x00\xff\xff\xff\xff\x05\x0b\xad\xbe\xef"
        );
        assert_eq!(decode(&req).unwrap(), Packet::token_request(0x0badbeef));
        let short = &req[..12];
        assert_eq!(
            decode(short).unwrap(),
            Packet::TokenRequest {
                token: 0x0badbeef,
                padded: false
            }
        );
        let get = Packet::Connless {
            token: 0x11223344,
            response_token: 0x0badbeef,
            body: Body::GetInfo { token: 0x0badbeef },
        }
        .to_bytes()
        .unwrap();
        assert_eq!(
            get,
            b"\x21\x11\x22\x33\x44\x0b\xad\xbe\xef\xff\xff\xff\xffgie3\xaf\xfb\xed\xba\x01"
        );
    }

    #[test]
    fn info_round_trips_and_bad_varints_fail() {
        let p = Packet::Connless {
            token: 1,
            response_token: 2,
            body: Body::Info(Info {
                token: -5,
                version: "0.7↔0.6.4, 16.4".as_bytes().to_vec(),
                name: b"n".to_vec(),
                map: b"dm1".to_vec(),
                gametype: b"DM".to_vec(),
                flags: 2,
                num_players: 1,
                max_players: 8,
                num_clients: 2,
                max_clients: 8,
                clients: vec![
                    Client {
                        name: b"a".to_vec(),
                        country: -1,
                        score: -1,
                        ..Client::default()
                    },
                    Client {
                        name: b"b".to_vec(),
                        flags: 1,
                        score: 100_000,
                        ..Client::default()
                    },
                ],
                ..Info::default()
            }),
        };
        let bytes = p.to_bytes().unwrap();
        assert_eq!(decode(&bytes).unwrap(), p);
        // Cut inside the last varint: an error naming it, not a silent partial.
        let e = decode(&bytes[..bytes.len() - 2]).unwrap_err();
        assert_eq!(e.field(), Some("client score"));
        assert_eq!(e.kind(), "truncated");
        // A name cut before its NUL: the complete client is kept.
        let cut = bytes.iter().rposition(|&b| b == b'b').unwrap() + 1;
        let Packet::Connless {
            body: Body::Info(i),
            ..
        } = decode(&bytes[..cut]).unwrap()
        else {
            panic!()
        };
        assert_eq!((i.clients.len(), i.truncated), (1, true));
    }

    /// Token −1 (varint `0x40`) crashes Teeworlds 0.7.5: it cannot be encoded; its
    /// neighbours can.
    #[test]
    fn browse_token_minus_one_is_never_encoded() {
        let get = |token| Packet::Connless {
            token: 1,
            response_token: 2,
            body: Body::GetInfo { token },
        };
        assert!(get(CRASHING_BROWSE_TOKEN).to_bytes().is_err());
        let mut v = Vec::new();
        put_varint(&mut v, -1);
        assert_eq!(v, [0x40], "the byte the server reads as -1");
        for t in [0, -2, i32::MAX, i32::MIN] {
            let b = get(t).to_bytes().unwrap();
            assert!(!b.ends_with(b"gie3\x40"), "{t}");
            assert_eq!(decode(&b).unwrap(), get(t));
        }
        // Decoding one (someone else's request) still works.
        let mut d = get(0).to_bytes().unwrap();
        *d.last_mut().unwrap() = 0x40;
        assert_eq!(decode(&d).unwrap(), get(-1));
    }

    #[test]
    fn other_control_messages_are_named() {
        let e = decode(b"\x04\x00\x00\xff\xff\xff\xff\x01\x00\x00\x00\x00").unwrap_err();
        assert_eq!(
            (e.kind(), e.field(), e.offset()),
            ("unsupported", Some("control message"), 7)
        );
        let e = decode(b"\xff\xff").unwrap_err();
        assert_eq!(e.kind(), "bad_header");
    }
}
