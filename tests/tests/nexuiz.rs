//! The `nexuiz` game against a real Nexuiz 2.5.2 server (DarkPlaces, protocol 3) on
//! loopback: every field compared with what it was started with, without a warning; a team
//! game's teams; and the server's heartbeat registering it with our emulated master.

use std::sync::Arc;
use std::time::Duration;

use fragstat::core::registry::{Ask, Decoded, EmuMaster, MasterOptions, MasterQuery};
use fragstat::core::serve::run;
use fragstat::core::{Transport, UdpTransport};
use fragstat::warsow::QcStatus;
use fragstat::{Engine, Options};
use fragstat_testkit::games::Nexuiz;
use fragstat_testkit::{udp_ask_from, wait};

fn options() -> Options {
    // DarkPlaces drops a second query from one address within about a second: retries are
    // spaced out.
    Options::default()
        .with_timeout(Duration::from_millis(1500))
        .with_retries(3)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_real_nexuiz_server() {
    let Some(server) = Nexuiz::start("^1Nex ^7Test", "downer", 8, 2, None) else {
        return;
    };
    let engine = Engine::bind().await.unwrap();
    let game = fragstat::game("nexuiz").unwrap();
    let info = engine
        .query(server.addr, game.server_query(Ask::players()), options())
        .await
        .result
        .unwrap();
    assert_eq!(info.name.as_bytes(), server.hostname.as_bytes());
    assert_eq!(info.name.display(), "Nex Test");
    assert_eq!(info.map.display(), server.map);
    assert_eq!(info.gametype.as_deref(), Some("dm"));
    assert_eq!(info.version.as_deref(), Some("2.5.2"));
    assert_eq!(
        (info.num_players, info.max_players),
        (2, server.max_players)
    );
    assert_eq!(info.num_bots, Some(server.bots));
    assert_eq!(info.num_spectators, Some(0));
    assert_eq!(info.password, None, "DarkPlaces does not say");
    // The request ends with its challenge, so DarkPlaces echoes no newline into it and no
    // empty line follows the serverinfo: nothing to warn about (every query used to warn
    // `skipped line … ""`).
    assert_eq!(info.warnings, Vec::<String>::new());
    assert!(!info.truncated);
    assert_eq!(info.rules.get("protocol"), Some(&b"3"[..]));
    assert_eq!(info.rules.get("gamename"), Some(&b"Nexuiz"[..]));
    let qc = info.extra_as::<QcStatus>().expect("qcstatus parsed");
    assert_eq!((qc.gametype.as_str(), qc.version.as_str()), ("dm", "2.5.2"));
    let players = info.players.as_ref().unwrap();
    assert_eq!(players.len(), 2);
    for p in players {
        assert!(p.name.display().starts_with("[BOT]"), "{}", p.name);
        assert_eq!(
            (p.ping, p.is_bot, p.is_spectator),
            (Some(0), Some(true), Some(false))
        );
    }
    // getinfo alone: the same counts, no players. DarkPlaces answers one query per source
    // address about once a second, so this one comes from another loopback address.
    let other: Arc<dyn Transport> =
        Arc::new(UdpTransport::bind("127.0.0.3:0".parse().unwrap()).unwrap());
    let engine = Engine::with_transports(Some(other), None);
    let short = engine
        .query(server.addr, game.server_query(Ask::info()), options())
        .await
        .result
        .unwrap();
    assert_eq!((short.num_players, short.num_bots), (2, Some(2)));
    assert_eq!(short.players, None);
    assert_eq!(short.name, info.name);
    assert_eq!(short.warnings, Vec::<String>::new());

    // The old request form, with a newline after the challenge: the server echoes it (an
    // empty line before the players), and the reply still decodes without a warning.
    let addr = server.addr;
    let reply = tokio::task::spawn_blocking(move || {
        wait::until_every(
            "a reply to `getstatus abc\\n`",
            wait::STARTUP,
            Duration::from_millis(1100),
            || {
                udp_ask_from(
                    "127.0.0.4".parse().unwrap(),
                    addr,
                    b"\xff\xff\xff\xffgetstatus abc\n",
                    Duration::from_millis(500),
                )
            },
        )
    })
    .await
    .unwrap();
    assert!(
        reply
            .windows(b"\\challenge\\abc\n\n".len())
            .any(|w| w == b"\\challenge\\abc\n\n"),
        "{}",
        reply.escape_ascii()
    );
    let Decoded::Server(echoed) = game.decode(&reply).unwrap() else {
        panic!("a server reply")
    };
    assert_eq!(echoed.warnings, Vec::<String>::new());
    assert_eq!(echoed.players.as_ref().map(Vec::len), Some(2));
}

/// A team game (`+g_tdm 1`, four bots): the team before each name, two teams of two, the
/// team scores in `qcstatus` the sums of their players' frags, no warning.
#[tokio::test(flavor = "multi_thread")]
async fn a_real_nexuiz_team_game() {
    let Some(server) = Nexuiz::start_game("^4Team ^7Game", "downer", 8, 4, None, "tdm") else {
        return;
    };
    let engine = Engine::bind().await.unwrap();
    let game = fragstat::game("nexuiz").unwrap();
    let info = engine
        .query(server.addr, game.server_query(Ask::players()), options())
        .await
        .result
        .unwrap();
    assert_eq!(info.name.display(), "Team Game");
    assert_eq!(info.gametype.as_deref(), Some(server.gametype.as_str()));
    assert_eq!(info.gametype.as_deref(), Some("tdm"));
    assert_eq!((info.num_players, info.num_bots), (4, Some(4)));
    assert_eq!(info.num_spectators, Some(0));
    assert_eq!(info.warnings, Vec::<String>::new());
    let players = info.players.as_ref().unwrap();
    assert_eq!(players.len(), 4);
    for p in players {
        assert!(p.name.display().starts_with("[BOT]"), "{}", p.name);
        assert_eq!((p.ping, p.is_bot), (Some(0), Some(true)));
        assert!(matches!(p.team, Some(1 | 2)), "{:?}", p.team);
    }
    let frags = |team: i32| -> i32 {
        players
            .iter()
            .filter(|p| p.team == Some(team))
            .map(|p| p.score.unwrap())
            .sum()
    };
    for team in [1, 2] {
        let members = players.iter().filter(|p| p.team == Some(team)).count();
        assert_eq!(members, 2, "bots are shared out between the two teams");
    }
    let qc = info.extra_as::<QcStatus>().expect("qcstatus parsed");
    assert_eq!(
        (qc.gametype.as_str(), qc.version.as_str()),
        ("tdm", "2.5.2")
    );
    assert_eq!(
        qc.rest,
        format!(":score!!:score!!:5:{}:14:{}", frags(1), frags(2)),
        "red (5) and blue (14) scores"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_real_nexuiz_server_registers_with_our_master() {
    let game = fragstat::game("nexuiz").unwrap();
    let socket: Arc<dyn Transport> =
        Arc::new(UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap());
    let master_addr = socket.local_addr().unwrap();
    let master = game
        .emulator()
        .expect("built with emulators")
        .emulated_master(&EmuMaster::new(Vec::new()))
        .unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(run(socket, master, async {
        let _ = stopped.await;
    }));
    let Some(server) = tokio::task::spawn_blocking(move || {
        Nexuiz::start("^2Registered", "downer", 4, 0, Some(master_addr))
    })
    .await
    .unwrap() else {
        return;
    };
    let engine = Engine::bind().await.unwrap();
    let deadline = std::time::Instant::now() + fragstat_testkit::wait::SETTLE;
    let mut listed = Vec::new();
    while std::time::Instant::now() < deadline {
        let MasterQuery::Udp(ex) = game.master_query(&MasterOptions::default()).unwrap() else {
            panic!("a UDP master");
        };
        listed = engine
            .query(
                master_addr,
                ex,
                Options::default().with_timeout(Duration::from_millis(1000)),
            )
            .await
            .result
            .map(|l| l.into_iter().map(|e| e.addr).collect())
            .unwrap_or_default();
        if listed.contains(&server.addr) {
            break;
        }
        tokio::time::sleep(fragstat_testkit::wait::POLL).await;
    }
    assert_eq!(listed, vec![server.addr], "heartbeat, challenge, listed");
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}
