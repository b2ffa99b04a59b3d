//! `fragstat watch`: a server stopped, restarted with another map and one more player reads
//! `server_down`, `server_up`, `map_changed`, `player_joined`; a master's servers watched.
//!
//! The emulated server runs in this process on a UDP socket the test keeps for the whole
//! test: it is "stopped" by not answering and "restarted" by answering as another server, so
//! no other program can take its port meanwhile. Lines are waited for with deadlines.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use fragstat::core::registry::EmuServer;
use fragstat::core::service::{Outbox, Service};
use fragstat::core::{Transport, UdpTransport};
use fragstat_testkit::spawn_serve;
use serde_json::Value;

mod support;
use support::{bin, ndjson, run, Running};

/// The emulated server answering now, or `None` (stopped: datagrams are read and dropped).
type Current = Arc<Mutex<Option<Box<dyn Service>>>>;

struct Switch(Current);

impl Service for Switch {
    fn handle(&mut self, now: Instant, from: SocketAddr, datagram: &[u8], out: &mut Outbox) {
        if let Some(s) = self.0.lock().unwrap().as_mut() {
            s.handle(now, from, datagram, out);
        }
    }
}

fn emulated(map: &str, players: usize) -> Box<dyn Service> {
    fragstat::game("q3")
        .unwrap()
        .emulator()
        .expect("built with emulators")
        .emulated_server(&EmuServer::new(b"^3watched".to_vec(), map, players).with_seed(7))
        .unwrap()
}

fn event(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

#[test]
fn stopped_and_restarted_server_reads_down_up_map_changed_player_joined() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let current: Current = Arc::new(Mutex::new(Some(emulated("q3dm6", 2))));
    let socket: Arc<dyn Transport> = {
        let _g = rt.enter();
        Arc::new(UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap())
    };
    let addr = socket.local_addr().unwrap().to_string();
    rt.spawn(fragstat::core::serve::run(
        socket,
        Switch(current.clone()),
        std::future::pending(),
    ));
    let mut watch = Running::start(
        &[
            "watch",
            "q3",
            &addr,
            "--interval-s",
            "0.2",
            "--timeout-ms",
            "100",
            "--retries",
            "1",
            "--initial",
            "--format",
            "ndjson",
        ],
        &[],
    );
    let is = |kind: &'static str| {
        let addr = addr.clone();
        move |l: &str| {
            let e = event(l);
            e["event"] == kind && e["server"] == addr.as_str()
        }
    };
    // --initial: the first scan's server and players.
    let up = event(&watch.wait_line("the first server_up", is("server_up")));
    assert_eq!(up["map"], "q3dm6");
    assert_eq!(up["name"], "watched");
    assert_eq!(up["name_raw"], "^3watched");
    assert_eq!(up["game"], "q3");
    assert!(up["at"].as_i64().unwrap() > 1_600_000_000_000);
    // Stopped.
    *current.lock().unwrap() = None;
    let down = event(&watch.wait_line("server_down", is("server_down")));
    assert_eq!(down["status"], "timeout", "{down}");
    assert!(down["reason"].is_string(), "{down}");
    // Restarted with another map and one more player.
    let seen_before = watch.lines.seen().len();
    *current.lock().unwrap() = Some(emulated("q3dm17", 3));
    watch.wait_line("player_joined", is("player_joined"));
    let after: Vec<Value> = watch.lines.seen()[seen_before..]
        .iter()
        .map(|l| event(l))
        .collect();
    let kinds: Vec<&str> = after.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["server_up", "map_changed", "player_joined"],
        "{after:#?}"
    );
    assert_eq!(after[1]["from"], "q3dm6");
    assert_eq!(after[1]["to"], "q3dm17");
    let joined = &after[2];
    assert!(joined["name"].is_string() && joined["name_raw"].is_string());
    assert_eq!(joined["dialect"], "idq3");
    // Every event of one scan has that scan's time.
    assert_eq!(after[0]["at"], after[2]["at"]);
    // Ctrl-C ends it with 130, as the README's exit statuses say (trial finding 14).
    watch.signal("-INT");
    let status = watch.wait_exit();
    assert_eq!(status.code(), Some(130), "{status:?}");
    drop(rt);
}

#[test]
fn watch_a_master_like_qstat_users_do() {
    let farm = spawn_serve(
        bin(),
        &[
            "q3",
            "--listen",
            "127.0.0.1:0",
            "--count",
            "2",
            "--players",
            "2",
            "--master",
            "--master-listen",
            "127.0.0.1:0",
        ],
    );
    let master = farm.master.expect("master").to_string();
    let args = |format: &'static str| {
        vec![
            "watch".to_string(),
            "q3".into(),
            "--master".into(),
            master.clone(),
            "--interval-s".into(),
            "0.1".into(),
            "--rounds".into(),
            "2".into(),
            "--initial".into(),
            "--timeout-ms".into(),
            "200".into(),
            "--format".into(),
            format.into(),
        ]
    };
    let a = args("ndjson");
    let out = run(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let events = ndjson(&out);
    for s in &farm.servers {
        let s = s.to_string();
        let of = |kind: &str| {
            events
                .iter()
                .filter(|e| e["server"] == s.as_str() && e["event"] == kind)
                .count()
        };
        assert_eq!(of("server_up"), 1, "{events:#?}");
        assert_eq!(of("player_joined"), 2, "{events:#?}");
    }
    assert_eq!(
        events.len(),
        6,
        "the second scan changed nothing: {events:#?}"
    );
    let a = args("table");
    let out = run(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let text = support::stdout(&out);
    assert_eq!(text.lines().count(), 6, "{text}");
    assert!(text.lines().next().unwrap().contains(" q3 up: "), "{text}");
}

#[test]
fn nothing_to_watch_is_a_usage_error() {
    let out = run(&["watch", "q3"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["watch", "q3", "127.0.0.1:1", "--interval-s", "0"]);
    assert_eq!(out.status.code(), Some(2));
    // Said once.
    let out = run(&["watch", "nosuch", "127.0.0.1:1"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("unknown game").count(), 1, "{err}");
    // An address that cannot be one is a usage error, said before anything is sent (trial
    // finding 8).
    let out = run(&["watch", "q3", "127.0.0.1:99999", "--rounds", "1"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("127.0.0.1:99999"), "{err}");
    assert!(err.contains("out of range"), "{err}");
}
