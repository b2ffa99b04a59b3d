//! The shared record ([`ServerInfo`]) of an idTech 4 `infoResponse`. Sans-IO.
//!
//! Keys are looked up case-insensitively, as the engine's `idDict` does. Everything the
//! server sent stays in `rules`; the OS mask, protocol, any bytes after the OS mask and any
//! undecoded player block go into [`ServerExtra`] and, where they are oddities, `warnings`.

use crate::Encode;
use fragstat_core::model::{Dialect, Player as ModelPlayer, ServerInfo, Text};
use fragstat_core::text::decode_lossless;
use serde::Serialize;

use crate::dict::{get_ci, get_int_ci, hex};
use crate::game::Idtech4Game;
use crate::packet::{Body, InfoPlayer, InfoResponse, Packet};

/// The idTech 4 part of a record (`extra` in the JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ServerExtra {
    /// The protocol as `major.minor`.
    pub protocol: String,
    /// The protocol as sent (`major << 16 | minor`).
    pub protocol_raw: u32,
    /// The challenge echoed.
    pub challenge: i32,
    /// The OS mask, as `0x%08x`; `None` when the player block was not decoded.
    pub os_mask: Option<String>,
    /// Bytes after the OS mask, hex (Quake 4 1.4.2 sends 5); `None` when there are none.
    pub trailing: Option<String>,
    /// Bytes after the server info that were not decoded (unknown protocol), hex.
    pub undecoded: Option<String>,
    /// Keys the server listed as deleted (never seen in a real reply).
    pub deleted_keys: Vec<String>,
}

/// The idTech 4 part of a player (`players[].extra` in the JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PlayerExtra {
    /// Client slot (0–31).
    pub slot: u8,
    /// The clan tag, lossless (one character per byte, ISO-8859-1), as `name_raw` is; the
    /// record's `clan` is for display.
    pub clan_raw: Option<String>,
    /// The client's rate, bytes/s.
    pub rate: u32,
}

/// The colour-code dialect of a game's text: Doom 3 and Prey draw with id's idlib
/// (`idStr::IsColor`), Quake 4 with Raven's (`idStr::IsEscape`: `^c` RGB, `^i` icons).
/// docs/protocols/colours.md has the rules; Prey's idlib was not read (same lineage).
pub fn dialect(game: Idtech4Game) -> Dialect {
    match game {
        Idtech4Game::Quake4 => Dialect::Quake4,
        Idtech4Game::Doom3 | Idtech4Game::Prey => Dialect::Idtech4,
    }
}

/// One player in the shared model, its name and clan in the game's [`dialect`].
pub fn player(game: Idtech4Game, p: &InfoPlayer) -> ModelPlayer {
    let text = |b: &[u8]| Text::new(b.to_vec(), dialect(game));
    let mut m = ModelPlayer::new(text(&p.name));
    m.clan = p.clan.as_deref().map(text);
    m.ping = Some(i32::from(p.ping));
    m.extra = Some(std::sync::Arc::new(PlayerExtra {
        slot: p.slot,
        clan_raw: p.clan.as_deref().map(fragstat_core::text::latin1),
        rate: p.rate,
    }));
    m
}

/// The record of `reply` from a server of `game`.
pub fn server_info(game: Idtech4Game, reply: &InfoResponse) -> ServerInfo {
    let state = &reply.state;
    let rules = &state.dict.pairs;
    let mut out = ServerInfo::default();
    let text = |b: &[u8]| Text::new(b.to_vec(), dialect(game));
    out.name = text(get_ci(rules, "si_name").unwrap_or_default());
    out.map = text(get_ci(rules, "si_map").unwrap_or_default());
    // The game's own name for the mode is the value itself ("deathmatch", "Last Man", "DM").
    out.gametype = get_ci(rules, "si_gameType").map(decode_lossless);
    out.version = get_ci(rules, "si_version").map(decode_lossless);
    out.max_players = get_int_ci(rules, "si_maxPlayers")
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(0);
    out.password = get_ci(rules, "si_usepass").map(|v| !v.is_empty() && v != b"0");
    let mut extra = ServerExtra {
        protocol: state.protocol.to_string(),
        protocol_raw: state.protocol.0,
        challenge: reply.challenge,
        os_mask: None,
        trailing: None,
        undecoded: None,
        deleted_keys: state
            .dict
            .deleted
            .iter()
            .map(|k| decode_lossless(k))
            .collect(),
    };
    if !extra.deleted_keys.is_empty() {
        out.warnings.push(format!(
            "the server info lists deleted keys {:?}",
            extra.deleted_keys
        ));
    }
    match &state.body {
        Body::Players {
            players,
            os_mask,
            trailing,
            ..
        } => {
            out.num_players = u32::try_from(players.len()).unwrap_or(u32::MAX);
            out.players = Some(players.iter().map(|p| player(game, p)).collect());
            extra.os_mask = Some(format!("0x{os_mask:08x}"));
            if !trailing.is_empty() {
                let end = Packet::InfoResponse(reply.clone())
                    .to_bytes()
                    .map(|b| b.len())
                    .unwrap_or(0);
                out.warnings.push(format!(
                    "{} bytes after the osmask at offset {}: {}",
                    trailing.len(),
                    end.saturating_sub(trailing.len()),
                    hex(trailing)
                ));
                extra.trailing = Some(hex(trailing));
            }
        }
        Body::Undecoded { bytes } => {
            out.warnings.push(format!(
                "protocol {} is not a known {} protocol: the {} bytes after the server info \
                 (players, osmask) are not decoded",
                state.protocol,
                game.title(),
                bytes.len()
            ));
            extra.undecoded = Some(hex(bytes));
        }
    }
    out.rules = rules.clone();
    out.set_extra(extra);
    out
}
