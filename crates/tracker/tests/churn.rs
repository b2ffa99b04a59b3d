//! H6, the churn budget: 20 hostile servers on loopback, each showing 1,024 fresh random
//! player names every round, store at most `new_players_per_round` (32) new players a round
//! each, the rest counted in `/metrics`; an ordinary server polled in the same rounds has
//! every one of its players stored, and the joins published are the sessions opened.
//!
//! The servers are Quake III emulators (`fragstat::quake3::emulate`) on sockets the test
//! keeps; their player lists are replaced between rounds, which the test runs itself
//! (`Tracker::round`), so nothing depends on timing.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use fragstat::core::service::{Outbox, Service};
use fragstat::core::{Transport, UdpTransport};
use fragstat::events::EventKind;
use fragstat::quake3::emulate::{EmuPlayer, EmulatedServer, ServerConfig};
use fragstat::quake3::Quake3Game;
use fragstat_tracker::config::{Config, Source};
use fragstat_tracker::Tracker;
use tokio::sync::watch;

const HOSTILE: usize = 20;
const FRESH: usize = 1024;
const BUDGET: usize = fragstat_tracker::store::NEW_PLAYERS_PER_ROUND;
const ROUNDS: usize = 4;

type Shared = Arc<Mutex<EmulatedServer>>;

struct Answer(Shared);

impl Service for Answer {
    fn handle(&mut self, now: std::time::Instant, from: SocketAddr, d: &[u8], out: &mut Outbox) {
        self.0.lock().unwrap().handle(now, from, d, out);
    }
}

/// A Quake III server on a loopback socket the test keeps, its players set by the test.
struct Server {
    addr: SocketAddr,
    emu: Shared,
    _stop: watch::Sender<bool>,
}

impl Server {
    fn start(players: &[Vec<u8>]) -> Server {
        let emu: Shared = Arc::new(Mutex::new(EmulatedServer::new(config(players))));
        let socket: Arc<dyn Transport> =
            Arc::new(UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap());
        let addr = socket.local_addr().unwrap();
        let (stop, mut rx) = watch::channel(false);
        tokio::spawn(fragstat::core::serve::run(
            socket,
            Answer(emu.clone()),
            async move {
                let _ = rx.wait_for(|s| *s).await;
            },
        ));
        Server {
            addr,
            emu,
            _stop: stop,
        }
    }

    fn set(&self, players: &[Vec<u8>]) {
        *self.emu.lock().unwrap() = EmulatedServer::new(config(players));
    }
}

fn config(players: &[Vec<u8>]) -> ServerConfig {
    let mut c = ServerConfig::sample(Quake3Game::Quake3, b"churn", 0);
    c.max_clients = u32::try_from(players.len().max(8)).unwrap();
    c.players = players
        .iter()
        .enumerate()
        .map(|(i, name)| EmuPlayer {
            name: name.clone(),
            score: i32::try_from(i).unwrap(),
            ping: 50,
            bot: false,
            team: 0,
        })
        .collect();
    c
}

/// `n` fresh random names (12 letters: two rounds' names never meet).
fn fresh(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|_| (0..12).map(|_| fastrand::u8(b'a'..=b'z')).collect())
        .collect()
}

fn metric(tracker: &Tracker, name: &str) -> f64 {
    let text = tracker.metrics().encode();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("fragstat_tracker_{name} ")))
        .unwrap_or_else(|| panic!("{name} in\n{text}"))
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_churn_adds_at_most_the_budget_and_an_ordinary_server_keeps_every_player() {
    let hostile: Vec<Server> = (0..HOSTILE).map(|_| Server::start(&fresh(FRESH))).collect();
    let mut regulars: Vec<Vec<u8>> = ["^1Sarge", "Doom", "^4Visor", "Doom"]
        .iter()
        .map(|n| n.as_bytes().to_vec())
        .collect();
    let ordinary = Server::start(&regulars);
    let dir = tempfile::tempdir().unwrap();
    let mut c = Config {
        database: dir.path().join("t.db").display().to_string(),
        listen: "127.0.0.1:0".parse().unwrap(),
        retention_hours: 0.0,
        timeout_ms: 1000,
        retries: 3,
        ..Config::default()
    };
    c.sources.push(Source {
        game: "q3".into(),
        masters: Vec::new(),
        servers: hostile
            .iter()
            .chain([&ordinary])
            .map(|s| s.addr.to_string())
            .collect(),
        ext: false,
    });
    let tracker = Tracker::open(c).await.unwrap();
    let ord = ordinary.addr.to_string();
    // Distinct identities of the ordinary server so far ("Doom" twice is one player).
    let mut known: std::collections::HashSet<Vec<u8>> = regulars.iter().cloned().collect();
    for round in 1..=ROUNDS {
        if round > 1 {
            for s in &hostile {
                s.set(&fresh(FRESH));
            }
            regulars.push(format!("Visitor{round}").into_bytes());
            ordinary.set(&regulars);
            known.extend(regulars.iter().cloned());
        }
        let report = tracker.round().await.unwrap();
        let online = report
            .data
            .records
            .iter()
            .filter(|r| r.status == fragstat::Status::Online)
            .count();
        assert_eq!(online, HOSTILE + 1, "round {round}: every server answered");
        let counts = tracker.store().counts().await.unwrap();
        // The hostile servers' fresh names: the budget a round each, no more.
        let players = i64::try_from(HOSTILE * BUDGET * round + known.len()).unwrap();
        assert_eq!(counts.players, players, "round {round}: {counts:?}");
        let open = i64::try_from(HOSTILE * BUDGET + regulars.len()).unwrap();
        assert_eq!(counts.open_sessions, open, "round {round}: {counts:?}");
        // The ordinary server: every player stored, each with its session.
        let on = tracker.store().players_on(&ord).await.unwrap();
        let names: Vec<&[u8]> = on.iter().map(|p| &p.name_raw[..]).collect();
        let want: Vec<&[u8]> = regulars.iter().map(Vec::as_slice).collect();
        assert_eq!(names, want, "round {round}");
        // The rest counted; the joins published are the sessions opened (none in the first
        // round, the baseline).
        let refused = (HOSTILE * (FRESH - BUDGET) * round) as f64;
        assert_eq!(metric(&tracker, "players_churn_refused_total"), refused);
        let joins = report
            .players
            .as_ref()
            .unwrap()
            .iter()
            .filter(|e| matches!(e.kind, EventKind::PlayerJoined(_)))
            .count();
        let want = if round == 1 { 0 } else { HOSTILE * BUDGET + 1 };
        assert_eq!(joins, want, "round {round}");
    }
    // The database grew by the budget's rows, not by 20,480 players and sessions a round.
    let counts = tracker.store().counts().await.unwrap();
    assert!(counts.sessions <= i64::try_from(HOSTILE * BUDGET * ROUNDS + 8).unwrap());
}
