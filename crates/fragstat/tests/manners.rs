//! Real servers' manners (issue 32, cross-check E1, trial finding 2): many queries at once to
//! one server through one `Client`, against real OpenArena (ioquake3) and Nexuiz (DarkPlaces)
//! and against the emulators of every family, which keep their engine's limits by default.
//! Every caller gets the answer, none ends in `Foreign`, and none waits longer than the
//! engine's limit requires.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fragstat::core::manners::ServerEngine;
use fragstat::core::registry::EmuServer;
use fragstat::core::{Transport, UdpTransport};
use fragstat::{Client, Error, GameRef};
use fragstat_testkit::games::Nexuiz;
use fragstat_testkit::{OpenArena, OpenArenaConfig};
use futures_util::StreamExt;

/// Slack on top of what the limit requires: a round trip, a scheduler tick, a loaded CI box.
const SLACK: Duration = Duration::from_millis(900);

fn game(id: &str) -> GameRef {
    fragstat::game(id).unwrap_or_else(|| panic!("{id} compiled in"))
}

/// A client sending from `ip` (servers count queries per source address: the harness's
/// readiness probes come from 127.0.0.2, `fragstat_testkit::PROBE_FROM`).
async fn client_from(ip: &str) -> Client {
    let v4: Arc<dyn Transport> =
        Arc::new(UdpTransport::bind(format!("{ip}:0").parse().unwrap()).unwrap());
    Client::builder()
        .transports(Some(v4), None)
        .build()
        .unwrap()
}

/// Where the scans of each test come from: not 127.0.0.1 (the queries'), nor 127.0.0.2 (the
/// testkit's readiness probes).
const SCANS_FROM: &str = "127.0.0.3";

/// How long the `k`th answer (0-based, in the order they came) may take when queries to one
/// server are spaced as the engine requires.
fn allowed(engine: ServerEngine, k: usize) -> Duration {
    let waits = engine.spacing().map_or(Duration::ZERO, |s| {
        let over = u32::try_from(k).unwrap().saturating_sub(s.burst - 1);
        s.interval * over
    });
    waits + SLACK
}

type Timed = Vec<(Duration, Result<fragstat::Response, Error>)>;

/// `n` concurrent calls of `ask` on the client: each caller's time (from the start) and result.
async fn at_once<F, Fut>(client: &Client, n: usize, ask: F) -> Timed
where
    F: Fn(Client) -> Fut,
    Fut: std::future::Future<Output = Result<fragstat::Response, Error>> + Send + 'static,
{
    let start = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let call = ask(client.clone());
            tokio::spawn(async move {
                let r = call.await;
                (start.elapsed(), r)
            })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

/// `n` concurrent `client.query(..).players()` to `addr`.
async fn queries(client: &Client, g: &GameRef, addr: SocketAddr, n: usize) -> Timed {
    at_once(client, n, |c| {
        let g = g.clone();
        async move { c.query(&g, addr).players().await }
    })
    .await
}

/// `n` concurrent scans of `addr` alone (no single flight across scans: each is sent, and
/// the client spaces them).
async fn scans(client: &Client, g: &GameRef, addr: SocketAddr, n: usize) -> Timed {
    at_once(client, n, |c| {
        let g = g.clone();
        async move { c.scan(&g, [addr]).players().next().await.unwrap().1 }
    })
    .await
}

/// Every caller answered, none later than the engine's limit requires.
/// `spent`: queries this client sent the server just before.
fn check(what: &str, engine: ServerEngine, spent: usize, mut got: Timed) {
    got.sort_by_key(|(t, _)| *t);
    for (k, (t, r)) in got.iter().enumerate() {
        assert!(r.is_ok(), "{what}: caller {k} got {r:?} after {t:?}");
        let max = allowed(engine, k + spent);
        let attempts = r.as_ref().map_or(0, |r| r.attempts);
        assert!(
            *t <= max,
            "{what}: answer {k} took {t:?} ({attempts} attempts), the limit requires at most {max:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifteen_at_once_to_a_real_openarena_all_get_the_answer() {
    let Some(oa) = OpenArena::start(OpenArenaConfig::default()) else {
        return;
    };
    let g = game("openarena");
    let client = client_from("127.0.0.1").await;
    let got = queries(&client, &g, oa.addr, 15).await;
    for (_, r) in &got {
        let players = r
            .as_ref()
            .map(|r| r.info.players.as_ref().map_or(0, Vec::len))
            .ok();
        assert_eq!(players, Some(2), "{r:?}");
    }
    check("15 queries, real OpenArena", ServerEngine::Ioq3, 0, got);
}

/// Fifteen scans: not one flight, so spaced: eight at once, then one a second. A server of
/// their own: ioquake3's global bucket (10 per 100 ms from every address) is shared, so
/// the queries of the test above, however many flights they took, would leave the eighth
/// scan short of its budget; here only the start's readiness probe came before them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifteen_scans_of_a_real_openarena_are_spaced_to_its_limit() {
    let Some(oa) = OpenArena::start(OpenArenaConfig::default()) else {
        return;
    };
    let g = game("openarena");
    let got = scans(&client_from(SCANS_FROM).await, &g, oa.addr, 15).await;
    check("15 scans, real OpenArena", ServerEngine::Ioq3, 0, got);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_at_once_to_a_real_nexuiz_all_get_the_answer() {
    let Some(nex) = Nexuiz::start("Manners", "downer", 8, 2, None) else {
        return;
    };
    let g = game("nexuiz");
    let client = client_from("127.0.0.1").await;
    let got = queries(&client, &g, nex.addr, 5).await;
    check("5 queries, real Nexuiz", ServerEngine::DarkPlaces, 0, got);
    let got = scans(&client_from(SCANS_FROM).await, &g, nex.addr, 5).await;
    check("5 scans, real Nexuiz", ServerEngine::DarkPlaces, 0, got);
}

/// One emulated server of `g` with its engine's limits (the default).
fn emulated(g: &GameRef) -> (support::Farm, SocketAddr) {
    let farm = support::farm_with(g, &EmuServer::new("manners", "", 3));
    let addr = farm.servers[0];
    (farm, addr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rate_limited_emulators_of_every_family_answer_every_caller() {
    for id in [
        "openarena",
        "q3",
        "nexuiz",
        "xonotic",
        "warsow",
        "doom3",
        "etqw",
        "teeworlds",
        "teeworlds07",
        "ddnet",
    ] {
        let g = game(id);
        let engine = g.meta().engine;
        let (_farm, addr) = emulated(&g);
        let client = client_from("127.0.0.1").await;
        let n = if engine == ServerEngine::DarkPlaces {
            5
        } else {
            15
        };
        let got = queries(&client, &g, addr, n).await;
        check(&format!("{n} queries, emulated {id}"), engine, 0, got);
        let got = scans(&client_from(SCANS_FROM).await, &g, addr, n).await;
        check(&format!("{n} scans, emulated {id}"), engine, 0, got);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn different_requests_at_once_to_a_rate_limited_emulator_are_all_answered() {
    for id in ["openarena", "nexuiz"] {
        let g = game(id);
        let (_farm, addr) = emulated(&g);
        let client = client_from("127.0.0.1").await;
        let start = Instant::now();
        let tasks: Vec<_> = (0..12)
            .map(|i| {
                let (client, g) = (client.clone(), g.clone());
                tokio::spawn(async move {
                    let q = client.query(&g, addr);
                    match i % 3 {
                        0 => q.await,
                        1 => q.players().await,
                        _ => q.rules().await,
                    }
                })
            })
            .collect();
        for t in tasks {
            let r = t.await.unwrap();
            assert!(r.is_ok(), "{id}: {r:?}");
        }
        // Three different requests (Quake III: getinfo, getstatus, both), each sent once.
        let engine = g.meta().engine;
        assert!(
            start.elapsed() <= allowed(engine, 3),
            "{id}: {:?}",
            start.elapsed()
        );
    }
}
