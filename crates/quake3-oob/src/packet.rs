//! Out-of-band packets: `FF FF FF FF` + a command word + arguments. Decode and encode.
//!
//! Sources: ioq3 `code/server/sv_main.c` (`SVC_Info`, `SVC_Status`, `SV_MasterHeartbeat`),
//! `code/server/sv_client.c` (`SV_GetChallenge`), `code/client/cl_main.c`
//! (`CL_ServersResponsePacket`); W:ET `src/server/sv_main.c`; dpmaster `doc/techinfo.txt`.

use crate::info::InfoString;
use crate::master::{GetServers, ServerList};
use crate::DecodeError;
use crate::{Encode, EncodeError};
use fragstat_core::model::{MAX_PLAYERS, MAX_WARNINGS};
use fragstat_core::wire::{decimal_i32 as parse_i32, excerpt, Reader};

/// The out-of-band marker every datagram starts with.
pub const OOB_HEADER: [u8; 4] = [0xFF; 4];

/// One decoded out-of-band datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Packet {
    /// `getinfo [challenge]`: client or master → server.
    GetInfo {
        /// The challenge to echo, if any.
        challenge: Option<Vec<u8>>,
    },
    /// `getstatus [challenge]`: client → server. Encoded without a newline after the
    /// challenge, so DarkPlaces, which echoes the rest of the datagram, echoes it exactly.
    GetStatus {
        /// The challenge to echo, if any.
        challenge: Option<Vec<u8>>,
    },
    /// `getchallenge [args…]`: client → server before connecting.
    GetChallenge {
        /// Arguments (ioq3: client challenge and game name).
        args: Vec<Vec<u8>>,
    },
    /// `infoResponse\n` + infostring.
    InfoResponse(InfoResponse),
    /// `statusResponse\n` + infostring + player lines.
    StatusResponse(StatusResponse),
    /// `challengeResponse <challenge> [<client challenge> <protocol>]`.
    ChallengeResponse(ChallengeResponse),
    /// `getservers …` / `getserversExt …`: client → master.
    GetServers(GetServers),
    /// `getserversResponse` / `getserversExtResponse`: one datagram of a master's list.
    ServersResponse(ServerList),
    /// `getserversExtResponseLinks`: the Dæmon master's dual-stack pairs ([`crate::daemon`]).
    ServerLinks(crate::daemon::ServerLinks),
    /// `heartbeat <name>`: server → master (`QuakeArena-1`, `EnemyTerritory-1`, `ETFlatline-1`…).
    Heartbeat(Heartbeat),
}

/// A server's short info reply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct InfoResponse {
    /// The infostring in wire order.
    pub info: InfoString,
}

impl InfoResponse {
    /// A reply carrying `info`.
    pub fn new(info: InfoString) -> Self {
        InfoResponse { info }
    }
}

/// A server's full status reply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StatusResponse {
    /// The serverinfo cvars in wire order.
    pub info: InfoString,
    /// Players in the order the server listed them.
    pub players: Vec<StatusPlayer>,
    /// Player lines after the first `MAX_PLAYERS` (fragstat_core::model), counted only.
    pub players_omitted: usize,
    /// Lines after the infostring that are not player lines (kept, not silently dropped).
    pub skipped: Vec<SkippedLine>,
    /// Such lines after the first `MAX_WARNINGS`, counted only (a hostile reply has 32,000).
    pub skipped_omitted: usize,
    /// True when the last line had no terminating newline and could not be read as a player:
    /// the reply was probably cut short.
    pub truncated: bool,
}

/// A line of a statusResponse that is not a player line.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SkippedLine {
    /// Absolute offset of the line in the datagram.
    pub offset: usize,
    /// The raw line, without its newline.
    pub line: Vec<u8>,
}

/// One player line: `score ping "name"` and any fields after the name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StatusPlayer {
    /// Score (frags). `None` for the two-field `ping "name"` form (Medal of Honor).
    pub score: Option<i32>,
    /// Ping in milliseconds as the server reports it (bots usually 0, connecting players 999).
    pub ping: i32,
    /// The name, lossless bytes with colour codes.
    pub name: Vec<u8>,
    /// Team, when the line has a single integer after the name (qfusion/Warsow: 0 spectator,
    /// 2 and 3 the two teams) or a third integer before it (DarkPlaces/SoF2 `score ping team
    /// "name"`: Nexuiz and Xonotic team games, 0 spectator, 1 red, 2 blue, 3 yellow, 4 pink).
    pub team: Option<i32>,
    /// The team stood before the name (the DarkPlaces/SoF2 form), not after it.
    pub team_before_name: bool,
    /// Every whitespace-separated field after the name, raw (a team after the name is also
    /// here).
    pub extra: Vec<Vec<u8>>,
}

/// `challengeResponse` arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChallengeResponse {
    /// The server's challenge.
    pub challenge: Vec<u8>,
    /// The client's challenge echoed (ioq3 ≥ 1.36).
    pub client_challenge: Option<Vec<u8>>,
    /// The server's protocol (ioq3 ≥ 1.36).
    pub protocol: Option<i32>,
}

/// A heartbeat or flatline.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Heartbeat {
    /// The heartbeat string, e.g. `QuakeArena-1`, `EnemyTerritory-1`, `ETFlatline-1`, `DarkPlaces`.
    pub name: Vec<u8>,
}

impl Heartbeat {
    /// A heartbeat with the string `name` (`QuakeArena-1`, `ETFlatline-1`…).
    pub fn new(name: impl Into<Vec<u8>>) -> Self {
        Heartbeat { name: name.into() }
    }

    /// True for the W:ET / RtCW shutdown messages (`ETFlatline-1`, `WolfFlatline-1`).
    pub fn is_flatline(&self) -> bool {
        self.name.ends_with(b"Flatline-1")
    }
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0)
}

/// Splits request arguments at whitespace and NULs (like `Cmd_TokenizeString`, without quotes).
fn split_args(bytes: &[u8]) -> Vec<Vec<u8>> {
    bytes
        .split(|&b| is_space(b))
        .filter(|t| !t.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

/// Reads the out-of-band header (and the optional 0x01 byte some engines add) and the command word.
fn header_and_command<'a>(r: &mut Reader<'a>) -> Result<(usize, &'a [u8]), DecodeError> {
    if !r.eat(&OOB_HEADER) {
        return Err(DecodeError::BadHeader {
            expected: &OOB_HEADER,
            found: r.rest().iter().take(4).copied().collect(),
        });
    }
    // Medal of Honor puts a direction byte after the marker: 0x01 from a server (qstat.c
    // 6179), 0x02 from a client (OpenMoHAA `net_chan.c`).
    let _ = r.eat(&[0x01]) || r.eat(&[0x02]);
    let at = r.offset();
    let command = r.take_while(is_word);
    if command.is_empty() {
        return Err(DecodeError::Missing {
            field: "command",
            offset: at,
        });
    }
    Ok((at, command))
}

/// Decodes one out-of-band datagram.
///
/// ```
/// use fragstat_quake3_oob::{decode, Packet};
/// let p = decode(b"\xff\xff\xff\xffinfoResponse\n\\hostname\\My ^1Server\\mapname\\q3dm17").unwrap();
/// let Packet::InfoResponse(info) = p else { panic!() };
/// assert_eq!(info.info.get("mapname"), Some(&b"q3dm17"[..]));
/// ```
pub fn decode(datagram: &[u8]) -> Result<Packet, DecodeError> {
    let mut r = Reader::new(datagram);
    let (at, command) = header_and_command(&mut r)?;
    let cmd = |name: &str| command.eq_ignore_ascii_case(name.as_bytes());
    if cmd("infoResponse") {
        decode_info(&mut r).map(Packet::InfoResponse)
    } else if cmd("statusResponse") {
        decode_status(&mut r).map(Packet::StatusResponse)
    } else if cmd("getserversResponse") {
        ServerList::decode_entries(&mut r, false).map(Packet::ServersResponse)
    } else if cmd("getserversExtResponse") {
        ServerList::decode_entries(&mut r, true).map(Packet::ServersResponse)
    } else if cmd("getserversExtResponseLinks") {
        crate::daemon::ServerLinks::decode(&mut r).map(Packet::ServerLinks)
    } else if cmd("challengeResponse") {
        decode_challenge_response(&mut r).map(Packet::ChallengeResponse)
    } else if cmd("getinfo") {
        Ok(Packet::GetInfo {
            challenge: decode_challenge_arg(&mut r)?,
        })
    } else if cmd("getstatus") {
        Ok(Packet::GetStatus {
            challenge: decode_challenge_arg(&mut r)?,
        })
    } else if cmd("getchallenge") {
        Ok(Packet::GetChallenge {
            args: split_args(r.take_rest()),
        })
    } else if cmd("getservers") {
        GetServers::decode_args(r.offset(), r.take_rest(), false).map(Packet::GetServers)
    } else if cmd("getserversExt") {
        GetServers::decode_args(r.offset(), r.take_rest(), true).map(Packet::GetServers)
    } else if cmd("heartbeat") {
        let args = split_args(r.take_rest());
        let name = args.into_iter().next().ok_or(DecodeError::Missing {
            field: "heartbeat name",
            offset: r.offset(),
        })?;
        Ok(Packet::Heartbeat(Heartbeat { name }))
    } else {
        Err(DecodeError::UnknownCommand {
            offset: at,
            command: excerpt(command),
        })
    }
}

fn decode_challenge_arg(r: &mut Reader<'_>) -> Result<Option<Vec<u8>>, DecodeError> {
    let at = r.offset();
    let args = split_args(r.take_rest());
    match args.into_iter().next() {
        // ioq3 SVC_Info/SVC_Status ignore requests with challenges over 128 chars.
        Some(c) if c.len() > 128 => Err(DecodeError::Invalid {
            field: "challenge",
            offset: at,
            reason: "longer than 128 bytes",
        }),
        other => Ok(other),
    }
}

fn expect_newline(r: &mut Reader<'_>) -> Result<(), DecodeError> {
    if r.eat(b"\n") || r.peek() == Some(b'\\') {
        return Ok(());
    }
    Err(DecodeError::Missing {
        field: "infostring",
        offset: r.offset(),
    })
}

fn decode_info(r: &mut Reader<'_>) -> Result<InfoResponse, DecodeError> {
    expect_newline(r)?;
    let at = r.offset();
    let rest = r.take_rest();
    // Replies built by NET_OutOfBandPrint carry no terminator; tolerate one trailing newline or NUL.
    let body = rest
        .strip_suffix(b"\n")
        .or_else(|| rest.strip_suffix(b"\0"))
        .unwrap_or(rest);
    Ok(InfoResponse {
        info: InfoString::parse(body, at)?,
    })
}

/// Finds where the status infostring ends.
///
/// The infostring normally ends at the first newline, but ioq3 1.36 `fs_manifest` values carry
/// `"\n "`. Infostring values can never contain `"` (`Info_SetValueForKey` refuses it), while
/// every player line does, so a following line without `"` is a continuation of the infostring.
fn status_info_end(body: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(rel) = memchr::memchr(b'\n', body.get(from..)?) {
        let nl = from + rel;
        let next = body.get(nl + 1..).unwrap_or_default();
        let line_end = memchr::memchr(b'\n', next).unwrap_or(next.len());
        let line = next.get(..line_end).unwrap_or_default();
        if line.is_empty() || memchr::memchr(b'"', line).is_some() {
            return Some(nl);
        }
        from = nl + 1;
    }
    None
}

fn decode_status(r: &mut Reader<'_>) -> Result<StatusResponse, DecodeError> {
    expect_newline(r)?;
    let base = r.offset();
    let body = r.take_rest();
    let (info_bytes, lines) = match status_info_end(body) {
        Some(end) => body.split_at(end),
        None => (body, &b""[..]),
    };
    let mut status = StatusResponse {
        info: InfoString::parse(info_bytes, base)?,
        ..Default::default()
    };
    // `lines` starts with the newline that ended the infostring.
    let offset = base + info_bytes.len() + 1;
    let lines = lines.get(1..).unwrap_or_default();
    // Lines between newlines (found eight bytes at a time); the last is what follows the
    // final newline.
    let mut newlines = fragstat_core::wire::positions(lines, b'\n');
    let mut start = 0;
    loop {
        let (end, last) = match newlines.next() {
            Some(end) => (end, false),
            None => (lines.len(), true),
        };
        let line = lines.get(start..end).unwrap_or_default();
        let line_offset = offset + start;
        start = end + 1;
        if line.is_empty() {
            // The final newline; or DarkPlaces' echo of a request's trailing newline in
            // `challenge` (netconn.c `challenge = string + 10`), which leaves an empty line
            // before the players; or IW4x's extra newline after them (`"\n" + list + "\n"`).
            if last {
                break;
            }
            continue;
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        match parse_player(line) {
            Some(p) if status.players.len() < MAX_PLAYERS => status.players.push(p),
            Some(_) => status.players_omitted += 1,
            None => {
                status.truncated |= last;
                if status.skipped.len() < MAX_WARNINGS {
                    let line = line.to_vec();
                    let offset = line_offset;
                    status.skipped.push(SkippedLine { offset, line });
                } else {
                    status.skipped_omitted += 1;
                }
            }
        }
        if last {
            break;
        }
    }
    Ok(status)
}

/// True when every newline inside an encoded status infostring will be read back as part of
/// it by [`status_info_end`]: the text after it, up to the next newline, is non-empty and has
/// no `"`.
fn newlines_read_back(info: &[u8]) -> bool {
    let mut rest = info;
    while let Some(i) = rest.iter().position(|&b| b == b'\n') {
        rest = rest.get(i + 1..).unwrap_or_default();
        let line = rest.split(|&b| b == b'\n').next().unwrap_or_default();
        if line.is_empty() || line.contains(&b'"') {
            return false;
        }
    }
    true
}

/// Parses `score ping "name" [fields…]` or `ping "name"`; the name runs from the first to the
/// last `"` on the line, so names containing `"` survive.
pub(crate) fn parse_player(line: &[u8]) -> Option<StatusPlayer> {
    let open = memchr::memchr(b'"', line)?;
    let close = memchr::memrchr(b'"', line)?;
    if close <= open {
        return None;
    }
    let head = line.get(..open)?;
    let name = line.get(open + 1..close)?.to_vec();
    let tail = line.get(close + 1..)?;
    // At most three numbers before the name (no allocation: this runs for every player).
    let mut nums: [&[u8]; 3] = [&[]; 3];
    let mut count = 0;
    let mut token: Option<usize> = None;
    for (i, &b) in head.iter().enumerate() {
        match (b == b' ' || b == b'\t', token) {
            (false, None) => token = Some(i),
            (true, Some(t)) => {
                *nums.get_mut(count)? = head.get(t..i)?;
                count += 1;
                token = None;
            }
            _ => {}
        }
    }
    if let Some(t) = token {
        *nums.get_mut(count)? = head.get(t..)?;
        count += 1;
    }
    // DarkPlaces inserts the team between ping and name "according to SoF2 protocol"
    // (darkplaces netconn.c NetConn_BuildStatusResponse).
    let (score, ping, team_first) = match nums.get(..count).unwrap_or_default() {
        [score, ping] => (
            Some(parse_i32(score, "score", 0).ok()?),
            parse_i32(ping, "ping", 0).ok()?,
            None,
        ),
        [score, ping, team] => (
            Some(parse_i32(score, "score", 0).ok()?),
            parse_i32(ping, "ping", 0).ok()?,
            Some(parse_i32(team, "team", 0).ok()?),
        ),
        [ping] => (None, parse_i32(ping, "ping", 0).ok()?, None),
        _ => return None,
    };
    let extra = split_args(tail);
    let team = match (team_first, extra.as_slice()) {
        (Some(t), _) => Some(t),
        (None, [t]) => parse_i32(t, "team", 0).ok(),
        _ => None,
    };
    Some(StatusPlayer {
        score,
        ping,
        name,
        team,
        team_before_name: team_first.is_some(),
        extra,
    })
}

fn decode_challenge_response(r: &mut Reader<'_>) -> Result<ChallengeResponse, DecodeError> {
    let at = r.offset();
    let mut args = split_args(r.take_rest()).into_iter();
    let challenge = args.next().ok_or(DecodeError::Missing {
        field: "challenge",
        offset: at,
    })?;
    let client_challenge = args.next();
    let protocol = match args.next() {
        Some(p) => Some(parse_i32(&p, "protocol", at)?),
        None => None,
    };
    Ok(ChallengeResponse {
        challenge,
        client_challenge,
        protocol,
    })
}

/// Checks a challenge against the rules of every engine (ioq3, W:ET `SV_VerifyChallenge`,
/// dpmaster): 1–64 bytes, printable ASCII 33..=126, none of `\ / ; " %`.
pub fn valid_challenge(c: &[u8]) -> bool {
    (1..=64).contains(&c.len())
        && c.iter()
            .all(|&b| (33..=126).contains(&b) && !b"\\/;\"%".contains(&b))
}

fn check_text(t: &[u8], field: &'static str, forbidden: &[u8]) -> Result<(), EncodeError> {
    if t.iter().any(|b| forbidden.contains(b)) {
        return Err(EncodeError::forbidden(field));
    }
    Ok(())
}

impl Encode for Packet {
    /// Appends the datagram to `out`. Requests end in `\n` as qstat and GameQ send them,
    /// except `getinfo`/`getstatus` with a challenge, which end with it (see
    /// [`Packet::GetStatus`]).
    fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        out.extend_from_slice(&OOB_HEADER);
        match self {
            Packet::GetInfo { challenge } => encode_request(out, b"getinfo", challenge.as_deref())?,
            Packet::GetStatus { challenge } => {
                encode_request(out, b"getstatus", challenge.as_deref())?
            }
            Packet::GetChallenge { args } => {
                out.extend_from_slice(b"getchallenge");
                for a in args {
                    check_text(a, "getchallenge argument", b" \t\n\r\0")?;
                    out.push(b' ');
                    out.extend_from_slice(a);
                }
                out.push(b'\n');
            }
            Packet::InfoResponse(i) => {
                // The reply has no terminator, and a decoder drops one trailing newline or NUL,
                // so a last value ending in one could not be read back.
                if i.info
                    .pairs()
                    .next_back()
                    .is_some_and(|(_, v)| v.ends_with(b"\n") || v.ends_with(b"\0"))
                {
                    return Err(EncodeError::forbidden("last infoResponse value"));
                }
                out.extend_from_slice(b"infoResponse\n");
                i.info.encode(out)?;
            }
            Packet::StatusResponse(s) => s.encode_body(out)?,
            Packet::ChallengeResponse(c) => {
                out.extend_from_slice(b"challengeResponse ");
                check_text(&c.challenge, "challenge", b" \t\n\r\0")?;
                out.extend_from_slice(&c.challenge);
                if let Some(cc) = &c.client_challenge {
                    check_text(cc, "client challenge", b" \t\n\r\0")?;
                    out.push(b' ');
                    out.extend_from_slice(cc);
                    if let Some(p) = c.protocol {
                        out.extend_from_slice(format!(" {p}").as_bytes());
                    }
                }
            }
            Packet::GetServers(g) => g.encode_body(out)?,
            Packet::ServersResponse(list) => list.encode_body(out)?,
            Packet::ServerLinks(links) => links.encode_body(out)?,
            Packet::Heartbeat(h) => {
                check_text(&h.name, "heartbeat name", b" \t\n\r\0")?;
                out.extend_from_slice(b"heartbeat ");
                out.extend_from_slice(&h.name);
                out.push(b'\n');
            }
        }
        Ok(())
    }
}

fn encode_request(
    out: &mut Vec<u8>,
    cmd: &[u8],
    challenge: Option<&[u8]>,
) -> Result<(), EncodeError> {
    out.extend_from_slice(cmd);
    if let Some(c) = challenge {
        if !valid_challenge(c) {
            return Err(EncodeError::Invalid(
                "challenge must be 1-64 printable ASCII bytes without \\ / ; \" %",
            ));
        }
        out.push(b' ');
        out.extend_from_slice(c);
        // Nothing after the challenge: DarkPlaces would echo a newline into it.
        return Ok(());
    }
    // Without a challenge, a newline (as qstat sends): DarkPlaces then sees no argument, and
    // IW4x needs a byte after the command.
    out.push(b'\n');
    Ok(())
}

impl StatusResponse {
    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        out.extend_from_slice(b"statusResponse\n");
        let start = out.len();
        self.info.encode(out)?;
        if !newlines_read_back(out.get(start..).unwrap_or_default()) {
            return Err(EncodeError::forbidden(
                "status infostring (a newline that would end it early)",
            ));
        }
        out.push(b'\n');
        for p in &self.players {
            check_text(&p.name, "player name", b"\"\n\0")?;
            let mut line = String::new();
            if let Some(s) = p.score {
                line.push_str(&format!("{s} "));
            }
            line.push_str(&format!("{} ", p.ping));
            if p.team_before_name {
                // A DarkPlaces line with a team before the name has a score too.
                match (p.score, p.team) {
                    (Some(_), Some(t)) => line.push_str(&format!("{t} ")),
                    _ => {
                        return Err(EncodeError::forbidden(
                            "player team before the name (needs a score and a team)",
                        ))
                    }
                }
            }
            line.push('"');
            out.extend_from_slice(line.as_bytes());
            out.extend_from_slice(&p.name);
            out.push(b'"');
            for e in &p.extra {
                check_text(e, "player field", b" \t\n\r\0\"")?;
                out.push(b' ');
                out.extend_from_slice(e);
            }
            out.push(b'\n');
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn player_forms() {
        let p = parse_player(b"5 40 \"a \"quoted\" name\"").unwrap();
        assert_eq!(
            (p.score, p.ping, p.name.as_slice()),
            (Some(5), 40, &b"a \"quoted\" name"[..])
        );
        let p = parse_player(b"-9999 8 \"^1x\" 2").unwrap();
        assert_eq!((p.score, p.team), (Some(-9999), Some(2)));
        // Tabs and runs of blanks separate the numbers too; a fourth number is no player.
        let p = parse_player(b" 12\t 34\t\"tab\"").unwrap();
        assert_eq!(
            (p.score, p.ping, p.name.as_slice()),
            (Some(12), 34, &b"tab"[..])
        );
        assert!(parse_player(b"1 2 3 4 \"four\"").is_none());
        let p = parse_player(b"3 48 2 \"dp team\"").unwrap();
        assert_eq!(
            (
                p.score,
                p.ping,
                p.team,
                p.team_before_name,
                p.name.as_slice()
            ),
            (Some(3), 48, Some(2), true, &b"dp team"[..])
        );
        let mut out = Vec::new();
        StatusResponse {
            players: vec![p.clone()],
            ..Default::default()
        }
        .encode_body(&mut out)
        .unwrap();
        assert!(
            out.ends_with(b"\n3 48 2 \"dp team\"\n"),
            "{}",
            out.escape_ascii()
        );
        let p = parse_player(b"60 \"mohaa\"").unwrap();
        assert_eq!((p.score, p.ping), (None, 60));
        assert!(parse_player(b"abc 46 \"x\"").is_none());
        assert!(parse_player(b"0 68 \"unterminated").is_none());
        assert_eq!(parse_player(b"28 135 \"\"").unwrap().name, b"");
    }

    /// Found by cargo-fuzz (quake3_decode): a value ending in a newline before a trailing `\`
    /// decoded, but its re-encoding ended the infostring early.
    #[test]
    fn fuzz_regression_newline_before_trailing_separator() {
        let input = b"\xff\xff\xff\xffstatusResponse\n\\cMay  7 2009\\com_psoto0 12 \"prime\n\\\n2^9P^7uffda1)\" 3\n\0\0<Zerg8\\gam";
        crate::fuzzing::check_decode(input);
        let Packet::StatusResponse(st) = decode(input).unwrap() else {
            panic!()
        };
        assert!(
            Packet::StatusResponse(st).to_bytes().is_err(),
            "cannot be written back faithfully"
        );
    }

    #[test]
    fn replies_with_and_without_trailing_newline() {
        let with =
            decode(b"\xff\xff\xff\xffstatusResponse\n\\mapname\\q3dm1\n3 40 \"a\"\n-1 0 \"b\"\n")
                .unwrap();
        let without =
            decode(b"\xff\xff\xff\xffstatusResponse\n\\mapname\\q3dm1\n3 40 \"a\"\n-1 0 \"b\"")
                .unwrap();
        assert_eq!(with, without);
        let Packet::StatusResponse(st) = with else {
            panic!()
        };
        assert_eq!((st.players.len(), st.truncated), (2, false));
        // An empty server: the infostring's newline ends the reply, or nothing does.
        for bytes in [
            &b"\xff\xff\xff\xffstatusResponse\n\\mapname\\q3dm1\n"[..],
            b"\xff\xff\xff\xffstatusResponse\n\\mapname\\q3dm1",
        ] {
            let Packet::StatusResponse(st) = decode(bytes).unwrap() else {
                panic!()
            };
            assert_eq!(
                (st.info.get("mapname"), st.players.len(), st.skipped.len()),
                (Some(&b"q3dm1"[..]), 0, 0)
            );
        }
        let a = decode(b"\xff\xff\xff\xffinfoResponse\n\\hostname\\x\n").unwrap();
        let b = decode(b"\xff\xff\xff\xffinfoResponse\n\\hostname\\x").unwrap();
        assert_eq!(a, b);
        // The Medal of Honor header byte.
        let Packet::InfoResponse(i) =
            decode(b"\xff\xff\xff\xff\x01infoResponse\n\\hostname\\x").unwrap()
        else {
            panic!()
        };
        assert_eq!(i.info.get("hostname"), Some(&b"x"[..]));
    }

    #[test]
    fn requests_round_trip() {
        for p in [
            Packet::GetInfo {
                challenge: Some(b"abc123".to_vec()),
            },
            Packet::GetStatus { challenge: None },
            Packet::Heartbeat(Heartbeat {
                name: b"ETFlatline-1".to_vec(),
            }),
            Packet::GetChallenge {
                args: vec![b"123".to_vec(), b"Quake3Arena".to_vec()],
            },
        ] {
            let bytes = p.to_bytes().unwrap();
            assert_eq!(decode(&bytes).unwrap(), p);
        }
    }

    #[test]
    fn challenge_response_forms() {
        let Packet::ChallengeResponse(c) =
            decode(b"\xff\xff\xff\xffchallengeResponse 123 -45 71").unwrap()
        else {
            panic!()
        };
        assert_eq!(c.protocol, Some(71));
        assert_eq!(c.client_challenge.as_deref(), Some(&b"-45"[..]));
        let Packet::ChallengeResponse(c) = decode(b"\xff\xff\xff\xffchallengeResponse 77").unwrap()
        else {
            panic!()
        };
        assert_eq!((c.challenge.as_slice(), c.protocol), (&b"77"[..], None));
    }

    #[test]
    fn rejects_bad_challenges_on_encode() {
        for c in [&b""[..], b"a b", b"a\\b", b"x;y", &[b'a'; 65]] {
            assert!(Packet::GetInfo {
                challenge: Some(c.to_vec())
            }
            .to_bytes()
            .is_err());
        }
    }
}
