//! One front door (issue 32, item 6; trial findings 5 and 6): a `Client` made without a
//! runtime, one defaults table, a family's typed replies through the same client and its
//! settings, per-scan settings, `(IpAddr, u16)` targets and `try_game`.

mod support;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use fragstat::quake3::{Quake3Game, Request, ServerExchange};
use fragstat::{Client, Error, Options};
use fragstat_testkit::SilentUdp;
use futures_util::StreamExt;

/// `Client::new()` is infallible and needs no runtime (no socket yet); the first query, in
/// a runtime, binds. Before issue 32, `build()` was `async` and bound at once.
#[test]
fn a_client_is_made_outside_a_runtime_and_binds_on_its_first_query() {
    let client = Client::new();
    // Outside a runtime nothing can be bound: no addresses, and no panic.
    assert!(client.local_addrs().is_empty());
    let built = Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let q3 = fragstat::try_game("q3").unwrap();
        let farm = support::farm(&q3, 1, 2, &[]);
        let port = farm.servers[0].port();
        for c in [&client, &built] {
            // An address and a port, as `SocketAddr` takes them.
            let r = c
                .query(&q3, (IpAddr::V4(Ipv4Addr::LOCALHOST), port))
                .players()
                .await
                .unwrap();
            assert_eq!(r.info.players.as_ref().map(Vec::len), Some(2));
            let r = c.query(&q3, ([127, 0, 0, 1], port)).await.unwrap();
            assert_eq!(r.addr, farm.servers[0]);
            assert!(!c.local_addrs().is_empty(), "bound by the query");
        }
    });
}

/// A zero timeout is refused by `build()`, not by the first query.
#[test]
fn build_refuses_a_zero_timeout() {
    let e = Client::builder()
        .timeout(Duration::ZERO)
        .build()
        .unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e:?}");
}

/// One defaults table: the engine's `Options::default()` is the client's defaults (it was
/// 1000 ms × 2 beside the client's 500 ms × 5, and the Quake III client's 500 ms × 3).
#[test]
fn the_engine_and_the_client_share_one_defaults_table() {
    let o = Options::default();
    assert_eq!(o.timeout, fragstat::defaults::TIMEOUT);
    assert_eq!(o.retries, fragstat::defaults::RETRIES);
    assert_eq!(o.min_timeout, fragstat::defaults::MIN_TIMEOUT);
    assert_eq!(o.concurrency, fragstat::defaults::CONCURRENCY);
    assert_eq!(
        (fragstat::defaults::TIMEOUT, fragstat::defaults::RETRIES),
        (Duration::from_millis(500), 5)
    );
}

#[test]
fn try_game_is_game_as_a_result() {
    assert_eq!(fragstat::try_game("q3").unwrap().id(), "q3");
    assert_eq!(fragstat::try_game("OpenArena").unwrap().id(), "openarena");
    let e = fragstat::try_game("no-such-game").unwrap_err();
    assert!(
        matches!(&e, Error::InvalidInput(t) if t.contains("no-such-game")),
        "{e:?}"
    );
}

/// Quake III's typed replies (infoResponse, statusResponse, a master's list) come through the
/// one client, with its settings: its retries, not a second client's own.
#[tokio::test(flavor = "multi_thread")]
async fn typed_quake3_replies_come_through_the_one_client_and_its_settings() {
    let q3 = fragstat::game("q3").unwrap();
    let farm = support::farm(&q3, 3, 2, &[]);
    let client = Client::builder()
        .timeout(Duration::from_millis(300))
        .retries(1)
        .master_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let q = client.quake3();
    let info = q.info(farm.servers[0]).await.unwrap();
    assert_eq!(info.reply.info.get("hostname"), Some(&b"emu 0"[..]));
    assert_eq!(info.attempts, 1);
    let status = q.status(farm.servers[1]).await.unwrap();
    assert_eq!(status.reply.players.len(), 2);
    let both = q.server(farm.servers[2]).await.unwrap().reply;
    assert!(both.info.is_some() && both.status.is_some());
    let mut list = q
        .master(farm.master.unwrap(), &Quake3Game::Quake3.getservers())
        .await
        .unwrap()
        .reply;
    list.sort();
    let mut want = farm.servers.clone();
    want.sort();
    assert_eq!(list, want);
    let all = q.scan(list, true).unwrap().collect_sorted().await;
    assert_eq!(all.len(), 3);
    assert!(all
        .iter()
        .all(|o| o.result.as_ref().unwrap().status.is_some()));
    // Any family exchange through the same client.
    let t = client
        .exchange(farm.servers[0], ServerExchange::new(Request::Status))
        .await
        .unwrap();
    assert!(t.reply.status.is_some());
    // The client's settings: 1 retry, so 2 attempts to a server that never answers.
    let silent = SilentUdp::v4();
    let e = q.info(silent.addr).await.unwrap_err();
    assert!(matches!(e, Error::Timeout { attempts: 2 }), "{e:?}");
}

/// A scan's own timeout and retries replace the client's for that scan alone.
#[tokio::test(flavor = "multi_thread")]
async fn a_scan_has_its_own_timeout_and_retries() {
    let q3 = fragstat::game("q3").unwrap();
    let silent = SilentUdp::v4();
    let client = Client::builder()
        .timeout(Duration::from_millis(2000))
        .retries(5)
        .build()
        .unwrap();
    let start = Instant::now();
    let mut scan = client
        .scan(&q3, [silent.addr])
        .timeout(Duration::from_millis(50))
        .retries(0)
        .concurrency(1);
    let (addr, result): (SocketAddr, _) = scan.next().await.unwrap();
    assert_eq!(addr, silent.addr);
    let e = result.unwrap_err();
    assert!(matches!(e, Error::Timeout { attempts: 1 }), "{e:?}");
    assert!(
        start.elapsed() < Duration::from_millis(1500),
        "the client's 2 s timeout was used: {:?}",
        start.elapsed()
    );
}
