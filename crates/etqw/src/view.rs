//! The shared record ([`ServerInfo`]) of an ETQW reply. Sans-IO.
//!
//! - `map`: `si_map` without its `maps/` prefix and `.entities` suffix, each stripped only
//!   where present (a real 1.5 reply has `maps/island`); the raw value stays in `rules`.
//! - `gametype`: the mode named by `si_rules` (`sdGameRulesCampaign` → `campaign`,
//!   `…Objective` → `objective`, `…StopWatch` → `stopwatch`), else the value as sent.
//! - `password` from `si_needPass`; `num_bots` from the players' bot flags;
//!   `num_spectators` from the extended block's empty team names (`getInfoEx` only).
//! - [`ServerExtra`] and each player's [`PlayerExtra`] carry the rest: OS mask, ranked, time
//!   left, game state, server type and its counts; clan position, xp, team, kills, deaths.

use std::sync::Arc;

use fragstat_core::model::{Dialect, Player as ModelPlayer, ServerInfo, Text};
use fragstat_core::text::decode_lossless;
use fragstat_idtech4::dict::{get_ci, get_int_ci, hex};
use serde::Serialize;

use crate::packet::{Body, ExPlayer, Extended, InfoPlayer, InfoResponse, ServerType};

/// The game state bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct GameState {
    /// The byte as sent.
    pub raw: u8,
    /// Bit 0: warm-up.
    pub warmup: bool,
    /// Bit 1: the game is on.
    pub in_progress: bool,
    /// Bit 2: post-map review.
    pub review: bool,
    /// Bit 3: loading the next map.
    pub loading_next_map: bool,
    /// Bit 4: second round of a stopwatch match.
    pub second_round: bool,
}

impl GameState {
    /// The bits of `raw`.
    pub fn new(raw: u8) -> Self {
        GameState {
            raw,
            warmup: raw & 1 != 0,
            in_progress: raw & 2 != 0,
            review: raw & 4 != 0,
            loading_next_map: raw & 8 != 0,
            second_round: raw & 16 != 0,
        }
    }
}

/// The ETQW part of a record (`extra` in the JSON).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ServerExtra {
    /// The reply was an `infoExResponse`.
    pub extended: bool,
    /// Protocol as `major.minor` (10.19 is ETQW 1.4, 10.21 is 1.5).
    pub protocol: String,
    /// Protocol as sent.
    pub protocol_raw: u32,
    /// The challenge echo, hex.
    pub challenge: String,
    /// The size field as sent.
    pub size: Option<u32>,
    /// OS mask as `0x%08x`.
    pub os_mask: Option<String>,
    /// A ranked server.
    pub ranked: Option<bool>,
    /// Time left in the map, ms.
    pub time_left_ms: Option<u32>,
    /// Game state bits.
    pub game_state: Option<GameState>,
    /// `regular`, `tv`, or `unknown(N)`.
    pub server_type: Option<String>,
    /// Regular servers: clients waiting to join.
    pub interested_clients: Option<u8>,
    /// TV servers: viewers.
    pub viewers: Option<u32>,
    /// TV servers: viewer slots.
    pub max_viewers: Option<u32>,
    /// Bytes after everything decoded, hex.
    pub trailing: Option<String>,
    /// Bytes not decoded (unknown protocol, or an extended block not in the stock layout), hex.
    pub undecoded: Option<String>,
}

/// The ETQW part of a player (`players[].extra` in the JSON).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PlayerExtra {
    /// Client slot (0–31).
    pub slot: u8,
    /// The clan tag, lossless (one character per byte, ISO-8859-1), as `name_raw` is; the
    /// record's `clan` is for display.
    pub clan_raw: Option<String>,
    /// `prefix`, `suffix`, or `unknown(N)`: where the clan tag goes.
    pub clan_position: String,
    /// Total experience points (extended block).
    pub xp: Option<f32>,
    /// Team name (extended block; empty for spectators).
    pub team: Option<String>,
    /// Total kills (extended block).
    pub kills: Option<i32>,
    /// Total deaths (extended block).
    pub deaths: Option<i32>,
}

/// ETQW text: [`Dialect::Idtech4`] (dhewm3's `idStr::IsColor`). ETQW's own idlib was not
/// researched; Doom 3's is the nearest known rule — unverified for ETQW
/// (docs/protocols/colours.md).
fn text(bytes: &[u8]) -> Text {
    Text::new(bytes.to_vec(), Dialect::Idtech4)
}

/// `si_map` as shown: `maps/<name>.entities` → `<name>`.
pub fn map_name(raw: &[u8]) -> &[u8] {
    let s = raw.strip_prefix(b"maps/").unwrap_or(raw);
    s.strip_suffix(b".entities").unwrap_or(s)
}

/// The mode of an `si_rules` value.
pub fn gametype_name(rules: &[u8]) -> String {
    match rules.to_ascii_lowercase().as_slice() {
        b"sdgamerulescampaign" => "campaign".into(),
        b"sdgamerulesobjective" => "objective".into(),
        b"sdgamerulesstopwatch" => "stopwatch".into(),
        _ => decode_lossless(rules),
    }
}

fn player(p: &InfoPlayer, ex: Option<&ExPlayer>) -> ModelPlayer {
    let mut m = ModelPlayer::new(text(&p.name));
    m.clan = Some(text(&p.clan));
    m.ping = Some(i32::from(p.ping));
    m.is_bot = Some(p.bot != 0);
    m.is_spectator = ex.map(|e| e.team.is_empty());
    m.extra = Some(Arc::new(PlayerExtra {
        slot: p.slot,
        clan_raw: Some(fragstat_core::text::latin1(&p.clan)),
        clan_position: match p.clan_position {
            0 => "prefix".into(),
            1 => "suffix".into(),
            n => format!("unknown({n})"),
        },
        xp: ex.map(|e| e.xp),
        team: ex.map(|e| decode_lossless(&e.team)),
        kills: ex.map(|e| e.kills),
        deaths: ex.map(|e| e.deaths),
    }));
    m
}

/// The record of `reply`; `datagram_len` (the reply's length) checks the size field.
pub fn server_info(reply: &InfoResponse, datagram_len: usize) -> ServerInfo {
    let rules = &reply.dict.pairs;
    let mut out = ServerInfo::default();
    out.name = text(get_ci(rules, "si_name").unwrap_or_default());
    out.map = text(map_name(get_ci(rules, "si_map").unwrap_or_default()));
    out.gametype = get_ci(rules, "si_rules").map(gametype_name);
    out.version = get_ci(rules, "si_version").map(decode_lossless);
    out.max_players = get_int_ci(rules, "si_maxPlayers")
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(0);
    out.password = get_ci(rules, "si_needPass").map(|v| !v.is_empty() && v != b"0");
    let mut extra = ServerExtra {
        extended: reply.ex,
        protocol: reply.protocol.to_string(),
        protocol_raw: reply.protocol.0,
        challenge: hex(&reply.challenge),
        size: reply.size,
        os_mask: None,
        ranked: None,
        time_left_ms: None,
        game_state: None,
        server_type: None,
        interested_clients: None,
        viewers: None,
        max_viewers: None,
        trailing: None,
        undecoded: None,
    };
    let actual = reply.actual_size(datagram_len);
    if let Some(size) = reply.size {
        if u64::from(size) != actual as u64 {
            out.warnings.push(format!(
                "the size field says {size} bytes follow it, the datagram has {actual}"
            ));
            if u64::from(size) > actual as u64 {
                out.truncated = true;
            }
        }
    }
    if !reply.dict.deleted.is_empty() {
        out.warnings.push(format!(
            "the server info lists {} deleted keys",
            reply.dict.deleted.len()
        ));
    }
    match &reply.body {
        Body::Undecoded { bytes } => {
            out.warnings.push(format!(
                "protocol {} is not ETQW 1.4 (10.19) or 1.5 (10.21): the {} bytes after the \
                 server info (players and the rest) are not decoded",
                reply.protocol,
                bytes.len()
            ));
            extra.undecoded = Some(hex(bytes));
        }
        Body::Known(d) => {
            let post = &d.post;
            extra.os_mask = Some(format!("0x{:08x}", post.os_mask));
            extra.ranked = Some(post.ranked != 0);
            extra.time_left_ms = Some(post.time_left);
            extra.game_state = Some(GameState::new(post.game_state));
            match post.server_type {
                ServerType::Regular { interested_clients } => {
                    extra.server_type = Some("regular".into());
                    extra.interested_clients = Some(interested_clients);
                }
                ServerType::Tv {
                    viewers,
                    max_viewers,
                } => {
                    extra.server_type = Some("tv".into());
                    extra.viewers = Some(viewers);
                    extra.max_viewers = Some(max_viewers);
                }
                ServerType::Unknown(t) => {
                    extra.server_type = Some(format!("unknown({t})"));
                    out.warnings.push(format!(
                        "unknown server type {t}: what follows it is not decoded"
                    ));
                }
            }
            let ex_players: &[ExPlayer] = match &d.extended {
                Some(Extended::Players(list)) => list,
                Some(Extended::Undecoded { bytes, error }) => {
                    out.warnings.push(format!(
                        "extended block not decoded ({} bytes): {error}",
                        bytes.len()
                    ));
                    if error.kind() == "truncated" || error.kind() == "missing" {
                        out.truncated = true;
                    }
                    extra.undecoded = Some(hex(bytes));
                    &[]
                }
                None => &[],
            };
            let have_ex = matches!(d.extended, Some(Extended::Players(_)));
            for e in ex_players {
                if !d.players.iter().any(|p| p.slot == e.slot) {
                    out.warnings.push(format!(
                        "extended block lists slot {}, which the player list does not",
                        e.slot
                    ));
                }
            }
            let players: Vec<ModelPlayer> = d
                .players
                .iter()
                .map(|p| player(p, ex_players.iter().find(|e| e.slot == p.slot)))
                .collect();
            out.num_players = u32::try_from(players.len()).unwrap_or(u32::MAX);
            out.num_bots =
                Some(u32::try_from(d.players.iter().filter(|p| p.bot != 0).count()).unwrap_or(0));
            if have_ex {
                out.num_spectators = Some(
                    u32::try_from(
                        players
                            .iter()
                            .filter(|p| p.is_spectator == Some(true))
                            .count(),
                    )
                    .unwrap_or(0),
                );
            }
            out.players = Some(players);
            if !d.trailing.is_empty() {
                out.warnings.push(format!(
                    "{} bytes after the reply at offset {}: {}",
                    d.trailing.len(),
                    datagram_len.saturating_sub(d.trailing.len()),
                    hex(&d.trailing)
                ));
                extra.trailing = Some(hex(&d.trailing));
            }
        }
    }
    out.rules = rules.clone();
    out.set_extra(extra);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_and_rules_names() {
        assert_eq!(map_name(b"maps/valley.entities"), b"valley");
        assert_eq!(map_name(b"maps/island"), b"island");
        assert_eq!(map_name(b"refinery"), b"refinery");
        assert_eq!(gametype_name(b"sdGameRulesStopWatch"), "stopwatch");
        assert_eq!(gametype_name(b"myRules"), "myRules");
        let g = GameState::new(0b10010);
        assert!(g.in_progress && g.second_round && !g.warmup);
    }
}
