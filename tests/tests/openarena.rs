//! The library against a real OpenArena 0.8.8 server (ioquake3 1.36) on loopback.

use std::time::Duration;

use fragstat::quake3::{text, Packet, Quake3Game};
use fragstat::Client;
use fragstat_testkit::{udp_ask, OpenArena, OpenArenaConfig};

#[tokio::test(flavor = "multi_thread")]
async fn library_reads_a_real_server() {
    let Some(oa) = OpenArena::start(OpenArenaConfig {
        ipv6: true,
        ..OpenArenaConfig::default()
    }) else {
        return;
    };
    let client = Client::new().quake3();

    let info = client.info(oa.addr).await.unwrap();
    // ioq3 prepends keys: the echoed challenge comes last in an infoResponse.
    assert_eq!(info.reply.info.pairs().next_back().unwrap().0, b"challenge");
    assert_eq!(
        info.reply.info.get("hostname"),
        Some(&b"My ^1OA^7 Server"[..])
    );
    assert_eq!(info.reply.info.get("protocol"), Some(&b"71"[..]));
    // An RTT whenever the answered attempt is known (always, when the first one answered);
    // how long it is depends on the machine's load, so no bound on it.
    if info.attempts == 1 {
        assert!(
            info.rtt.is_some_and(|r| r > Duration::ZERO),
            "{:?}",
            info.rtt
        );
    }

    let status = client.status(oa.addr).await.unwrap();
    assert_eq!(
        status.reply.info.pairs().next().unwrap().0,
        b"challenge",
        "first in a statusResponse"
    );
    assert!(status.reply.skipped.is_empty() && !status.reply.truncated);

    let both = client
        .server(oa.addr)
        .await
        .unwrap()
        .reply
        .into_server_info(Quake3Game::OpenArena);
    assert_eq!(both.name.as_bytes(), b"My ^1OA^7 Server");
    assert_eq!(text::display(both.name.as_bytes()), "My OA Server");
    assert_eq!(both.map.as_bytes(), b"oa_dm1");
    assert_eq!((both.num_players, both.max_players), (2, 8));
    assert_eq!(both.num_bots, Some(2), "clients 2, g_humanplayers 0");
    assert_eq!(both.gametype.as_deref(), Some("ffa"));
    let players = both.players.as_ref().expect("players asked for");
    let mut names: Vec<String> = players.iter().map(|p| p.name.display()).collect();
    names.sort();
    assert_eq!(names, ["Grism", "Sarge"]);
    assert!(
        players.iter().all(|p| p.ping == Some(0)),
        "bots have ping 0"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ipv6_which_qstat_cannot_do() {
    let Some(oa) = OpenArena::start(OpenArenaConfig {
        ipv6: true,
        bots: vec!["major".into()],
        ..OpenArenaConfig::default()
    }) else {
        return;
    };
    let Some(addr6) = oa.addr6 else {
        eprintln!("SKIPPED: no IPv6 loopback on this machine");
        return;
    };
    let client = Client::new().quake3();
    let s = client
        .server(addr6)
        .await
        .unwrap()
        .reply
        .into_server_info(Quake3Game::OpenArena);
    assert_eq!(s.map.as_bytes(), b"oa_dm1");
    assert_eq!(s.players.map_or(0, |p| p.len()), 1);
}

#[test]
fn challenge_response_and_scan_of_several_real_servers() {
    let servers: Vec<OpenArena> = ["kyonshi", "angelyss", "ayumi"]
        .iter()
        .filter_map(|b| {
            OpenArena::start(OpenArenaConfig {
                bots: vec![(*b).into()],
                hostname: format!("OA {b}"),
                ..OpenArenaConfig::default()
            })
        })
        .collect();
    if servers.len() < 3 {
        return;
    }
    // getchallenge: ioq3 1.36 answers "challengeResponse <challenge> <client challenge> <protocol>".
    let reply = udp_ask(
        servers[0].addr,
        b"\xff\xff\xff\xffgetchallenge 12345 Quake3Arena",
        Duration::from_secs(30),
    )
    .unwrap();
    let Ok(Packet::ChallengeResponse(c)) = fragstat::quake3::decode(&reply) else {
        panic!("{reply:?}")
    };
    assert_eq!(c.client_challenge.as_deref(), Some(&b"12345"[..]));
    assert_eq!(c.protocol, Some(Quake3Game::OpenArena.protocol()));

    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = Client::new().quake3();
        let all = client
            .scan(servers.iter().map(|s| s.addr), true)
            .unwrap()
            .collect_sorted()
            .await;
        for (o, s) in all.iter().zip(&servers) {
            let sum = o
                .result
                .as_ref()
                .unwrap()
                .server_info(Quake3Game::OpenArena);
            assert_eq!(sum.name.as_bytes(), format!("OA {}", s.bots[0]).as_bytes());
            assert_eq!(sum.players.map_or(0, |p| p.len()), 1);
        }
    });
}

/// Cross-check D8 on the real engine: OpenArena with `sv_privateClients 2` and three bots.
/// Bots fill the private slots first and ioq3's getinfo counts only the slots above them, so
/// it says `clients 1`, `g_humanplayers 0`, `sv_maxclients 10` while getstatus lists all three
/// bots. The record lists three players and leaves the bots unknown, instead of the one bot
/// of the public slots.
#[tokio::test(flavor = "multi_thread")]
async fn private_slots_leave_the_bots_unknown() {
    let Some(oa) = OpenArena::start(OpenArenaConfig {
        hostname: "Private OA".into(),
        bots: vec!["sarge".into(), "grism".into(), "major".into()],
        max_clients: 12,
        private_clients: 2,
        ..OpenArenaConfig::default()
    }) else {
        return;
    };
    let client = Client::new().quake3();
    let reply = client.server(oa.addr).await.unwrap().reply;
    let info = reply.info.as_ref().expect("getinfo answered").info.clone();
    assert_eq!(info.get("clients"), Some(&b"1"[..]));
    assert_eq!(info.get("g_humanplayers"), Some(&b"0"[..]));
    assert_eq!(info.get("sv_maxclients"), Some(&b"10"[..]));
    let s = reply.into_server_info(Quake3Game::OpenArena);
    assert_eq!((s.num_players, s.max_players), (3, 12));
    assert_eq!(s.num_bots, None, "getinfo counts 1 of the 3 listed players");
    assert_eq!(s.rules.get("sv_privateClients"), Some(&b"2"[..]));
}
