//! The master protocol: `getServers` (client → master) and `servers` (master → client).
//!
//! Request (dhewm3 `idAsyncClient::GetNETServers`): `i32 protocol`, `str fs_game`, then the
//! three 2-bit GUI filters written with `WriteBits` (LSB first) into one byte: password
//! (bits 0–1: 1 with, 2 without), players (bits 2–3: 1 not full, 2 not full and not empty),
//! game type (bits 4–5: 1 dm, 2 tourney, 3 tdm) — qstat's `build_doom3_masterfilter` writes
//! the same bits. Quake 4 (its 1.0 binary; qstat) puts `str player` and `str clan` filters
//! between `fs_game` and the filter byte, and qstat sets bit 31 of the protocol (a "third
//! party" flag).
//!
//! Reply: `servers` then `N × (4 bytes IPv4 in network order, u16 port little-endian)` to the
//! end of the datagram, no count and no end marker; a list may span several datagrams.

use std::net::SocketAddrV4;

use fragstat_core::wire::Reader;
use fragstat_core::DecodeError;

use crate::dict::put_str;
use crate::game::{Idtech4Game, Protocol};
use crate::packet::{entry, HEADER};
use crate::EncodeError;

/// `getServers`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct GetServers {
    /// Protocol asked for, raw (bit 31: qstat's Quake 4 "third party" flag; 0: any).
    pub protocol: u32,
    /// `fs_game` (the mod; empty for the base game).
    pub game: Vec<u8>,
    /// Quake 4 only: player name filter.
    pub player: Option<Vec<u8>>,
    /// Quake 4 only: clan filter.
    pub clan: Option<Vec<u8>>,
    /// The filter byte, when sent.
    pub filter: Option<u8>,
    /// Bytes after the filter byte.
    pub trailing: Vec<u8>,
}

impl GetServers {
    /// The request `game`'s own client sends for protocol `protocol` with no filters (Quake 4
    /// with empty player and clan filters).
    pub fn new(game: Idtech4Game, protocol: u32) -> Self {
        let q4 = game.master_filters_players();
        GetServers {
            protocol,
            game: Vec::new(),
            player: q4.then(Vec::new),
            clan: q4.then(Vec::new),
            filter: Some(0),
            trailing: Vec::new(),
        }
    }

    /// The protocol without qstat's bit-31 flag; 0 asks for every protocol.
    pub fn protocol_version(&self) -> u32 {
        self.protocol & 0x7fff_ffff
    }

    /// The password filter (0 any, 1 with a password, 2 without).
    pub fn password_filter(&self) -> u8 {
        self.filter.unwrap_or(0) & 3
    }

    /// The players filter (0 any, 1 not full, 2 not full and not empty).
    pub fn players_filter(&self) -> u8 {
        (self.filter.unwrap_or(0) >> 2) & 3
    }

    /// The game-type filter (0 any, 1 dm, 2 tourney, 3 tdm).
    pub fn gametype_filter(&self) -> u8 {
        (self.filter.unwrap_or(0) >> 4) & 3
    }

    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        out.extend_from_slice(&self.protocol.to_le_bytes());
        put_str(out, &self.game, "fs_game")?;
        match (&self.player, &self.clan) {
            (Some(p), Some(c)) => {
                put_str(out, p, "player filter")?;
                put_str(out, c, "clan filter")?;
            }
            (None, None) => {}
            _ => {
                return Err(EncodeError::Invalid(
                    "player and clan filters go together (Quake 4)",
                ))
            }
        }
        match self.filter {
            Some(f) => out.push(f),
            None if !self.trailing.is_empty() => {
                return Err(EncodeError::Invalid("trailing bytes without a filter byte"))
            }
            None => {}
        }
        out.extend_from_slice(&self.trailing);
        Ok(())
    }
}

pub(crate) fn read_get_servers(
    r: &mut Reader<'_>,
    game: Option<Idtech4Game>,
) -> Result<GetServers, DecodeError> {
    let protocol = r.u32_le("protocol")?;
    let mod_name = r.cstr("fs_game")?.to_vec();
    let game = game.or(Idtech4Game::of_protocol(Protocol(protocol)));
    let (player, clan) = if game.is_some_and(Idtech4Game::master_filters_players) {
        (
            Some(r.cstr("player filter")?.to_vec()),
            Some(r.cstr("clan filter")?.to_vec()),
        )
    } else {
        (None, None)
    };
    let filter = if r.is_empty() {
        None
    } else {
        Some(r.u8("filter")?)
    };
    Ok(GetServers {
        protocol,
        game: mod_name,
        player,
        clan,
        filter,
        trailing: r.take_rest().to_vec(),
    })
}

/// One `servers` datagram.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerList {
    /// The servers, in order.
    pub servers: Vec<SocketAddrV4>,
    /// 1–5 bytes after the last whole entry (a cut datagram), kept and reported.
    pub trailing: Vec<u8>,
}

impl ServerList {
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        for s in &self.servers {
            out.extend_from_slice(&s.ip().octets());
            out.extend_from_slice(&s.port().to_le_bytes());
        }
        if self.trailing.len() >= ENTRY {
            return Err(EncodeError::Invalid(
                "a list's trailing bytes are fewer than one entry",
            ));
        }
        out.extend_from_slice(&self.trailing);
        Ok(())
    }
}

/// Bytes per list entry.
pub const ENTRY: usize = 6;

/// Entries per `servers` datagram the emulated master sends: 1400-byte datagrams, as dpmaster
/// uses (the id masters' size is not known).
pub const MAX_ENTRIES: usize = (1400 - HEADER.len() - b"servers\0".len()) / ENTRY;

pub(crate) fn read_servers(r: &mut Reader<'_>) -> ServerList {
    let mut list = ServerList::default();
    while let Ok(e) = r.array::<ENTRY>("server") {
        list.servers.push(entry(e));
    }
    list.trailing = r.take_rest().to_vec();
    list
}

/// `servers` datagrams listing `servers`, at most [`MAX_ENTRIES`] each; one empty datagram
/// for an empty list.
pub fn encode_server_list(servers: &[SocketAddrV4]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = servers
        .chunks(MAX_ENTRIES)
        .map(|chunk| {
            let mut d = Vec::with_capacity(10 + chunk.len() * ENTRY);
            d.extend_from_slice(&HEADER);
            d.extend_from_slice(b"servers\0");
            for s in chunk {
                d.extend_from_slice(&s.ip().octets());
                d.extend_from_slice(&s.port().to_le_bytes());
            }
            d
        })
        .collect();
    if out.is_empty() {
        out.push(b"\xff\xffservers\0".to_vec());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{decode, decode_as, Packet};
    use crate::Encode;

    #[test]
    fn the_game_free_decode_reads_filters_by_the_requests_major() {
        // Quake 4's own request (major 2, bit 31 as qstat sets it): player and clan filters.
        let mut q4 = GetServers::new(Idtech4Game::Quake4, 0x8002_0055);
        q4.player = Some(b"neo".to_vec());
        q4.clan = Some(b"^1x".to_vec());
        q4.filter = Some(0x04);
        let Packet::GetServers(g) =
            decode(&Packet::GetServers(q4.clone()).to_bytes().unwrap()).unwrap()
        else {
            panic!()
        };
        assert_eq!(g, q4);
        // No major (qstat's 0): read as Doom 3's, the rest kept as trailing bytes.
        let q4_zero = b"\xFF\xFFgetServers\x00\x00\x00\x00\x00\x00\x00\x00\x00";
        let Packet::GetServers(g) = decode(q4_zero).unwrap() else {
            panic!()
        };
        assert_eq!((g.player, g.clan, g.filter), (None, None, Some(0)));
        assert_eq!(g.trailing, b"\0\0");
    }

    #[test]
    fn qstat_requests_decode() {
        // qstat doom3.c `doom3_master_query` / `quake4_master_query` (with the literal's NUL).
        let d3 = b"\xFF\xFFgetServers\x00\x00\x00\x00\x00\x00\x00";
        let Packet::GetServers(g) = decode_as(Idtech4Game::Doom3, d3).unwrap() else {
            panic!()
        };
        assert_eq!(g, GetServers::new(Idtech4Game::Doom3, 0));
        let q4 = b"\xFF\xFFgetServers\x00\x00\x00\x00\x00\x00\x00\x00\x00";
        let Packet::GetServers(g) = decode_as(Idtech4Game::Quake4, q4).unwrap() else {
            panic!()
        };
        assert_eq!(g, GetServers::new(Idtech4Game::Quake4, 0));
        assert_eq!(Packet::GetServers(g).to_bytes().unwrap(), q4);
        // qstat with `-q4m host,2.85 -status notfull`-like options: bit 31 and filter bits.
        let mut req = GetServers::new(Idtech4Game::Quake4, 0x8002_0055);
        req.filter = Some(0x04 | 0x30);
        assert_eq!(req.protocol_version(), 0x20055);
        assert_eq!((req.players_filter(), req.gametype_filter()), (1, 3));
    }

    #[test]
    fn list_entries_port_little_endian() {
        let d = b"\xff\xffservers\0\x7f\x00\x00\x01\x92\x6c\x0a\x00\x00\x02\x01\x00\xaa";
        let Packet::Servers(l) = decode_as(Idtech4Game::Doom3, d).unwrap() else {
            panic!()
        };
        assert_eq!(
            l.servers,
            vec![
                "127.0.0.1:27794".parse().unwrap(),
                "10.0.0.2:1".parse().unwrap()
            ]
        );
        assert_eq!(l.trailing, vec![0xaa]);
        let many: Vec<SocketAddrV4> = (0..500u16)
            .map(|p| SocketAddrV4::new([10, 0, 0, 1].into(), p))
            .collect();
        let grams = encode_server_list(&many);
        assert_eq!(grams.len(), 3);
        assert!(grams.iter().all(|g| g.len() <= 1400));
        let back: Vec<SocketAddrV4> = grams
            .iter()
            .flat_map(|g| match decode_as(Idtech4Game::Quake4, g).unwrap() {
                Packet::Servers(l) => l.servers,
                _ => panic!(),
            })
            .collect();
        assert_eq!(back, many);
    }
}
