//! ETQW connectionless packets: `FF FF`, a NUL-terminated command, little-endian fields.
//!
//! Sources: the Splash Damage forum's description of the 1.4/1.5 protocol (reproduced in the
//! project's seeds), qstat doom3.c (version 5) and the two ETQW 1.4 replies in qstat's tests,
//! GameQ Etqw.php; the layout fits every real reply checked byte for byte
//! (docs/protocols/etqw.md).
//!
//! ```text
//! reply  FF FF "infoResponse" 00 | "infoExResponse" 00
//!        8 bytes challenge echo (opaque)   u32 protocol   u32 size (bytes after it)
//!        { str key; str value }* "" ""
//!        { u8 slot; u16 ping; str name; u8 clan position; str clan; u8 bot }* 32
//!        u32 os mask; u8 ranked; u32 time left (ms); u8 game state; u8 server type
//!        type 0: u8 interested clients | type 1: u32 viewers; u32 max viewers
//!        infoExResponse: { u8 slot; f32 xp; str team; i32 kills; i32 deaths }* 32
//! ```

use crate::Encode;
use crate::EncodeError;
use fragstat_core::wire::{excerpt, Reader};
use fragstat_core::DecodeError;
use fragstat_idtech4::dict::{put_slot, put_str, read_dict, write_dict, Dict};
use fragstat_idtech4::{Protocol, END_OF_PLAYERS, HEADER};

/// ETQW 1.4's protocol, 10.19.
pub const PROTOCOL_1_4: Protocol = Protocol::new(10, 19);
/// ETQW 1.5's protocol, 10.21.
pub const PROTOCOL_1_5: Protocol = Protocol::new(10, 21);

/// True for the protocols whose layout this codec knows (10.19 and 10.21; earlier ones sent
/// a rate and, before 10.17, no clan tag — never guessed).
pub fn known_protocol(p: Protocol) -> bool {
    p == PROTOCOL_1_4 || p == PROTOCOL_1_5
}

/// A decoded packet.
// Replies are what a client decodes all day; boxing them would cost an allocation each for
// the sake of the rare request.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Packet {
    /// `getInfo` or `getInfoEx` (client → server).
    GetInfo(GetInfo),
    /// `infoResponse` or `infoExResponse` (server → client).
    InfoResponse(InfoResponse),
}

/// `getInfo` / `getInfoEx`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct GetInfo {
    /// `getInfoEx`: ask for the extended (per-player xp, team, kills, deaths) block too.
    pub ex: bool,
    /// The bytes after the command: the challenge, 8 bytes, echoed by the server (a server
    /// given fewer reads −1 for each missing 4-byte half).
    pub challenge: Vec<u8>,
}

impl GetInfo {
    /// The 8 bytes a server echoes for this request.
    pub fn echo(&self) -> [u8; 8] {
        let mut out = [0xff; 8];
        for half in 0..2 {
            if let Some(b) = self.challenge.get(half * 4..half * 4 + 4) {
                if let Some(dst) = out.get_mut(half * 4..half * 4 + 4) {
                    dst.copy_from_slice(b);
                }
            }
        }
        out
    }
}

/// One player.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct InfoPlayer {
    /// Client slot, 0–31; not contiguous.
    pub slot: u8,
    /// Ping in ms.
    pub ping: u16,
    /// Name, raw.
    pub name: Vec<u8>,
    /// Where the clan tag goes: 0 before the name, 1 after (other values kept as sent).
    pub clan_position: u8,
    /// Clan tag, raw.
    pub clan: Vec<u8>,
    /// Bot flag as sent (0 human, 1 bot).
    pub bot: u8,
}

/// What a regular or TV server adds after the game state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerType {
    /// Type 0: a game server.
    Regular {
        /// Clients interested in joining (queued).
        interested_clients: u8,
    },
    /// Type 1: an ETQW TV server.
    Tv {
        /// Viewers connected.
        viewers: u32,
        /// Viewer slots.
        max_viewers: u32,
    },
    /// Another type: what follows is unknown and left in the trailing bytes.
    Unknown(u8),
}

/// The block after the player list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PostPlayers {
    /// OS mask of the mod (all bits set on an unpure server).
    pub os_mask: u32,
    /// Ranked server flag as sent.
    pub ranked: u8,
    /// Time left in the map, ms.
    pub time_left: u32,
    /// Game state bits: 0 warm-up, 1 game on, 2 post-map review, 3 loading the next map,
    /// 4 second round of stopwatch.
    pub game_state: u8,
    /// Server type and its fields.
    pub server_type: ServerType,
}

impl PostPlayers {
    /// The block with its fields in wire order: OS mask, ranked flag, time left (ms), game
    /// state bits, server type.
    pub fn new(
        os_mask: u32,
        ranked: u8,
        time_left: u32,
        game_state: u8,
        server_type: ServerType,
    ) -> Self {
        PostPlayers {
            os_mask,
            ranked,
            time_left,
            game_state,
            server_type,
        }
    }
}

/// One entry of the `infoExResponse` extended block (as the stock game writes it; mods may
/// change it).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ExPlayer {
    /// Client slot.
    pub slot: u8,
    /// Total experience points.
    pub xp: f32,
    /// Team name (`gdf`, `strogg`); empty for spectators.
    pub team: Vec<u8>,
    /// Total kills.
    pub kills: i32,
    /// Total deaths.
    pub deaths: i32,
}

/// The extended block of an `infoExResponse`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Extended {
    /// Decoded with the stock layout.
    Players(Vec<ExPlayer>),
    /// Not decodable with the stock layout (a mod's own block, or a cut datagram): the bytes,
    /// and why. The rest of the reply stands.
    Undecoded {
        /// The block's bytes.
        bytes: Vec<u8>,
        /// What failed.
        error: DecodeError,
    },
}

/// Everything after the dictionary, for a known protocol.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct KnownBody {
    /// Players in slot order.
    pub players: Vec<InfoPlayer>,
    /// The block after them.
    pub post: PostPlayers,
    /// The extended block (`infoExResponse` only).
    pub extended: Option<Extended>,
    /// Bytes after everything decoded.
    pub trailing: Vec<u8>,
}

impl KnownBody {
    /// `players` and the block after them, with no extended block and no trailing bytes
    /// (an `infoResponse`; set [`KnownBody::extended`] for an `infoExResponse`).
    pub fn new(players: Vec<InfoPlayer>, post: PostPlayers) -> Self {
        KnownBody {
            players,
            post,
            extended: None,
            trailing: Vec::new(),
        }
    }
}

/// What follows the dictionary.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Body {
    /// A known protocol.
    Known(KnownBody),
    /// An unknown protocol: the bytes, not decoded with a guessed layout.
    Undecoded {
        /// The bytes.
        bytes: Vec<u8>,
    },
}

/// `infoResponse` / `infoExResponse`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct InfoResponse {
    /// `infoExResponse`.
    pub ex: bool,
    /// The challenge echo, opaque (servers echo what they read; see [`GetInfo::echo`]).
    pub challenge: [u8; 8],
    /// Protocol version.
    pub protocol: Protocol,
    /// The size field as sent (bytes after it); `None` when encoding: computed.
    pub size: Option<u32>,
    /// The server-info dictionary.
    pub dict: Dict,
    /// Players and the rest.
    pub body: Body,
}

impl InfoResponse {
    /// A reply (`infoExResponse` when `ex`) echoing `challenge`, with its size left to be
    /// computed when encoding.
    pub fn new(ex: bool, challenge: [u8; 8], protocol: Protocol, dict: Dict, body: Body) -> Self {
        InfoResponse {
            ex,
            challenge,
            protocol,
            size: None,
            dict,
            body,
        }
    }

    /// The number of bytes after the size field in `datagram_len` bytes of this reply.
    pub fn actual_size(&self, datagram_len: usize) -> usize {
        let head = HEADER.len() + self.command().len() + 1 + 8 + 4 + 4;
        datagram_len.saturating_sub(head)
    }

    fn command(&self) -> &'static str {
        if self.ex {
            "infoExResponse"
        } else {
            "infoResponse"
        }
    }
}

fn read_players(r: &mut Reader<'_>) -> Result<Vec<InfoPlayer>, DecodeError> {
    let mut players = Vec::new();
    let mut previous: Option<u8> = None;
    loop {
        let at = r.offset();
        let slot = r.u8("player slot")?;
        if slot == END_OF_PLAYERS {
            return Ok(players);
        }
        check_slot(slot, previous, at, "player slot")?;
        previous = Some(slot);
        players.push(InfoPlayer {
            slot,
            ping: r.u16_le("player ping")?,
            name: r.cstr("player name")?.to_vec(),
            clan_position: r.u8("clan position")?,
            clan: r.cstr("player clan")?.to_vec(),
            bot: r.u8("bot flag")?,
        });
    }
}

fn check_slot(
    slot: u8,
    previous: Option<u8>,
    at: usize,
    field: &'static str,
) -> Result<(), DecodeError> {
    if slot > END_OF_PLAYERS {
        return Err(DecodeError::Invalid {
            field,
            offset: at,
            reason: "slot above 32, the end-of-list marker",
        });
    }
    if previous.is_some_and(|p| slot <= p) {
        return Err(DecodeError::Invalid {
            field,
            offset: at,
            reason: "slots must increase (each client is listed once, in slot order)",
        });
    }
    Ok(())
}

fn read_post(r: &mut Reader<'_>) -> Result<PostPlayers, DecodeError> {
    let os_mask = r.u32_le("osmask")?;
    let ranked = r.u8("ranked")?;
    let time_left = r.u32_le("time left")?;
    let game_state = r.u8("game state")?;
    let server_type = match r.u8("server type")? {
        0 => ServerType::Regular {
            interested_clients: r.u8("interested clients")?,
        },
        1 => ServerType::Tv {
            viewers: r.u32_le("viewers")?,
            max_viewers: r.u32_le("max viewers")?,
        },
        other => ServerType::Unknown(other),
    };
    Ok(PostPlayers {
        os_mask,
        ranked,
        time_left,
        game_state,
        server_type,
    })
}

fn read_extended(r: &mut Reader<'_>) -> Result<Vec<ExPlayer>, DecodeError> {
    let mut out = Vec::new();
    let mut previous: Option<u8> = None;
    loop {
        let at = r.offset();
        let slot = r.u8("extended slot")?;
        if slot == END_OF_PLAYERS {
            return Ok(out);
        }
        check_slot(slot, previous, at, "extended slot")?;
        previous = Some(slot);
        out.push(ExPlayer {
            slot,
            xp: r.f32_le("xp")?,
            team: r.cstr("team")?.to_vec(),
            kills: r.i32_le("kills")?,
            deaths: r.i32_le("deaths")?,
        });
    }
}

/// Decodes one ETQW datagram.
pub fn decode(datagram: &[u8]) -> Result<Packet, DecodeError> {
    let mut r = Reader::new(datagram);
    let head = datagram.get(..3).unwrap_or(datagram);
    if !datagram.starts_with(&HEADER) || head == [0xff, 0xff, 0xff] {
        return Err(DecodeError::BadHeader {
            expected: &HEADER,
            found: head.to_vec(),
        });
    }
    r.take("header", 2)?;
    let command = r.cstr("command")?;
    let is = |name: &str| command.eq_ignore_ascii_case(name.as_bytes());
    if is("getInfo") || is("getInfoEx") {
        return Ok(Packet::GetInfo(GetInfo {
            ex: is("getInfoEx"),
            challenge: r.take_rest().to_vec(),
        }));
    }
    if !(is("infoResponse") || is("infoExResponse")) {
        return Err(DecodeError::UnknownCommand {
            offset: 2,
            command: excerpt(command),
        });
    }
    let ex = is("infoExResponse");
    let mut challenge = [0u8; 8];
    challenge.copy_from_slice(r.take("challenge", 8)?);
    let protocol = Protocol(r.u32_le("protocol")?);
    let size = r.u32_le("size")?;
    let dict = read_dict(&mut r)?;
    let body = if known_protocol(protocol) {
        let players = read_players(&mut r)?;
        let post = read_post(&mut r)?;
        let extended = match (ex, post.server_type) {
            (true, ServerType::Regular { .. } | ServerType::Tv { .. }) => {
                let mut probe = r.clone();
                Some(match read_extended(&mut probe) {
                    Ok(list) => {
                        r = probe;
                        Extended::Players(list)
                    }
                    Err(error) => Extended::Undecoded {
                        bytes: r.take_rest().to_vec(),
                        error,
                    },
                })
            }
            _ => None,
        };
        Body::Known(KnownBody {
            players,
            post,
            extended,
            trailing: r.take_rest().to_vec(),
        })
    } else {
        Body::Undecoded {
            bytes: r.take_rest().to_vec(),
        }
    };
    Ok(Packet::InfoResponse(InfoResponse {
        ex,
        challenge,
        protocol,
        size: Some(size),
        dict,
        body,
    }))
}

fn write_body(out: &mut Vec<u8>, r: &InfoResponse) -> Result<(), EncodeError> {
    write_dict(out, &r.dict)?;
    let d = match &r.body {
        Body::Undecoded { bytes } => {
            out.extend_from_slice(bytes);
            return Ok(());
        }
        Body::Known(d) => d,
    };
    let mut previous: Option<u8> = None;
    for p in &d.players {
        if p.slot >= END_OF_PLAYERS || previous.is_some_and(|q| p.slot <= q) {
            return Err(EncodeError::OutOfRange {
                field: "player slot (below 32, increasing)",
                value: i64::from(p.slot),
            });
        }
        previous = Some(p.slot);
        out.push(p.slot);
        out.extend_from_slice(&p.ping.to_le_bytes());
        put_str(out, &p.name, "player name")?;
        out.push(p.clan_position);
        put_str(out, &p.clan, "player clan")?;
        out.push(p.bot);
    }
    out.push(END_OF_PLAYERS);
    let post = &d.post;
    out.extend_from_slice(&post.os_mask.to_le_bytes());
    out.push(post.ranked);
    out.extend_from_slice(&post.time_left.to_le_bytes());
    out.push(post.game_state);
    match post.server_type {
        ServerType::Regular { interested_clients } => {
            out.push(0);
            out.push(interested_clients);
        }
        ServerType::Tv {
            viewers,
            max_viewers,
        } => {
            out.push(1);
            out.extend_from_slice(&viewers.to_le_bytes());
            out.extend_from_slice(&max_viewers.to_le_bytes());
        }
        ServerType::Unknown(t) => {
            if t <= 1 {
                return Err(EncodeError::Invalid("server types 0 and 1 are known"));
            }
            out.push(t);
        }
    }
    match (&d.extended, r.ex, post.server_type) {
        (None, false, _) | (None, true, ServerType::Unknown(_)) => {}
        (
            Some(Extended::Players(list)),
            true,
            ServerType::Regular { .. } | ServerType::Tv { .. },
        ) => {
            let mut previous: Option<u8> = None;
            for p in list {
                put_slot(out, &mut previous, p.slot)?;
                out.extend_from_slice(&p.xp.to_le_bytes());
                put_str(out, &p.team, "team")?;
                out.extend_from_slice(&p.kills.to_le_bytes());
                out.extend_from_slice(&p.deaths.to_le_bytes());
            }
            out.push(END_OF_PLAYERS);
        }
        (
            Some(Extended::Undecoded { bytes, .. }),
            true,
            ServerType::Regular { .. } | ServerType::Tv { .. },
        ) => {
            out.extend_from_slice(bytes);
            return if d.trailing.is_empty() {
                Ok(())
            } else {
                Err(EncodeError::Invalid(
                    "trailing bytes after an undecoded extended block",
                ))
            };
        }
        _ => return Err(EncodeError::Invalid(
            "an extended block goes with infoExResponse and a known server type, and only there",
        )),
    }
    out.extend_from_slice(&d.trailing);
    Ok(())
}

impl Encode for Packet {
    /// Appends the datagram. An `InfoResponse` whose `size` is `None` gets the true size.
    fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        out.extend_from_slice(&HEADER);
        match self {
            Packet::GetInfo(g) => {
                put_str(out, if g.ex { b"getInfoEx" } else { b"getInfo" }, "command")?;
                out.extend_from_slice(&g.challenge);
            }
            Packet::InfoResponse(r) => {
                put_str(out, r.command().as_bytes(), "command")?;
                out.extend_from_slice(&r.challenge);
                out.extend_from_slice(&r.protocol.0.to_le_bytes());
                let mut body = Vec::new();
                write_body(&mut body, r)?;
                let size = match r.size {
                    Some(s) => s,
                    None => u32::try_from(body.len())
                        .map_err(|_| EncodeError::Invalid("reply over 4 GiB"))?,
                };
                out.extend_from_slice(&size.to_le_bytes());
                out.extend_from_slice(&body);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_echo() {
        let Packet::GetInfo(g) = decode(b"\xff\xffgetInfoEx\0\0\0\0\0").unwrap() else {
            panic!()
        };
        assert!(g.ex);
        assert_eq!(g.echo(), [0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
        let g = GetInfo {
            ex: false,
            challenge: (1..=8).collect(),
        };
        assert_eq!(g.echo(), [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(
            decode(&Packet::GetInfo(g.clone()).to_bytes().unwrap()).unwrap(),
            Packet::GetInfo(g)
        );
    }

    #[test]
    fn tv_and_unknown_server_types() {
        use crate::emulate::ServerConfig;
        let mut c = ServerConfig::sample(b"tv", b"", 2, 8);
        c.post.server_type = ServerType::Tv {
            viewers: 70_000,
            max_viewers: 100_000,
        };
        let bytes = Packet::InfoResponse(c.response(true, [1; 8]))
            .to_bytes()
            .unwrap();
        let Packet::InfoResponse(r) = decode(&bytes).unwrap() else {
            panic!()
        };
        let info = crate::view::server_info(&r, bytes.len());
        let x = info.extra_as::<crate::view::ServerExtra>().unwrap();
        assert_eq!((x.viewers, x.max_viewers), (Some(70_000), Some(100_000)));
        assert_eq!(x.server_type.as_deref(), Some("tv"));
        assert_eq!(info.players.unwrap()[1].is_spectator, Some(false));
        assert!(info.warnings.is_empty(), "{:?}", info.warnings);
        // Type 7: what follows is unknown, kept as trailing bytes, no extended block read.
        c.post.server_type = ServerType::Unknown(7);
        let mut r = c.response(true, [1; 8]);
        if let Body::Known(d) = &mut r.body {
            d.extended = None;
            d.trailing = vec![1, 2, 3];
        }
        let bytes = Packet::InfoResponse(r.clone()).to_bytes().unwrap();
        let Packet::InfoResponse(back) = decode(&bytes).unwrap() else {
            panic!()
        };
        assert_eq!(
            back.size.map(|s| s as usize),
            Some(back.actual_size(bytes.len()))
        );
        r.size = back.size;
        assert_eq!(back, r);
        let info = crate::view::server_info(&back, bytes.len());
        assert!(info
            .warnings
            .iter()
            .any(|w| w.contains("unknown server type 7")));
        assert!(info
            .warnings
            .iter()
            .any(|w| w.contains("3 bytes after the reply")));
    }

    #[test]
    fn headers() {
        assert_eq!(
            decode(b"\xff\xff\xff\xffgetinfo xxx").unwrap_err().kind(),
            "bad_header"
        );
        let e = decode(b"\xff\xffinfoExResponse\0").unwrap_err();
        assert_eq!(
            (e.kind(), e.field(), e.offset()),
            ("truncated", Some("challenge"), 17)
        );
    }
}
