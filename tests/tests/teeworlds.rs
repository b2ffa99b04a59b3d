//! The library against real DDNet 16.4 and Teeworlds 0.7.5 servers on loopback, every field
//! compared with what the server was started with: 60 fake clients so DDNet's extended info
//! needs an `iex+` (and its legacy info three `dtsf`), a passworded server, and 0.7 against
//! both Teeworlds 0.7.5 and DDNet's sixup side.

use std::time::Duration;

use fragstat::core::model::{Player, ServerInfo};
use fragstat::core::registry::Ask;
use fragstat::teeworlds::exchange::{Mode, Query6, Query7};
use fragstat::teeworlds::{PlayerExtra, ServerExtra};
use fragstat::{Engine, Options};
use fragstat_testkit::games::{crc32, Ddnet, DdnetConfig, FakeClient, FakeClients, Teeworlds7};

fn options() -> Options {
    Options::default()
        .with_timeout(Duration::from_millis(1000))
        .with_retries(4)
}

/// Names with spaces, UTF-8 and `^` (no colour codes in Teeworlds), clans, countries.
fn clients(n: usize) -> Vec<FakeClient> {
    (0..n)
        .map(|i| FakeClient {
            name: match i % 7 {
                0 => format!("Ünï ☃ {i}"),
                3 => format!("^1x {i}"),
                _ => format!("Tee {i:02}"),
            },
            clan: format!("c{}", i % 5),
            country: [276, -1, 840][i % 3],
        })
        .collect()
}

fn extra(info: &ServerInfo) -> &ServerExtra {
    info.extra_as::<ServerExtra>().expect("a Teeworlds extra")
}

fn country(p: &Player) -> i32 {
    p.extra
        .as_ref()
        .and_then(|e| e.as_any().downcast_ref::<PlayerExtra>())
        .expect("a Teeworlds player extra")
        .country
}

/// The players as (name, clan, country), sorted (slot order is join order, but do not
/// depend on it).
fn seen(info: &ServerInfo) -> Vec<(String, String, i32)> {
    let mut v: Vec<_> = info
        .players
        .as_ref()
        .expect("players")
        .iter()
        .map(|p| {
            (
                p.name.display(),
                p.clan.as_ref().map(|c| c.display()).unwrap_or_default(),
                country(p),
            )
        })
        .collect();
    v.sort();
    v
}

fn wanted(clients: &[FakeClient]) -> Vec<(String, String, i32)> {
    let mut v: Vec<_> = clients
        .iter()
        .map(|c| (c.name.clone(), c.clan.clone(), c.country))
        .collect();
    v.sort();
    v
}

async fn query<E>(engine: &Engine, addr: std::net::SocketAddr, ex: E) -> ServerInfo
where
    E: fragstat::core::Exchange<Output = ServerInfo>,
{
    engine
        .query(addr, ex, options())
        .await
        .result
        .unwrap_or_else(|e| panic!("query of {addr}: {e}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn ddnet_with_60_clients_over_every_protocol() {
    let Some(server) = Ddnet::start(DdnetConfig {
        max_clients: 64,
        ..DdnetConfig::default()
    }) else {
        return;
    };
    let Some(bots) = FakeClients::connect(server.addr, clients(60)) else {
        return;
    };
    let engine = Engine::bind().await.unwrap();
    let game = fragstat::game("ddnet").unwrap();
    let want = wanted(&bots.clients);

    // A client that has joined may still be listed as "(connecting)" for a moment.
    let mut ext = ServerInfo::default();
    let deadline = std::time::Instant::now() + fragstat_testkit::wait::SETTLE;
    while std::time::Instant::now() < deadline {
        ext = query(&engine, server.addr, game.server_query(Ask::players())).await;
        if seen(&ext) == want {
            break;
        }
        tokio::time::sleep(fragstat_testkit::wait::POLL).await;
    }
    let map = std::fs::read(server.map_file()).expect("the map file");

    // DDNet's extended info: the plain name, the real counts, more than one datagram.
    assert_eq!(seen(&ext), want);
    assert_eq!(ext.name.display(), server.config.name);
    assert_eq!(ext.map.display(), server.config.map);
    assert_eq!(ext.gametype.as_deref(), Some("DDraceNetwork"));
    assert_eq!(ext.version.as_deref(), Some("0.6.4, 16.4"));
    assert_eq!((ext.num_players, ext.max_players), (60, 64));
    assert_eq!((ext.num_spectators, ext.password), (Some(0), Some(false)));
    assert!(
        !ext.truncated && ext.warnings.is_empty(),
        "{:?}",
        ext.warnings
    );
    let x = extra(&ext);
    assert_eq!(x.protocol, "0.6 extended");
    assert_eq!((x.num_players, x.max_players), (60, 64));
    assert!(x.datagrams.unwrap() >= 2, "an iex+ came: {x:?}");
    assert_eq!(x.map_crc, Some(crc32(&map)), "CRC-32 of the map file");
    assert_eq!(x.map_size, Some(map.len() as u32));
    for p in ext.players.as_ref().unwrap() {
        assert_eq!(p.score, Some(-9999), "no race time yet");
        assert_eq!(p.is_spectator, Some(false));
    }

    // The legacy 64-client info: 24 clients per dtsf.
    let legacy = query(&engine, server.addr, Query6::new(Mode::Legacy64)).await;
    assert_eq!(seen(&legacy), want);
    assert_eq!((legacy.num_players, legacy.max_players), (60, 64));
    assert_eq!(extra(&legacy).datagrams, Some(3));

    // The vanilla info: at most 16 clients, counts capped, the real count in the name.
    let vanilla = query(&engine, server.addr, Query6::new(Mode::Vanilla)).await;
    assert_eq!(
        vanilla.name.display(),
        format!("{} [60/64]", server.config.name)
    );
    assert_eq!((vanilla.num_players, vanilla.max_players), (15, 16));
    assert_eq!(vanilla.players.as_ref().unwrap().len(), 16);
    assert!(want.iter().any(|w| seen(&vanilla).contains(w)));

    // The 0.7 side (sixup): handshake, varints, time scores.
    let sixup = query(&engine, server.addr, Query7::new()).await;
    assert_eq!(sixup.version.as_deref(), Some("0.7↔0.6.4, 16.4"));
    assert_eq!(sixup.name.display(), server.config.name, "all 60 fit");
    assert_eq!((sixup.num_players, sixup.max_players), (60, 64));
    assert_eq!(seen(&sixup), want);
    assert_eq!(sixup.password, Some(false));
    assert_eq!(sixup.num_bots, Some(0));
    assert_eq!(sixup.score_kind.map(|k| k.id()), Some("time"));
    drop(bots);
}

#[tokio::test(flavor = "multi_thread")]
async fn ddnet_with_a_password_and_an_odd_name() {
    let Some(server) = Ddnet::start(DdnetConfig {
        name: "Ünï ☃ #1 \\ ^1x; \"q\"".into(),
        password: Some("secret".into()),
        ..DdnetConfig::default()
    }) else {
        return;
    };
    let engine = Engine::bind().await.unwrap();
    for info in [
        query(&engine, server.addr, Query6::new(Mode::Extended)).await,
        query(&engine, server.addr, Query6::new(Mode::Vanilla)).await,
        query(&engine, server.addr, Query7::new()).await,
    ] {
        assert_eq!(info.password, Some(true), "{:?}", extra(&info).protocol);
        assert_eq!(info.name.display(), server.config.name);
        assert_eq!(
            info.name.as_bytes(),
            server.config.name.as_bytes(),
            "raw, no colour codes"
        );
        assert_eq!((info.num_players, info.max_players), (0, 16));
        assert_eq!(info.players.as_ref().map(Vec::len), Some(0));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn teeworlds_075_needs_the_handshake() {
    let Some(server) = Teeworlds7::start("My TW7 Server", "dm1", 8) else {
        return;
    };
    let engine = Engine::bind().await.unwrap();
    let game = fragstat::game("teeworlds07").unwrap();
    let info = engine
        .query(server.addr, game.server_query(Ask::players()), options())
        .await
        .result
        .unwrap();
    assert_eq!(info.name.display(), server.name);
    assert_eq!(info.map.display(), server.map);
    assert_eq!(info.gametype.as_deref(), Some("DM"));
    assert_eq!(info.version.as_deref(), Some("0.7.5"));
    assert_eq!(
        (info.num_players, info.max_players),
        (0, server.max_clients)
    );
    assert_eq!((info.password, info.num_spectators), (Some(false), Some(0)));
    let x = extra(&info);
    assert_eq!((x.protocol, x.max_players), ("0.7", server.max_clients));
    assert_eq!(x.hostname.as_deref(), Some(""));
    assert_eq!(info.score_kind.map(|k| k.id()), Some("points"));
    // Without the handshake a 0.7 server answers nothing: the 0.6 query times out.
    let six = engine
        .query(
            server.addr,
            Query6::new(Mode::Extended),
            Options::default()
                .with_timeout(Duration::from_millis(300))
                .with_retries(1),
        )
        .await;
    assert!(six.result.unwrap_err().is_timeout());
}
