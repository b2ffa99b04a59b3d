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

    // The vanilla info: at most 16 clients, counts capped, the real count in the name: read
    // back (issue 33), the name without it, the list marked partial; the raw name in rules.
    let vanilla = query(&engine, server.addr, Query6::new(Mode::Vanilla)).await;
    assert_eq!(vanilla.name.display(), server.config.name);
    let raw_name = format!("{} [60/64]", server.config.name);
    assert_eq!(vanilla.rules.get("name"), Some(raw_name.as_bytes()));
    assert_eq!((vanilla.num_players, vanilla.max_players), (60, 64));
    assert_eq!(vanilla.players.as_ref().unwrap().len(), 16);
    assert!(vanilla.truncated);
    assert_eq!(extra(&vanilla).partial, Some("name_count"));
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

/// Issue 33: DDNet answers at most 50 info requests a second (51 in 16.4) with their clients,
/// the rest with the counts alone. 60 extended queries at once: each answer is either the
/// full list or read as rate-limited (the count kept, `players` unknown), never an empty
/// server; at least one is rate-limited.
#[tokio::test(flavor = "multi_thread")]
async fn ddnet_over_its_info_rate_limit_is_not_an_empty_server() {
    let Some(server) = Ddnet::start(DdnetConfig::default()) else {
        return;
    };
    let Some(bots) = FakeClients::connect(server.addr, clients(5)) else {
        return;
    };
    let engine = Engine::bind().await.unwrap();
    // Wait until every client is listed (a joining one shows as "(connecting)" for a moment).
    let want = wanted(&bots.clients);
    let deadline = std::time::Instant::now() + fragstat_testkit::wait::SETTLE;
    while std::time::Instant::now() < deadline {
        let info = query(&engine, server.addr, Query6::new(Mode::Extended)).await;
        if info.players.as_ref().is_some_and(|_| seen(&info) == want) {
            break;
        }
        tokio::time::sleep(fragstat_testkit::wait::POLL).await;
    }
    // A second on: a window of its own.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..60 {
        let engine = engine.clone();
        let addr = server.addr;
        tasks.spawn(async move { query(&engine, addr, Query6::new(Mode::Extended)).await });
    }
    let (mut full, mut limited) = (0, 0);
    while let Some(info) = tasks.join_next().await {
        let info = info.unwrap();
        assert_eq!(
            (info.num_players, info.max_players),
            (5, 16),
            "{:?}",
            info.warnings
        );
        match extra(&info).partial {
            None => {
                assert_eq!(seen(&info), want);
                assert!(
                    !info.truncated && info.warnings.is_empty(),
                    "{:?}",
                    info.warnings
                );
                full += 1;
            }
            Some("rate_limited") => {
                assert_eq!(info.players, None, "not an empty list");
                assert!(info.truncated);
                assert!(info.warnings[0].starts_with("no client list"));
                limited += 1;
            }
            other => panic!("{other:?}"),
        }
    }
    // 51 and 9 when the 60 go out within one of the server's seconds (16.4 counts 50 ticks).
    assert_eq!(full + limited, 60);
    assert!(
        full >= 1 && limited >= 1,
        "{full} full, {limited} rate-limited"
    );
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

/// Issue 33: Teeworlds 0.7.5 dies (SIGSEGV, observed with Debian's 0.7.5-2) on a 0.7 info
/// request whose browse token is −1 (varint `40`: teeworlds server.cpp at 0.7.5 skips the
/// packer's reset for −1). A query given −1 sends another token: it is answered and the
/// server lives on.
#[tokio::test(flavor = "multi_thread")]
async fn teeworlds_075_is_never_sent_browse_token_minus_one() {
    let Some(mut server) = Teeworlds7::start("My TW7 Server", "dm1", 8) else {
        return;
    };
    let engine = Engine::bind().await.unwrap();
    let q = Query7::with_tokens(0x0badbeef, -1);
    assert!(q.browse_token() >= 0);
    let info = query(&engine, server.addr, q).await;
    assert_eq!(info.name.display(), server.name);
    let again = query(&engine, server.addr, Query7::new()).await;
    assert_eq!(again.name.display(), server.name);
    server.process.check_running();
}
