#[test]
fn refuses_what_cannot_be_served() {
    let w = WarsowGame::Warsow;
    assert!(w.emulated_server(&EmuServer::new("a\\b", "", 0)).is_err());
    assert!(w
        .emulated_server(&EmuServer::new("x", "", 0).with_gametype(Some("a:b".into())))
        .is_err());
    let n = WarsowGame::Nexuiz;
    assert!(n
        .emulated_server(&EmuServer::new("x", "", 0).with_password(true))
        .is_err());
    assert!(n.emulated_server(&EmuServer::new("x", "", 2)).is_ok());
}

use super::*;
use fragstat_core::service::HEARTBEAT_INTERVAL;
use fragstat_quake3_oob::{Quake3Game as Q3Game, ServerReply};

fn status(s: &EmulatedServer, bytes: &[u8]) -> fragstat_quake3_oob::StatusResponse {
    let reply = s.respond(bytes).unwrap();
    match decode(&reply).unwrap() {
        Packet::Oob(Oob::StatusResponse(st)) => st,
        other => panic!("{other:?}"),
    }
}

#[test]
fn qfusion_puts_the_challenge_first_and_teams_last() {
    let s = EmulatedServer::new(ServerConfig::sample(WarsowGame::Warsow, b"^1W", 4));
    let reply = s.respond(b"\xff\xff\xff\xffgetinfo 123\n").unwrap();
    assert!(reply.starts_with(b"\xff\xff\xff\xffinfoResponse\n\\challenge\\123\\version\\"));
    assert!(
        reply.ends_with(b"\\bots\\2\\clients\\4"),
        "{}",
        reply.escape_ascii()
    );
    let st = status(&s, b"\xff\xff\xff\xffgetstatus");
    assert_eq!(
        st.info.pairs().next().unwrap(),
        (&b"challenge"[..], &b""[..])
    );
    assert_eq!(st.players.len(), 4);
    assert_eq!(
        st.players.iter().map(|p| p.team).collect::<Vec<_>>(),
        [Some(2), Some(3), Some(2), Some(0)]
    );
    let info = crate::view::adapt(
        WarsowGame::Warsow,
        ServerReply {
            info: None,
            status: Some(st),
            unverified: false,
        }
        .into_server_info(Q3Game::Other(22)),
    );
    assert_eq!(
        (info.num_players, info.num_bots, info.num_spectators),
        (4, Some(2), Some(1))
    );
    assert_eq!(info.gametype.as_deref(), Some("ca"));
}

#[test]
fn short_info_follows_the_filters() {
    let empty = EmulatedServer::new(ServerConfig::sample(WarsowGame::Warsow, b"e", 0));
    assert!(empty.respond(b"\xff\xff\xff\xffinfo 22 full").is_none());
    assert!(empty.respond(b"\xff\xff\xff\xffinfo 21 empty").is_none());
    assert!(empty.respond(b"\xff\xff\xff\xffinfo 22 empty").is_some());
    let mut c = ServerConfig::sample(WarsowGame::Warsow, b"f", 8);
    c.max_clients = 8;
    let full = EmulatedServer::new(c);
    assert!(full.respond(b"\xff\xff\xff\xffinfo 22 empty").is_none());
    let Packet::InfoReply(i) =
        decode(&full.respond(b"\xff\xff\xff\xffinfo 22 full").unwrap()).unwrap()
    else {
        panic!()
    };
    assert_eq!((i.clients(), i.bots()), (Some((8, 8)), Some(4)));
    let nexuiz = EmulatedServer::new(ServerConfig::sample(WarsowGame::Nexuiz, b"n", 2));
    assert!(nexuiz
        .respond(b"\xff\xff\xff\xffinfo 3 full empty")
        .is_none());
}

/// A Nexuiz server set up as the one a capture in tests/fixtures/warsow/ok came from: its
/// host name, game type, map and bots (name, frags, team).
fn nexuiz_like_the_capture(
    gametype: &[u8],
    host: &[u8],
    map: &[u8],
    bots: &[(&str, i32, i32)],
) -> EmulatedServer {
    let mut c = ServerConfig::sample(WarsowGame::Nexuiz, host, 0);
    c.gametype = gametype.to_vec();
    c.map = map.to_vec();
    c.set_players(0, 0);
    c.players = bots
        .iter()
        .map(|&(name, score, team)| EmuPlayer {
            name: name.as_bytes().to_vec(),
            score,
            ping: 0,
            team,
            bot: true,
        })
        .collect();
    EmulatedServer::new(c)
}

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../../tests/fixtures/warsow/ok/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The request `cargo xtask capture` sent (its `escape_ascii` text in the case's JSON).
fn request_of(case: &str) -> Vec<u8> {
    let meta: serde_json::Value =
        serde_json::from_slice(&fixture(&format!("{case}.json"))).unwrap();
    let text = meta["source"]["requests"][0].as_str().unwrap();
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(tail) = rest.strip_prefix("\\x") {
        out.push(u8::from_str_radix(&tail[..2], 16).unwrap());
        rest = &tail[2..];
    }
    out.extend_from_slice(rest.as_bytes());
    out
}

/// The emulator, set up as the real server was and asked the same, answers the same
/// bytes.
fn same_as_the_capture(server: &EmulatedServer, case: &str) {
    let reply = server.respond(&request_of(case)).unwrap();
    assert_eq!(
        reply.escape_ascii().to_string(),
        fixture(&format!("{case}.bin")).escape_ascii().to_string(),
        "{case}"
    );
}

#[test]
fn darkplaces_replies_byte_for_byte_as_the_real_nexuiz() {
    let tdm = nexuiz_like_the_capture(
        b"tdm",
        b"Team ^1Test",
        b"downer",
        &[
            ("[BOT]Resurrection", 4, 1),
            ("[BOT]Eureka", 2, 2),
            ("[BOT]Delirium", 1, 1),
            ("[BOT]Hellfire", 4, 2),
        ],
    );
    assert!(tdm.config().teamplay, "tdm is a team game");
    same_as_the_capture(&tdm, "nexuiz-252-tdm-4bots-1");
    let ctf = nexuiz_like_the_capture(
        b"ctf",
        b"CTF Test",
        b"basementctf",
        &[
            ("[BOT]Hellfire", 0, 1),
            ("[BOT]Dominator", 0, 2),
            ("[BOT]Shadow", 0, 1),
        ],
    );
    same_as_the_capture(&ctf, "nexuiz-252-ctf-3bots-1");
    let dm = nexuiz_like_the_capture(
        b"dm",
        default_hostname(WarsowGame::Nexuiz).as_bytes(),
        b"downer",
        &[("[BOT]Resurrection", 0, 0), ("[BOT]Necrotic", 0, 0)],
    );
    assert!(!dm.config().teamplay);
    same_as_the_capture(&dm, "nexuiz-252-dm-2bots-defaulthost-1");
}

#[test]
fn darkplaces_qcstatus_per_game_type() {
    // As a real Nexuiz 2.5.2 server wrote them with two bots at 0 frags.
    for (gametype, qcstatus) in [
        ("dom", "dom:2.5.2::score!!:score!!:5:0:14:0"),
        ("kh", "kh:2.5.2::score!!:score!!,caps!:5:0,0:13:0,0:14:0,0"),
        ("ons", "ons:2.5.2::score!!:score!!:5:0:14:0"),
        ("lms", "lms:2.5.2::rank<!!"),
        ("rc", "rc:2.5.2::fastest<!!"),
        ("rune", "rune:2.5.2::score!!"),
        ("arena", "arena:2.5.2::score!!"),
    ] {
        let mut c = ServerConfig::sample(WarsowGame::Nexuiz, b"n", 0);
        c.gametype = gametype.as_bytes().to_vec();
        c.set_players(2, 0);
        for p in &mut c.players {
            p.score = 0;
        }
        let s = EmulatedServer::new(c);
        assert_eq!(
            s.darkplaces_qcstatus().escape_ascii().to_string(),
            qcstatus,
            "{gametype}"
        );
    }
}

#[test]
fn darkplaces_echoes_the_raw_rest_of_the_request() {
    let s = EmulatedServer::new(ServerConfig::sample(WarsowGame::Nexuiz, b"^1Nex", 4));
    let reply = s.respond(b"\xff\xff\xff\xffgetinfo abc").unwrap();
    assert!(reply.starts_with(
        b"\xff\xff\xff\xffinfoResponse\n\\gamename\\Nexuiz\\modname\\data\\gameversion\\20000\\"
    ));
    assert!(reply.ends_with(b"\\qcstatus\\dm:2.5.2::score!!\\challenge\\abc"));
    // The trailing newline is echoed, then comes the serverinfo's own: an empty line.
    let reply = s.respond(b"\xff\xff\xff\xffgetstatus abc\n").unwrap();
    assert!(
        reply
            .escape_ascii()
            .to_string()
            .contains("\\\\challenge\\\\abc\\n\\n30 20 \\\"^1Player^7 1\\\"\\n"),
        "{}",
        reply.escape_ascii()
    );
    // Further words and spaces too; a NUL ends it; no argument: no key.
    let reply = s.respond(b"\xff\xff\xff\xffgetstatus  a b\0c").unwrap();
    assert!(reply
        .escape_ascii()
        .to_string()
        .contains("\\\\challenge\\\\ a b\\n"));
    let reply = s.respond(b"\xff\xff\xff\xffgetstatus").unwrap();
    assert!(!reply.escape_ascii().to_string().contains("challenge"));
    let reply = s.respond(b"\xff\xff\xff\xffgetstatus\n").unwrap();
    assert!(!reply.escape_ascii().to_string().contains("challenge"));
    // `getstatus ` then a NUL: an empty challenge, still written.
    let reply = s.respond(b"\xff\xff\xff\xffgetstatus \0x").unwrap();
    assert!(reply
        .escape_ascii()
        .to_string()
        .contains("score!!\\\\challenge\\\\\\n"));
    // memcmp of the command only.
    assert!(s.respond(b"\xff\xff\xff\xffgetstatusX").is_some());
    assert!(s.respond(b"\xff\xff\xff\xffgetchallenge").is_none());
    assert_eq!(
        darkplaces_request(b"\xff\xff\xff\xffgetinfo "),
        Some((false, None))
    );
    assert_eq!(
        darkplaces_request(b"\xff\xff\xff\xffgetinfo x"),
        Some((false, Some(&b"x"[..])))
    );
}

#[test]
fn darkplaces_team_games_spectators_and_bots() {
    let mut c = ServerConfig::sample(WarsowGame::Nexuiz, b"^1Nex", 0);
    c.gametype = b"ctf".to_vec();
    c.set_players(6, 0);
    let s = EmulatedServer::new(c);
    let st = status(&s, b"\xff\xff\xff\xffgetstatus xyz");
    assert_eq!(st.info.pairs().next_back().unwrap().1, b"xyz");
    assert!(st.players.iter().all(|p| p.team_before_name));
    let rows: Vec<(Option<i32>, i32, Option<i32>, bool)> = st
        .players
        .iter()
        .map(|p| (p.score, p.ping, p.team, p.name.starts_with(b"[BOT]")))
        .collect();
    assert_eq!(
        rows,
        [
            (Some(30), 20, Some(1), false),
            (Some(27), 0, Some(2), true),
            (Some(-666), 22, Some(0), false),
            (Some(21), 0, Some(1), true),
            (Some(18), 24, Some(2), false),
            (Some(15), 0, Some(1), true),
        ]
    );
    assert_eq!(
        st.info.get("qcstatus"),
        Some(&b"ctf:2.5.2::score!!:caps!!:5:3:14:2"[..])
    );
    let x = WarsowGame::Xonotic
        .emulated_server(&EmuServer::new("", "", 3).with_gametype(Some("tdm".into())))
        .map(|_| ())
        .is_ok();
    assert!(x);
    let mut c = ServerConfig::sample(
        WarsowGame::Xonotic,
        default_hostname(WarsowGame::Xonotic).as_bytes(),
        0,
    );
    c.gametype = b"tdm".to_vec();
    c.max_clients = 16;
    c.set_players(3, 0);
    let st = status(&EmulatedServer::new(c), b"\xff\xff\xff\xffgetstatus q");
    assert_eq!(st.info.get("hostname"), Some(&b"Xonotic 0.8.6 Server"[..]));
    assert_eq!(st.info.get("gameversion"), Some(&b"806"[..]));
    assert_eq!(st.info.get("gamename"), Some(&b"Xonotic"[..]));
    assert_eq!(
        st.info.get("qcstatus"),
        Some(&b"tdm:0.8.6:P0:S13:F2:M::score!!:score!!:5:30:14:27"[..])
    );
    assert_eq!(
        st.players.iter().map(|p| p.team).collect::<Vec<_>>(),
        [Some(1), Some(2), Some(0)]
    );
}

#[test]
fn darkplaces_status_too_long_becomes_the_engines_inforesponse() {
    let mut c = ServerConfig::sample(WarsowGame::Nexuiz, b"Big", 0);
    c.max_clients = 64;
    c.set_players(64, 0);
    let s = EmulatedServer::new(c);
    let reply = s.respond(b"\xff\xff\xff\xffgetstatus abc").unwrap();
    assert!(reply.len() < 1400);
    let text = reply.escape_ascii().to_string();
    assert!(
        text.starts_with("\\xff\\xff\\xff\\xffinfoResponse\\n\\\\gamename\\\\Nexuiz"),
        "{text}"
    );
    assert!(text.ends_with("\\\\challenge\\\\abc\\nc\\n"), "{text}");
    // Xonotic's engine has twice the room.
    let mut c = ServerConfig::sample(WarsowGame::Xonotic, b"Big", 0);
    c.max_clients = 64;
    c.set_players(40, 0);
    let st = status(&EmulatedServer::new(c), b"\xff\xff\xff\xffgetstatus abc");
    assert_eq!(st.players.len(), 40);
    // A challenge too long for the buffer: no reply at all.
    let mut long = b"\xff\xff\xff\xffgetinfo ".to_vec();
    long.resize(1500, b'x');
    assert!(s.respond(&long).is_none());
}

#[test]
fn darkplaces_game_types_are_the_games_own() {
    let e = WarsowGame::Nexuiz
        .emulated_server(&EmuServer::new("x", "", 0).with_gametype(Some("ca".into())))
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .starts_with("nexuiz has no game type \"ca\": one of dm, tdm, ctf"),
        "{}",
        e
    );
    assert!(WarsowGame::Xonotic
        .emulated_server(&EmuServer::new("x", "", 0).with_gametype(Some("ca".into())))
        .is_ok());
}

#[test]
fn heartbeats_at_start_and_on_time() {
    let master: SocketAddr = "127.0.0.1:27950".parse().unwrap();
    let mut s = EmulatedServer::new(ServerConfig::sample(WarsowGame::Warsow, b"h", 0))
        .with_master(Some(master));
    let t0 = Instant::now();
    let mut out = Outbox::new();
    s.start(t0, &mut out);
    assert_eq!(
        out,
        vec![(master, b"\xff\xff\xff\xffheartbeat DarkPlaces\n".to_vec())]
    );
    assert_eq!(s.poll_timeout(), Some(t0 + HEARTBEAT_INTERVAL));
    out.clear();
    s.handle_timeout(t0 + HEARTBEAT_INTERVAL, &mut out);
    assert_eq!(out.len(), 1);
}

/// Trial finding 23: a DarkPlaces server heartbeats twice when it shuts down (`SV_Shutdown`,
/// `sv_main.c:2139-2140`); private slots are not emulated here and are refused.
#[test]
fn darkplaces_heartbeats_twice_at_shutdown() {
    let master: SocketAddr = "127.0.0.1:27950".parse().unwrap();
    let config = EmuServer::new("x", "", 0).with_heartbeat_to(Some(master));
    let mut s = WarsowGame::Nexuiz.emulated_server(&config).unwrap();
    let t0 = Instant::now();
    let mut out = Outbox::new();
    s.start(t0, &mut out);
    out.clear();
    s.stop(t0, &mut out);
    let hb = b"\xff\xff\xff\xffheartbeat DarkPlaces\n".to_vec();
    assert_eq!(out, vec![(master, hb.clone()), (master, hb)]);
    let private = EmuServer::new("x", "", 0).with_private_slots(1);
    assert!(WarsowGame::Nexuiz.emulated_server(&private).is_err());
}
