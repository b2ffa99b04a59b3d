//! The shared record ([`ServerInfo`]) of a server from its infoResponse and/or
//! statusResponse. Sans-IO; the raw replies stay available for everything else.
//!
//! Merging: the statusResponse's variables come first, in wire order; then each infoResponse
//! key the status did not have. When both have a key with different values (OpenArena's
//! `gamename`, `sv_maxclients` minus private slots in getinfo), the status value stays under
//! the key and the info value is kept as `info:KEY`, so nothing the server said is lost. Our
//! own `challenge` nonce is not a server variable and is left out.

use fragstat_core::model::{
    Player as ModelPlayer, Rules, ServerInfo, Text, WarningCap, MAX_PLAYERS, MAX_WARNINGS,
};

use crate::game::{keys, Quake3Game, SlotTeams};
use crate::packet::{InfoResponse, StatusPlayer, StatusResponse};

fn count(v: Option<i64>) -> Option<u32> {
    v.and_then(|n| u32::try_from(n).ok())
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

/// One player line in the shared model. A player line says nothing reliable about bots
/// (ping 0 is also a player on a LAN), so that stays unknown here; SoF2's team 3 is a
/// spectator. Teams and bots the serverinfo gives per slot are added by [`server_info`].
pub fn player(game: Quake3Game, p: &StatusPlayer) -> ModelPlayer {
    model_player(game, p, Text::new(p.name.clone(), game.dialect(None)))
}

/// [`player`] with the name already made (moved out of a reply the caller owns).
fn model_player(game: Quake3Game, p: &StatusPlayer, name: Text) -> ModelPlayer {
    let mut m = ModelPlayer::new(name);
    m.score = p.score;
    m.ping = Some(p.ping);
    m.team = p.team;
    if let (Some(team), Some(spectator)) = (p.team, game.spec().line_spectator) {
        m.is_spectator = Some(team == spectator);
    }
    m
}

/// What the serverinfo says about each connected client, in slot order: the team from `P`
/// (`-` a free slot, else `'0' + team`: W:ET/ET: Legacy and Tremulous `g_main.c`,
/// Unvanquished `sg_main.cpp`) and, where `B` is sent, whether it is a bot (`-` not a bot,
/// `0`-`9` or `G` a bot's skill: Unvanquished `sg_main.cpp`). Player lines come in slot order
/// of the connected clients (`SVC_Status`), so the k-th line is the k-th occupied slot.
fn slot_clients(rules: &Rules) -> Option<Vec<(i32, Option<bool>)>> {
    let p = rules.get_bytes(b"P")?;
    let b = rules.get_bytes(b"B");
    Some(
        p.iter()
            .enumerate()
            .filter(|(_, &c)| c != b'-')
            .map(|(slot, &c)| {
                let team = i32::from(c) - i32::from(b'0');
                let bot = b.map(|b| b.get(slot).is_some_and(|&c| c != b'-'));
                (team, bot)
            })
            .collect(),
    )
}

/// Gives each player its slot's team and bot flag, when the slots and the lines agree in
/// number (otherwise the pairing would be a guess, and nothing is set).
fn apply_slots(game: Quake3Game, rules: &Rules, players: &mut [ModelPlayer]) {
    let SlotTeams::P { spectator } = game.spec().slot_teams else {
        return;
    };
    let Some(slots) = slot_clients(rules) else {
        return;
    };
    if slots.len() != players.len() {
        return;
    }
    for (p, (team, bot)) in players.iter_mut().zip(slots) {
        if p.team.is_none() {
            p.team = Some(team);
            p.is_spectator = Some(team == spectator);
        }
        if bot.is_some() {
            p.is_bot = bot;
        }
    }
}

/// The status's oddities into `out` (its warnings and `truncated`): lines and players past
/// the decoder's caps only counted (`MAX_WARNINGS` in all, `MAX_PLAYERS`). Its rules and
/// players.
fn status_warnings(out: &mut ServerInfo, s: StatusResponse) -> (Rules, Option<Vec<StatusPlayer>>) {
    if s.players_omitted > 0 {
        out.warnings.push(format!(
            "{} more players not kept (at most {MAX_PLAYERS})",
            s.players_omitted
        ));
    }
    let mut skipped = WarningCap::with_room(MAX_WARNINGS - out.warnings.len());
    for l in &s.skipped {
        skipped.push(|| {
            let line = fragstat_core::text::latin1(&l.line);
            format!("skipped line at offset {}: {line:?}", l.offset)
        });
    }
    skipped.omitted(s.skipped_omitted);
    skipped.finish(&mut out.warnings, "lines skipped");
    out.truncated = s.truncated;
    (Rules::from(s.info), Some(s.players))
}

/// The record of a server from whatever replies are at hand.
pub fn server_info(
    game: Quake3Game,
    info: Option<InfoResponse>,
    status: Option<StatusResponse>,
) -> ServerInfo {
    let info = info.map(|i| i.info);
    let mut out = ServerInfo::default();
    let omitted_players = status.as_ref().map_or(0, |s| s.players_omitted);
    let (mut rules, players) = match status {
        Some(s) => status_warnings(&mut out, s),
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
    let spec = game.spec();
    let clients = info.as_ref().and_then(|i| count(i.get_int(keys::CLIENTS)));
    let humans = info.as_ref().and_then(|i| count(i.get_int(keys::HUMANS)));
    let bots = info
        .as_ref()
        .filter(|_| spec.bots_key)
        .and_then(|i| count(i.get_int(keys::BOTS)));
    // Dæmon counts only humans in `clients` (sv_main.cpp: "clients" = humans, "bots").
    let clients = match (clients, bots) {
        (Some(c), Some(b)) if spec.clients_exclude_bots => c.checked_add(b),
        (c, _) => c,
    };
    out.num_bots = match (clients, humans, bots) {
        (_, _, Some(b)) => Some(b),
        (Some(c), Some(h), None) => c.checked_sub(h),
        _ => None,
    };
    out.num_players = match &players {
        Some(p) => u32::try_from(p.len().saturating_add(omitted_players)).unwrap_or(u32::MAX),
        None => clients.unwrap_or(0),
    };
    // getinfo's counts describe the whole server only when they count every listed player:
    // ioq3's `SVC_Info` counts `clients` and `g_humanplayers` from `sv_privateClients` up
    // (`ioquake/ioq3` @ `5956299e`, `code/server/sv_main.c:634-642`), while `SVC_Status` lists
    // every slot (`sv_main.c:575-588`), and bots fill the private slots first
    // (`sv_bot.c:47-58`). The status cannot tell the bots in the private slots apart (ping 0 is
    // also a LAN player), so when the counts disagree the bots are unknown rather than the
    // public slots' share. (The same when a player came or went between the two replies.)
    if players.is_some() && clients.is_some_and(|c| c != out.num_players) {
        out.num_bots = None;
    }
    // The infoResponse's keys the status lacks are in the rules by now.
    let [name, map, gametype, version, password, protocol] = lookup(
        &rules,
        [
            keys::NAME,
            keys::MAP,
            keys::GAMETYPE,
            keys::VERSION,
            keys::PASSWORD,
            keys::PROTOCOL,
        ],
    );
    let protocol = protocol
        .and_then(|p| std::str::from_utf8(p).ok())
        .and_then(|p| p.trim().parse::<i32>().ok());
    let dialect = game.dialect(protocol);
    out.name = Text::new(name.unwrap_or_default().to_vec(), dialect);
    out.map = Text::new(map.unwrap_or_default().to_vec(), dialect);
    out.gametype = gametype.map(|raw| {
        std::str::from_utf8(raw)
            .ok()
            .and_then(|t| t.trim().parse::<i64>().ok())
            .and_then(|n| game.gametype_name_for(n, protocol))
            .map(str::to_string)
            .unwrap_or_else(|| fragstat_core::text::decode_lossless(raw))
    });
    out.version = version.map(fragstat_core::text::decode_lossless);
    // statusResponse carries the true sv_maxclients; the rules list it first.
    out.max_players = count(rules.get_int(keys::MAX_PLAYERS)).unwrap_or(0);
    out.password = password.map(|v| v != b"0" && !v.is_empty());
    out.players = players.map(|ps| {
        let mut players: Vec<ModelPlayer> = ps
            .into_iter()
            .map(|mut p| {
                let name = Text::new(std::mem::take(&mut p.name), dialect);
                model_player(game, &p, name)
            })
            .collect();
        apply_slots(game, &rules, &mut players);
        players
    });
    // Counts from the players kept only when every one was.
    let all_kept = omitted_players == 0;
    if let Some(ps) = out.players.as_ref().filter(|ps| !ps.is_empty() && all_kept) {
        if ps.iter().all(|p| p.is_spectator.is_some()) {
            out.num_spectators =
                u32::try_from(ps.iter().filter(|p| p.is_spectator == Some(true)).count()).ok();
        }
    }
    // Without getinfo, the bots the slots name (Dæmon's `B`).
    if out.num_bots.is_none() && all_kept {
        if let Some(ps) = &out.players {
            if ps.iter().all(|p| p.is_bot.is_some()) && !ps.is_empty() {
                out.num_bots =
                    u32::try_from(ps.iter().filter(|p| p.is_bot == Some(true)).count()).ok();
            }
        }
    }
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
        // The status's game module name stays, the engine's from getinfo beside it.
        assert_eq!(s.rules.get("gamename"), Some(&b"baseoa"[..]));
        assert_eq!(s.rules.get("info:gamename"), Some(&b"Quake3Arena"[..]));
        assert_eq!(
            s.rules.get("g_humanplayers"),
            Some(&b"2"[..]),
            "info-only keys are kept"
        );
        let only_info = server_info(Quake3Game::OpenArena, Some(info), None);
        assert_eq!((only_info.num_players, only_info.players), (4, None));
    }

    /// ET: Legacy's `humans` (etl `sv_main.c:815-830`: every slot with `state >= CS_CONNECTED`
    /// is in `clients`, those not `NA_BOT` in `humans`, private slots included) gives
    /// `num_bots = clients - humans`: the same rule as ioq3's `g_humanplayers` (keys::HUMANS),
    /// and D8's check holds (the counts agree with the list, so the bots are known; a list of
    /// another length makes them unknown). W:ET 2.60 sends no `humans`: bots unknown.
    #[test]
    fn etl_humans_give_the_bots() {
        let mut c = ServerConfig::sample(Quake3Game::EtLegacy, b"x", 5);
        for p in c.players.iter_mut().skip(3) {
            p.bot = true;
        }
        let emu = EmulatedServer::new(c);
        let info = emu.info_response(None);
        assert_eq!(info.info.get("humans"), Some(&b"3"[..]));
        let status = emu.status_response(None);
        let s = server_info(
            Quake3Game::EtLegacy,
            Some(info.clone()),
            Some(status.clone()),
        );
        assert_eq!((s.num_players, s.num_bots), (5, Some(2)));
        let only_info = server_info(Quake3Game::EtLegacy, Some(info.clone()), None);
        assert_eq!((only_info.num_players, only_info.num_bots), (5, Some(2)));
        // A player came between the two replies: the counts disagree, the bots are unknown.
        let mut longer = status.clone();
        longer.players.push(longer.players[0].clone());
        let s = server_info(Quake3Game::EtLegacy, Some(info), Some(longer));
        assert_eq!((s.num_players, s.num_bots), (6, None));
        let et = EmulatedServer::new(ServerConfig::sample(Quake3Game::EnemyTerritory, b"x", 5));
        let info = et.info_response(None);
        assert_eq!(info.info.get("humans"), None);
        let s = server_info(
            Quake3Game::EnemyTerritory,
            Some(info),
            Some(et.status_response(None)),
        );
        assert_eq!((s.num_players, s.num_bots), (5, None));
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

    fn status(bytes: &[u8]) -> StatusResponse {
        match crate::decode(bytes).unwrap() {
            crate::Packet::StatusResponse(s) => s,
            other => panic!("{other:?}"),
        }
    }

    fn info(bytes: &[u8]) -> InfoResponse {
        match crate::decode(bytes).unwrap() {
            crate::Packet::InfoResponse(i) => i,
            other => panic!("{other:?}"),
        }
    }

    /// Dæmon: `P` gives each occupied slot's team, `B` which slots hold bots; `clients`
    /// counts humans only, `bots` the bots (Unvanquished `sg_main.cpp:1205-1305`, Dæmon
    /// `sv_main.cpp:586-587`).
    #[test]
    fn unvanquished_slots_give_teams_and_bots() {
        let s = status(
            b"\xff\xff\xff\xffstatusResponse\n\\B\\-5--G\\P\\12-01\\sv_hostname\\Unv\n              10 50 \"alien\"\n0 0 \"[bot]Granger\"\n3 70 \"spec\"\n0 0 \"[bot]Tyrant\"\n",
        );
        let i = info(b"\xff\xff\xff\xffinfoResponse\n\\bots\\2\\clients\\2\\sv_maxclients\\24");
        let only_status = server_info(Quake3Game::Unvanquished, None, Some(s.clone()));
        let ps = only_status.players.as_ref().unwrap();
        let got: Vec<_> = ps
            .iter()
            .map(|p| (p.team, p.is_bot, p.is_spectator))
            .collect();
        assert_eq!(
            got,
            [
                (Some(1), Some(false), Some(false)),
                (Some(2), Some(true), Some(false)),
                (Some(0), Some(false), Some(true)),
                (Some(1), Some(true), Some(false)),
            ]
        );
        assert_eq!(
            (only_status.num_bots, only_status.num_spectators),
            (Some(2), Some(1))
        );
        let only_info = server_info(Quake3Game::Unvanquished, Some(i), None);
        assert_eq!(
            (only_info.num_players, only_info.num_bots),
            (4, Some(2)),
            "clients (humans) + bots"
        );
        // Slots and lines that disagree in number are not paired.
        let odd = status(b"\xff\xff\xff\xffstatusResponse\n\\P\\1-1\n1 2 \"a\"\n");
        let odd = server_info(Quake3Game::Unvanquished, None, Some(odd));
        assert_eq!(odd.players.unwrap()[0].team, None);
    }

    #[test]
    fn bots_key_team_spectators_and_gametypes_per_game() {
        let urt =
            info(b"\xff\xff\xff\xffinfoResponse\n\\clients\\5\\bots\\3\\gametype\\4\\password\\1");
        let urt = server_info(Quake3Game::UrbanTerror, Some(urt), None);
        assert_eq!((urt.num_players, urt.num_bots), (5, Some(3)));
        assert_eq!(urt.gametype.as_deref(), Some("ts"));
        assert_eq!(urt.password, Some(true));
        // SoF2 1.03: `score ping team "name"`, team 3 a spectator.
        let sof2 = status(
            b"\xff\xff\xff\xffstatusResponse\n\\g_gametype\\CTF\n38 128 1 \"a\"\n0 0 3 \"b\"\n",
        );
        let sof2 = server_info(Quake3Game::Sof2, None, Some(sof2));
        assert_eq!(sof2.gametype.as_deref(), Some("CTF"), "names are kept");
        let ps = sof2.players.unwrap();
        assert_eq!(
            (ps[0].team, ps[0].is_spectator, ps[1].is_spectator),
            (Some(1), Some(false), Some(true))
        );
        assert_eq!(sof2.num_spectators, Some(1));
        // World of Padman numbers gametypes by release: 5 is CTKD in 1.7, TFFA in 1.6.
        for (protocol, name) in [("72", "ctkd"), ("71", "tffa")] {
            let raw = format!(
                "\u{ff}\u{ff}\u{ff}\u{ff}infoResponse\n\\gametype\\5\\protocol\\{protocol}"
            );
            let bytes = fragstat_core::text::from_latin1(&raw).unwrap();
            let w = server_info(Quake3Game::WorldOfPadman, Some(info(&bytes)), None);
            assert_eq!(w.gametype.as_deref(), Some(name), "{protocol}");
        }
        // Q3Rally's values skip from 8 to 16.
        assert_eq!(Quake3Game::Q3Rally.gametype_name(19), Some("ctf"));
        assert_eq!(Quake3Game::Q3Rally.gametype_name(9), None);
        // Medal of Honor: two-field lines, no score.
        let moh =
            status(b"\xff\xff\xff\xff\x01statusResponse\n\\g_gametype\\3\n58 \"UnnamedSoldier\"\n");
        let moh = server_info(Quake3Game::Mohaa, None, Some(moh));
        assert_eq!(moh.gametype.as_deref(), Some("round_based"));
        assert_eq!(moh.players.unwrap()[0].score, None);
        assert!(moh.warnings.is_empty());
    }

    /// A hostile 64 KiB status: 32,000 `"` lines and short player lines. The decoder keeps
    /// at most `MAX_WARNINGS` lines and `MAX_PLAYERS` players and counts the rest; the record
    /// says so and still counts every player.
    #[test]
    fn a_flooded_status_is_kept_within_the_caps_and_counted() {
        let mut bytes = b"\xff\xff\xff\xffstatusResponse\n\\sv_hostname\\x\n".to_vec();
        for _ in 0..5000 {
            bytes.extend_from_slice(b"0 0 \"\"\n");
        }
        for _ in 0..32_000 {
            bytes.extend_from_slice(b"\"\n");
        }
        let st = status(&bytes);
        assert_eq!((st.players.len(), st.players_omitted), (MAX_PLAYERS, 3976));
        assert_eq!(
            (st.skipped.len(), st.skipped_omitted),
            (MAX_WARNINGS, 31_968)
        );
        let s = server_info(Quake3Game::Quake3, None, Some(st));
        assert_eq!(s.num_players, 5000, "every player counted");
        assert_eq!(s.players.as_ref().map(Vec::len), Some(MAX_PLAYERS));
        assert_eq!(s.warnings.len(), MAX_WARNINGS, "{:?}", s.warnings);
        assert_eq!(s.warnings[0], "3976 more players not kept (at most 1024)");
        assert_eq!(s.warnings[MAX_WARNINGS - 1], "and 31970 more lines skipped");
        let mut again = s.clone();
        assert!(!again.cap(), "nothing more to cap");
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
