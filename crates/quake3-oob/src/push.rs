//! ET: Legacy's pushed events (`sv_tracker`, 2.84+): the datagrams a server sends a tracker on
//! its own, without being asked. Sans-IO: [`decode_push`] turns a datagram into a typed
//! [`Push`], [`Push`]'s [`Encode`] writes one as the engine does (the emulator and the round
//! trip use it).
//!
//! Every layout below is ET: Legacy's `src/server/sv_tracker.c` at `etlegacy/etlegacy`
//! `a8e5f856` (v2.85.0-45); /work research §4 has the table, lines are that file's unless
//! named. `Tracker_Send` formats into `msg[MAX_MSGLEN]` and hands it to `NET_OutOfBandPrint`
//! (`net_chan.c:675-693`), which writes `FF FF FF FF` and the text's `strlen` bytes: **no
//! trailing newline and no NUL**, one event per datagram, from the game server's own socket
//! (so the source address and port are the server's). There is no challenge, sequence number
//! or acknowledgement: a receiver can only check the source address, which can be forged.
//!
//! | datagram (after `FF FF FF FF`) | [`Push`] | format (line) |
//! | --- | --- | --- |
//! | `start` | [`Push::Start`] | `"start"` (:193), when the server starts (`SV_Startup`, `sv_init.c:386-410`: a new, empty client table; not at a map change) |
//! | `stop` | [`Push::Stop`] | `"stop"` (:206), `SV_Shutdown` (`sv_init.c:1367`) |
//! | `connect <slot> <guid> <name>` | [`Push::Connect`] | `"connect %i %s %s"` (:220) |
//! | `disconnect <slot>` | [`Push::Disconnect`] | `"disconnect %i"` (:234) |
//! | `name <slot> <guid> <name>` | [`Push::Name`] | `"name %i %s %s"` (:253) |
//! | `map <map>` | [`Push::Map`] | `"map %s"` (:267), at every map load (`SV_InitGameProgs`, `sv_game.c:843`; not at a `map_restart`) |
//! | `maprestart` | [`Push::MapRestart`] | `"maprestart"` (:283), `sv_game.c:812` |
//! | `mapend` | [`Push::MapEnd`] | `"mapend"` (:299) |
//! | `p` | [`Push::KeepAlive`] | `"p"` (:414), about every 16 s (`waittime = 15`, :42, :409-419) |
//! | `wsc <n>` | [`Push::StatsCount`] | `"wsc %i"` (:365) |
//! | `ws <slot> <stats>\<ping>\<score>\<team>\<class>\<name>` | [`Push::StatsRow`] | `"ws %i 0 0 0\\%s"` (:374) or the mod's `ws` line `"%s\\%s"` (:467); the suffix is `Tracker_createClientInfo` (:309-329) |
//!
//! The GUID (`Tracker_getGUID`, :495-516) is userinfo `cl_guid` unless empty or `unknown`,
//! else `n_guid`, else `sil_guid`, else the literal `unknown`. Names are sent raw (colour
//! codes, spaces): the name is the rest of the datagram, kept as bytes. The engine quotes
//! nothing, so a GUID holding a space (a client can set any `cl_guid`) splits where the first
//! space is: the decoder takes the first word as the GUID.

use fragstat_core::wire::{decimal_i32, excerpt, Reader};
use fragstat_core::DecodeError;

use crate::packet::OOB_HEADER;
use crate::{Encode, EncodeError};

/// Client slots: `MAX_CLIENTS` (`src/qcommon/q_shared.h:1239`, 64); `%i` of
/// `cl - svs.clients` is below it.
pub const MAX_CLIENTS: u8 = 64;
/// Longest datagram decoded: `Tracker_Send`'s buffer, `MAX_MSGLEN` (`src/qcommon/qcommon.h:242`,
/// 32768).
pub const MAX_PUSH_BYTES: usize = 32_768;
/// Longest GUID taken: `cl_guid` is 32 hex digits (ET:L's `etkey` MD5); other mods' `n_guid`
/// and `sil_guid` are shorter. Anything longer is refused, not cut.
pub const MAX_GUID: usize = 64;
/// Longest name taken (bytes): `cl->name` holds `MAX_NAME_LENGTH` (36, `q_shared.h:512`), the
/// `name` event's userinfo value may be longer (`sv_client.c:1958-1964` sends it before
/// cutting it into `cl->name`); this bounds what a datagram makes anyone keep.
pub const MAX_NAME: usize = 256;
/// Longest map name: `MAX_QPATH` (64, `q_shared.h:503`).
pub const MAX_MAP: usize = 64;

/// A client in a `connect` or `name` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushClient {
    /// Its slot (below [`MAX_CLIENTS`]).
    pub slot: u8,
    /// Its GUID, raw (`unknown` when it has none).
    pub guid: Vec<u8>,
    /// Its name (`connect`: `cl->name`; `name`: the new name), raw.
    pub name: Vec<u8>,
}

/// A stats row (`ws`): a mod's weapon stats line and the engine's client info.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsRow {
    /// The slot.
    pub slot: u8,
    /// What follows the slot up to the client info: the mod's numbers (`rounds weaponMask
    /// …`, etl `g_match.c:528-639`) or the engine's `0 0 0` for a spectator; raw.
    pub stats: Vec<u8>,
    /// The client's ping.
    pub ping: i32,
    /// Its score (`persistant[PERS_SCORE]`).
    pub score: i32,
    /// Its team: its byte of the serverinfo `P` string (`0`-`3`, `3` a spectator).
    pub team: u8,
    /// Its player class.
    pub class: i32,
    /// Its name (`cl->name`), raw.
    pub name: Vec<u8>,
}

/// One pushed datagram (module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Push {
    /// `start`: the server started (a new, empty client table; `SV_Startup`).
    Start,
    /// `stop`: the server shuts down.
    Stop,
    /// `connect`: a client (or a bot) took a slot.
    Connect(PushClient),
    /// `disconnect`: the slot's client left.
    Disconnect {
        /// The slot.
        slot: u8,
    },
    /// `name`: the slot's client changed its name.
    Name(PushClient),
    /// `map`: the game started on this map.
    Map {
        /// The map (`sv_mapname`), raw.
        map: Vec<u8>,
    },
    /// `maprestart`: the map restarted.
    MapRestart,
    /// `mapend`: the match ended (intermission).
    MapEnd,
    /// `p`: the keep-alive.
    KeepAlive,
    /// `wsc`: how many stats rows follow.
    StatsCount {
        /// Active clients.
        clients: u8,
    },
    /// `ws`: one client's stats row.
    StatsRow(StatsRow),
}

impl Push {
    /// The command word: `start`, `stop`, `connect`, `disconnect`, `name`, `map`,
    /// `maprestart`, `mapend`, `p`, `wsc`, `ws`.
    pub fn command(&self) -> &'static str {
        match self {
            Push::Start => "start",
            Push::Stop => "stop",
            Push::Connect(_) => "connect",
            Push::Disconnect { .. } => "disconnect",
            Push::Name(_) => "name",
            Push::Map { .. } => "map",
            Push::MapRestart => "maprestart",
            Push::MapEnd => "mapend",
            Push::KeepAlive => "p",
            Push::StatsCount { .. } => "wsc",
            Push::StatsRow(_) => "ws",
        }
    }
}

/// Decodes one pushed datagram.
///
/// ```
/// use fragstat_quake3_oob::push::{decode_push, Push};
/// let p = decode_push(b"\xff\xff\xff\xffconnect 3 0123456789ABCDEF0123456789ABCDEF ^1Foo Bar")?;
/// let Push::Connect(c) = p else { panic!() };
/// assert_eq!((c.slot, &c.name[..]), (3, &b"^1Foo Bar"[..]));
/// # Ok::<(), fragstat_quake3_oob::DecodeError>(())
/// ```
pub fn decode_push(datagram: &[u8]) -> Result<Push, DecodeError> {
    if datagram.len() > MAX_PUSH_BYTES {
        return Err(DecodeError::TooMany {
            field: "datagram bytes",
            offset: 0,
            count: datagram.len() as u64,
            max: MAX_PUSH_BYTES as u64,
        });
    }
    let mut r = Reader::new(datagram);
    if !r.eat(&OOB_HEADER) {
        return Err(DecodeError::BadHeader {
            expected: &OOB_HEADER,
            found: r.rest().iter().take(4).copied().collect(),
        });
    }
    // `NET_OutOfBandPrint` sends `strlen` bytes: a NUL cannot be in a datagram it wrote.
    if let Some(i) = r.rest().iter().position(|&b| b == 0) {
        return Err(DecodeError::Invalid {
            field: "text",
            offset: r.offset() + i,
            reason: "a NUL inside (the engine sends the text's strlen bytes)",
        });
    }
    let at = r.offset();
    let command = r.take_while(|b| b != b' ');
    // One space after the command when arguments follow (the format strings' single spaces).
    if r.eat(b" ") {
        arguments(command, at, &mut r)
    } else {
        bare(command, at)
    }
}

/// A command alone (the datagram ends after it).
fn bare(command: &[u8], at: usize) -> Result<Push, DecodeError> {
    match command {
        b"start" => Ok(Push::Start),
        b"stop" => Ok(Push::Stop),
        b"maprestart" => Ok(Push::MapRestart),
        b"mapend" => Ok(Push::MapEnd),
        b"p" => Ok(Push::KeepAlive),
        b"connect" | b"name" | b"disconnect" | b"map" | b"wsc" | b"ws" => {
            Err(DecodeError::Missing {
                field: "arguments",
                offset: at + command.len(),
            })
        }
        _ => Err(DecodeError::UnknownCommand {
            offset: at,
            command: excerpt(command),
        }),
    }
}

/// A command and its arguments, `r` after the space that follows the command.
fn arguments(command: &[u8], at: usize, r: &mut Reader<'_>) -> Result<Push, DecodeError> {
    match command {
        b"connect" => client(r).map(Push::Connect),
        b"name" => client(r).map(Push::Name),
        b"disconnect" => {
            let at = r.offset();
            slot(r.take_rest(), at).map(|slot| Push::Disconnect { slot })
        }
        b"map" => {
            let at = r.offset();
            let map = r.take_rest();
            bounded("map", map, MAX_MAP, at)?;
            if map.is_empty() {
                return Err(DecodeError::Missing {
                    field: "map",
                    offset: at,
                });
            }
            Ok(Push::Map { map: map.to_vec() })
        }
        b"wsc" => {
            let at = r.offset();
            let n = decimal_i32(r.take_rest(), "clients", at)?;
            let clients =
                u8::try_from(n)
                    .ok()
                    .filter(|&n| n <= MAX_CLIENTS)
                    .ok_or(DecodeError::TooMany {
                        field: "clients",
                        offset: at,
                        count: u64::try_from(n).unwrap_or(u64::MAX),
                        max: u64::from(MAX_CLIENTS),
                    })?;
            Ok(Push::StatsCount { clients })
        }
        b"ws" => stats_row(r).map(Push::StatsRow),
        b"start" | b"stop" | b"maprestart" | b"mapend" | b"p" => Err(DecodeError::Invalid {
            field: "arguments",
            offset: at + command.len(),
            reason: "this event takes none",
        }),
        _ => Err(DecodeError::UnknownCommand {
            offset: at,
            command: excerpt(command),
        }),
    }
}

/// `bytes` (at `offset`) within `max`, or [`DecodeError::TooMany`].
fn bounded(
    field: &'static str,
    bytes: &[u8],
    max: usize,
    offset: usize,
) -> Result<(), DecodeError> {
    if bytes.len() > max {
        return Err(DecodeError::TooMany {
            field,
            offset,
            count: bytes.len() as u64,
            max: max as u64,
        });
    }
    Ok(())
}

/// A slot number (`%i`) at `offset`: below [`MAX_CLIENTS`].
fn slot(text: &[u8], offset: usize) -> Result<u8, DecodeError> {
    let n = decimal_i32(text, "slot", offset)?;
    u8::try_from(n)
        .ok()
        .filter(|&s| s < MAX_CLIENTS)
        .ok_or(DecodeError::Invalid {
            field: "slot",
            offset,
            reason: "not a client slot (0-63: MAX_CLIENTS is 64)",
        })
}

/// The next space-ended word (the space consumed).
fn word<'a>(r: &mut Reader<'a>, field: &'static str) -> Result<(usize, &'a [u8]), DecodeError> {
    let at = r.offset();
    Ok((at, r.until(field, b' ')?))
}

/// `<slot> <guid> <name>` (`connect`, `name`).
fn client(r: &mut Reader<'_>) -> Result<PushClient, DecodeError> {
    let (at, text) = word(r, "slot")?;
    let slot = slot(text, at)?;
    let (at, guid) = word(r, "guid")?;
    if guid.is_empty() {
        // `Tracker_getGUID` never returns an empty string (`unknown` instead).
        return Err(DecodeError::Missing {
            field: "guid",
            offset: at,
        });
    }
    bounded("guid", guid, MAX_GUID, at)?;
    let at = r.offset();
    let name = r.take_rest();
    bounded("name", name, MAX_NAME, at)?;
    Ok(PushClient {
        slot,
        guid: guid.to_vec(),
        name: name.to_vec(),
    })
}

/// `<slot> <stats>\<ping>\<score>\<team>\<class>\<name>` (`ws`).
fn stats_row(r: &mut Reader<'_>) -> Result<StatsRow, DecodeError> {
    let at = r.offset();
    // The slot ends at a space (a mod's row, the engine's `0 0 0`) or at the client info.
    let text = r.take_while(|b| b != b' ' && b != b'\\');
    let slot = slot(text, at)?;
    let _ = r.eat(b" ");
    let stats = r.until("client info", b'\\')?;
    let number = |r: &mut Reader<'_>, field: &'static str| -> Result<i32, DecodeError> {
        let at = r.offset();
        let text = r.until(field, b'\\')?;
        decimal_i32(text, field, at)
    };
    let ping = number(r, "ping")?;
    let score = number(r, "score")?;
    let at = r.offset();
    let team = match r.until("team", b'\\')? {
        [t] => *t,
        _ => {
            return Err(DecodeError::Invalid {
                field: "team",
                offset: at,
                reason: "not one character (the client's byte of `P`)",
            })
        }
    };
    let class = number(r, "class")?;
    let at = r.offset();
    let name = r.take_rest();
    bounded("name", name, MAX_NAME, at)?;
    Ok(StatsRow {
        slot,
        stats: stats.to_vec(),
        ping,
        score,
        team,
        class,
        name: name.to_vec(),
    })
}

fn check_slot(slot: u8) -> Result<(), EncodeError> {
    if slot >= MAX_CLIENTS {
        return Err(EncodeError::OutOfRange {
            field: "client slot (below 64)",
            value: i64::from(slot),
        });
    }
    Ok(())
}

/// A text field that can go in a datagram: no NUL (the engine's `strlen`), and none of
/// `forbidden` (the separator that ends the field on the wire), at most `max` bytes.
fn check_text(
    field: &'static str,
    bytes: &[u8],
    forbidden: &[u8],
    max: usize,
) -> Result<(), EncodeError> {
    if bytes.contains(&0) || bytes.iter().any(|b| forbidden.contains(b)) {
        return Err(EncodeError::forbidden(field));
    }
    if bytes.len() > max {
        return Err(EncodeError::OutOfRange {
            field,
            value: i64::try_from(bytes.len()).unwrap_or(i64::MAX),
        });
    }
    Ok(())
}

fn encode_client(out: &mut Vec<u8>, c: &PushClient) -> Result<(), EncodeError> {
    check_slot(c.slot)?;
    if c.guid.is_empty() {
        return Err(EncodeError::Empty { field: "guid" });
    }
    check_text("guid", &c.guid, b" ", MAX_GUID)?;
    check_text("name", &c.name, b"", MAX_NAME)?;
    out.extend_from_slice(format!(" {} ", c.slot).as_bytes());
    out.extend_from_slice(&c.guid);
    out.push(b' ');
    out.extend_from_slice(&c.name);
    Ok(())
}

impl Encode for Push {
    /// The datagram `Tracker_Send` writes: `FF FF FF FF`, the text, nothing after.
    fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        out.extend_from_slice(&OOB_HEADER);
        out.extend_from_slice(self.command().as_bytes());
        match self {
            Push::Start | Push::Stop | Push::MapRestart | Push::MapEnd | Push::KeepAlive => {}
            Push::Connect(c) | Push::Name(c) => encode_client(out, c)?,
            Push::Disconnect { slot } => {
                check_slot(*slot)?;
                out.extend_from_slice(format!(" {slot}").as_bytes());
            }
            Push::Map { map } => {
                if map.is_empty() {
                    return Err(EncodeError::Empty { field: "map" });
                }
                check_text("map", map, b"", MAX_MAP)?;
                out.push(b' ');
                out.extend_from_slice(map);
            }
            Push::StatsCount { clients } => {
                if *clients > MAX_CLIENTS {
                    return Err(EncodeError::OutOfRange {
                        field: "stats rows (at most 64)",
                        value: i64::from(*clients),
                    });
                }
                out.extend_from_slice(format!(" {clients}").as_bytes());
            }
            Push::StatsRow(w) => {
                check_slot(w.slot)?;
                check_text("stats", &w.stats, b"\\", MAX_PUSH_BYTES)?;
                check_text("name", &w.name, b"", MAX_NAME)?;
                if w.team == 0 || w.team == b'\\' {
                    return Err(EncodeError::forbidden("team"));
                }
                out.extend_from_slice(format!(" {} ", w.slot).as_bytes());
                out.extend_from_slice(&w.stats);
                out.extend_from_slice(format!("\\{}\\{}\\", w.ping, w.score).as_bytes());
                out.push(w.team);
                out.extend_from_slice(format!("\\{}\\", w.class).as_bytes());
                out.extend_from_slice(&w.name);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
