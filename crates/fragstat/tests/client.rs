//! `fragstat::Client` end to end on loopback (emulators in this process) and over the
//! simulated network in paused time: queries, merged master lists with a down master,
//! backpressure, the rate, a new port per scan, HTTP lists and their bounds.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use fragstat::core::testing::{Faults, SimNet};
use fragstat::core::Transport;
use fragstat::{Client, Error, LimitKind};
use fragstat_testkit::SilentUdp;
use futures_util::StreamExt;

fn fast() -> fragstat::ClientBuilder {
    Client::builder()
        .timeout(Duration::from_millis(300))
        .retries(1)
        .master_timeout(Duration::from_millis(300))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_query_resolves_names_and_reports_players() {
    let q3 = fragstat::game("q3").unwrap();
    let farm = support::farm(&q3, 1, 3, &[]);
    let client = fast().build().unwrap();
    let port = farm.servers[0].port();
    let r = client
        .query(&q3, format!("localhost:{port}"))
        .players()
        .await
        .unwrap();
    assert_eq!(r.info.name.to_string(), "emu 0");
    assert_eq!(r.info.players.as_ref().map(Vec::len), Some(3));
    assert_eq!(r.addr.port(), port);
    assert!(r.attempts >= 1);
    assert!(!r.info.unverified);
    // The info alone: no player list.
    let r = client.query(&q3, farm.servers[0]).await.unwrap();
    assert_eq!(r.info.players, None);
    // A name that does not resolve, and a server that does not answer.
    let e = client.query(&q3, "no-such-host.invalid").await.unwrap_err();
    assert!(matches!(e, Error::Resolve { .. }), "{e:?}");
    let silent = SilentUdp::v4();
    let e = client
        .query(&q3, silent.addr)
        .timeout(Duration::from_millis(50))
        .retries(0)
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Timeout { attempts: 1 }), "{e:?}");
    // Results read back from their JSON.
    let r = client.query(&q3, farm.servers[0]).rules().await.unwrap();
    let json = serde_json::to_string(&r).unwrap();
    let back: fragstat::Response = serde_json::from_str(&json).unwrap();
    assert_eq!(serde_json::to_string(&back).unwrap(), json);
    assert_eq!(back.info.name, r.info.name);
}

#[tokio::test(flavor = "multi_thread")]
async fn master_lists_merge_with_provenance_and_a_down_master_is_reported() {
    let q3 = fragstat::game("q3").unwrap();
    let farm = support::farm(&q3, 3, 1, &[]);
    let s = &farm.servers;
    let a = support::master(&q3, vec![s[0], s[1], s[1]]);
    let b = support::master(&q3, vec![s[1], s[2]]);
    let down = SilentUdp::v4();
    let client = fast().build().unwrap();
    let list = client
        .master_list(
            &q3,
            [
                a.master.unwrap().to_string(),
                down.addr.to_string(),
                b.master.unwrap().to_string(),
                "no-such-host.invalid".to_string(),
            ],
        )
        .await
        .unwrap();
    assert_eq!(list.servers().collect::<Vec<_>>(), vec![s[0], s[1], s[2]]);
    let by_addr = |x: SocketAddr| list.entries().iter().find(|l| l.entry.addr == x).unwrap();
    assert_eq!(by_addr(s[1]).masters, vec![0, 2], "both masters list it");
    assert_eq!(by_addr(s[2]).masters, vec![2]);
    let r = list.reports();
    assert_eq!(r.len(), 4);
    assert_eq!(
        (r[0].status, r[0].listed, r[0].kept),
        ("online", 2, 2),
        "{:?}",
        r[0]
    );
    assert_eq!(r[1].status, "timeout");
    assert!(matches!(r[1].error, Some(Error::Timeout { .. })));
    assert_eq!((r[2].listed, r[2].kept, r[2].duplicates), (2, 1, 1));
    assert!(matches!(r[3].error, Some(Error::Resolve { .. })));
    // Every master down: still a list (empty) with every report, not an error.
    let list = client
        .master_list(&q3, [down.addr.to_string()])
        .await
        .unwrap();
    assert!(list.is_empty() && !list.any_online());
    // No master given to a game without a catalogue is an error (q3's would ask its public
    // masters: tests/catalogue.rs points them at loopback).
    let oob = fragstat::game("oob:43").unwrap();
    let e = client
        .master_list(&oob, Vec::<String>::new())
        .await
        .unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)));
}

/// The scan starts on a master list while it is still arriving: servers of the first
/// master's list are answered before a slow second master has answered at all.
#[tokio::test(flavor = "multi_thread")]
async fn a_scan_takes_servers_while_lists_arrive() {
    let q3 = fragstat::game("q3").unwrap();
    let farm = support::farm(&q3, 4, 1, &[]);
    let client = fast().build().unwrap();
    let (tx, rx) = tokio::sync::mpsc::channel::<SocketAddr>(8);
    let mut scan = client
        .scan_stream(&q3, tokio_stream(rx))
        .players()
        .indexed();
    tx.send(farm.servers[0]).await.unwrap();
    tx.send(farm.servers[1]).await.unwrap();
    // Two answers come while the sender still holds the rest.
    let mut first = Vec::new();
    for _ in 0..2 {
        let item = scan.next().await.unwrap();
        assert!(item.result.is_ok());
        first.push(item.addr);
    }
    first.sort();
    assert_eq!(
        first,
        vec![farm.servers[0], farm.servers[1]]
            .into_iter()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
    );
    tx.send(farm.servers[2]).await.unwrap();
    tx.send(farm.servers[2]).await.unwrap(); // a duplicate: asked once
    tx.send(farm.servers[3]).await.unwrap();
    drop(tx);
    let mut rest = Vec::new();
    while let Some(item) = scan.next().await {
        assert_eq!(item.game.id(), "q3");
        rest.push((item.index, item.addr));
    }
    rest.sort();
    assert_eq!(rest, vec![(2, farm.servers[2]), (3, farm.servers[3])]);
}

/// A `Stream` over a tokio receiver (no tokio-stream dependency for one test).
fn tokio_stream(
    mut rx: tokio::sync::mpsc::Receiver<SocketAddr>,
) -> impl futures_util::Stream<Item = SocketAddr> + Send + 'static {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// Backpressure: a reader that stops holds the scan — a bounded number of queries sent
/// while 100,000 addresses wait — and the scan finishes when it reads again.
#[tokio::test(start_paused = true)]
async fn a_reader_that_stops_holds_the_scan_still() {
    let net = SimNet::new(Faults::default(), 1);
    let client = Client::builder()
        .transports(Some(net.clone() as Arc<dyn Transport>), None)
        .timeout(Duration::from_millis(100))
        .retries(0)
        .concurrency(256)
        .build()
        .unwrap();
    let q3 = fragstat::game("q3").unwrap();
    let addrs: Vec<SocketAddr> = (0..100_000u32)
        .map(|i| SocketAddr::from(([10, (i >> 16) as u8, (i >> 8) as u8, i as u8], 27960)))
        .collect();
    let mut scan = client.scan(&q3, addrs);
    // Start it, take one result, then stop reading for a (virtual) hour.
    let first = scan.next().await.unwrap();
    assert!(first.1.unwrap_err().is_timeout());
    tokio::time::sleep(Duration::from_secs(3600)).await;
    let sent = net.sent().len();
    let bound = fragstat::core::OUTCOME_QUEUE + 2 * 256 + 1;
    assert!(
        sent <= bound,
        "{sent} queries sent while nobody read (bound {bound})"
    );
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(net.sent().len(), sent, "nothing more while unread");
    let mut n = 1;
    while let Some((_, r)) = scan.next().await {
        assert!(r.unwrap_err().is_timeout());
        n += 1;
    }
    assert_eq!(n, 100_000);
}

/// `rate` is kept: 3,000 servers at 5,000 datagrams/s take 0.6 s (within 10 %).
#[tokio::test(start_paused = true)]
async fn the_rate_is_kept() {
    let net = SimNet::new(Faults::default(), 1);
    let client = Client::builder()
        .transports(Some(net.clone() as Arc<dyn Transport>), None)
        .timeout(Duration::from_millis(100))
        .retries(0)
        .rate(Some(5000))
        .build()
        .unwrap();
    let q3 = fragstat::game("q3").unwrap();
    let addrs: Vec<SocketAddr> = (0..3000u16)
        .map(|i| SocketAddr::from(([192, 0, 2, 1], 1000 + i)))
        .collect();
    let n = client.scan(&q3, addrs).count().await;
    assert_eq!(n, 3000);
    let sent = net.sent();
    let span = (sent.last().unwrap().at - sent[0].at).as_secs_f64();
    assert!(
        (span - 0.6).abs() <= 0.06,
        "3,000 at 5,000/s took {span:.3} s"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_port_per_scan_when_asked() {
    let q3 = fragstat::game("q3").unwrap();
    let farm = support::farm(&q3, 1, 0, &[]);
    let renewing = fast().new_port_per_scan(true).build().unwrap();
    let fixed = fast().build().unwrap();
    let mut ports = Vec::new();
    for client in [&renewing, &fixed] {
        let mut seen = Vec::new();
        for _ in 0..3 {
            let n = client.scan(&q3, [farm.servers[0]]).count().await;
            assert_eq!(n, 1);
            seen.push(client.local_addrs()[0].port());
        }
        ports.push(seen);
    }
    assert!(
        ports[0][0] != ports[0][1] && ports[0][1] != ports[0][2],
        "a new port each scan: {:?}",
        ports[0]
    );
    assert!(ports[1].iter().all(|p| *p == ports[1][0]), "{:?}", ports[1]);
}

#[tokio::test(flavor = "multi_thread")]
async fn http_lists_are_fetched_bounded_and_never_redirected() {
    let ddnet = fragstat::game("ddnet").unwrap();
    let listed: Vec<SilentUdp> = (0..3).map(|_| SilentUdp::v4()).collect();
    let addrs: Vec<SocketAddr> = listed.iter().map(|s| s.addr).collect();
    let http = support::Http::serve("/ddnet/15/servers.json", support::servers_json(&addrs)).await;
    let client = fast().build().unwrap();
    // A URL, and HOST:PORT for the standard path (plain http here: the URL's scheme is
    // the standard list's, so the full URL is given for http).
    let list = client
        .master_list(&ddnet, [http.url("/ddnet/15/servers.json")])
        .await
        .unwrap();
    assert_eq!(list.servers().collect::<Vec<_>>(), addrs);
    let entry = &list.entries()[0].entry;
    assert_eq!(entry.info.as_ref().unwrap().name.to_string(), "listed 0");
    assert_eq!(entry.addresses.len(), 2);
    assert!(list.reports()[0].rtt.is_some());
    // A redirect is not followed; a 404 names its status; a body over the cap stops.
    for (path, check) in [("/moved", "redirected"), ("/nothing", "404")] {
        let list = client.master_list(&ddnet, [http.url(path)]).await.unwrap();
        let e = list.reports()[0].error.as_ref().unwrap();
        assert!(matches!(e, Error::Http { .. }), "{e:?}");
        assert!(e.to_string().contains(check), "{e}");
    }
    let big = support::Http::serve("/big.json", vec![b' '; 17 << 20]).await;
    let list = client
        .master_list(&ddnet, [big.url("/big.json")])
        .await
        .unwrap();
    assert!(
        matches!(
            list.reports()[0].error,
            Some(Error::Exceeded(fragstat::Limit {
                kind: LimitKind::HttpBody,
                ..
            }))
        ),
        "{:?}",
        list.reports()[0].error
    );
    // A UDP game's master given a URL, and an HTTP game given nothing usable.
    let e = client.master_list(&ddnet, ["ftp://x/y"]).await.unwrap();
    assert!(e.reports()[0].error.is_some());
}
