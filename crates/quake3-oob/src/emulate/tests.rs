//! The emulators against what the engines send.

#[test]
fn refuses_unservable_text() {
    let g = Quake3Game::Quake3;
    let err = g
        .emulated_server(&EmuServer::new("x", "a\\b", 0))
        .err()
        .unwrap();
    assert!(err.to_string().contains("map name"), "{err}");
    assert!(g.emulated_server(&EmuServer::new("x", "q3dm17", 2)).is_ok());
}

use super::*;
use crate::packet::Heartbeat;
use std::time::Duration;

#[test]
fn server_answers_like_ioq3() {
    let mut s = EmulatedServer::new(ServerConfig::sample(Quake3Game::OpenArena, b"My ^1OA", 3));
    let reply = s.respond(b"\xff\xff\xff\xffgetinfo abc\n").unwrap();
    let Packet::InfoResponse(r) = decode(&reply).unwrap() else {
        panic!()
    };
    assert_eq!(r.info.pairs().next_back().unwrap().0, b"challenge");
    assert_eq!(r.info.get("clients"), Some(&b"3"[..]));
    assert_eq!(r.info.get("g_humanplayers"), Some(&b"2"[..]));
    let reply = s.respond(b"\xff\xff\xff\xffgetstatus xyz").unwrap();
    let Packet::StatusResponse(st) = decode(&reply).unwrap() else {
        panic!()
    };
    assert_eq!(st.info.pairs().next().unwrap().1, b"xyz");
    assert_eq!(st.players.len(), 3);
    assert!(s.respond(b"\xff\xff\xff\xffrcon x").is_none());
}

#[test]
fn spliced_replies_equal_the_built_ones() {
    for game in Quake3Game::ALL {
        spliced_equal_built(game);
    }
}

fn spliced_equal_built(game: Quake3Game) {
    let s = EmulatedServer::new(ServerConfig::sample(game, b"^1x", 5));
    if game == Quake3Game::Mohaa {
        return; // its direction byte is no part of the encoder's packets: see `mohaa_replies`
    }
    let iw4x_tail: &[u8] = if game == Quake3Game::Iw4x { b"\n" } else { b"" };
    for c in [None, Some(&b"abc-1"[..])] {
        let built = Packet::InfoResponse(s.info_response(c)).to_bytes().unwrap();
        assert_eq!(s.info_reply(c), built, "{game}");
        let mut built = Packet::StatusResponse(s.status_response(c))
            .to_bytes()
            .unwrap();
        built.extend_from_slice(iw4x_tail);
        assert_eq!(s.status_reply(c), built, "{game}");
    }
    assert!(s
        .info_reply(None)
        .starts_with(b"\xff\xff\xff\xffinfoResponse\n"));
}
#[test]
fn heartbeats_at_start_and_then_every_period() {
    let master: SocketAddr = "127.0.0.1:27950".parse().unwrap();
    let every = Duration::from_secs(2);
    let mut s = EmulatedServer::new(ServerConfig::sample(Quake3Game::Quake3, b"x", 0))
        .with_heartbeats(Heartbeats::new(Some(master)).every(every));
    let t0 = Instant::now();
    let mut out = Outbox::new();
    s.start(t0, &mut out);
    assert_eq!(
        out,
        vec![(master, b"\xff\xff\xff\xffheartbeat QuakeArena-1\n".to_vec())]
    );
    assert_eq!(s.poll_timeout(), Some(t0 + every));
    out.clear();
    s.handle_timeout(t0 + Duration::from_secs(1), &mut out);
    assert!(out.is_empty(), "not due yet");
    s.handle_timeout(t0 + every, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(s.poll_timeout(), Some(t0 + every + every));
    // Without a master: nothing, and no timer.
    let mut quiet = EmulatedServer::new(ServerConfig::sample(Quake3Game::Quake3, b"x", 0));
    out.clear();
    quiet.start(t0, &mut out);
    assert!(out.is_empty());
    assert_eq!(quiet.poll_timeout(), None);
}

#[test]
fn master_registers_after_challenge() {
    let mut m = EmulatedMaster::new(Vec::new(), EotStyle::LastPacket);
    let server: SocketAddr = "127.0.0.1:27960".parse().unwrap();
    let now = Instant::now();
    let out = m.respond(
        now,
        server,
        &Packet::Heartbeat(Heartbeat {
            name: b"QuakeArena-1".to_vec(),
        })
        .to_bytes()
        .unwrap(),
    );
    let Packet::GetInfo { challenge } = decode(&out[0].1).unwrap() else {
        panic!()
    };
    // A wrong challenge does not register.
    let mut emu = EmulatedServer::new(ServerConfig::sample(Quake3Game::Quake3, b"x", 0));
    let wrong = Packet::InfoResponse(emu.info_response(Some(b"nope")))
        .to_bytes()
        .unwrap();
    m.respond(now, server, &wrong);
    assert!(m.servers().is_empty());
    let reply = emu
        .respond(&Packet::GetInfo { challenge }.to_bytes().unwrap())
        .unwrap();
    // Too late: the challenge lapsed.
    m.respond(now + CHALLENGE_TTL, server, &reply);
    assert!(m.servers().is_empty());
    assert_eq!(m.poll_timeout(), Some(now + CHALLENGE_RESEND));
    m.respond(now, server, &reply);
    assert_eq!(m.servers(), &[(server, 68)]);
    assert_eq!(m.pending(), 0);
    let out = m.respond(
        now,
        "127.0.0.1:5000".parse().unwrap(),
        b"\xff\xff\xff\xffgetservers 68 empty full",
    );
    let Packet::ServersResponse(l) = decode(&out[0].1).unwrap() else {
        panic!()
    };
    assert_eq!(l.servers, vec![server]);
}

mod expiry {
    use super::*;
    use crate::packet::Heartbeat;

    #[test]
    fn spoofed_heartbeats_expire_and_are_bounded() {
        let mut m = EmulatedMaster::new(Vec::new(), EotStyle::LastPacket);
        let hb = Packet::Heartbeat(Heartbeat {
            name: b"QuakeArena-1".to_vec(),
        })
        .to_bytes()
        .unwrap();
        let now = Instant::now();
        for port in 1..=(MAX_PENDING as u16 + 100) {
            let mut out = Outbox::new();
            m.handle(now, SocketAddr::from(([10, 0, 0, 1], port)), &hb, &mut out);
        }
        assert_eq!(m.pending(), MAX_PENDING, "bounded");
        // Each unanswered challenge is sent again a bounded number of times, then lapses.
        let mut resent = 0;
        while let Some(due) = m.poll_timeout() {
            let mut out = Outbox::new();
            m.handle_timeout(due, &mut out);
            resent += out.len();
        }
        assert_eq!(m.pending(), 0, "expired");
        assert_eq!(resent, 3 * MAX_PENDING, "at 1.5, 3 and 4.5 s of a 5 s life");
    }

    #[test]
    fn unanswered_challenges_are_sent_again_until_they_lapse() {
        let mut m = EmulatedMaster::new(Vec::new(), EotStyle::LastPacket);
        let server: SocketAddr = "127.0.0.1:26000".parse().unwrap();
        let hb = Packet::Heartbeat(Heartbeat {
            name: b"DarkPlaces".to_vec(),
        })
        .to_bytes()
        .unwrap();
        let now = Instant::now();
        let first = m.respond(now, server, &hb);
        let mut out = Outbox::new();
        m.handle_timeout(now + CHALLENGE_RESEND, &mut out);
        // The same getinfo, to the same server (the first was dropped by its flood guard).
        assert_eq!(out, first);
        let mut emu = EmulatedServer::new(ServerConfig::sample(Quake3Game::Quake3, b"x", 0));
        let reply = emu.respond(&out[0].1).unwrap();
        m.respond(now + CHALLENGE_RESEND * 2, server, &reply);
        assert_eq!(m.servers(), &[(server, 68)]);
        assert_eq!(m.poll_timeout(), None, "nothing left to resend");
    }
}

mod games {
    use super::super::*;
    use crate::view::server_info;

    fn reply(s: &mut EmulatedServer, request: &[u8]) -> Packet {
        decode(&s.respond(request).unwrap()).unwrap()
    }

    fn both(game: Quake3Game, players: usize) -> fragstat_core::model::ServerInfo {
        let mut s = EmulatedServer::new(ServerConfig::sample(game, b"srv", players));
        let direction: &[u8] = if game.spec().direction_byte {
            b"\x02"
        } else {
            b""
        };
        let ask = |cmd: &str| [&b"\xff\xff\xff\xff"[..], direction, cmd.as_bytes()].concat();
        let Packet::InfoResponse(i) = reply(&mut s, &ask("getinfo c1")) else {
            panic!("{game}")
        };
        let Packet::StatusResponse(st) = reply(&mut s, &ask("getstatus c2")) else {
            panic!("{game}")
        };
        assert_eq!(i.info.get("challenge"), Some(&b"c1"[..]), "{game}");
        assert_eq!(st.info.get("challenge"), Some(&b"c2"[..]), "{game}");
        server_info(game, Some(i), Some(st))
    }

    /// Our own reader makes of every game's emulated replies what the game's server said:
    /// the players listed, the bots where the replies tell them, the gametype's name, no
    /// warnings.
    #[test]
    fn every_game_reads_back() {
        for game in Quake3Game::ALL {
            let look = look::of(game);
            let s = both(game, 6);
            assert!(s.warnings.is_empty(), "{game}: {:?}", s.warnings);
            assert_eq!(s.name.as_bytes(), b"srv", "{game}");
            assert_eq!(s.map.as_bytes(), look.map.as_bytes(), "{game}");
            let listed = if game == Quake3Game::Iw4x { 3 } else { 6 };
            assert_eq!(s.num_players, listed, "{game}");
            assert_eq!(s.players.as_ref().unwrap().len(), listed as usize, "{game}");
            let bots_known = !matches!(
                game,
                Quake3Game::EnemyTerritory
                    | Quake3Game::Rtcw
                    | Quake3Game::JediOutcast
                    | Quake3Game::Sof2
                    | Quake3Game::Cod
                    | Quake3Game::CodUo
                    | Quake3Game::Cod2
                    | Quake3Game::Iw4x
                    | Quake3Game::Mohaa
                    | Quake3Game::Tremulous
            );
            if bots_known {
                let bots = if look.bots { 3 } else { 0 };
                assert_eq!(s.num_bots, Some(bots), "{game}");
            }
            if let Ok(n) = look.gametype.parse::<i64>() {
                assert_eq!(
                    s.gametype.as_deref(),
                    game.gametype_name(n),
                    "{game} gametype {n}"
                );
            }
            // Tremulous sends `g_needpass` (E2 of the 2026-11 cross-check): only MOHAA has no key.
            let no_password_key = game == Quake3Game::Mohaa;
            assert_eq!(s.password, (!no_password_key).then_some(false), "{game}");
        }
    }

    /// W:ET, ET: Legacy and RtCW append: challenge first in the infoResponse, last in the
    /// statusResponse (ET `sv_main.c:582`, `q_shared.c:1420-1432`); `P` gives the teams.
    #[test]
    fn wolfenstein_order_and_teams() {
        for game in [
            Quake3Game::EnemyTerritory,
            Quake3Game::EtLegacy,
            Quake3Game::Rtcw,
        ] {
            let mut s = EmulatedServer::new(ServerConfig::sample(game, b"x", 3));
            let Packet::InfoResponse(i) = reply(&mut s, b"\xff\xff\xff\xffgetinfo c1") else {
                panic!()
            };
            assert_eq!(
                i.info.pairs().next().unwrap(),
                (&b"challenge"[..], &b"c1"[..])
            );
            let Packet::StatusResponse(st) = reply(&mut s, b"\xff\xff\xff\xffgetstatus c2") else {
                panic!()
            };
            assert_eq!(st.info.pairs().next_back().unwrap().0, b"challenge");
            assert_eq!(
                st.info.get("gamename"),
                Some(if game == Quake3Game::Rtcw {
                    &b"main"[..]
                } else {
                    &b"etmain"[..]
                })
            );
            assert_eq!(
                i.info.get("gamename"),
                Some(if game == Quake3Game::Rtcw {
                    &b"wolfmp"[..]
                } else {
                    &b"et"[..]
                })
            );
        }
        let et = both(Quake3Game::EnemyTerritory, 3);
        let teams: Vec<_> = et.players.unwrap().iter().map(|p| p.team).collect();
        assert_eq!(teams, [Some(1), Some(2), Some(1)]);
        assert_eq!(et.gametype.as_deref(), Some("campaign"));
        assert_eq!(
            both(Quake3Game::Rtcw, 0).gametype.as_deref(),
            Some("objective")
        );
    }

    /// OpenArena on ioq3 1.36: `com_protocol` and `gamename baseoa` in the status,
    /// `gamename Quake3Arena` and `voip opus` (first) in the info (the real capture).
    #[test]
    fn openarena_keys() {
        let mut s = EmulatedServer::new(ServerConfig::sample(Quake3Game::OpenArena, b"x", 2));
        let Packet::InfoResponse(i) = reply(&mut s, b"\xff\xff\xff\xffgetinfo c") else {
            panic!()
        };
        assert_eq!(i.info.pairs().next().unwrap(), (&b"voip"[..], &b"opus"[..]));
        assert_eq!(i.info.get("gamename"), Some(&b"Quake3Arena"[..]));
        let Packet::StatusResponse(st) = reply(&mut s, b"\xff\xff\xff\xffgetstatus c") else {
            panic!()
        };
        assert_eq!(st.info.get("gamename"), Some(&b"baseoa"[..]));
        assert_eq!(st.info.get("com_protocol"), Some(&b"71"[..]));
        assert_eq!(st.info.get("protocol"), None);
        assert_eq!(st.info.get("mapname"), Some(&b"oa_dm1"[..]));
        assert_eq!(st.players[1].name, b"Sarge", "OpenArena's bots");
    }

    /// IW4x keeps an empty challenge, sorts its keys, leaves bots off the list and closes
    /// with a newline (`ServerInfo.cpp:137-254`, the real replies).
    #[test]
    fn iw4x_replies() {
        let mut s = EmulatedServer::new(ServerConfig::sample(Quake3Game::Iw4x, b"x", 4));
        let raw = s.respond(b"\xff\xff\xff\xffgetstatus\n").unwrap();
        assert!(
            raw.starts_with(b"\xff\xff\xff\xffstatusResponse\n\\challenge\\\\"),
            "{raw:?}"
        );
        assert!(raw.ends_with(b"\"\n\n"));
        let Packet::StatusResponse(st) = decode(&raw).unwrap() else {
            panic!()
        };
        let keys: Vec<_> = st.info.pairs().map(|(k, _)| k.to_vec()).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        assert_eq!(st.players.len(), 2, "bots are not listed");
        assert!(st.skipped.is_empty());
    }

    /// Medal of Honor: the direction byte both ways, `ping "name"` lines.
    #[test]
    fn mohaa_replies() {
        let mut s = EmulatedServer::new(ServerConfig::sample(Quake3Game::Mohaa, b"x", 2));
        let raw = s.respond(b"\xff\xff\xff\xff\x02getstatus\n").unwrap();
        assert!(raw.starts_with(b"\xff\xff\xff\xff\x01statusResponse\n"));
        assert!(
            raw.ends_with(b"\n21 \"Player2\"\n"),
            "{:?}",
            String::from_utf8_lossy(&raw)
        );
        let info = s.respond(b"\xff\xff\xff\xff\x02getinfo x").unwrap();
        assert!(info.starts_with(b"\xff\xff\xff\xff\x01infoResponse\n"));
    }

    /// SoF2 1.03 writes `score ping team "name"`; CoD2 leaves `clients` out when nobody
    /// plays; Dæmon sorts and sends `P`/`B`.
    #[test]
    fn sof2_cod2_and_daemon() {
        let sof2 = both(Quake3Game::Sof2, 2);
        let p = sof2.players.unwrap();
        assert_eq!((p[0].team, p[1].team), (Some(1), Some(2)));
        assert_eq!(sof2.gametype.as_deref(), Some("dm"));
        let mut cod2 = EmulatedServer::new(ServerConfig::sample(Quake3Game::Cod2, b"x", 0));
        let Packet::InfoResponse(i) = reply(&mut cod2, b"\xff\xff\xff\xffgetinfo c") else {
            panic!()
        };
        assert_eq!(i.info.get("clients"), None);
        let unv = both(Quake3Game::Unvanquished, 4);
        let flags: Vec<_> = unv
            .players
            .unwrap()
            .iter()
            .map(|p| (p.team, p.is_bot))
            .collect();
        assert_eq!(
            flags,
            [
                (Some(1), Some(false)),
                (Some(2), Some(true)),
                (Some(1), Some(false)),
                (Some(2), Some(true))
            ]
        );
    }

    #[test]
    fn gametypes_are_checked() {
        let q3 = Quake3Game::Quake3;
        let e = q3
            .emulated_server(&EmuServer::new("x", "", 0).with_gametype(Some("2".into())))
            .err()
            .unwrap();
        assert!(e.to_string().contains("single-player"), "{e}");
        assert!(q3
            .emulated_server(&EmuServer::new("x", "", 0).with_gametype(Some("ctf".into())))
            .is_err());
        assert!(Quake3Game::Cod4
            .emulated_server(&EmuServer::new("x", "", 0).with_gametype(Some("sd".into())))
            .is_ok());
    }
}
