//! The tracker's events: a server that goes silent and comes back with another map, seen by
//! an `/api/events` client (Server-Sent Events over real HTTP) and by local webhook
//! receivers (JSON and Discord form); a round that lost a server's player list loses no
//! join or leave; a receiver that fails first gets the retry, one that refuses (400, 404)
//! does not; one that never answers delays no round; the limits flooded (the SSE client
//! cap in all and per host, a lagging client, a full webhook queue).
//!
//! The emulated server runs in this process on a socket the test keeps; it is "stopped" by
//! not answering. Rounds are run by the test (`Tracker::round`), so nothing depends on timing.

mod support;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use fragstat::core::service::Service;
use fragstat_tracker::config::{Config, Source, WebhookFormat};
use fragstat_tracker::Tracker;
use serde_json::Value;
use support::switch::Server;
use support::{kinds, Sse};
use tokio::sync::{mpsc, watch};

/// Generous: the point where a test gives up, not how long things take.
const SETTLE: Duration = Duration::from_secs(60);

/// The test's emulated Quake III server on `map` with `players` players.
fn emulated(map: &str, players: usize) -> Box<dyn Service> {
    support::switch::emulated("^2events", map, players)
}

/// A server on a socket kept for the test ([`support::switch::Server`]), named as
/// [`emulated`] names it.
fn start(map: &str, players: usize) -> Server {
    Server::start("^2events", map, players)
}

fn config(dir: &tempfile::TempDir, server: SocketAddr) -> Config {
    let mut c = Config {
        database: dir.path().join("t.db").display().to_string(),
        listen: "127.0.0.1:0".parse().unwrap(),
        interval_secs: 0.2,
        retention_hours: 0.0,
        timeout_ms: 100,
        retries: 1,
        ..Config::default()
    };
    c.sources.push(Source {
        game: "q3".into(),
        masters: Vec::new(),
        servers: vec![server.to_string()],
        ext: false,
    });
    c
}

/// A webhook receiver on a listener the test keeps: every request's body, answered with
/// the scripted statuses (then 200).
struct Receiver {
    url: String,
    bodies: mpsc::UnboundedReceiver<(Instant, Value)>,
    _stop: watch::Sender<bool>,
}

async fn receiver(script: Vec<(u16, Option<&'static str>)>) -> Receiver {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (tx, bodies) = mpsc::unbounded_channel();
    let script = Arc::new(Mutex::new(VecDeque::from(script)));
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: String| {
            let tx = tx.clone();
            let script = script.clone();
            async move {
                let _ = tx.send((
                    Instant::now(),
                    serde_json::from_str(&body).expect("JSON body"),
                ));
                let (status, retry) = script.lock().unwrap().pop_front().unwrap_or((200, None));
                let mut r = axum::response::IntoResponse::into_response(
                    StatusCode::from_u16(status).unwrap(),
                );
                if let Some(v) = retry {
                    r.headers_mut()
                        .insert("retry-after", axum::http::HeaderValue::from_static(v));
                }
                r
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
    Receiver {
        url,
        bodies,
        _stop: stop,
    }
}

impl Receiver {
    async fn next(&mut self) -> (Instant, Value) {
        tokio::time::timeout(SETTLE, self.bodies.recv())
            .await
            .expect("a webhook POST in time")
            .expect("receiver running")
    }
}

/// A web server for `tracker` on a listener the test keeps.
async fn web(tracker: &Tracker) -> (String, watch::Sender<bool>) {
    let support::Web {
        base,
        stop,
        task: _,
    } = support::serve(tracker.state()).await;
    (base, stop)
}

fn metric(tracker: &Tracker, name: &str) -> f64 {
    let text = tracker.metrics().encode();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("fragstat_tracker_{name} ")))
        .unwrap_or_else(|| panic!("{name} in\n{text}"))
        .parse()
        .unwrap()
}

/// Waits (with a deadline) until the metric reaches `want`: a receiver has a POST before the
/// sender has read its answer.
async fn wait_metric(tracker: &Tracker, name: &str, want: f64) {
    tokio::time::timeout(SETTLE, async {
        while metric(tracker, name) < want {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{name} reaching {want}"));
}

#[tokio::test]
async fn silent_server_and_new_map_reach_sse_clients_and_webhooks() {
    let server = start("q3dm6", 2);
    let dir = tempfile::tempdir().unwrap();
    let mut json_hook = receiver(Vec::new()).await;
    let mut c = config(&dir, server.addr);
    c.webhook = Some(json_hook.url.clone());
    let tracker = Tracker::open(c).await.unwrap();
    let (base, _web) = web(&tracker).await;
    // A second tracker posting Discord's form (its own database).
    let dir2 = tempfile::tempdir().unwrap();
    let mut discord_hook = receiver(Vec::new()).await;
    let mut c = config(&dir2, server.addr);
    c.webhook = Some(discord_hook.url.clone());
    c.webhook_format = WebhookFormat::Discord;
    let discord = Tracker::open(c).await.unwrap();

    // The first round is the baseline.
    tracker.round().await.unwrap();
    discord.round().await.unwrap();
    let mut all = Sse::open(&format!("{base}/api/events")).await;
    let mut maps = Sse::open(&format!(
        "{base}/api/events?kind=map_changed&server={}&game=q3",
        server.addr
    ))
    .await;

    // Silent.
    server.set(None);
    tracker.round().await.unwrap();
    discord.round().await.unwrap();
    let down = all.take(1).await;
    assert_eq!(kinds(&down), ["server_down"]);
    assert_eq!(down[0]["server"], server.addr.to_string());
    assert_eq!(down[0]["status"], "timeout");
    let (_, batch) = json_hook.next().await;
    assert_eq!(kinds(batch["events"].as_array().unwrap()), ["server_down"]);
    assert_eq!(batch["omitted"], 0);
    let (_, d) = discord_hook.next().await;
    assert_eq!(d["content"], "1 event from 1 server");
    assert!(
        d["embeds"][0]["description"]
            .as_str()
            .unwrap()
            .starts_with("down (timeout)"),
        "{d}"
    );

    // Back, with another map and one more player.
    server.set(Some(emulated("q3dm17", 3)));
    tracker.round().await.unwrap();
    discord.round().await.unwrap();
    let up = all.take(3).await;
    assert_eq!(kinds(&up), ["server_up", "map_changed", "player_joined"]);
    assert_eq!(up[0]["name_raw"], "^2events");
    assert_eq!(up[1]["from"], "q3dm6");
    assert_eq!(up[1]["to"], "q3dm17");
    // The filtered client sees the map change only.
    let only = maps.take(1).await;
    assert_eq!(kinds(&only), ["map_changed"]);
    let (_, batch) = json_hook.next().await;
    assert_eq!(
        kinds(batch["events"].as_array().unwrap()),
        ["server_up", "map_changed", "player_joined"]
    );
    let (_, d) = discord_hook.next().await;
    let embed = &d["embeds"][0];
    assert!(embed["title"].as_str().unwrap().contains("events"), "{d}");
    assert_eq!(
        embed["description"].as_str().unwrap().lines().count(),
        3,
        "{d}"
    );
    wait_metric(&tracker, "webhook_posts_total", 2.0).await;
    wait_metric(&discord, "webhook_posts_total", 2.0).await;
    assert!(tracker
        .metrics()
        .encode()
        .contains("fragstat_tracker_events_total{kind=\"map_changed\"} 1"));

    // An unknown kind is refused.
    let r = reqwest::get(format!("{base}/api/events?kind=nope"))
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
}

#[tokio::test]
async fn failing_receiver_gets_the_retry_after_backoff_and_retry_after() {
    let server = start("q3dm6", 1);
    let dir = tempfile::tempdir().unwrap();
    let mut hook = receiver(vec![(500, None), (429, Some("0"))]).await;
    let mut c = config(&dir, server.addr);
    c.webhook = Some(hook.url.clone());
    let tracker = Tracker::open(c).await.unwrap();
    tracker.round().await.unwrap();
    server.set(None);
    tracker.round().await.unwrap();
    let (t500, first) = hook.next().await;
    let (t429, second) = hook.next().await;
    let (_, third) = hook.next().await;
    assert_eq!(first, second);
    assert_eq!(second, third);
    // The first retry waited its backoff (1 s); after the 429 its Retry-After (0 s).
    assert!(
        t429 - t500 >= Duration::from_millis(900),
        "{:?}",
        t429 - t500
    );
    wait_metric(&tracker, "webhook_posts_total", 1.0).await;
    assert_eq!(metric(&tracker, "webhook_failures_total"), 2.0);
    assert_eq!(metric(&tracker, "webhook_dropped_total"), 0.0);
}

/// A round that lost a server's player list (its `getinfo` answered, its `getstatus` not)
/// makes no player events, and the next round's list is compared with the last known one:
/// exactly the one who left and the one who joined meanwhile.
#[tokio::test]
async fn a_round_without_the_player_list_loses_no_join_and_makes_none_up() {
    let dir = tempfile::tempdir().unwrap();
    let tracker = Tracker::open(config(&dir, "127.0.0.1:1".parse().unwrap()))
        .await
        .unwrap();
    let record = |players: Option<&[&str]>, num_players: u32| {
        let mut info = fragstat::ServerInfo::default();
        info.num_players = num_players;
        info.players = players.map(|ps| {
            ps.iter()
                .map(|p| {
                    fragstat::Player::new(fragstat::Text::new(
                        *p,
                        fragstat::core::model::Dialect::Quake,
                    ))
                })
                .collect()
        });
        fragstat::Record::online(Some("127.0.0.2:27960".into()), "q3", info, None)
    };
    let round = |at: i64, r: fragstat::Record| {
        tracker
            .events()
            .round(&fragstat_tracker::round::RoundReport {
                data: fragstat_tracker::store::RoundData {
                    at,
                    finished: at,
                    records: vec![r],
                    ..Default::default()
                },
                masters: Vec::new(),
                elapsed: Duration::ZERO,
                write: Duration::ZERO,
                players: None,
            })
    };
    let mut seen = tracker.events().hub().subscribe();
    assert_eq!(round(1, record(Some(&["a", "b"]), 2)), 0, "the baseline");
    assert_eq!(round(2, record(None, 2)), 0, "no list: no player events");
    assert_eq!(round(3, record(Some(&["a", "c"]), 2)), 2);
    let mut got = Vec::new();
    while let Ok(p) = seen.try_recv() {
        got.push((
            p.event.kind.name(),
            serde_json::to_value(&p.event).unwrap()["name"].clone(),
        ));
    }
    assert_eq!(
        got,
        [("player_left", "b".into()), ("player_joined", "c".into())]
    );
}

/// A 400 and a 404 are not retried: each batch is dropped at once (counted), and the
/// receiver's next POST is already the next round's batch.
#[tokio::test]
async fn other_4xx_drops_the_batch_at_once() {
    let server = start("m0", 0);
    let dir = tempfile::tempdir().unwrap();
    let mut hook = receiver(vec![(400, None), (404, None)]).await;
    let mut c = config(&dir, server.addr);
    c.webhook = Some(hook.url.clone());
    c.webhook_tries = 5;
    let tracker = Tracker::open(c).await.unwrap();
    tracker.round().await.unwrap(); // the baseline
                                    // Three rounds, three batches (m1, m2, m3), queued one after the other.
    for map in ["m1", "m2", "m3"] {
        server.set(Some(emulated(map, 0)));
        tracker.round().await.unwrap();
    }
    for want in ["m1", "m2", "m3"] {
        let (_, batch) = hook.next().await;
        let events = batch["events"].as_array().unwrap();
        assert_eq!(kinds(events), ["map_changed"], "{batch}");
        assert_eq!(events[0]["to"], want, "a refused batch sent again: {batch}");
    }
    wait_metric(&tracker, "webhook_posts_total", 1.0).await;
    assert_eq!(metric(&tracker, "webhook_failures_total"), 2.0);
    assert_eq!(metric(&tracker, "webhook_dropped_total"), 2.0);
    assert_eq!(metric(&tracker, "webhook_queue_dropped_total"), 0.0);
}

/// A receiver that accepts and never answers: rounds go on (each returns long before the
/// request's timeout), and the full queue drops its oldest batches, counted.
#[tokio::test]
async fn silent_receiver_delays_no_round_and_a_full_queue_drops_the_oldest() {
    let server = start("m0", 0);
    let dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (conn_tx, mut conns) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            // Held, never read from or answered.
            let _ = conn_tx.send(s);
        }
    });
    let mut c = config(&dir, server.addr);
    c.webhook = Some(url);
    c.webhook_timeout_ms = 600_000;
    c.webhook_queue = 2;
    let tracker = Tracker::open(c).await.unwrap();
    tracker.round().await.unwrap();
    let mut map = 0;
    let mut round = || {
        map += 1;
        server.set(Some(emulated(&format!("m{map}"), 0)));
        tokio::time::timeout(Duration::from_secs(30), tracker.round())
    };
    // The first batch: the sender connects and waits (up to ten minutes) for an answer.
    round()
        .await
        .expect("a round does not wait on the webhook")
        .unwrap();
    let _held = tokio::time::timeout(SETTLE, conns.recv())
        .await
        .expect("the sender connected");
    // Four more batches: two fit in the queue, the two oldest of them are dropped.
    for _ in 0..4 {
        round()
            .await
            .expect("a round does not wait on the webhook")
            .unwrap();
    }
    assert_eq!(metric(&tracker, "webhook_queue_dropped_total"), 2.0);
    assert_eq!(metric(&tracker, "webhook_posts_total"), 0.0);
    assert_eq!(metric(&tracker, "rounds_total"), 6.0);
}

#[tokio::test]
async fn sse_clients_are_capped_and_a_lagging_client_is_told() {
    let server = start("q3dm6", 0);
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&dir, server.addr);
    c.sse_max_clients = 2;
    c.web.sse_max_per_host = 16;
    let tracker = Tracker::open(c).await.unwrap();
    let (base, _web) = web(&tracker).await;
    let url = format!("{base}/api/events");
    let mut a = Sse::open(&url).await;
    let b = Sse::open(&url).await;
    // Over the cap: 503, as often as asked.
    for _ in 0..20 {
        let r = reqwest::get(&url).await.unwrap();
        assert_eq!(r.status(), 503);
        assert_eq!(r.headers()["retry-after"], "30");
    }
    assert_eq!(metric(&tracker, "sse_refused_total"), 20.0);
    assert_eq!(metric(&tracker, "sse_clients"), 2.0);

    // A flood of events (50 servers × 1,024 players joining) in one go: far more than the
    // buffer. Client `a` has read nothing meanwhile: it is told how many it missed, then
    // goes on.
    let records: Vec<fragstat::Record> = (0..50)
        .map(|s| {
            let mut info = fragstat::ServerInfo::default();
            info.players = Some(
                (0..2000)
                    .map(|i| {
                        fragstat::Player::new(fragstat::Text::new(
                            format!("p{i}"),
                            fragstat::core::model::Dialect::Quake,
                        ))
                    })
                    .collect(),
            );
            fragstat::Record::online(Some(format!("127.0.0.2:{}", 1000 + s)), "q3", info, None)
        })
        .collect();
    let report = |at| fragstat_tracker::round::RoundReport {
        data: fragstat_tracker::store::RoundData {
            at,
            finished: at,
            records: records.clone(),
            ..Default::default()
        },
        masters: Vec::new(),
        elapsed: Duration::ZERO,
        write: Duration::ZERO,
        players: None,
    };
    tracker.events().round(&report(1)); // the baseline
                                        // The flood: as many servers again, first seen now (each up, each player joined).
    let records2: Vec<fragstat::Record> = records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut r = r.clone();
            r.address = Some(format!("127.0.0.3:{}", 1000 + i));
            r
        })
        .collect();
    let n = tracker
        .events()
        .round(&fragstat_tracker::round::RoundReport {
            data: fragstat_tracker::store::RoundData {
                at: 3,
                finished: 3,
                records: records2,
                ..Default::default()
            },
            masters: Vec::new(),
            elapsed: Duration::ZERO,
            write: Duration::ZERO,
            players: None,
        });
    assert_eq!(
        n,
        50 * (1 + 1024),
        "players tracked are capped at 1,024 a server"
    );
    let (kind, data) = a.next().await;
    assert_eq!(kind, "lagged", "{data}");
    let missed: Value = serde_json::from_str(&data).unwrap();
    assert!(
        missed["missed"].as_u64().unwrap() >= (n - fragstat_tracker::events::SSE_BUFFER) as u64
    );
    let (kind, _) = a.next().await;
    assert!(kind == "server_up" || kind == "player_joined", "{kind}");
    assert!(metric(&tracker, "sse_lagged_events_total") > 0.0);

    // A client gone gives its place back (noticed on the next write).
    drop(b);
    tokio::time::timeout(SETTLE, async {
        loop {
            let r = reqwest::get(&url).await.unwrap();
            if r.status() == 200 {
                return;
            }
            // Writes to the gone client's connection make the server notice.
            server.set(None);
            tracker.round().await.unwrap();
            server.set(Some(emulated("q3dm6", 0)));
            tracker.round().await.unwrap();
        }
    })
    .await
    .expect("a place again");
}

/// M7: four hosts each try to hold 16 of the 64 `/api/events` streams; each gets its share
/// (2), and a fifth host still gets a stream.
#[tokio::test]
async fn four_hosts_cannot_hold_every_sse_stream() {
    let server = start("q3dm6", 0);
    let dir = tempfile::tempdir().unwrap();
    let c = config(&dir, server.addr);
    assert_eq!(c.sse_max_clients, 64);
    let tracker = Tracker::open(c).await.unwrap();
    let (base, _web) = web(&tracker).await;
    let url = format!("{base}/api/events");
    let from = |ip: [u8; 4]| {
        reqwest::Client::builder()
            .local_address(Some(std::net::IpAddr::from(ip)))
            .build()
            .unwrap()
    };
    let mut held = Vec::new();
    let mut refused = 0;
    for host in 0..4u8 {
        // Hosts of four /16s: only the per-host cap stands in their way.
        let client = from([127, 11 + host, 0, 1]);
        for _ in 0..16 {
            let r = client.get(&url).send().await.unwrap();
            match r.status() {
                StatusCode::OK => held.push(r),
                StatusCode::SERVICE_UNAVAILABLE => refused += 1,
                other => panic!("{other}"),
            }
        }
    }
    eprintln!("4 hosts × 16: {} held, {refused} refused", held.len());
    assert!(held.len() <= 8, "{} streams held by 4 hosts", held.len());
    let fifth = from([127, 15, 0, 1]).get(&url).send().await.unwrap();
    assert_eq!(fifth.status(), StatusCode::OK);
    assert_eq!(
        metric(&tracker, "sse_refused_per_host_total"),
        f64::from(refused)
    );
}
