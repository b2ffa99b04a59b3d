//! `Client::watch` end to end on loopback: an emulated Quake III server, listed by an
//! emulated master, changes its map and gains a player between two scans, and the stream
//! yields the typed events.
//!
//! The server runs in this process on a UDP socket the test keeps; it "changes" by answering
//! as another emulated server (swapped at once, so every reply is wholly the old or the new
//! one). The scans run on their own interval; the test waits for events with a deadline,
//! never for a time.

mod support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fragstat::core::registry::EmuServer;
use fragstat::core::service::{Outbox, Service};
use fragstat::core::{Transport, UdpTransport};
use fragstat::events::{Differ, Event, EventKind};
use fragstat::{Client, Source};
use futures_util::StreamExt;
use tokio::sync::watch;

/// Generous: the point where the test gives up, not how long things take.
const DEADLINE: Duration = Duration::from_secs(60);

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
        .emulated_server(&EmuServer::new(b"^5watched".to_vec(), map, players).with_seed(11))
        .unwrap()
}

/// The next event, within the deadline.
async fn next(events: &mut fragstat::Watch) -> Event {
    tokio::time::timeout(DEADLINE, events.next())
        .await
        .expect("an event in time")
        .expect("the watch goes on")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_map_change_and_a_player_joining_between_scans_are_events() {
    let q3 = fragstat::game("q3").unwrap();
    let current: Current = Arc::new(Mutex::new(emulated("q3dm6", 2)));
    let socket: Arc<dyn Transport> =
        Arc::new(UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap());
    let addr = socket.local_addr().unwrap();
    let (stop, mut stopped) = watch::channel(false);
    tokio::spawn(fragstat::core::serve::run(
        socket,
        Switch(current.clone()),
        async move {
            let _ = stopped.wait_for(|s| *s).await;
        },
    ));
    let master = support::master(&q3, vec![addr]);
    let client = Client::builder()
        .timeout(Duration::from_millis(300))
        .retries(1)
        .master_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let source = Source::new(&q3).masters([master.master.unwrap().to_string()]);
    let mut events = client
        .watch(vec![source], Duration::from_millis(50))
        .differ(Differ::new().initial(true));
    let server = addr.to_string();

    // The first scan, compared with nothing: the server and its two players.
    let up = next(&mut events).await;
    assert_eq!(up.server, server);
    assert_eq!(up.game, "q3");
    let EventKind::ServerUp {
        name,
        map,
        num_players,
        ..
    } = &up.kind
    else {
        panic!("{up:?}")
    };
    assert_eq!(name.as_bytes(), b"^5watched");
    assert_eq!(map.display(), "q3dm6");
    assert_eq!(*num_players, 2);
    let mut first = Vec::new();
    for _ in 0..2 {
        let e = next(&mut events).await;
        assert_eq!(e.at, up.at, "one scan");
        let EventKind::PlayerJoined(p) = e.kind else {
            panic!("{e:?}")
        };
        first.push(p.name);
    }

    // Between two scans: another map and one more player.
    *current.lock().unwrap() = emulated("q3dm17", 3);
    let changed = next(&mut events).await;
    assert_eq!(changed.server, server);
    assert!(changed.at > up.at, "a later scan");
    let EventKind::MapChanged { from, to } = &changed.kind else {
        panic!("{changed:?}")
    };
    assert_eq!(
        (from.display(), to.display()),
        ("q3dm6".into(), "q3dm17".into())
    );
    let joined = next(&mut events).await;
    assert_eq!(joined.at, changed.at, "the same scan");
    let EventKind::PlayerJoined(p) = &joined.kind else {
        panic!("{joined:?}")
    };
    assert!(!first.contains(&p.name), "a new player: {p:?}");
    assert_eq!(joined.describe(), format!("joined: {}", p.name));
    let json = serde_json::to_value(&joined).unwrap();
    assert_eq!(json["event"], "player_joined");
    assert_eq!(json["server"], server.as_str());

    // The scans in between saw no change: the next event is the next change (another map,
    // the same players).
    *current.lock().unwrap() = emulated("q3dm1", 3);
    let again = next(&mut events).await;
    let EventKind::MapChanged { from, to } = &again.kind else {
        panic!("{again:?}")
    };
    assert_eq!(
        (from.display(), to.display()),
        ("q3dm17".into(), "q3dm1".into())
    );
    drop(events);
    let _ = stop.send(true);
}
