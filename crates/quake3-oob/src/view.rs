//! The shared record ([`ServerInfo`]) of a server from its infoResponse and/or
//! statusResponse. Sans-IO; the raw replies stay available for everything else.
//!
//! Merging: the statusResponse's variables come first, in wire order; then each infoResponse
//! key the status did not have. When both have a key with different values (OpenArena's
//! `gamename`, `sv_maxclients` minus private slots in getinfo), the status value stays under
//! the key and the info value is kept as `info:KEY`, so nothing the server said is lost. Our
//! own `challenge` nonce is not a server variable and is left out.

use fragstat_core::model::{Dialect, Player as ModelPlayer, Rules, ServerInfo, Text};

use crate::game::{keys, Quake3Game};
use crate::packet::{InfoResponse, StatusPlayer, StatusResponse};

fn count(v: Option<i64>) -> Option<u32> {
    v.and_then(|n| u32::try_from(n).ok())
}

fn quake(bytes: &[u8]) -> Text {
    Text::new(bytes.to_vec(), Dialect::Quake)
}

/// For each group of keys, what [`Rules::get_any`] returns for it (the first pair of the first
/// key of the group that is present), all found in one pass over the rules.
fn lookup<'a, const N: usize>(rules: &'a Rules, groups: [&[&str]; N]) -> [Option<&'a [u8]>; N] {
    // (the key's place in its group, the value)
    let mut found: [Option<(usize, &'a [u8])>; N] = [None; N];
    for (k, v) in rules.pairs() {
        for (slot, keys) in found.iter_mut().zip(groups) {
            if let Some(rank) = keys.iter().position(|key| key.as_bytes() == k) {
                if slot.is_none_or(|(best, _)| rank < best) {
                    *slot = Some((rank, v));
                }
            }
        }
    }
    found.map(|f| f.map(|(_, v)| v))
}

/// One player line in the shared model. Quake III says nothing reliable about bots or
/// spectators per player, so those stay unknown (Warsow's team 0 is a spectator).
pub fn player(game: Quake3Game, p: &StatusPlayer) -> ModelPlayer {
    model_player(game, p, quake(&p.name))
}

/// [`player`] with the name already made (moved out of a reply the caller owns).
fn model_player(game: Quake3Game, p: &StatusPlayer, name: Text) -> ModelPlayer {
    let mut m = ModelPlayer::new(name);
    m.score = p.score;
    m.ping = Some(p.ping);
    m.team = p.team;
    let _ = game;
    m
}

/// The record of a server from whatever replies are at hand.
pub fn server_info(
    game: Quake3Game,
    info: Option<InfoResponse>,
    status: Option<StatusResponse>,
) -> ServerInfo {
    let info = info.map(|i| i.info);
    let mut out = ServerInfo::default();
    let (mut rules, players) = match status {
        Some(s) => {
            for l in &s.skipped {
                out.warnings.push(format!(
                    "skipped line at offset {}: {:?}",
                    l.offset,
                    fragstat_core::text::latin1(&l.line)
                ));
            }
            out.truncated = s.truncated;
            (Rules::from(s.info), Some(s.players))
        }
        None => (Rules::new(), None),
    };
    rules.remove(b"challenge");
    if let Some(i) = &info {
        let mut extra = Vec::new();
        for (k, v) in i.pairs() {
            if k == b"challenge" {
                continue;
            }
            match rules.get_bytes(k) {
                None => extra.push((k.to_vec(), v.to_vec())),
                Some(sv) if sv != v => {
                    let mut key = b"info:".to_vec();
                    key.extend_from_slice(k);
                    extra.push((key, v.to_vec()));
                }
                Some(_) => {}
            }
        }
        for (k, v) in extra {
            rules.push(k, v);
        }
    }
    let clients = info.as_ref().and_then(|i| count(i.get_int(keys::CLIENTS)));
    let humans = info.as_ref().and_then(|i| count(i.get_int(keys::HUMANS)));
    out.num_bots = match (clients, humans) {
        (Some(c), Some(h)) => c.checked_sub(h),
        _ => None,
    };
    out.num_players = match &players {
        Some(p) => u32::try_from(p.len()).unwrap_or(u32::MAX),
        None => clients.unwrap_or(0),
    };
    let [name, map, gametype, version, password] = lookup(
        &rules,
        [
            keys::NAME,
            keys::MAP,
            keys::GAMETYPE,
            keys::VERSION,
            keys::PASSWORD,
        ],
    );
    out.name = quake(name.unwrap_or_default());
    out.map = quake(map.unwrap_or_default());
    out.gametype = gametype.map(|raw| {
        std::str::from_utf8(raw)
            .ok()
            .and_then(|t| t.trim().parse::<i64>().ok())
            .and_then(|n| game.gametype_name(n))
            .map(str::to_string)
            .unwrap_or_else(|| fragstat_core::text::decode_lossless(raw))
    });
    out.version = version.map(fragstat_core::text::decode_lossless);
    // statusResponse carries the true sv_maxclients; the rules list it first.
    out.max_players = count(rules.get_int(keys::MAX_PLAYERS)).unwrap_or(0);
    out.password = password.map(|v| v != b"0" && !v.is_empty());
    out.players = players.map(|ps| {
        ps.into_iter()
            .map(|mut p| {
                let name = Text::new(std::mem::take(&mut p.name), Dialect::Quake);
                model_player(game, &p, name)
            })
            .collect()
    });
    out.rules = rules;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emulate::{EmulatedServer, ServerConfig};

    #[test]
    fn merges_info_and_status() {
        let emu = EmulatedServer::new(ServerConfig::sample(Quake3Game::OpenArena, b"^1Emu", 4));
        let info = emu.info_response(Some(b"c1"));
        let status = emu.status_response(Some(b"c2"));
        let s = server_info(Quake3Game::OpenArena, Some(info.clone()), Some(status));
        assert_eq!(s.name.as_bytes(), b"^1Emu");
        assert_eq!((s.num_players, s.max_players, s.num_bots), (4, 8, Some(2)));
        assert_eq!(s.password, Some(false));
        assert_eq!(s.gametype.as_deref(), Some("ffa"));
        assert_eq!(
            s.rules.get("challenge"),
            None,
            "our nonce is not a server variable"
        );
        assert_eq!(s.rules.get("gamename"), Some(&b"Quake3Arena"[..]));
        assert_eq!(
            s.rules.get("g_humanplayers"),
            Some(&b"2"[..]),
            "info-only keys are kept"
        );
        let only_info = server_info(Quake3Game::OpenArena, Some(info), None);
        assert_eq!((only_info.num_players, only_info.players), (4, None));
    }

    /// The one-pass lookup reads what `Rules::get_any` reads, whatever the order, repeats
    /// and absences of the keys.
    #[test]
    fn lookup_agrees_with_get_any() {
        let keys = ["sv_hostname", "hostname", "mapname", "x", "hostnam", ""];
        let groups: [&[&str]; 4] = [&["sv_hostname", "hostname"], &["mapname"], &["y"], &[""]];
        let mut seed = 7u64;
        for _ in 0..2_000 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let n = (seed >> 60) as usize;
            let rules: Rules = (0..n)
                .map(|i| {
                    let k = keys[((seed >> (i * 4)) as usize) % keys.len()];
                    (k, format!("v{i}"))
                })
                .collect();
            let want = groups.map(|g| rules.get_any(g));
            assert_eq!(lookup(&rules, groups), want, "{rules:?}");
        }
    }

    #[test]
    fn differing_info_values_are_kept_under_info_prefix() {
        let status = StatusResponse {
            info: [("gamename", "baseoa"), ("sv_hostname", "x")]
                .into_iter()
                .collect(),
            ..StatusResponse::default()
        };
        let info = InfoResponse {
            info: [("gamename", "Quake3Arena"), ("hostname", "x")]
                .into_iter()
                .collect(),
        };
        let s = server_info(Quake3Game::OpenArena, Some(info), Some(status));
        assert_eq!(s.rules.get("gamename"), Some(&b"baseoa"[..]));
        assert_eq!(s.rules.get("info:gamename"), Some(&b"Quake3Arena"[..]));
        assert_eq!(s.rules.get("hostname"), Some(&b"x"[..]));
        assert_eq!(s.rules.get("info:hostname"), None);
    }
}
