//! One engine for joins and leaves: rounds written through the store and published through
//! the tracker's events (as `Tracker::round` does), and after each round the
//! `player_joined`/`player_left` events an `/api/events` client receives are exactly the
//! sessions the database opened and closed — with two players of the same bytes in two
//! dialects, one name twice, and a server silent past the session gap (its sessions close:
//! its players leave).

use std::time::Duration;

use fragstat::core::model::{Dialect, Player, ServerInfo, Text};
use fragstat::core::record::{Record, Status};
use fragstat::events::EventKind;
use fragstat_tracker::config::Config;
use fragstat_tracker::events::Events;
use fragstat_tracker::metrics::Metrics;
use fragstat_tracker::round::RoundReport;
use fragstat_tracker::store::{RoundData, Store};

const A: &str = "127.0.0.1:27960";
const B: &str = "127.0.0.1:27961";

fn online(addr: &str, players: &[(&str, Dialect)]) -> Record {
    let mut info = ServerInfo::default();
    info.name = Text::new(b"^1Red".to_vec(), Dialect::Quake);
    info.map = Text::new("q3dm17", Dialect::Quake);
    info.max_players = 16;
    info.num_players = u32::try_from(players.len()).unwrap();
    info.players = Some(
        players
            .iter()
            .map(|(n, d)| Player::new(Text::new(n.as_bytes().to_vec(), *d)))
            .collect(),
    );
    Record::online(Some(addr.into()), "q3", info, None)
}

fn down(addr: &str) -> Record {
    Record::failed(Some(addr.into()), "q3", Status::Timeout, "no reply".into())
}

/// (sessions opened, sessions closed) in the database so far.
async fn sessions(store: &Store) -> (i64, i64) {
    let c = store.counts().await.unwrap();
    (c.sessions, c.sessions - c.open_sessions)
}

async fn one_engine(url: &str) {
    use Dialect::{Plain, Quake};
    let store = Store::open(url).await.unwrap();
    let gap = store.history_policy().session_gap.as_millis() as i64;
    let events = Events::new(&Config::default(), &Metrics::new()).unwrap();
    let mut rx = events.hub().subscribe();
    let t0 = 1_700_000_000_000i64;
    let rounds: Vec<(i64, Vec<Record>)> = vec![
        // The baseline: written, not announced.
        (
            t0,
            vec![
                online(A, &[("Sarge", Quake)]),
                online(B, &[("Doom", Quake)]),
            ],
        ),
        // The same bytes in two dialects, and one name twice: four joins.
        (
            t0 + 60_000,
            vec![
                online(
                    A,
                    &[
                        ("Sarge", Quake),
                        ("^1Sarge", Quake),
                        ("^1Sarge", Plain),
                        ("Sarge", Quake),
                    ],
                ),
                online(B, &[("Doom", Quake), ("Doom", Quake)]),
            ],
        ),
        // The Quake ^1Sarge leaves; the plain one stays; one Doom leaves.
        (
            t0 + 120_000,
            vec![
                online(A, &[("Sarge", Quake), ("^1Sarge", Plain), ("Sarge", Quake)]),
                online(B, &[("Doom", Quake)]),
            ],
        ),
        // A lost reply from B: nothing ends.
        (
            t0 + 180_000,
            vec![
                online(A, &[("Sarge", Quake), ("^1Sarge", Plain), ("Sarge", Quake)]),
                down(B),
            ],
        ),
        // B silent past the gap: its player's session closes, and it is a leave.
        (
            t0 + 120_000 + gap + 1,
            vec![online(A, &[("^1Sarge", Plain)]), down(B)],
        ),
        // B back, with the plain ^1Sarge's bytes in Quake's dialect: a new player.
        (
            t0 + 180_000 + gap,
            vec![
                online(A, &[("^1Sarge", Plain)]),
                online(B, &[("^1Sarge", Quake)]),
            ],
        ),
    ];
    let mut before = sessions(&store).await;
    for (n, (at, records)) in rounds.into_iter().enumerate() {
        let data = RoundData {
            at,
            finished: at,
            records,
            ..RoundData::default()
        };
        let written = store.write_round(&data).await.unwrap();
        events.round(&RoundReport {
            data,
            masters: Vec::new(),
            elapsed: Duration::ZERO,
            write: Duration::ZERO,
            players: Some(written.events),
        });
        let (mut joined, mut left, mut plain) = (0, 0, 0);
        while let Ok(p) = rx.try_recv() {
            match &p.event.kind {
                EventKind::PlayerJoined(pl) => {
                    joined += 1;
                    plain += usize::from(pl.name.dialect() == Plain);
                }
                EventKind::PlayerLeft(_) => left += 1,
                _ => {}
            }
        }
        let now = sessions(&store).await;
        let (opened, closed) = (now.0 - before.0, now.1 - before.1);
        before = now;
        if n == 0 {
            assert_eq!((joined, left), (0, 0), "the first round is the baseline");
            continue;
        }
        assert_eq!(
            (joined, left),
            (opened, closed),
            "round {n}: events and sessions"
        );
        match n {
            1 => assert_eq!((joined, left, plain), (4, 0, 1)),
            2 => assert_eq!((joined, left), (0, 2)),
            3 => assert_eq!((joined, left), (0, 0)),
            4 => assert_eq!((joined, left), (0, 3), "B's Doom and A's two Sarges"),
            5 => assert_eq!((joined, left), (1, 0)),
            _ => {}
        }
    }
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_events_are_the_sessions_opened_and_closed() {
    let dir = tempfile::tempdir().unwrap();
    one_engine(&dir.path().join("t.db").display().to_string()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_events_are_the_sessions_opened_and_closed() {
    let Some(pg) = fragstat_testkit::postgres::Postgres::start() else {
        return;
    };
    one_engine(&pg.url).await;
}
