//! `/api/events` ids, resume and filters over real HTTP, rounds run by the test against
//! emulated servers whose answers it switches: every event has an id (`BOOT-N`, N rising);
//! the stream opens with a `retry:` hint; a client that left after its first event and
//! comes back with `Last-Event-ID` (or `?last_event_id=`) gets exactly the events it missed,
//! once each, in order, then the live ones; an id not this tracker's is told `lagged` with
//! `missed: null`; one older than the replay buffer is told how many are gone. Filters: by
//! player name, several servers, a game alias, kinds; bad values refused.

mod support;

use std::time::Duration;

use fragstat_tracker::config::{Config, Source};
use fragstat_tracker::Tracker;
use serde_json::Value;
use support::switch::{emulated, Server};
use support::Sse;

fn config(dir: &tempfile::TempDir, servers: &[&Server]) -> Config {
    let mut c = Config {
        database: dir.path().join("t.db").display().to_string(),
        interval_secs: 0.2,
        timeout_ms: 100,
        retries: 1,
        ..Config::default()
    };
    // Several streams from this one host at once.
    c.web.sse_max_per_host = 16;
    c.web.sse_max_per_network = 16;
    c.sources.push(Source {
        game: "q3".into(),
        masters: Vec::new(),
        servers: servers.iter().map(|s| s.addr.to_string()).collect(),
        ext: false,
    });
    c
}

/// The next `n` frames: (id, event, data).
async fn frames(s: &mut Sse, n: usize) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    while out.len() < n {
        let (id, kind, data) = s.next_frame().await;
        out.push((
            id.unwrap_or_default(),
            kind,
            serde_json::from_str(&data).unwrap(),
        ));
    }
    out
}

fn number(id: &str) -> u64 {
    id.rsplit_once('-').unwrap().1.parse().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_comes_back_gets_what_it_missed_once() {
    let a = Server::start("^1Alpha", "q3dm6", 1);
    let b = Server::start("Bravo", "q3dm17", 1);
    let dir = tempfile::tempdir().unwrap();
    let tracker = Tracker::open(config(&dir, &[&a, &b])).await.unwrap();
    tracker.round().await.unwrap(); // the baseline
    let web = support::serve(tracker.state()).await;
    let url = format!("{}/api/events", web.base);
    let client = reqwest::Client::new();

    let mut first = Sse::open(&url).await;
    first.read_until(|t| t.contains("retry: 5000")).await;
    // Round 2: Alpha changes map and gets a player; Bravo goes silent.
    a.set(Some(emulated("^1Alpha", "q3dm7", 2)));
    b.set(None);
    tracker.round().await.unwrap();
    let got = frames(&mut first, 1).await;
    let (last_id, _, _) = got[0].clone();
    assert!(
        last_id.starts_with(&format!("{}-", tracker.events().hub().boot())),
        "{last_id}"
    );
    drop(first); // the client leaves after one event
                 // Round 3: Bravo back with another map.
    b.set(Some(emulated("Bravo", "q3dm1", 1)));
    tracker.round().await.unwrap();

    // Everything kept (from before the first id), up to round 3's last event (Bravo's map).
    let boot = tracker.events().hub().boot();
    let mut all = Sse::open(&format!("{url}?last_event_id={boot}-0")).await;
    let mut everything = Vec::new();
    while !everything
        .iter()
        .any(|(_, k, v): &(String, String, Value)| {
            k == "map_changed" && v["server"] == b.addr.to_string()
        })
    {
        everything.extend(frames(&mut all, 1).await);
    }
    assert_eq!(number(&everything[0].0), 1, "from the first");
    let after: Vec<_> = everything
        .iter()
        .filter(|(id, _, _)| number(id) > number(&last_id))
        .cloned()
        .collect();
    for resumed in [
        Sse::send(client.get(&url).header("last-event-id", &last_id)).await,
        Sse::send(client.get(format!("{url}?last_event_id={last_id}"))).await,
    ] {
        let mut resumed = resumed;
        let got = frames(&mut resumed, after.len()).await;
        assert_eq!(got, after, "exactly the missed events, in order");
        // Then live ones, not the backlog again.
        a.set(None);
        tracker.round().await.unwrap();
        let (id, kind, _) = frames(&mut resumed, 1).await.remove(0);
        assert_eq!(kind, "server_down");
        assert!(number(&id) > number(&after.last().unwrap().0));
        a.set(Some(emulated("^1Alpha", "q3dm7", 2)));
        tracker.round().await.unwrap();
    }
    let _ = everything;
    // Ids rise by one.
    let ids: Vec<u64> = after.iter().map(|(id, _, _)| number(id)).collect();
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");
    assert!(!ids.is_empty());

    // Another tracker's id (a restart): lagged, missed unknown.
    let mut other = Sse::send(client.get(&url).header("last-event-id", "17-3")).await;
    let (_, kind, data) = other.next_frame().await;
    assert_eq!(
        (kind.as_str(), data.as_str()),
        ("lagged", "{\"missed\":null}")
    );
    let _ = web.stop.send(true);
}

#[tokio::test(flavor = "multi_thread")]
async fn filters_by_player_server_game_and_kind() {
    let a = Server::start("^1Alpha", "q3dm6", 0);
    let b = Server::start("Bravo", "q3dm17", 0);
    let c = Server::start("Charlie", "q3dm1", 0);
    let dir = tempfile::tempdir().unwrap();
    let tracker = Tracker::open(config(&dir, &[&a, &b, &c])).await.unwrap();
    tracker.round().await.unwrap();
    let web = support::serve(tracker.state()).await;
    let url = format!("{}/api/events", web.base);
    let open = |q: String| {
        let url = url.clone();
        async move { Sse::open(&format!("{url}?{q}")).await }
    };
    let mut two = open(format!("server={},{}&kind=map_changed", a.addr, b.addr)).await;
    let mut repeated = open(format!("server={}&server={}&game=q3a", b.addr, c.addr)).await;
    // Players: two on Alpha; the test watches the first.
    a.set(Some(emulated("^1Alpha", "q3dm7", 2)));
    b.set(Some(emulated("Bravo", "q3dm7", 0)));
    c.set(None);
    tracker.round().await.unwrap();
    let api: Value = reqwest::get(format!("{}/api/servers/{}", web.base, a.addr))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let name = api["players"][0]["name"].as_str().unwrap().to_string();
    let mut player = open(format!("player={}", name.to_uppercase())).await;
    let got = frames(&mut two, 2).await;
    let mut servers: Vec<String> = got
        .iter()
        .map(|(_, _, v)| v["server"].as_str().unwrap().to_string())
        .collect();
    servers.sort();
    let mut want = vec![a.addr.to_string(), b.addr.to_string()];
    want.sort();
    assert_eq!(servers, want);
    assert!(got.iter().all(|(_, k, _)| k == "map_changed"));
    let got = frames(&mut repeated, 2).await;
    let mut kinds: Vec<(String, String)> = got
        .iter()
        .map(|(_, k, v)| (k.clone(), v["server"].as_str().unwrap().to_string()))
        .collect();
    kinds.sort();
    assert_eq!(
        kinds,
        [
            ("map_changed".to_string(), b.addr.to_string()),
            ("server_down".to_string(), c.addr.to_string())
        ],
        "Bravo's map, Charlie down; not Alpha's"
    );
    let other = api["players"][1]["name"].as_str().unwrap().to_string();
    assert_ne!(name, other);
    // Both leave, then both come back: the watched one's two events only, not the other's.
    a.set(Some(emulated("^1Alpha", "q3dm7", 0)));
    tracker.round().await.unwrap();
    a.set(Some(emulated("^1Alpha", "q3dm7", 2)));
    tracker.round().await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(60), frames(&mut player, 2))
        .await
        .expect("the player's events");
    let seen: Vec<(&str, &str)> = got
        .iter()
        .map(|(_, k, v)| (k.as_str(), v["name"].as_str().unwrap()))
        .collect();
    assert_eq!(
        seen,
        [
            ("player_left", name.as_str()),
            ("player_joined", name.as_str())
        ]
    );
    let _ = web.stop.send(true);
}
