//! Pushed events end to end: an emulated ET: Legacy server (the quake3-oob emulator's
//! `sv_tracker`) pushes from its own socket to the tracker's push socket; the events are on
//! `/api/events` (Server-Sent Events over real HTTP) within a second, marked pushed, with the
//! slot and GUID; the next round does not repeat them; a push from the server's address with
//! another port, or from an address no round saw, is dropped; a known server flooding, and
//! strangers flooding, leave another known server's pushes served.
//!
//! Every socket is on loopback and bound by the test (port 0, kept). Rounds are run by the
//! test (`Tracker::round`); the pushes by the test calling the emulator (`connect`,
//! `disconnect`, `change_map`) and sending what it pushes from the server's socket.

mod support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fragstat::core::service::{Outbox, Service};
use fragstat::core::{Transport, UdpTransport};
use fragstat::quake3::emulate::{EmuPlayer, EmulatedServer, ServerConfig};
use fragstat::quake3::Quake3Game;
use fragstat_tracker::config::{Config, Source};
use fragstat_tracker::push::PushConfig;
use fragstat_tracker::Tracker;
use serde_json::Value;
use support::Sse;
use tokio::sync::watch;

/// Generous: the point where a test gives up, not how long things take.
const SETTLE: Duration = Duration::from_secs(60);

/// The emulator, shared between its serve loop and the test.
#[derive(Clone)]
struct Shared(Arc<Mutex<EmulatedServer>>);

/// Its `start` pushes (`start`, `map`, a `connect` per player) are not sent: no tracker
/// knows the server before its first round, and the test makes each push itself.
impl Service for Shared {
    fn handle(&mut self, now: std::time::Instant, from: SocketAddr, d: &[u8], out: &mut Outbox) {
        self.0.lock().unwrap().handle(now, from, d, out);
    }
    fn poll_timeout(&self) -> Option<std::time::Instant> {
        self.0.lock().unwrap().poll_timeout()
    }
    fn handle_timeout(&mut self, now: std::time::Instant, out: &mut Outbox) {
        self.0.lock().unwrap().handle_timeout(now, out);
    }
}

/// An emulated ET: Legacy server on `ip`, pushing to `tracker`, answering the rounds.
struct Server {
    addr: SocketAddr,
    socket: Arc<dyn Transport>,
    emu: Shared,
    _stop: watch::Sender<bool>,
}

impl Server {
    fn start(ip: &str, tracker: SocketAddr, players: usize) -> Server {
        let config = ServerConfig::sample(Quake3Game::EtLegacy, b"^1push ^7test", players);
        let emu = Shared(Arc::new(Mutex::new(
            EmulatedServer::new(config).with_trackers(vec![tracker]),
        )));
        let socket: Arc<dyn Transport> =
            Arc::new(UdpTransport::bind(format!("{ip}:0").parse().unwrap()).unwrap());
        let addr = socket.local_addr().unwrap();
        let (stop, mut rx) = watch::channel(false);
        tokio::spawn(fragstat::core::serve::run(
            socket.clone(),
            emu.clone(),
            async move {
                let _ = rx.wait_for(|s| *s).await;
            },
        ));
        Server {
            addr,
            socket,
            emu,
            _stop: stop,
        }
    }

    /// Does `f` to the emulator and sends what it pushed, from the server's socket.
    async fn act<T>(&self, f: impl FnOnce(&mut EmulatedServer, &mut Outbox) -> T) -> T {
        let mut out = Outbox::new();
        let r = f(&mut self.emu.0.lock().unwrap(), &mut out);
        assert!(!out.is_empty(), "the emulator pushed nothing");
        for (to, d) in out {
            self.socket.send_to(&d, to).await.unwrap();
        }
        r
    }
}

fn player(name: &str) -> EmuPlayer {
    EmuPlayer {
        name: name.as_bytes().to_vec(),
        score: 0,
        ping: 40,
        bot: false,
        team: 1,
    }
}

fn config(dir: &tempfile::TempDir, servers: &[SocketAddr], push: SocketAddr) -> Config {
    let mut c = Config {
        database: dir.path().join("t.db").display().to_string(),
        listen: "127.0.0.1:0".parse().unwrap(),
        interval_secs: 10.0,
        retention_hours: 0.0,
        timeout_ms: 200,
        retries: 2,
        push: Some(PushConfig::on(push)),
        ..Config::default()
    };
    c.sources.push(Source {
        game: "etl".into(),
        masters: Vec::new(),
        servers: servers.iter().map(ToString::to_string).collect(),
        ext: false,
    });
    c
}

/// The tracker's push socket (kept), and its address.
async fn push_socket() -> (tokio::net::UdpSocket, SocketAddr) {
    let s = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let a = s.local_addr().unwrap();
    (s, a)
}

/// The tracker's web side and push listener, running until the returned sender is dropped.
async fn serve(tracker: &Tracker, socket: tokio::net::UdpSocket) -> (String, watch::Sender<bool>) {
    let web = support::serve(tracker.state()).await;
    let mut rx = web.stop.subscribe();
    let listening = tracker
        .serve_pushes(socket, async move {
            let _ = rx.wait_for(|s| *s).await;
        })
        .expect("[push] configured");
    tokio::spawn(listening);
    (web.base, web.stop)
}

/// `fragstat_tracker_push_datagrams_total{result="…"}` (0 before the first).
fn datagrams(tracker: &Tracker, result: &str) -> f64 {
    let key = format!("fragstat_tracker_push_datagrams_total{{result=\"{result}\"}} ");
    tracker
        .metrics()
        .encode()
        .lines()
        .find_map(|l| l.strip_prefix(&key).map(|v| v.parse().unwrap()))
        .unwrap_or(0.0)
}

/// The next event.
async fn next_event(sse: &mut Sse) -> Value {
    sse.take(1).await.remove(0)
}

#[tokio::test]
async fn pushed_events_reach_api_events_within_a_second_and_rounds_do_not_repeat_them() {
    let (socket, push) = push_socket().await;
    let server = Server::start("127.0.0.1", push, 2);
    let dir = tempfile::tempdir().unwrap();
    let tracker = Tracker::open(config(&dir, &[server.addr], push))
        .await
        .unwrap();
    // The first round is the baseline, and makes the server known.
    let r = tracker.round().await.unwrap();
    assert_eq!(r.data.records[0].status, fragstat::Status::Online);
    let (base, _web) = serve(&tracker, socket).await;
    let mut sse = Sse::open(&format!("{base}/api/events")).await;

    let sent = Instant::now();
    let slot = server
        .act(|s, out| s.connect(player("^3New^7bie"), out))
        .await
        .unwrap();
    assert_eq!(slot, 2, "the lowest free slot");
    let joined = next_event(&mut sse).await;
    assert!(
        sent.elapsed() < Duration::from_secs(1),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(joined["event"], "player_joined");
    assert_eq!(joined["server"], server.addr.to_string());
    assert_eq!(joined["game"], "etl");
    assert_eq!(joined["pushed"], true);
    assert_eq!(joined["slot"], 2);
    assert_eq!(joined["name_raw"], "^3New^7bie");
    assert_eq!(joined["guid"].as_str().unwrap().len(), 32);

    let sent = Instant::now();
    server
        .act(|s, out| s.change_map(b"supply".to_vec(), out))
        .await;
    let map = next_event(&mut sse).await;
    assert!(
        sent.elapsed() < Duration::from_secs(1),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(
        (&map["event"], &map["from"], &map["to"], &map["pushed"]),
        (
            &"map_changed".into(),
            &"oasis".into(),
            &"supply".into(),
            &true.into()
        )
    );

    // The round sees the same join and map: nothing again (the next event on the stream is
    // the next push).
    tracker.round().await.unwrap();
    let sent = Instant::now();
    assert!(server.act(|s, out| s.disconnect(2, out)).await);
    let left = next_event(&mut sse).await;
    assert!(
        sent.elapsed() < Duration::from_secs(1),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(
        (
            &left["event"],
            &left["name_raw"],
            &left["slot"],
            &left["pushed"]
        ),
        (
            &"player_left".into(),
            &"^3New^7bie".into(),
            &2.into(),
            &true.into()
        )
    );
    // Nor the leave.
    tracker.round().await.unwrap();
    server.act(|s, out| s.connect(player("Last"), out)).await;
    let last = next_event(&mut sse).await;
    assert_eq!(
        (&last["event"], &last["name_raw"]),
        (&"player_joined".into(), &"Last".into())
    );
    assert!(datagrams(&tracker, "accepted") >= 4.0);
}

#[tokio::test]
async fn spoofed_and_unknown_pushes_are_dropped() {
    let (socket, push) = push_socket().await;
    let server = Server::start("127.0.0.1", push, 1);
    let dir = tempfile::tempdir().unwrap();
    let tracker = Tracker::open(config(&dir, &[server.addr], push))
        .await
        .unwrap();
    tracker.round().await.unwrap();
    let (base, _web) = serve(&tracker, socket).await;
    let mut sse = Sse::open(&format!("{base}/api/events")).await;
    let before = datagrams(&tracker, "unknown");

    // The server's address with another port, and an address no round saw.
    let spoof = b"\xff\xff\xff\xffconnect 5 0123456789ABCDEF0123456789ABCDEF ^1Spoof";
    let same_ip = UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let stranger = UdpTransport::bind("127.0.0.2:0".parse().unwrap()).unwrap();
    same_ip.send_to(spoof, push).await.unwrap();
    stranger.send_to(spoof, push).await.unwrap();
    tokio::time::timeout(SETTLE, async {
        while datagrams(&tracker, "unknown") < before + 2.0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("both counted as unknown");
    // The real server's push is the next event: the forged ones never were.
    server.act(|s, out| s.connect(player("Real"), out)).await;
    let e = next_event(&mut sse).await;
    assert_eq!(
        (&e["event"], &e["name_raw"]),
        (&"player_joined".into(), &"Real".into())
    );
    assert_eq!(datagrams(&tracker, "accepted"), 1.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_leaves_a_known_servers_pushes_served() {
    let (socket, push) = push_socket().await;
    let honest = Server::start("127.0.0.1", push, 0);
    // Another known server of the same /24 floods, and so do strangers.
    let flooder = Server::start("127.0.0.2", push, 0);
    let dir = tempfile::tempdir().unwrap();
    let tracker = Tracker::open(config(&dir, &[honest.addr, flooder.addr], push))
        .await
        .unwrap();
    let r = tracker.round().await.unwrap();
    assert!(r
        .data
        .records
        .iter()
        .all(|r| r.status == fragstat::Status::Online));
    let (base, _web) = serve(&tracker, socket).await;
    let mut sse = Sse::open(&format!("{base}/api/events")).await;

    let stranger = UdpTransport::bind("127.0.0.3:0".parse().unwrap()).unwrap();
    let started = Instant::now();
    for i in 0..20_000u32 {
        let text = format!("connect {} unknown flood{i}", i % 64);
        let bytes = [&b"\xff\xff\xff\xff"[..], text.as_bytes()].concat();
        let _ = flooder.socket.send_to(&bytes, push).await;
        let _ = stranger.send_to(&bytes, push).await;
        if i % 64 == 0 {
            // The listener reads while the flood goes on (fewer dropped by the kernel).
            tokio::task::yield_now().await;
        }
    }
    // The honest server's join, sent again every 50 ms until it is heard (the kernel may
    // drop a datagram while the flood's backlog is read; a repeat is a reconnect: no event).
    let mut out = Outbox::new();
    honest
        .emu
        .0
        .lock()
        .unwrap()
        .connect(player("Honest"), &mut out);
    let sender = {
        let socket = honest.socket.clone();
        tokio::spawn(async move {
            for _ in 0..1200 {
                for (to, d) in &out {
                    let _ = socket.send_to(d, *to).await;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    let mut from_flooder = 0usize;
    tokio::time::timeout(SETTLE, async {
        loop {
            let e = next_event(&mut sse).await;
            if e["server"] == honest.addr.to_string() {
                assert_eq!(
                    (&e["event"], &e["name_raw"]),
                    (&"player_joined".into(), &"Honest".into())
                );
                break;
            }
            assert_eq!(e["server"], flooder.addr.to_string());
            from_flooder += 1;
        }
    })
    .await
    .expect("the honest server's push is heard");
    sender.abort();
    // The flooder was held to its host's rate: its burst (200 datagrams, a join and a leave
    // each at most) and 20 a second since.
    let secs = started.elapsed().as_secs() as usize + 1;
    assert!(
        from_flooder <= 2 * (200 + 20 * secs),
        "{from_flooder} events from the flooder in {secs} s"
    );
    // Whatever the kernel let through past the flooder's burst was refused by its rate.
    assert!(datagrams(&tracker, "rate") > 0.0, "the flooder was limited");
    assert!(
        datagrams(&tracker, "unknown") > 0.0,
        "the strangers were dropped"
    );
}

/// A pushed player who opted out (`[privacy] opt_out`) is never published: the next event
/// after its `connect` is the following player's.
#[tokio::test]
async fn a_pushed_player_who_opted_out_is_never_published() {
    let (socket, push) = push_socket().await;
    let server = Server::start("127.0.0.1", push, 2);
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&dir, &[server.addr], push);
    c.privacy.opt_out = vec!["SECRET".into()];
    let tracker = Tracker::open(c).await.unwrap();
    tracker.round().await.unwrap();
    let (base, _web) = serve(&tracker, socket).await;
    let mut sse = Sse::open(&format!("{base}/api/events")).await;
    server
        .act(|s, out| s.connect(player("^1Sec^7ret"), out))
        .await
        .unwrap();
    server
        .act(|s, out| s.connect(player("Open"), out))
        .await
        .unwrap();
    let e = next_event(&mut sse).await;
    assert_eq!(
        (&e["event"], &e["name_raw"]),
        (&"player_joined".into(), &"Open".into()),
        "{e}"
    );
    assert_eq!(datagrams(&tracker, "accepted"), 2.0);
}
