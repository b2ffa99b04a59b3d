//! The shared record ([`ServerInfo`]) of a Teeworlds or DDNet server.
//!
//! `num_players` and `max_players` are the **clients** and **client slots** (what browsers
//! show); the players that are not spectating and their slots are kept in
//! [`ServerExtra`], and `num_spectators` is their difference. Names and clans are UTF-8
//! without colour codes ([`Dialect::Plain`]). The header fields are also listed as `rules`
//! (Teeworlds has no server variables on the wire), so `--rules` shows them raw.

use std::sync::Arc;

use fragstat_core::model::{Dialect, Player, Rules, ScoreKind, ServerInfo, Text};
use serde::Serialize;

use crate::{partial, seven, six};

/// What only Teeworlds says, in the record's `extra`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ServerExtra {
    /// Which reply this came from: `0.6` (`inf3`), `0.6 extended` (DDNet `iext`/`iex+`),
    /// `0.6 legacy 64` (`dtsf`), `0.7`, `http` (DDNet's master list).
    pub protocol: &'static str,
    /// Players that are not spectating.
    pub num_players: u32,
    /// Player slots.
    pub max_players: u32,
    /// The map's CRC (DDNet extended info, sent as a signed decimal), as an unsigned number.
    pub map_crc: Option<u32>,
    /// The map's size in bytes (DDNet extended info).
    pub map_size: Option<u32>,
    /// The server's host name (0.7 `sv_hostname`).
    pub hostname: Option<String>,
    /// Skill level (0.7: 0 casual, 1 normal, 2 competitive).
    pub skill_level: Option<i32>,
    /// Datagrams the reply came in.
    pub datagrams: Option<u32>,
    /// DDNet: joining needs an account.
    pub requires_login: Option<bool>,
    /// Why the player list is partial, when it is: `name_count` (DDNet listed only the
    /// clients that fit and put the real count in the name, ` [N/M]`: read back into
    /// `num_players`/`max_players` and removed from the name; the counts here are then the
    /// listed clients'), `rate_limited` (DDNet sent the counts without any client, above
    /// `sv_server_info_per_second`: `players` is `null`). See [`crate::partial`].
    pub partial: Option<&'static str>,
    /// DDNet's HTTP list: the community the server registered with (`servers.json`'s
    /// `community`, set by the master from the server's community token).
    pub community: Option<String>,
    /// DDNet's HTTP list: the country the server groups itself under in its community
    /// (`info.country`, ISO 3166-1 numeric, from `sv_flag`; sent only with a community token).
    pub country: Option<i32>,
}

/// Per-player fields, in the player's `extra`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PlayerExtra {
    /// ISO 3166-1 numeric country code, −1 for none.
    pub country: i32,
    /// Away from keyboard (DDNet's master list only).
    pub afk: Option<bool>,
}

fn plain(b: &[u8]) -> Text {
    Text::new(b.to_vec(), Dialect::Plain)
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn count(v: i32) -> u32 {
    u32::try_from(v).unwrap_or(0)
}

fn player(name: &[u8], clan: &[u8], country: i32, score: i32, spectator: bool) -> Player {
    let mut p = Player::new(plain(name));
    p.clan = Some(plain(clan));
    p.score = Some(score);
    p.is_spectator = Some(spectator);
    p.extra = Some(Arc::new(PlayerExtra { country, afk: None }));
    p
}

/// Which 0.6 reply an [`six::Info`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Form {
    /// `inf3`.
    Vanilla,
    /// `iext` (+ `iex+`).
    Extended,
    /// `dtsf`.
    Legacy64,
}

/// The record of a 0.6 reply (assembled when it spans datagrams). `complete` is false when
/// fewer clients came than announced (a query that timed out waiting for the rest).
///
/// DDNet's vanilla reply with more than 16 clients has its real count read back from the name
/// ([`crate::partial::vanilla_cut`]); a reply with counts and no client is rate-limited
/// ([`crate::partial`]): `players` is `None` then, not an empty list.
pub fn from_six(info: &six::Info, form: Form, datagrams: u32, complete: bool) -> ServerInfo {
    let mut out = ServerInfo::default();
    out.name = plain(&info.name);
    out.map = plain(&info.map);
    out.gametype = Some(lossy(&info.gametype));
    out.version = Some(lossy(&info.version));
    out.num_players = count(info.num_clients);
    out.max_players = count(info.max_clients);
    out.num_spectators = u32::try_from(info.num_clients - info.num_players).ok();
    out.password = Some(info.flags & 1 != 0);
    out.players = Some(
        info.clients
            .iter()
            .map(|c| player(&c.name, &c.clan, c.country, c.score, c.is_player == 0))
            .collect(),
    );
    let cut = match form {
        Form::Vanilla => partial::vanilla_cut(info),
        _ => None,
    };
    let limited = partial::without_clients(info.num_clients, info.clients.len(), info.truncated);
    out.rules = six_rules(info);
    let listed = info.clients.len();
    let announced = usize::try_from(info.num_clients).unwrap_or(0);
    if info.truncated {
        out.truncated = true;
        out.warnings.push(format!(
            "reply cut inside a client entry; {listed} complete clients kept"
        ));
    }
    let why = mark_partial(&mut out, &info.name, cut, limited, listed);
    if why.is_none() && !complete {
        out.truncated = true;
        out.warnings.push(format!(
            "{listed} of {announced} clients received ({datagrams} datagrams)"
        ));
    } else if why.is_none() && listed > announced {
        // DDNet caps the vanilla counts at 15 or 16 but may list 16 clients.
        out.warnings.push(format!(
            "{listed} clients listed, {announced} announced (counts capped by the server)"
        ));
    }
    if info.num_players > info.num_clients || info.max_players > info.max_clients {
        out.warnings.push(format!(
            "inconsistent counts: {} players of {} slots, {} clients of {} slots",
            info.num_players, info.max_players, info.num_clients, info.max_clients
        ));
    }
    out.set_extra(ServerExtra {
        protocol: match form {
            Form::Vanilla => "0.6",
            Form::Extended => "0.6 extended",
            Form::Legacy64 => "0.6 legacy 64",
        },
        num_players: count(info.num_players),
        max_players: count(info.max_players),
        // The CRC's bits, sent as a signed decimal.
        map_crc: info.map_crc.map(|c| c as u32),
        map_size: info.map_size.and_then(|s| u32::try_from(s).ok()),
        datagrams: Some(datagrams),
        partial: why,
        ..ServerExtra::default()
    });
    out
}

/// The header fields of a 0.6 reply, raw.
fn six_rules(info: &six::Info) -> Rules {
    let mut rules = Rules::new();
    rules.push("version", &info.version);
    rules.push("name", &info.name);
    rules.push("map", &info.map);
    if let (Some(crc), Some(size)) = (info.map_crc, info.map_size) {
        rules.push("map_crc", crc.to_string());
        rules.push("map_size", size.to_string());
    }
    rules.push("gametype", &info.gametype);
    rules.push("flags", info.flags.to_string());
    rules.push("num_players", info.num_players.to_string());
    rules.push("max_players", info.max_players.to_string());
    rules.push("num_clients", info.num_clients.to_string());
    rules.push("max_clients", info.max_clients.to_string());
    rules
}

/// Marks a record whose player list is partial ([`crate::partial`]): the real count read
/// back from the name (`cut`), or no client at all (`limited`). Returns
/// [`ServerExtra::partial`].
fn mark_partial(
    out: &mut ServerInfo,
    name: &[u8],
    cut: Option<partial::NameCount>,
    limited: bool,
    listed: usize,
) -> Option<&'static str> {
    if let Some(c) = cut {
        out.name = plain(name.get(..c.stem).unwrap_or(name));
        out.num_players = c.clients;
        out.max_players = out.max_players.max(c.slots);
        // The spectators and bots among the clients not listed are unknown.
        out.num_spectators = None;
        out.num_bots = None;
        out.truncated = true;
        if !limited {
            out.warnings.push(partial::cut_warning(listed, c));
        }
    }
    if limited {
        out.players = None;
        out.num_bots = None;
        out.truncated = true;
        out.warnings
            .push(partial::rate_limited_warning(out.num_players));
        return Some("rate_limited");
    }
    cut.map(|_| "name_count")
}

/// The record of a 0.7 reply.
///
/// DDNet's reply cut to one datagram has its real count read back from the name
/// ([`crate::partial::sixup_cut`]); a reply with counts and no client is rate-limited
/// ([`crate::partial`]): `players` is `None` then, not an empty list.
pub fn from_seven(info: &seven::Info) -> ServerInfo {
    use seven::{client_flags, server_flags};
    let mut out = ServerInfo::default();
    out.name = plain(&info.name);
    out.map = plain(&info.map);
    out.gametype = Some(lossy(&info.gametype));
    out.version = Some(lossy(&info.version));
    out.num_players = count(info.num_clients);
    out.max_players = count(info.max_clients);
    out.num_spectators = u32::try_from(info.num_clients - info.num_players).ok();
    out.password = Some(info.flags & server_flags::PASSWORD != 0);
    out.players = Some(
        info.clients
            .iter()
            .map(|c| {
                let mut p = player(
                    &c.name,
                    &c.clan,
                    c.country,
                    c.score,
                    c.flags & client_flags::SPECTATOR != 0,
                );
                p.is_bot = Some(c.flags & client_flags::BOT != 0);
                p
            })
            .collect(),
    );
    let bots = info
        .clients
        .iter()
        .filter(|c| c.flags & client_flags::BOT != 0)
        .count();
    out.num_bots = u32::try_from(bots).ok();
    out.rules = seven_rules(info);
    let listed = info.clients.len();
    let cut = partial::sixup_cut(info);
    let limited = partial::without_clients(info.num_clients, listed, info.truncated);
    let why = mark_partial(&mut out, &info.name, cut, limited, listed);
    if info.truncated {
        out.truncated = true;
        out.warnings.push(format!(
            "reply cut inside a client entry; {listed} complete clients kept"
        ));
    } else if why.is_none() && listed < usize::try_from(info.num_clients).unwrap_or(0) {
        out.warnings
            .push(format!("{listed} of {} clients listed", info.num_clients));
    }
    // 0.7's time-score flag.
    out.score_kind = Some(if info.flags & server_flags::TIMESCORE != 0 {
        ScoreKind::Time
    } else {
        ScoreKind::Points
    });
    out.set_extra(ServerExtra {
        protocol: "0.7",
        num_players: count(info.num_players),
        max_players: count(info.max_players),
        hostname: Some(lossy(&info.hostname)),
        skill_level: Some(info.skill_level),
        datagrams: Some(1),
        partial: why,
        ..ServerExtra::default()
    });
    out
}

/// The header fields of a 0.7 reply, raw.
fn seven_rules(info: &seven::Info) -> Rules {
    let mut rules = Rules::new();
    rules.push("version", &info.version);
    rules.push("name", &info.name);
    rules.push("hostname", &info.hostname);
    rules.push("map", &info.map);
    rules.push("gametype", &info.gametype);
    rules.push("flags", info.flags.to_string());
    rules.push("skill_level", info.skill_level.to_string());
    rules.push("num_players", info.num_players.to_string());
    rules.push("max_players", info.max_players.to_string());
    rules.push("num_clients", info.num_clients.to_string());
    rules.push("max_clients", info.max_clients.to_string());
    rules
}

/// Sets a player's `afk` (DDNet's master list).
pub(crate) fn with_afk(mut p: Player, country: i32, afk: Option<bool>) -> Player {
    p.extra = Some(Arc::new(PlayerExtra { country, afk }));
    p
}

pub(crate) fn http_player(
    name: &str,
    clan: &str,
    country: i32,
    score: i32,
    is_player: bool,
    afk: Option<bool>,
) -> Player {
    with_afk(
        player(name.as_bytes(), clan.as_bytes(), country, score, !is_player),
        country,
        afk,
    )
}
