//! Master server queries and lists: `getservers`, `getserversExt` and their responses.
//!
//! Sources: dpmaster `doc/techinfo.txt` §3.4–3.7 and `src/messages.c`; ioq3
//! `code/client/cl_main.c` (`CL_ServersResponsePacket`); qstat `qstat.c`
//! (`decode_q3master_packet`: `\EOF`).

use std::io::Cursor;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use binrw::{BinRead, BinWrite};

use crate::DecodeError;
use crate::EncodeError;
use fragstat_core::wire::{decimal_i32 as parse_i32, Reader};

/// Largest datagram a master sends (dpmaster `MAX_PACKET_SIZE_OUT`).
pub const MAX_MASTER_PACKET: usize = 1400;

/// An IPv4 entry after its `\` marker: address and port, both big-endian.
#[derive(BinRead, BinWrite, Debug)]
#[brw(big)]
struct V4Entry {
    ip: [u8; 4],
    port: u16,
}

/// An IPv6 entry after its `/` marker (getserversExtResponse only).
#[derive(BinRead, BinWrite, Debug)]
#[brw(big)]
struct V6Entry {
    ip: [u8; 16],
    port: u16,
}

/// Reads one entry: its 1-byte marker, then `len` bytes decoded as `T` (big-endian).
fn read_entry<T>(r: &mut Reader<'_>, len: usize, field: &'static str) -> Result<T, DecodeError>
where
    T: BinRead + binrw::meta::ReadEndian,
    for<'a> T::Args<'a>: Default,
{
    r.take("entry marker", 1)?;
    let at = r.offset();
    let bytes = r.take(field, len)?;
    T::read(&mut Cursor::new(bytes)).map_err(|_| DecodeError::Truncated {
        field,
        offset: at,
        needed: len,
        available: bytes.len(),
    })
}

/// How a list datagram ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Terminator {
    /// `\EOT\0\0\0` (dpmaster, id masters).
    Eot,
    /// `\EOT` without the three NULs (seen in real replies).
    EotBare,
    /// `\EOF` (qstat: "seen in COD4").
    Eof,
}

/// The servers in one `getserversResponse` / `getserversExtResponse` datagram.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerList {
    /// True for `getserversExtResponse`.
    pub ext: bool,
    /// Servers in wire order (entries with port 0 are not servers and are left out).
    pub servers: Vec<SocketAddr>,
    /// The end-of-list marker, when this datagram carries one. Only the last datagram of a list
    /// does (dpmaster ≥ 2.0); older masters put it on every datagram; some send none at all.
    pub terminator: Option<Terminator>,
    /// Bytes after the last entry or marker that are not an entry (reported, not dropped).
    pub trailing: Vec<u8>,
    /// The Dæmon (Unvanquished) master's packet number, packet count and featured label
    /// (`getserversExtResponse` only; [`crate::daemon`]).
    pub sequence: Option<crate::daemon::Sequence>,
}

impl ServerList {
    /// Reads entries by fixed stride: address and port bytes may be `\` or 0 (a real Warfork
    /// master listed 3.7.54.92), so the list is never split on `\`.
    pub(crate) fn decode_entries(r: &mut Reader<'_>, ext: bool) -> Result<Self, DecodeError> {
        let mut list = ServerList {
            ext,
            ..Default::default()
        };
        // The Dæmon master's `\0<index>\0<count>\0<label>` (Unvanquished `master.py:
        // 469-471`); no other list has a NUL and then a digit there.
        if ext && r.rest().first() == Some(&0) && r.rest().get(1).is_some_and(u8::is_ascii_digit) {
            list.sequence = Some(crate::daemon::Sequence::decode(r)?);
        } else {
            // Activision's masters put `\n\0` before the first entry (pyq3serverlist
            // `reader.py`); nothing else starts with either byte.
            r.eat(b"\n");
            while r.eat(b"\0") {}
        }
        loop {
            let rest = r.rest();
            // A lone `\` closes the lists of masters without an end marker (the Tremulous
            // and Unvanquished masters, `master.py`).
            if rest.is_empty() || rest == b"\\" {
                r.take_rest();
                break;
            }
            // A marker only counts at the very end, so a real server 69.79.84.x (`EOT`) survives.
            if rest == b"\\EOT\0\0\0" {
                list.terminator = Some(Terminator::Eot);
                r.take_rest();
                break;
            }
            if rest == b"\\EOT" {
                list.terminator = Some(Terminator::EotBare);
                r.take_rest();
                break;
            }
            if rest == b"\\EOF" || rest == b"\\EOF\0\0\0" {
                list.terminator = Some(Terminator::Eof);
                r.take_rest();
                break;
            }
            match rest.first() {
                Some(b'\\') if rest.len() >= 7 => {
                    let e: V4Entry = read_entry(r, 6, "IPv4 entry")?;
                    if e.port != 0 {
                        list.servers.push(SocketAddr::V4(SocketAddrV4::new(
                            Ipv4Addr::from(e.ip),
                            e.port,
                        )));
                    }
                }
                // The Warsow client also accepts IPv6 entries in the plain response.
                Some(b'/') if rest.len() >= 19 => {
                    let e: V6Entry = read_entry(r, 18, "IPv6 entry")?;
                    if e.port != 0 {
                        list.servers.push(SocketAddr::V6(SocketAddrV6::new(
                            Ipv6Addr::from(e.ip),
                            e.port,
                            0,
                            0,
                        )));
                    }
                }
                _ => {
                    list.trailing = r.take_rest().to_vec();
                    break;
                }
            }
        }
        Ok(list)
    }

    /// Appends the command word and entries of this one datagram.
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let at_start = self.servers.is_empty() && self.terminator.is_none();
        if let Some(seq) = &self.sequence {
            if !self.ext {
                return Err(EncodeError::forbidden(
                    "sequence (getserversExtResponse only)",
                ));
            }
            // After the label only `\`, `/` or NUL end it: other leading bytes would extend it.
            if at_start
                && self
                    .trailing
                    .first()
                    .is_some_and(|b| !matches!(b, 0 | b'\\' | b'/'))
            {
                return Err(EncodeError::forbidden(
                    "trailing bytes (would extend the label)",
                ));
            }
            if self.trailing == b"\\" {
                return Err(EncodeError::forbidden(
                    "trailing bytes (would be read as list framing)",
                ));
            }
            out.extend_from_slice(b"getserversExtResponse");
            seq.encode(out)?;
            return self.encode_entries(out);
        }
        // Right after the command word, a letter or digit would be read as part of the command.
        let glued = at_start;
        if glued && self.trailing.first().is_some_and(u8::is_ascii_alphanumeric) {
            return Err(EncodeError::forbidden(
                "trailing bytes (would extend the command word)",
            ));
        }
        // What a decoder reads as framing cannot be trailing bytes: a lone `\` closes a list,
        // and `\n`/NULs before the first entry are Activision's prefix.
        if self.trailing == b"\\" || (at_start && matches!(self.trailing.first(), Some(b'\n' | 0)))
        {
            return Err(EncodeError::forbidden(
                "trailing bytes (would be read as list framing)",
            ));
        }
        out.extend_from_slice(if self.ext {
            b"getserversExtResponse"
        } else {
            b"getserversResponse"
        });
        self.encode_entries(out)
    }

    fn encode_entries(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        for s in &self.servers {
            push_entry(out, s);
        }
        match self.terminator {
            Some(Terminator::Eot) => out.extend_from_slice(b"\\EOT\0\0\0"),
            Some(Terminator::EotBare) => out.extend_from_slice(b"\\EOT"),
            Some(Terminator::Eof) => out.extend_from_slice(b"\\EOF"),
            None => {}
        }
        out.extend_from_slice(&self.trailing);
        Ok(())
    }
}

pub(crate) fn push_entry(out: &mut Vec<u8>, s: &SocketAddr) {
    let mut w = Cursor::new(Vec::with_capacity(18));
    let written = match s {
        SocketAddr::V4(a) => {
            out.push(b'\\');
            V4Entry {
                ip: a.ip().octets(),
                port: a.port(),
            }
            .write(&mut w)
        }
        SocketAddr::V6(a) => {
            out.push(b'/');
            V6Entry {
                ip: a.ip().octets(),
                port: a.port(),
            }
            .write(&mut w)
        }
    };
    // Writing fixed-size integers into a Vec cannot fail.
    debug_assert!(written.is_ok());
    out.extend_from_slice(&w.into_inner());
}

/// Where the end-of-list marker goes when a list spans several datagrams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EotStyle {
    /// Only on the last datagram (dpmaster ≥ 2.0).
    LastPacket,
    /// On every datagram (masters before dpmaster 2.0).
    EveryPacket,
    /// `\EOF` on the last datagram.
    EofLast,
    /// No marker at all: the client finishes on a timeout.
    None,
}

/// Encodes a full list as datagrams of at most `max_packet` bytes (including the OOB header).
/// IPv6 servers are only listed when `ext` is true (the plain response is IPv4-only).
pub fn encode_server_list(
    servers: &[SocketAddr],
    ext: bool,
    style: EotStyle,
    max_packet: usize,
) -> Vec<Vec<u8>> {
    let head: &[u8] = if ext {
        b"getserversExtResponse"
    } else {
        b"getserversResponse"
    };
    let start = |out: &mut Vec<u8>| {
        out.extend_from_slice(&crate::OOB_HEADER);
        out.extend_from_slice(head);
    };
    let marker: &[u8] = match style {
        EotStyle::LastPacket | EotStyle::EveryPacket => b"\\EOT\0\0\0",
        EotStyle::EofLast => b"\\EOF",
        EotStyle::None => b"",
    };
    let budget = max_packet.max(4 + head.len() + 19 + marker.len());
    let mut packets = Vec::new();
    let mut cur = Vec::with_capacity(budget);
    start(&mut cur);
    for s in servers.iter().filter(|s| ext || s.is_ipv4()) {
        let len = if s.is_ipv4() { 7 } else { 19 };
        if cur.len() + len + marker.len() > budget {
            if style == EotStyle::EveryPacket {
                cur.extend_from_slice(marker);
            }
            packets.push(std::mem::replace(&mut cur, Vec::with_capacity(budget)));
            start(&mut cur);
        }
        push_entry(&mut cur, s);
    }
    cur.extend_from_slice(marker);
    packets.push(cur);
    packets
}

/// A `getservers` / `getserversExt` request.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GetServers {
    /// `getserversExt` (dpmaster ≥ 2.0, may list IPv6).
    pub ext: bool,
    /// The game name (`Quake3Arena`, `et`, `Warsow`…); `None` in the anonymous
    /// `getservers <protocol>` dialect of Q3A, RtCW and W:ET.
    pub game: Option<Vec<u8>>,
    /// The protocol number asked for.
    pub protocol: i32,
    /// Filter options as sent: `empty`, `full`, `ipv4`, `ipv6`, `gametype=X`, `ffa`, `ctf`…
    pub options: Vec<Vec<u8>>,
}

impl GetServers {
    /// The anonymous Q3A/W:ET form: `getservers <protocol> empty full`.
    pub fn anonymous(protocol: i32) -> Self {
        GetServers {
            ext: false,
            game: None,
            protocol,
            options: vec![b"empty".to_vec(), b"full".to_vec()],
        }
    }

    /// The named form of ioq3's standalone games on dpmaster: `getservers <game> <protocol>
    /// empty full` (World of Padman, Smokin' Guns, Q3Rally, Reaction, Warsow).
    pub fn named(game: &str, protocol: i32) -> Self {
        GetServers {
            ext: false,
            game: Some(game.as_bytes().to_vec()),
            protocol,
            options: vec![b"empty".to_vec(), b"full".to_vec()],
        }
    }

    /// The dpmaster form: `getserversExt <game> <protocol> empty full ipv4 ipv6`.
    pub fn ext(game: &str, protocol: i32) -> Self {
        GetServers {
            ext: true,
            game: Some(game.as_bytes().to_vec()),
            protocol,
            options: ["empty", "full", "ipv4", "ipv6"]
                .iter()
                .map(|o| o.as_bytes().to_vec())
                .collect(),
        }
    }

    /// True when option `name` was sent.
    pub fn has_option(&self, name: &str) -> bool {
        self.options
            .iter()
            .any(|o| o.eq_ignore_ascii_case(name.as_bytes()))
    }

    pub(crate) fn decode_args(base: usize, bytes: &[u8], ext: bool) -> Result<Self, DecodeError> {
        let mut args = bytes
            .split(|&b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0))
            .filter(|t| !t.is_empty());
        let first = args.next().ok_or(DecodeError::Missing {
            field: "protocol",
            offset: base,
        })?;
        let (game, protocol) = if !ext && first.iter().all(u8::is_ascii_digit) {
            (None, parse_i32(first, "protocol", base)?)
        } else {
            let proto = args.next().ok_or(DecodeError::Missing {
                field: "protocol",
                offset: base,
            })?;
            (Some(first.to_vec()), parse_i32(proto, "protocol", base)?)
        };
        Ok(GetServers {
            ext,
            game,
            protocol,
            options: args.map(<[u8]>::to_vec).collect(),
        })
    }

    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        out.extend_from_slice(if self.ext {
            b"getserversExt"
        } else {
            b"getservers"
        });
        let bad = |t: &[u8]| {
            t.is_empty()
                || t.iter()
                    .any(|&b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0))
        };
        if let Some(g) = &self.game {
            if bad(g) {
                return Err(EncodeError::forbidden("game name"));
            }
            out.push(b' ');
            out.extend_from_slice(g);
        } else if self.ext {
            return Err(EncodeError::forbidden("game name"));
        }
        out.extend_from_slice(format!(" {}", self.protocol).as_bytes());
        for o in &self.options {
            if bad(o) {
                return Err(EncodeError::forbidden("option"));
            }
            out.push(b' ');
            out.extend_from_slice(o);
        }
        out.push(b'\n');
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Encode;
    use crate::{decode, Packet};

    fn list(bytes: &[u8]) -> ServerList {
        match decode(bytes).unwrap() {
            Packet::ServersResponse(l) => l,
            other => panic!("{other:?}"),
        }
    }

    /// Found by cargo-fuzz (quake3_decode): a port-0 entry is dropped, and the leftover bytes
    /// then start with a digit right after the command word.
    /// Activision's masters start with `\n\0` (pyq3serverlist `reader.py`); the Tremulous
    /// and Unvanquished masters end with a lone `\` and no marker (`master.py`).
    #[test]
    fn activision_prefix_and_closing_backslash() {
        let l =
            list(b"\xff\xff\xff\xffgetserversResponse\n\0\\\x01\x02\x03\x04\x6d\x38\\EOT\0\0\0");
        assert_eq!(l.servers, ["1.2.3.4:27960".parse::<SocketAddr>().unwrap()]);
        assert_eq!((l.terminator, l.trailing.len()), (Some(Terminator::Eot), 0));
        let l = list(b"\xff\xff\xff\xffgetserversResponse\\\x01\x02\x03\x04\x6d\x38\\");
        assert_eq!(
            (l.servers.len(), l.terminator, l.trailing.len()),
            (1, None, 0)
        );
        // Trailing bytes a decoder would read as that framing are refused by the encoder.
        for trailing in [&b"\\"[..], b"\n\0x"] {
            let bad = ServerList {
                trailing: trailing.to_vec(),
                ..ServerList::default()
            };
            assert!(Packet::ServersResponse(bad).to_bytes().is_err());
        }
    }

    #[test]
    fn fuzz_regression_trailing_glued_to_the_command() {
        let input = b"\xff\xff\xff\xffgetserversResponse\\\xb2>\0\0\0\x005@\xca\x8diT\x84";
        crate::fuzzing::check_decode(input);
        let l = list(input);
        assert!(l.servers.is_empty());
        assert_eq!(l.trailing, b"5@\xca\x8diT\x84");
        assert!(Packet::ServersResponse(l).to_bytes().is_err());
    }

    #[test]
    fn stride_parsing_survives_backslash_bytes() {
        let l = list(b"\xff\xff\xff\xffgetserversResponse\\\x03\x07\x36\x5c\xad\x70\\\x01\x02\x03\x04\x08\x00\\EOT\0\0\0");
        assert_eq!(
            l.servers,
            vec![
                "3.7.54.92:44400".parse().unwrap(),
                "1.2.3.4:2048".parse().unwrap()
            ]
        );
        assert_eq!(l.terminator, Some(Terminator::Eot));
    }

    #[test]
    fn eot_prefix_address_is_a_server_not_a_marker() {
        let l = list(b"\xff\xff\xff\xffgetserversResponse\\EOT\x05\x6d\x38");
        assert_eq!(l.servers, vec!["69.79.84.5:27960".parse().unwrap()]);
        assert_eq!(l.terminator, None);
    }

    #[test]
    fn ext_with_ipv6_and_markers() {
        let servers: Vec<SocketAddr> = vec![
            "1.2.3.4:27960".parse().unwrap(),
            "[2001:db8::1]:27961".parse().unwrap(),
        ];
        let packets = encode_server_list(&servers, true, EotStyle::LastPacket, MAX_MASTER_PACKET);
        assert_eq!(packets.len(), 1);
        let l = list(&packets[0]);
        assert!(l.ext);
        assert_eq!(l.servers, servers);
        assert_eq!(l.terminator, Some(Terminator::Eot));
    }

    #[test]
    fn splits_and_marks_packets() {
        let servers: Vec<SocketAddr> = (0..500u16)
            .map(|i| SocketAddr::from(([10, 0, (i >> 8) as u8, i as u8], 27960)))
            .collect();
        for (style, last, every) in [
            (EotStyle::LastPacket, Some(Terminator::Eot), false),
            (EotStyle::EveryPacket, Some(Terminator::Eot), true),
            (EotStyle::EofLast, Some(Terminator::Eof), false),
            (EotStyle::None, None, false),
        ] {
            let packets = encode_server_list(&servers, false, style, MAX_MASTER_PACKET);
            assert!(packets.len() >= 3);
            let mut all = Vec::new();
            for (i, p) in packets.iter().enumerate() {
                assert!(p.len() <= MAX_MASTER_PACKET);
                let l = list(p);
                let is_last = i + 1 == packets.len();
                assert_eq!(l.terminator, if is_last || every { last } else { None });
                all.extend(l.servers);
            }
            assert_eq!(all, servers);
        }
    }

    #[test]
    fn getservers_dialects() {
        for (bytes, game, proto, ext) in [
            (
                &b"\xff\xff\xff\xffgetservers 68 empty full"[..],
                None,
                68,
                false,
            ),
            (
                b"\xff\xff\xff\xffgetservers Warsow 22 full empty\n",
                Some(&b"Warsow"[..]),
                22,
                false,
            ),
            (
                b"\xff\xff\xff\xffgetserversExt Quake3Arena 68 ipv4 empty ipv6",
                Some(b"Quake3Arena"),
                68,
                true,
            ),
        ] {
            let Packet::GetServers(g) = decode(bytes).unwrap() else {
                panic!()
            };
            assert_eq!((g.game.as_deref(), g.protocol, g.ext), (game, proto, ext));
            assert!(g.has_option("empty"));
            assert_eq!(
                decode(&Packet::GetServers(g.clone()).to_bytes().unwrap()).unwrap(),
                Packet::GetServers(g)
            );
        }
    }
}
