//! M8 (security review 2026-11-b): the webhook's queue is bounded in bytes, not only in
//! batches. A slow receiver (it holds every POST until the test lets it answer) and churning
//! rounds (five servers showing 1,024 new long-named players every round: ~10,000 events a
//! round): each queued batch keeps at most `WEBHOOK_MAX_EVENTS` events (the rest counted in
//! `omitted`), the queue never holds more than `WEBHOOK_QUEUE_BYTES` (the oldest batches
//! dropped, counted in /metrics), and once the receiver answers, a legitimate round after
//! the flood is delivered whole.

use std::sync::Arc;
use std::time::Duration;

use fragstat::core::model::Dialect;
use fragstat_tracker::config::{Config, Source};
use fragstat_tracker::events::{WEBHOOK_MAX_EVENTS, WEBHOOK_QUEUE_BYTES};
use fragstat_tracker::round::RoundReport;
use fragstat_tracker::store::RoundData;
use fragstat_tracker::Tracker;
use serde_json::Value;
use tokio::sync::{mpsc, watch, Semaphore};

/// Generous: the point where a test gives up, not how long things take.
const SETTLE: Duration = Duration::from_secs(60);

fn metric(tracker: &Tracker, name: &str) -> f64 {
    let text = tracker.metrics().encode();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("fragstat_tracker_{name} ")))
        .unwrap_or_else(|| panic!("{name} in\n{text}"))
        .parse()
        .unwrap()
}

/// A receiver that answers 200 to one POST per permit the test adds; every body it got.
async fn slow_receiver() -> (
    String,
    Arc<Semaphore>,
    mpsc::UnboundedReceiver<Value>,
    watch::Sender<bool>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let permits = Arc::new(Semaphore::new(0));
    let (tx, bodies) = mpsc::unbounded_channel();
    let gate = permits.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: String| {
            let (tx, gate) = (tx.clone(), gate.clone());
            async move {
                if let Ok(p) = gate.acquire().await {
                    p.forget();
                }
                let _ = tx.send(serde_json::from_str::<Value>(&body).expect("JSON body"));
                axum::http::StatusCode::OK
            }
        }),
    );
    let (stop, mut rx) = watch::channel(false);
    tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = rx.wait_for(|s| *s).await;
            })
            .await
            .unwrap();
    });
    (url, permits, bodies, stop)
}

/// Five servers, each with 1,024 players named for `round` (200-byte names).
fn churn(round: usize) -> Vec<fragstat::Record> {
    (0..5)
        .map(|s| {
            let mut info = fragstat::ServerInfo::default();
            info.players = Some(
                (0..1024)
                    .map(|i| {
                        let name = format!("{round:04}-{i:04}-{}", "x".repeat(190));
                        fragstat::Player::new(fragstat::Text::new(name, Dialect::Quake))
                    })
                    .collect(),
            );
            fragstat::Record::online(Some(format!("127.0.0.2:{}", 1000 + s)), "q3", info, None)
        })
        .collect()
}

fn report(at: i64, records: Vec<fragstat::Record>) -> RoundReport {
    RoundReport {
        data: RoundData {
            at,
            finished: at,
            records,
            ..Default::default()
        },
        masters: Vec::new(),
        elapsed: Duration::ZERO,
        write: Duration::ZERO,
        players: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_receiver_and_churning_rounds_hold_the_queue_to_its_bytes() {
    let (url, permits, mut bodies, _stop) = slow_receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let mut c = Config {
        database: dir.path().join("t.db").display().to_string(),
        listen: "127.0.0.1:0".parse().unwrap(),
        webhook: Some(url),
        webhook_timeout_ms: 600_000,
        ..Config::default()
    };
    c.sources.push(Source {
        game: "q3".into(),
        masters: Vec::new(),
        servers: vec!["127.0.0.1:9".into()],
        ext: false,
    });
    let tracker = Tracker::open(c).await.unwrap();
    let events = tracker.events();
    events.round(&report(1, churn(0))); // the baseline: no events
    let mut sent = 0;
    let mut peak = 0.0f64;
    for round in 1..=60 {
        sent += events.round(&report(1 + round as i64, churn(round)));
        let bytes = metric(&tracker, "webhook_queue_bytes");
        assert!(
            bytes <= WEBHOOK_QUEUE_BYTES as f64,
            "round {round}: {bytes}"
        );
        peak = peak.max(bytes);
    }
    assert!(sent >= 60 * 10_000, "{sent} events");
    let dropped = metric(&tracker, "webhook_queue_dropped_total");
    assert!(
        dropped >= 30.0,
        "the oldest batches dropped and counted: {dropped}"
    );
    eprintln!("{sent} events in 60 rounds; queue peak {peak} bytes, {dropped} batches dropped");

    // A legitimate round: the churning servers unchanged, one new server with two players
    // (3 events). The receiver now answers every POST: each carries at most
    // WEBHOOK_MAX_EVENTS events, and the last is the new round, whole.
    let mut legit = fragstat::ServerInfo::default();
    legit.players = Some(vec![
        fragstat::Player::new(fragstat::Text::new("alice", Dialect::Quake)),
        fragstat::Player::new(fragstat::Text::new("bob", Dialect::Quake)),
    ]);
    let mut records = churn(60);
    records.push(fragstat::Record::online(
        Some("127.0.0.3:27960".into()),
        "q3",
        legit,
        None,
    ));
    assert_eq!(events.round(&report(100, records)), 3);
    permits.add_permits(1_000);
    let last = tokio::time::timeout(SETTLE, async {
        loop {
            let body = bodies.recv().await.expect("receiver running");
            let n = body["events"].as_array().unwrap().len();
            assert!(n <= WEBHOOK_MAX_EVENTS, "{n}");
            if n == WEBHOOK_MAX_EVENTS {
                assert!(
                    body["omitted"].as_u64().unwrap() >= 9_000,
                    "{}",
                    body["omitted"]
                );
            }
            if body["at"] == 100 {
                return body;
            }
        }
    })
    .await
    .expect("the newest round delivered");
    let servers: Vec<&str> = last["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["server"].as_str())
        .collect();
    assert_eq!(servers, ["127.0.0.3:27960"; 3], "{last}");
    assert_eq!(last["omitted"], 0);
}

/// A webhook URL the configuration refuses is not repeated in the error (it may hold the
/// token); the error still says what is wrong.
#[test]
fn a_refused_webhook_url_is_not_repeated() {
    for url in [
        "htps://discord.com/api/webhooks/123456/SECRET-TOKEN-abc",
        "ftp://127.0.0.1/api/webhooks/123456/SECRET-TOKEN-abc",
        "SECRET-TOKEN-abc",
    ] {
        let text = format!("database = \"x.db\"\nwebhook = {url:?}\n[[source]]\ngame = \"q3\"\nservers = [\"127.0.0.1:9\"]\n");
        let e = Config::parse(&text)
            .and_then(|c| c.check().map(|()| c))
            .expect_err(url)
            .to_string();
        assert!(e.contains("webhook is not an http"), "{e}");
        assert!(!e.contains("SECRET"), "{e}");
    }
}
