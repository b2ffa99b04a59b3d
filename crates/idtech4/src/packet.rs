//! idTech 4 connectionless packets: `FF FF`, a NUL-terminated command, then binary fields,
//! little-endian (`idBitMsg`). Sources: dhewm3 neo/framework/async/AsyncServer.cpp
//! (`ProcessGetInfoMessage`, `MasterHeartbeat`), AsyncClient.cpp (`GetNETServers`,
//! `ProcessInfoResponseMessage`, `ProcessServersListMessage`); the Quake 4 1.0 binary
//! (`idAsyncServer::WriteInfo`, `idAsyncClient::GetNETServers`); qstat doom3.c.

use crate::Encode;
use std::net::SocketAddrV4;

use fragstat_core::wire::{excerpt, Reader};
use fragstat_core::DecodeError;

use crate::dict::{put_slot, put_str, read_dict, write_dict, Dict};
use crate::game::{Idtech4Game, Layout, Protocol};
use crate::EncodeError;

/// Every idTech 4 connectionless packet starts with these two bytes (`CONNECTIONLESS_MESSAGE_ID`,
/// a short −1).
pub const HEADER: [u8; 2] = [0xff, 0xff];

/// The slot number that ends a player list (`MAX_ASYNC_CLIENTS`).
pub const END_OF_PLAYERS: u8 = 32;

/// A decoded packet.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Packet {
    /// `getInfo` (client → server).
    GetInfo(GetInfo),
    /// `infoResponse` (server → client).
    InfoResponse(InfoResponse),
    /// `getServers` (client → master).
    GetServers(crate::master::GetServers),
    /// `servers` (master → client): part of the list.
    Servers(crate::master::ServerList),
    /// `heartbeat` (server → master).
    Heartbeat(Heartbeat),
}

/// `getInfo` with its challenge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct GetInfo {
    /// The 4-byte challenge (`ReadInt`), when at least 4 bytes follow the command. A server
    /// given fewer reads −1 (dhewm3 `idBitMsg::ReadInt` past the end).
    pub challenge: Option<i32>,
    /// Bytes after the challenge (GameQ sends `PiNGPoNG\0`, of which the server reads 4), or
    /// the 1–3 bytes sent instead of a challenge.
    pub trailing: Vec<u8>,
}

/// One player of an `infoResponse`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct InfoPlayer {
    /// Client slot, 0–31; not contiguous.
    pub slot: u8,
    /// Ping in ms (`WriteShort`, signed).
    pub ping: i16,
    /// The client's maximum outgoing rate in bytes/s (`WriteInt`).
    pub rate: u32,
    /// `ui_name`, raw.
    pub name: Vec<u8>,
    /// `ui_clan`, raw: present exactly in the Quake 4 layout.
    pub clan: Option<Vec<u8>>,
}

/// What follows the dictionary of an `infoResponse` or Quake 4 heartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Body {
    /// The layout is known for this game and protocol.
    Players {
        /// The layout used.
        layout: Layout,
        /// Players in slot order.
        players: Vec<InfoPlayer>,
        /// `fileSystem->GetOSMask()` (dhewm3 always sends −1).
        os_mask: u32,
        /// Bytes after the OS mask (Quake 4 1.4.2 sends 5 of unknown meaning).
        trailing: Vec<u8>,
    },
    /// The game and protocol pair has no known layout: the bytes after the dictionary, kept
    /// undecoded rather than read with a guessed layout.
    Undecoded {
        /// The bytes.
        bytes: Vec<u8>,
    },
}

impl Default for Body {
    fn default() -> Self {
        Body::Players {
            layout: Layout::Doom3,
            players: Vec::new(),
            os_mask: u32::MAX,
            trailing: Vec::new(),
        }
    }
}

/// The server state an `infoResponse` (and a Quake 4 heartbeat) carries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerState {
    /// The protocol version (`ASYNC_PROTOCOL_VERSION`).
    pub protocol: Protocol,
    /// The server-info dictionary (`si_name`, `si_map`…).
    pub dict: Dict,
    /// Players, OS mask and trailing bytes.
    pub body: Body,
}

/// `infoResponse`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct InfoResponse {
    /// The challenge echoed.
    pub challenge: i32,
    /// The server's state.
    pub state: ServerState,
}

/// `heartbeat`: a bare command from Doom 3 servers; Quake 4 servers append their state
/// (`WriteInfo`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Heartbeat {
    /// The state sent with it, if any.
    pub state: Option<ServerState>,
}

fn read_players(
    r: &mut Reader<'_>,
    layout: Layout,
) -> Result<(Vec<InfoPlayer>, u32, Vec<u8>), DecodeError> {
    let mut players = Vec::new();
    let mut previous: Option<u8> = None;
    loop {
        let at = r.offset();
        let slot = r.u8("player slot")?;
        if slot == END_OF_PLAYERS {
            break;
        }
        if slot > END_OF_PLAYERS {
            return Err(DecodeError::Invalid {
                field: "player slot",
                offset: at,
                reason: "slot above 32, the end-of-list marker",
            });
        }
        if previous.is_some_and(|p| slot <= p) {
            return Err(DecodeError::Invalid {
                field: "player slot",
                offset: at,
                reason: "slots must increase (the server lists each client once, in slot order)",
            });
        }
        previous = Some(slot);
        // `WriteShort`: a signed 16-bit value.
        let ping = i16::from_le_bytes(r.u16_le("player ping")?.to_le_bytes());
        let rate = r.u32_le("player rate")?;
        let name = r.cstr("player name")?.to_vec();
        let clan = match layout {
            Layout::Doom3 => None,
            Layout::Quake4 => Some(r.cstr("player clan")?.to_vec()),
        };
        players.push(InfoPlayer {
            slot,
            ping,
            rate,
            name,
            clan,
        });
    }
    let os_mask = r.u32_le("osmask")?;
    Ok((players, os_mask, r.take_rest().to_vec()))
}

/// Reads protocol, dictionary and body for `game`.
fn read_state(r: &mut Reader<'_>, game: Option<Idtech4Game>) -> Result<ServerState, DecodeError> {
    let protocol = Protocol(r.u32_le("protocol")?);
    let dict = read_dict(r)?;
    let game = game.or(Idtech4Game::of_protocol(protocol));
    let body = match game.and_then(|g| g.layout(protocol)) {
        Some(layout) => {
            let (players, os_mask, trailing) = read_players(r, layout)?;
            Body::Players {
                layout,
                players,
                os_mask,
                trailing,
            }
        }
        None => Body::Undecoded {
            bytes: r.take_rest().to_vec(),
        },
    };
    Ok(ServerState {
        protocol,
        dict,
        body,
    })
}

fn write_state(out: &mut Vec<u8>, s: &ServerState) -> Result<(), EncodeError> {
    out.extend_from_slice(&s.protocol.0.to_le_bytes());
    write_dict(out, &s.dict)?;
    match &s.body {
        Body::Players {
            layout,
            players,
            os_mask,
            trailing,
        } => {
            let mut previous: Option<u8> = None;
            for p in players {
                put_slot(out, &mut previous, p.slot)?;
                out.extend_from_slice(&p.ping.to_le_bytes());
                out.extend_from_slice(&p.rate.to_le_bytes());
                put_str(out, &p.name, "player name")?;
                match (layout, &p.clan) {
                    (Layout::Doom3, None) => {}
                    (Layout::Quake4, Some(clan)) => put_str(out, clan, "player clan")?,
                    (Layout::Doom3, Some(_)) => {
                        return Err(EncodeError::Invalid("a clan in the Doom 3 layout"))
                    }
                    (Layout::Quake4, None) => {
                        return Err(EncodeError::Invalid("no clan in the Quake 4 layout"))
                    }
                }
            }
            out.push(END_OF_PLAYERS);
            out.extend_from_slice(&os_mask.to_le_bytes());
            out.extend_from_slice(trailing);
        }
        Body::Undecoded { bytes } => out.extend_from_slice(bytes),
    }
    Ok(())
}

/// Reads the header and command; the reader is left after the command's NUL.
pub(crate) fn read_command<'a>(r: &mut Reader<'a>) -> Result<&'a [u8], DecodeError> {
    let head = r.rest().get(..3).unwrap_or(r.rest());
    if !r.rest().starts_with(&HEADER) || head == [0xff, 0xff, 0xff] {
        // Three 0xFF bytes: a Quake III-style `FF FF FF FF` header, not idTech 4's two.
        return Err(DecodeError::BadHeader {
            expected: &HEADER,
            found: head.to_vec(),
        });
    }
    r.take("header", 2)?;
    r.cstr("command")
}

/// Decodes one datagram, each packet read as the game its protocol major names: an
/// `infoResponse`'s player list with that game's layout (left undecoded for a major no game
/// uses), a `getServers` with Quake 4's player and clan filters when its major is Quake 4's.
/// A request with no major (qstat sends 0) is read as Doom 3's; the master of a known game
/// uses [`decode_as`].
pub fn decode(datagram: &[u8]) -> Result<Packet, DecodeError> {
    decode_with(None, datagram)
}

/// Decodes one datagram as `game`'s own client, server and master read it: a player list
/// only in `game`'s layout (a reply of another game's major is left undecoded, never
/// guessed), a `getServers` with Quake 4's filters exactly when `game` is Quake 4.
pub fn decode_as(game: Idtech4Game, datagram: &[u8]) -> Result<Packet, DecodeError> {
    decode_with(Some(game), datagram)
}

fn decode_with(game: Option<Idtech4Game>, datagram: &[u8]) -> Result<Packet, DecodeError> {
    let mut r = Reader::new(datagram);
    let command = read_command(&mut r)?;
    let is = |name: &str| command.eq_ignore_ascii_case(name.as_bytes());
    if is("getInfo") {
        let challenge = if r.remaining() >= 4 {
            Some(r.i32_le("challenge")?)
        } else {
            None
        };
        Ok(Packet::GetInfo(GetInfo {
            challenge,
            trailing: r.take_rest().to_vec(),
        }))
    } else if is("infoResponse") {
        let challenge = r.i32_le("challenge")?;
        let state = read_state(&mut r, game)?;
        Ok(Packet::InfoResponse(InfoResponse { challenge, state }))
    } else if is("heartbeat") {
        let state = if r.is_empty() {
            None
        } else {
            Some(read_state(&mut r, game)?)
        };
        Ok(Packet::Heartbeat(Heartbeat { state }))
    } else if is("getServers") {
        crate::master::read_get_servers(&mut r, game).map(Packet::GetServers)
    } else if is("servers") {
        Ok(Packet::Servers(crate::master::read_servers(&mut r)))
    } else {
        Err(DecodeError::UnknownCommand {
            offset: 2,
            command: excerpt(command),
        })
    }
}

impl Encode for Packet {
    /// Appends the datagram.
    fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        out.extend_from_slice(&HEADER);
        match self {
            Packet::GetInfo(g) => {
                out.extend_from_slice(b"getInfo\0");
                match g.challenge {
                    Some(c) => out.extend_from_slice(&c.to_le_bytes()),
                    None if g.trailing.len() >= 4 => {
                        return Err(EncodeError::Invalid(
                            "getInfo without a challenge has at most 3 trailing bytes",
                        ))
                    }
                    None => {}
                }
                out.extend_from_slice(&g.trailing);
            }
            Packet::InfoResponse(i) => {
                out.extend_from_slice(b"infoResponse\0");
                out.extend_from_slice(&i.challenge.to_le_bytes());
                write_state(out, &i.state)?;
            }
            Packet::Heartbeat(h) => {
                out.extend_from_slice(b"heartbeat\0");
                if let Some(s) = &h.state {
                    write_state(out, s)?;
                }
            }
            Packet::GetServers(g) => {
                out.extend_from_slice(b"getServers\0");
                g.encode_body(out)?;
            }
            Packet::Servers(l) => {
                out.extend_from_slice(b"servers\0");
                l.encode_body(out)?;
            }
        }
        Ok(())
    }
}

/// The IPv4 socket address `a.b.c.d:port` of a list entry (IPv4 in network order, port
/// little-endian).
pub(crate) fn entry(bytes: [u8; 6]) -> SocketAddrV4 {
    let [a, b, c, d, lo, hi] = bytes;
    SocketAddrV4::new([a, b, c, d].into(), u16::from_le_bytes([lo, hi]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn getinfo_challenge_forms() {
        let p = decode_as(Idtech4Game::Doom3, b"\xff\xffgetInfo\0PiNGPoNG\0").unwrap();
        assert_eq!(
            p,
            Packet::GetInfo(GetInfo {
                challenge: Some(0x474e6950),
                trailing: b"PoNG\0".to_vec()
            })
        );
        let p = decode_as(Idtech4Game::Doom3, b"\xff\xffgetinfo\0").unwrap();
        assert_eq!(p, Packet::GetInfo(GetInfo::default()));
        assert_eq!(
            p.to_bytes().unwrap(),
            b"\xff\xffgetInfo\0",
            "canonical spelling"
        );
    }

    #[test]
    fn q3_header_and_unknown_commands_fail() {
        let e = decode_as(Idtech4Game::Doom3, b"\xff\xff\xff\xffinfoResponse\n").unwrap_err();
        assert_eq!(e.kind(), "bad_header");
        let e = decode_as(Idtech4Game::Doom3, b"\xff\xffrcon\0x").unwrap_err();
        assert_eq!((e.kind(), e.offset()), ("unknown_command", 2));
        let e = decode_as(Idtech4Game::Doom3, b"\xff").unwrap_err();
        assert_eq!(e.kind(), "bad_header");
        let e = decode_as(Idtech4Game::Doom3, b"\xff\xffinfoResp").unwrap_err();
        assert_eq!((e.kind(), e.field()), ("missing", Some("command")));
    }

    fn reply(game: Idtech4Game, protocol: Protocol, players: &[u8]) -> Vec<u8> {
        let mut b = b"\xff\xffinfoResponse\0\x01\x00\x00\x00".to_vec();
        b.extend_from_slice(&protocol.0.to_le_bytes());
        b.extend_from_slice(b"si_name\0x\0\0\0");
        b.extend_from_slice(players);
        let _ = game;
        b
    }

    #[test]
    fn bad_slots_are_errors() {
        let p = Protocol::new(1, 41);
        // Slot 40.
        let b = reply(Idtech4Game::Doom3, p, b"\x28");
        let e = decode_as(Idtech4Game::Doom3, &b).unwrap_err();
        assert_eq!(
            (e.kind(), e.field(), e.offset()),
            ("invalid", Some("player slot"), 35)
        );
        // Slot 3 then slot 3 again.
        let mut pl = b"\x03\x10\x00\x00\x10\x00\x00a\0".to_vec();
        pl.extend_from_slice(b"\x03\x10\x00\x00\x10\x00\x00b\0\x20\x07\0\0\0");
        let e = decode_as(Idtech4Game::Doom3, &reply(Idtech4Game::Doom3, p, &pl)).unwrap_err();
        assert_eq!((e.kind(), e.offset()), ("invalid", 44));
    }

    #[test]
    fn unknown_protocol_keeps_the_body_undecoded() {
        let b = reply(
            Idtech4Game::Doom3,
            Protocol::new(2, 85),
            b"\x00\x10\x00\x00\x10\x00\x00a\0c\0\x20\x07\0\0\0",
        );
        let Packet::InfoResponse(i) = decode_as(Idtech4Game::Doom3, &b).unwrap() else {
            panic!()
        };
        assert!(matches!(&i.state.body, Body::Undecoded { bytes } if bytes.len() == 16));
        // The same bytes as Quake 4 decode with the clan.
        let Packet::InfoResponse(i) = decode_as(Idtech4Game::Quake4, &b).unwrap() else {
            panic!()
        };
        let Body::Players {
            players, os_mask, ..
        } = &i.state.body
        else {
            panic!()
        };
        assert_eq!((players[0].clan.as_deref(), *os_mask), (Some(&b"c"[..]), 7));
    }
}
