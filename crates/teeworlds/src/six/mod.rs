//! Teeworlds 0.6 connectionless packets (and DDNet's additions): server info requests and
//! replies, and the UDP master's list and count.
//!
//! Framing (teeworlds/ddnet `CNetBase::SendPacketConnless`): a 6-byte header, `FF×6` (any
//! first byte with the connectionless flag 0x20 is read as one: qstat sends `20 00 00 00 00
//! 00`), or DDNet's extended header `'x' 'e'` + a 2-byte extra token (big-endian) + 2
//! reserved bytes;
//! then an 8-byte type, `FF FF FF FF` + four ASCII letters (protocol.h / mastersrv.h
//! `SERVERBROWSE_*`). Every integer of `inf3`, `iext`, `iex+` and `dtsf` is a **decimal
//! string** (`ADD_INT`), except `dtsf`'s client offset, a varint (`CPacker::AddInt`).
//!
//! Counts are never loop bounds: DDNet 9.1 announced 15 clients and listed 16 (a real reply),
//! and `iext` spreads its clients over several datagrams. Clients are read until the datagram
//! ends; a datagram cut inside a client keeps the complete ones and says it was cut.

use crate::{Encode, EncodeError};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use fragstat_core::wire::{bounded, excerpt, put_varint, Reader};

use crate::DecodeError;

/// The 0.6 connectionless header.
pub const HEADER: [u8; 6] = [0xFF; 6];

/// The magic of DDNet's extended header (`NET_HEADER_EXTENDED`).
pub const EXTENDED_MAGIC: [u8; 2] = *b"xe";

/// Most clients one datagram may carry: far more than fit in 1400 bytes with their five
/// NUL-terminated fields, so a reply over it is malformed.
pub const MAX_CLIENTS_PER_PACKET: u64 = 256;

/// The largest `iex+` packet number (`packet_no` is 1..=63: DDNet tracks them in a 64-bit
/// mask, client.cpp `m_ReceivedPackets`).
pub const MAX_PACKET_NO: i32 = 63;

/// Most entries one `lis2` datagram holds (mastersrv `MAX_SERVERS_PER_PACKET`).
pub const MAX_SERVERS_PER_PACKET: usize = 75;

/// A client (player or spectator) in a server info reply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Client {
    /// Name, UTF-8 as sent (at most 16 bytes in vanilla).
    pub name: Vec<u8>,
    /// Clan (at most 12 bytes).
    pub clan: Vec<u8>,
    /// ISO 3166-1 numeric country code, −1 for none.
    pub country: i32,
    /// Score (DDNet: negated race time in seconds, −9999 for none).
    pub score: i32,
    /// Non-zero for a player, 0 for a spectator (as sent).
    pub is_player: i32,
    /// The reserved field of extended replies (`iext`, `iex+`); `None` in `inf3`/`dtsf`.
    pub reserved: Option<Vec<u8>>,
}

/// The server part of `inf3`, `iext` and `dtsf` replies, with the clients of this datagram.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Info {
    /// The echoed token: the request's byte (DDNet: `| extra_token << 8`).
    pub token: i32,
    /// Server version (`0.6.4, 16.4`).
    pub version: Vec<u8>,
    /// Server name.
    pub name: Vec<u8>,
    /// Map.
    pub map: Vec<u8>,
    /// Map CRC (`iext` only; sent signed).
    pub map_crc: Option<i32>,
    /// Map size in bytes (`iext` only).
    pub map_size: Option<i32>,
    /// Game type (`DM`, `CTF`, `DDraceNetwork`…).
    pub gametype: Vec<u8>,
    /// Flags: 1 password.
    pub flags: i32,
    /// Players (not spectating).
    pub num_players: i32,
    /// Player slots.
    pub max_players: i32,
    /// Clients (players and spectators).
    pub num_clients: i32,
    /// Client slots.
    pub max_clients: i32,
    /// The reserved string of `iext`; `None` elsewhere.
    pub reserved: Option<Vec<u8>>,
    /// `dtsf` only: the index of this datagram's first client.
    pub offset: Option<i32>,
    /// Clients in this datagram.
    pub clients: Vec<Client>,
    /// The datagram ended inside a client entry (the complete ones are kept).
    pub truncated: bool,
}

/// An `iex+` reply: more clients of an extended info.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct More {
    /// The echoed token.
    pub token: i32,
    /// Packet number, 1..=63 (the `iext` is 0).
    pub packet_no: i32,
    /// Reserved string.
    pub reserved: Vec<u8>,
    /// Clients in this datagram.
    pub clients: Vec<Client>,
    /// The datagram ended inside a client entry.
    pub truncated: bool,
}

/// One 0.6 connectionless packet.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Packet {
    /// `gie3` + token byte; behind DDNet's extended header when `extra_token` is set.
    GetInfo {
        /// The token byte echoed in the reply.
        token: u8,
        /// DDNet's extra token (from the `xe` header): asks for the extended reply.
        extra_token: Option<u16>,
    },
    /// `fstd` + token byte: DDNet's legacy 64-client request.
    GetInfo64 {
        /// The token byte.
        token: u8,
    },
    /// `inf3`: the vanilla reply.
    Info(Info),
    /// `iext`: DDNet's extended main reply.
    InfoExtended(Info),
    /// `iex+`: more clients of an extended reply.
    InfoMore(More),
    /// `dtsf`: one datagram of a legacy 64-client reply.
    Info64(Info),
    /// `req2`: a master's list, please.
    GetList,
    /// `lis2`: part of a master's list (IPv4 as `::ffff:a.b.c.d`).
    List(Vec<SocketAddr>),
    /// `cou2`: how many servers, please.
    GetCount,
    /// `siz2`: the number of servers.
    Count(u16),
    /// `reqt`: the 0.5 list request.
    GetList5,
    /// `list`: a 0.5 list (IPv4, port little-endian).
    List5(Vec<SocketAddr>),
    /// `bea2` + port: a server's heartbeat to its master.
    Heartbeat {
        /// The game port the server asks to be listed with.
        port: u16,
    },
}

/// The 8-byte packet types.
pub mod types {
    /// `gie3`.
    pub const GETINFO: [u8; 8] = *b"\xff\xff\xff\xffgie3";
    /// `inf3`.
    pub const INFO: [u8; 8] = *b"\xff\xff\xff\xffinf3";
    /// `iext`.
    pub const INFO_EXTENDED: [u8; 8] = *b"\xff\xff\xff\xffiext";
    /// `iex+`.
    pub const INFO_EXTENDED_MORE: [u8; 8] = *b"\xff\xff\xff\xffiex+";
    /// `fstd`.
    pub const GETINFO_64: [u8; 8] = *b"\xff\xff\xff\xfffstd";
    /// `dtsf`.
    pub const INFO_64: [u8; 8] = *b"\xff\xff\xff\xffdtsf";
    /// `req2`.
    pub const GETLIST: [u8; 8] = *b"\xff\xff\xff\xffreq2";
    /// `lis2`.
    pub const LIST: [u8; 8] = *b"\xff\xff\xff\xfflis2";
    /// `cou2`.
    pub const GETCOUNT: [u8; 8] = *b"\xff\xff\xff\xffcou2";
    /// `siz2`.
    pub const COUNT: [u8; 8] = *b"\xff\xff\xff\xffsiz2";
    /// `reqt`.
    pub const GETLIST_05: [u8; 8] = *b"\xff\xff\xff\xffreqt";
    /// `list`.
    pub const LIST_05: [u8; 8] = *b"\xff\xff\xff\xfflist";
    /// `bea2`.
    pub const HEARTBEAT: [u8; 8] = *b"\xff\xff\xff\xffbea2";
}

/// The connectionless flag in a 0.6 header's first byte (`NET_PACKETFLAG_CONNLESS` (2) in the
/// upper nibble, teeworlds 0.6 `CNetBase::UnpackPacket` `m_Flags = pBuffer[0] >> 4`).
pub const CONNLESS_FLAG: u8 = 0x20;

/// Reads the 6-byte header: `Some(extra token)` for DDNet's extended header. Servers look
/// only at the connectionless flag of a plain header and skip the rest: qstat sends
/// `20 00 00 00 00 00`, the engines `FF×6`.
fn header(r: &mut Reader<'_>) -> Result<Option<u16>, DecodeError> {
    if r.eat(&EXTENDED_MAGIC) {
        let extra = r.u16_be("extra token")?;
        r.take("reserved", 2)?;
        return Ok(Some(extra));
    }
    match r.peek() {
        Some(b) if b & CONNLESS_FLAG != 0 => {
            r.take("header", HEADER.len())?;
            Ok(None)
        }
        _ => Err(DecodeError::BadHeader {
            expected: &HEADER,
            found: r.rest().iter().take(6).copied().collect(),
        }),
    }
}

/// Reads a NUL-terminated decimal integer field.
fn int(r: &mut Reader<'_>, field: &'static str) -> Result<i32, DecodeError> {
    r.decimal_cstr(field)
}

/// Reads clients to the end of the datagram. Returns the clients and whether the datagram
/// ended inside one.
pub(crate) fn clients(
    r: &mut Reader<'_>,
    extended: bool,
) -> Result<(Vec<Client>, bool), DecodeError> {
    let mut out = Vec::new();
    while !r.is_empty() {
        let at = r.offset();
        bounded(out.len() as u64 + 1, MAX_CLIENTS_PER_PACKET, "clients", at)?;
        match client(r, extended) {
            Ok(c) => out.push(c),
            // Cut inside an entry: keep what was complete (the DDNet client tolerates the
            // error at a client boundary only, so this is reported, not hidden).
            Err(DecodeError::Missing { .. }) | Err(DecodeError::Truncated { .. }) => {
                return Ok((out, true))
            }
            Err(e) => return Err(e),
        }
    }
    Ok((out, false))
}

fn client(r: &mut Reader<'_>, extended: bool) -> Result<Client, DecodeError> {
    Ok(Client {
        name: r.cstr("client name")?.to_vec(),
        clan: r.cstr("client clan")?.to_vec(),
        country: int(r, "client country")?,
        score: int(r, "client score")?,
        is_player: int(r, "client is_player")?,
        reserved: if extended {
            Some(r.cstr("client reserved")?.to_vec())
        } else {
            None
        },
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    Vanilla,
    Extended,
    Legacy64,
}

fn info(r: &mut Reader<'_>, form: Form) -> Result<Info, DecodeError> {
    let mut i = Info {
        token: int(r, "token")?,
        version: r.cstr("version")?.to_vec(),
        name: r.cstr("name")?.to_vec(),
        map: r.cstr("map")?.to_vec(),
        ..Info::default()
    };
    if form == Form::Extended {
        i.map_crc = Some(int(r, "map_crc")?);
        i.map_size = Some(int(r, "map_size")?);
    }
    i.gametype = r.cstr("gametype")?.to_vec();
    i.flags = int(r, "flags")?;
    i.num_players = r.non_negative("num_players", int)?;
    i.max_players = r.non_negative("max_players", int)?;
    i.num_clients = r.non_negative("num_clients", int)?;
    i.max_clients = r.non_negative("max_clients", int)?;
    let offset_at = r.offset();
    match form {
        Form::Extended => i.reserved = Some(r.cstr("reserved")?.to_vec()),
        Form::Legacy64 => i.offset = Some(r.varint("offset")?),
        Form::Vanilla => {}
    }
    if let Some(o) = i.offset {
        if !(0..=i32::from(u8::MAX)).contains(&o) {
            return Err(DecodeError::Invalid {
                field: "offset",
                offset: offset_at,
                reason: "client offset out of range",
            });
        }
    }
    let (c, truncated) = clients(r, form == Form::Extended)?;
    i.clients = c;
    i.truncated = truncated;
    Ok(i)
}

fn more(r: &mut Reader<'_>) -> Result<More, DecodeError> {
    let token = int(r, "token")?;
    let at = r.offset();
    let packet_no = int(r, "packet_no")?;
    if !(1..=MAX_PACKET_NO).contains(&packet_no) {
        return Err(DecodeError::Invalid {
            field: "packet_no",
            offset: at,
            reason: "not in 1..=63",
        });
    }
    let reserved = r.cstr("reserved")?.to_vec();
    let (clients, truncated) = clients(r, true)?;
    Ok(More {
        token,
        packet_no,
        reserved,
        clients,
        truncated,
    })
}

fn token_byte(r: &mut Reader<'_>) -> Result<u8, DecodeError> {
    let t = r.u8("token")?;
    // Anything after the token byte is ignored by servers (qstat sends `gie3\0`).
    r.take_rest();
    Ok(t)
}

/// Reads 18-byte `lis2` entries: a 16-byte address (IPv4 as `::ffff:a.b.c.d`) and a
/// big-endian port.
pub(crate) fn list_entries(r: &mut Reader<'_>) -> Result<Vec<SocketAddr>, DecodeError> {
    let at = r.offset();
    if r.remaining() % 18 != 0 {
        return Err(DecodeError::Invalid {
            field: "server list",
            offset: at,
            reason: "not a whole number of 18-byte entries",
        });
    }
    let n = bounded(
        (r.remaining() / 18) as u64,
        MAX_SERVERS_PER_PACKET as u64 * 4,
        "servers",
        at,
    )?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let ip: [u8; 16] =
            r.take("server address", 16)?
                .try_into()
                .map_err(|_| DecodeError::Missing {
                    field: "server address",
                    offset: at,
                })?;
        let port = r.u16_be("server port")?;
        let v6 = Ipv6Addr::from(ip);
        out.push(match v6.to_ipv4_mapped() {
            Some(v4) => SocketAddr::V4(SocketAddrV4::new(v4, port)),
            None => SocketAddr::V6(SocketAddrV6::new(v6, port, 0, 0)),
        });
    }
    Ok(out)
}

/// Writes 18-byte `lis2` entries.
pub(crate) fn put_list_entries(out: &mut Vec<u8>, servers: &[SocketAddr]) {
    for s in servers {
        let ip = match s {
            SocketAddr::V4(a) => a.ip().to_ipv6_mapped(),
            SocketAddr::V6(a) => *a.ip(),
        };
        out.extend_from_slice(&ip.octets());
        out.extend_from_slice(&s.port().to_be_bytes());
    }
}

/// Decodes one 0.6 connectionless datagram.
///
/// ```
/// use fragstat_teeworlds::six::{decode, Packet};
/// let p = decode(b"xe\x12\x34\0\0\xff\xff\xff\xffgie3\x2a")?;
/// assert_eq!(p, Packet::GetInfo { token: 0x2a, extra_token: Some(0x1234) });
/// # Ok::<(), fragstat_teeworlds::DecodeError>(())
/// ```
pub fn decode(datagram: &[u8]) -> Result<Packet, DecodeError> {
    let mut r = Reader::new(datagram);
    let extra = header(&mut r)?;
    let at = r.offset();
    let ty: [u8; 8] = r
        .take("packet type", 8)?
        .try_into()
        .map_err(|_| DecodeError::Missing {
            field: "packet type",
            offset: at,
        })?;
    let unknown = || DecodeError::UnknownCommand {
        offset: at,
        command: excerpt(&ty),
    };
    if extra.is_some() && ty != types::GETINFO {
        // Only requests travel behind the extended header.
        return Err(DecodeError::Invalid {
            field: "header",
            offset: 0,
            reason: "extended header on a packet other than gie3",
        });
    }
    Ok(match ty {
        types::GETINFO => Packet::GetInfo {
            token: token_byte(&mut r)?,
            extra_token: extra,
        },
        types::GETINFO_64 => Packet::GetInfo64 {
            token: token_byte(&mut r)?,
        },
        types::INFO => Packet::Info(info(&mut r, Form::Vanilla)?),
        types::INFO_EXTENDED => Packet::InfoExtended(info(&mut r, Form::Extended)?),
        types::INFO_EXTENDED_MORE => Packet::InfoMore(more(&mut r)?),
        types::INFO_64 => Packet::Info64(info(&mut r, Form::Legacy64)?),
        types::GETLIST => Packet::GetList,
        types::LIST => Packet::List(list_entries(&mut r)?),
        types::GETCOUNT => Packet::GetCount,
        types::COUNT => Packet::Count(r.u16_be("server count")?),
        types::GETLIST_05 => Packet::GetList5,
        types::LIST_05 => {
            let at = r.offset();
            if r.remaining() % 6 != 0 {
                return Err(DecodeError::Invalid {
                    field: "server list",
                    offset: at,
                    reason: "not a whole number of 6-byte entries",
                });
            }
            let mut out = Vec::new();
            while !r.is_empty() {
                let ip: [u8; 4] =
                    r.take("server address", 4)?
                        .try_into()
                        .map_err(|_| DecodeError::Missing {
                            field: "server address",
                            offset: at,
                        })?;
                // The 0.5 list has little-endian ports (qstat swaps; libtw2 Addr5Packed).
                let port = r.u16_le("server port")?;
                out.push(SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::from(ip), port)));
            }
            Packet::List5(out)
        }
        types::HEARTBEAT => Packet::Heartbeat {
            port: r.u16_be("port")?,
        },
        _ => return Err(unknown()),
    })
}

fn put_str(out: &mut Vec<u8>, s: &[u8], field: &'static str) -> Result<(), EncodeError> {
    if s.contains(&0) {
        return Err(EncodeError::forbidden(field));
    }
    out.extend_from_slice(s);
    out.push(0);
    Ok(())
}

fn put_int(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(v.to_string().as_bytes());
    out.push(0);
}

pub(crate) fn put_clients(
    out: &mut Vec<u8>,
    clients: &[Client],
    extended: bool,
) -> Result<(), EncodeError> {
    for c in clients {
        put_str(out, &c.name, "client name")?;
        put_str(out, &c.clan, "client clan")?;
        put_int(out, c.country);
        put_int(out, c.score);
        put_int(out, c.is_player);
        match (extended, &c.reserved) {
            (true, Some(r)) => put_str(out, r, "client reserved")?,
            (true, None) => out.push(0),
            (false, Some(_)) => {
                return Err(EncodeError::Invalid("reserved field outside iext/iex+"))
            }
            (false, None) => {}
        }
    }
    Ok(())
}

fn put_info(out: &mut Vec<u8>, i: &Info, form: Form) -> Result<(), EncodeError> {
    put_int(out, i.token);
    put_str(out, &i.version, "version")?;
    put_str(out, &i.name, "name")?;
    put_str(out, &i.map, "map")?;
    if form == Form::Extended {
        put_int(
            out,
            i.map_crc
                .ok_or(EncodeError::Invalid("iext without map_crc"))?,
        );
        put_int(
            out,
            i.map_size
                .ok_or(EncodeError::Invalid("iext without map_size"))?,
        );
    } else if i.map_crc.is_some() || i.map_size.is_some() {
        return Err(EncodeError::Invalid("map_crc/map_size outside iext"));
    }
    put_str(out, &i.gametype, "gametype")?;
    for v in [
        i.flags,
        i.num_players,
        i.max_players,
        i.num_clients,
        i.max_clients,
    ] {
        put_int(out, v);
    }
    match form {
        Form::Extended => put_str(out, i.reserved.as_deref().unwrap_or_default(), "reserved")?,
        Form::Legacy64 => put_varint(
            out,
            i.offset
                .ok_or(EncodeError::Invalid("dtsf without offset"))?,
        ),
        Form::Vanilla => {
            if i.reserved.is_some() || i.offset.is_some() {
                return Err(EncodeError::Invalid("reserved/offset in inf3"));
            }
        }
    }
    if form != Form::Extended && i.clients.iter().any(|c| c.reserved.is_some()) {
        return Err(EncodeError::Invalid("client reserved field outside iext"));
    }
    if i.truncated {
        return Err(EncodeError::Invalid("a truncated reply"));
    }
    put_clients(out, &i.clients, form == Form::Extended)
}

impl Encode for Packet {
    /// Appends the datagram (header included) to `out`.
    fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        match self {
            Packet::GetInfo {
                extra_token: Some(e),
                ..
            } => {
                out.extend_from_slice(&EXTENDED_MAGIC);
                out.extend_from_slice(&e.to_be_bytes());
                out.extend_from_slice(&[0, 0]);
            }
            _ => out.extend_from_slice(&HEADER),
        }
        match self {
            Packet::GetInfo { token, .. } => {
                out.extend_from_slice(&types::GETINFO);
                out.push(*token);
            }
            Packet::GetInfo64 { token } => {
                out.extend_from_slice(&types::GETINFO_64);
                out.push(*token);
            }
            Packet::Info(i) => {
                out.extend_from_slice(&types::INFO);
                put_info(out, i, Form::Vanilla)?;
            }
            Packet::InfoExtended(i) => {
                out.extend_from_slice(&types::INFO_EXTENDED);
                put_info(out, i, Form::Extended)?;
            }
            Packet::Info64(i) => {
                out.extend_from_slice(&types::INFO_64);
                put_info(out, i, Form::Legacy64)?;
            }
            Packet::InfoMore(m) => {
                if !(1..=MAX_PACKET_NO).contains(&m.packet_no) || m.truncated {
                    return Err(EncodeError::Invalid(
                        "iex+ packet number or a truncated reply",
                    ));
                }
                out.extend_from_slice(&types::INFO_EXTENDED_MORE);
                put_int(out, m.token);
                put_int(out, m.packet_no);
                put_str(out, &m.reserved, "reserved")?;
                if m.clients.iter().any(|c| c.reserved.is_none()) {
                    return Err(EncodeError::Invalid(
                        "iex+ client without its reserved field",
                    ));
                }
                put_clients(out, &m.clients, true)?;
            }
            Packet::GetList => out.extend_from_slice(&types::GETLIST),
            Packet::List(servers) => {
                out.extend_from_slice(&types::LIST);
                put_list_entries(out, servers);
            }
            Packet::GetCount => out.extend_from_slice(&types::GETCOUNT),
            Packet::Count(n) => {
                out.extend_from_slice(&types::COUNT);
                out.extend_from_slice(&n.to_be_bytes());
            }
            Packet::GetList5 => out.extend_from_slice(&types::GETLIST_05),
            Packet::List5(servers) => {
                out.extend_from_slice(&types::LIST_05);
                for s in servers {
                    let SocketAddr::V4(a) = s else {
                        return Err(EncodeError::Invalid("an IPv6 address in a 0.5 list"));
                    };
                    out.extend_from_slice(&a.ip().octets());
                    out.extend_from_slice(&a.port().to_le_bytes());
                }
            }
            Packet::Heartbeat { port } => {
                out.extend_from_slice(&types::HEARTBEAT);
                out.extend_from_slice(&port.to_be_bytes());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
