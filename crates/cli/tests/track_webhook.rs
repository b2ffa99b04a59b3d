//! `fragstat track --webhook URL` (and `--webhook-format discord`): the binary's rounds see a
//! server change its map and gain a player, and the flags' receivers get that round's events
//! in their form.
//!
//! The emulated server and the receivers run in this process, each on a socket bound on port
//! 0 and kept for the whole test (127.0.0.1 only). The first round is the baseline and an
//! unchanged round posts nothing, so the POSTs the receivers get are the change's, whenever
//! the trackers' rounds fall; they are waited for with a deadline.

use std::net::SocketAddr;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Instant;

use fragstat::core::registry::EmuServer;
use fragstat::core::service::{Outbox, Service};
use fragstat::core::{Transport, UdpTransport};
use fragstat_testkit::wait::SETTLE;
use serde_json::Value;

mod support;
use support::Running;

type Current = Arc<Mutex<Box<dyn Service>>>;

/// Answers as the emulated server `current` holds now.
struct Switch(Current);

impl Service for Switch {
    fn handle(&mut self, now: Instant, from: SocketAddr, datagram: &[u8], out: &mut Outbox) {
        self.0.lock().unwrap().handle(now, from, datagram, out);
    }
}

fn emulated(map: &str, players: usize) -> Box<dyn Service> {
    fragstat::game("q3")
        .unwrap()
        .emulator()
        .expect("built with emulators")
        .emulated_server(&EmuServer::new(b"^6hooked".to_vec(), map, players).with_seed(5))
        .unwrap()
}

/// A POST a receiver got: its path, content type and body.
type Post = (String, String, Value);

/// A receiver on a listener bound to 127.0.0.1:0 and kept: every POST, answered 204.
async fn receiver(tx: mpsc::Sender<Post>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
        let tx = tx.clone();
        async move {
            let path = req.uri().path().to_string();
            let ct = req
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string();
            let post = req.method() == axum::http::Method::POST;
            let body = axum::body::to_bytes(req.into_body(), 1 << 20)
                .await
                .unwrap();
            let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
            if post {
                let _ = tx.send((path, ct, body));
            }
            axum::http::StatusCode::NO_CONTENT
        }
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

/// The emulated server the trackers poll, on `rt`: what it serves now (to be switched), and
/// its address.
fn hooked_server(rt: &tokio::runtime::Runtime) -> (Current, String) {
    let current: Current = Arc::new(Mutex::new(emulated("q3dm6", 1)));
    let socket: Arc<dyn Transport> = {
        let _g = rt.enter();
        Arc::new(UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap())
    };
    let server = socket.local_addr().unwrap().to_string();
    rt.spawn(fragstat::core::serve::run(
        socket,
        Switch(current.clone()),
        std::future::pending(),
    ));
    (current, server)
}

fn track(dir: &tempfile::TempDir, server: &str, hook: &str, extra: &[&str]) -> Running {
    let db = dir.path().join("track.db");
    let mut args = vec![
        "track",
        "--game",
        "q3",
        "--server",
        server,
        "--db",
        db.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--interval-secs",
        "0.2",
        "--timeout-ms",
        "1000",
        "--retries",
        "2",
        "--webhook",
        hook,
    ];
    args.extend_from_slice(extra);
    Running::start(&args, &[])
}

#[test]
fn track_webhook_flags_post_a_rounds_events_to_the_receiver() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (current, server) = hooked_server(&rt);
    let (tx, posts) = mpsc::channel::<Post>();
    let hook = rt.block_on(receiver(tx));

    let dir = tempfile::tempdir().unwrap();
    let dir2 = tempfile::tempdir().unwrap();
    let mut json = track(&dir, &server, &format!("http://{hook}/json"), &[]);
    let mut discord = track(
        &dir2,
        &server,
        &format!("http://{hook}/discord"),
        &["--webhook-format", "discord"],
    );
    // Each tracker's first round (the baseline) is done.
    for t in [&mut json, &mut discord] {
        t.wait_line("a round", |l| l.starts_with("round "));
    }

    // Another map and one more player: the next round's events go to the receivers. A round
    // asks getinfo and getstatus; one whose two answers straddle the change sees half of it
    // (the rest comes with the next round), so the POSTs are read until both events came.
    *current.lock().unwrap() = emulated("q3dm17", 2);
    let mut json_events: Vec<Value> = Vec::new();
    let mut discord_posts: Vec<Value> = Vec::new();
    let lines = |posts: &[Value]| -> Vec<String> {
        posts
            .iter()
            .flat_map(|d| d["embeds"].as_array().unwrap().iter())
            .flat_map(|e| e["description"].as_str().unwrap().lines())
            .map(String::from)
            .collect()
    };
    while json_events.len() < 2 || lines(&discord_posts).len() < 2 {
        let (path, content_type, body) = posts.recv_timeout(SETTLE).unwrap_or_else(|_| {
            panic!("webhook POSTs in time; got {json_events:?}, {discord_posts:?}")
        });
        assert_eq!(content_type, "application/json");
        match path.as_str() {
            "/json" => {
                assert_eq!(body["omitted"], 0, "{body}");
                for e in body["events"].as_array().unwrap() {
                    assert_eq!(e["at"], body["at"], "{body}");
                    json_events.push(e.clone());
                }
            }
            "/discord" => {
                assert_eq!(body["allowed_mentions"]["parse"], serde_json::json!([]));
                let embeds = body["embeds"].as_array().unwrap();
                assert_eq!(embeds.len(), 1, "one server: {body}");
                assert!(
                    embeds[0]["title"].as_str().unwrap().contains(&server),
                    "{body}"
                );
                discord_posts.push(body);
            }
            other => panic!("a POST to {other}"),
        }
    }

    // JSON: the events with their keys.
    let mut kinds: Vec<&str> = json_events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    kinds.sort_unstable();
    assert_eq!(kinds, ["map_changed", "player_joined"], "{json_events:#?}");
    let changed = json_events
        .iter()
        .find(|e| e["event"] == "map_changed")
        .unwrap();
    assert_eq!(changed["server"], server.as_str());
    assert_eq!(changed["game"], "q3");
    assert_eq!(changed["from"], "q3dm6");
    assert_eq!(changed["to"], "q3dm17");
    let joined = json_events
        .iter()
        .find(|e| e["event"] == "player_joined")
        .unwrap();
    assert!(joined["name_raw"].is_string(), "{joined}");

    // Discord's form: an embed for the server, a line per event.
    let mut lines = lines(&discord_posts);
    lines.sort_unstable();
    assert_eq!(lines.len(), 2, "{discord_posts:#?}");
    assert!(lines[0].starts_with("joined: "), "{lines:?}");
    assert_eq!(lines[1], "map q3dm6 → q3dm17");
    if let [one] = &discord_posts[..] {
        assert_eq!(one["content"], "2 events from 1 server", "{one}");
    }

    for t in [&mut json, &mut discord] {
        t.signal("-INT");
        let status = t.wait_exit();
        assert!(status.success(), "{status:?}");
    }
    // Nothing more was posted meanwhile: the later rounds saw no change.
    assert!(posts.try_recv().is_err());
    drop(rt);
}

/// The security review's M2: a webhook that fails logs why, never its URL — Discord's and
/// Slack's tokens are path segments. The receiver here accepts each connection and closes it
/// at once, so every POST fails with a transport error (whose text carries the URL).
#[test]
fn a_failing_webhook_never_logs_its_token() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (current, server) = hooked_server(&rt);
    let closer = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let hook = closer.local_addr().unwrap();
    rt.spawn(async move {
        while let Ok((c, _)) = closer.accept().await {
            drop(c);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://{hook}/api/webhooks/123456/SECRET-TOKEN-abc");
    let mut t = track(&dir, &server, &url, &[]);
    t.wait_line("a round", |l| l.starts_with("round "));
    // A change, so the next round has events to post.
    *current.lock().unwrap() = emulated("q3dm17", 2);
    let warned = t.wait_stderr("the webhook's failure logged", |l| l.contains("webhook:"));
    t.signal("-INT");
    let status = t.wait_exit();
    assert!(status.success(), "{status:?}");
    let log = t.process.log();
    assert!(!log.contains("SECRET-TOKEN"), "{warned}\n{log}");
    assert!(!log.contains("/api/webhooks"), "{log}");
    drop(rt);
}
