//! Players who are people (issue 34): bots told apart on an emulated Quake III server (whose
//! getstatus does not mark them: ping 0 and the `clients − g_humanplayers` count do) and
//! marked on the server page, in the API and in the events (SSE and webhook), with no
//! player page and out of the search unless asked; the opt-out (a configured name is never
//! stored) and `forget` (a player kept is deleted everywhere and never stored again), on
//! SQLite and PostgreSQL; the search over the players' whole window, newest first, paged.
//!
//! The emulated server runs in this process on a socket the test keeps; rounds are run by the
//! test (`Tracker::round`), so nothing depends on timing.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use fragstat::core::service::Service;
use fragstat::quake3::emulate::{EmuPlayer, EmulatedServer, ServerConfig};
use fragstat::quake3::Quake3Game;
use fragstat_tracker::config::{Config, Source};
use fragstat_tracker::Tracker;
use serde_json::Value;
use support::switch::Server;
use support::Sse;
use tokio::sync::{mpsc, watch};

/// Generous: the point where a test gives up, not how long things take.
const SETTLE: Duration = Duration::from_secs(60);

/// A Quake III server whose players are `(name, ping, bot)`: getinfo counts the bots
/// (`clients − g_humanplayers`), getstatus lists `score ping "name"` and marks none.
fn q3(players: &[(&str, i32, bool)]) -> Box<dyn Service> {
    let mut c = ServerConfig::sample(Quake3Game::Quake3, b"^2people", 0);
    c.players = players
        .iter()
        .enumerate()
        .map(|(i, (name, ping, bot))| EmuPlayer {
            name: name.as_bytes().to_vec(),
            score: 10 - i32::try_from(i).unwrap(),
            ping: *ping,
            bot: *bot,
            team: 0,
        })
        .collect();
    Box::new(EmulatedServer::new(c))
}

/// Two humans (one with a colour code), two bots (ping 0, as ioq3 sends them).
const PLAYERS: [(&str, i32, bool); 4] = [
    ("Alice", 40, false),
    ("^1Bob", 55, false),
    ("Sarge", 0, true),
    ("Grunt", 0, true),
];

fn config(database: String, server: SocketAddr, extra: &str) -> Config {
    let mut c = Config::parse(extra).unwrap();
    c.database = database;
    c.listen = "127.0.0.1:0".parse().unwrap();
    c.interval_secs = 0.2;
    c.retention_hours = 0.0;
    c.timeout_ms = 300;
    c.retries = 2;
    c.sources.push(Source {
        game: "q3".into(),
        masters: Vec::new(),
        servers: vec![server.to_string()],
        ext: false,
    });
    c
}

/// A webhook receiver: every POST's JSON body.
async fn receiver() -> (String, mpsc::UnboundedReceiver<Value>, watch::Sender<bool>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::unbounded_channel();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: String| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(serde_json::from_str::<Value>(&body).expect("JSON body"));
                "ok"
            }
        }),
    );
    let (stop, mut srx) = watch::channel(false);
    tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = srx.wait_for(|s| *s).await;
            })
            .await
            .unwrap();
    });
    (url, rx, stop)
}

async fn next_post(rx: &mut mpsc::UnboundedReceiver<Value>) -> Value {
    tokio::time::timeout(SETTLE, rx.recv())
        .await
        .expect("a webhook POST in time")
        .expect("receiver running")
}

async fn get(url: &str) -> (u16, String) {
    let r = reqwest::get(url).await.expect(url);
    (r.status().as_u16(), r.text().await.unwrap())
}

async fn json(url: &str) -> Value {
    let (status, body) = get(url).await;
    assert_eq!(status, 200, "{url}: {body}");
    serde_json::from_str(&body).unwrap()
}

/// The player events' names and bot flags: `(name, is_bot)`.
fn joined(events: &[Value]) -> Vec<(String, Value)> {
    let mut v: Vec<(String, Value)> = events
        .iter()
        .filter(|e| e["event"] == "player_joined")
        .map(|e| (e["name"].as_str().unwrap().to_string(), e["is_bot"].clone()))
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// The bots of the q3 server are told apart where the server does not say (getstatus),
/// marked on its page, in `/api/servers/{addr}`, in the SSE events and the webhook's, and
/// have no player page and no place in the search unless asked.
#[tokio::test(flavor = "multi_thread")]
async fn bots_are_marked_everywhere_and_kept_out_of_search() {
    let server = Server::serving(q3(&[]));
    let dir = tempfile::tempdir().unwrap();
    let (hook, mut posts, _hook_stop) = receiver().await;
    let db = dir.path().join("t.db").display().to_string();
    let mut c = config(db, server.addr, "");
    c.webhook = Some(hook);
    let tracker = Tracker::open(c).await.unwrap();
    let web = support::serve(tracker.state()).await;
    let base = web.base.clone();
    // The first round is the baseline; then the players come.
    tracker.round().await.unwrap();
    let mut sse = Sse::open(&format!("{base}/api/events?kind=player_joined")).await;
    server.set(Some(q3(&PLAYERS)));
    tracker.round().await.unwrap();

    let f = Value::Bool(false);
    let t = Value::Bool(true);
    let want = vec![
        ("Alice".to_string(), f.clone()),
        ("Bob".to_string(), f.clone()),
        ("Grunt".to_string(), t.clone()),
        ("Sarge".to_string(), t.clone()),
    ];
    assert_eq!(joined(&sse.take(4).await), want, "SSE");
    let post = next_post(&mut posts).await;
    assert_eq!(
        joined(post["events"].as_array().unwrap()),
        want,
        "webhook: {post}"
    );

    // The API: each player's flag, and the counts.
    let seg = server.addr.to_string().replace(':', "%3A");
    let detail = json(&format!("{base}/api/servers/{seg}")).await;
    assert_eq!(detail["server"]["num_bots"], 2, "{detail}");
    for p in detail["players"].as_array().unwrap() {
        let bot = p["ping"] == 0;
        assert_eq!(p["is_bot"], bot, "{p}");
    }
    // The server page: bots marked and not linked; humans linked.
    let (status, page) = get(&format!("{base}/server/{seg}")).await;
    assert_eq!(status, 200);
    assert_eq!(
        page.matches("<tr class=\"player bot\"").count(),
        2,
        "{page}"
    );
    assert_eq!(page.matches("<tr class=\"player\"").count(), 2, "{page}");
    for row in page.split("<tr class=\"player").skip(1) {
        let row = &row[..row.find("</tr>").unwrap()];
        assert_eq!(row.starts_with(" bot"), !row.contains("/player/"), "{row}");
    }

    // The search: no bots unless asked.
    let found = json(&format!("{base}/api/players?q=sarge")).await;
    assert_eq!(found["players"].as_array().unwrap().len(), 0, "{found}");
    assert_eq!(found["bots"], false);
    let found = json(&format!("{base}/api/players?q=sarge&bots=1")).await;
    let hits = found["players"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{found}");
    assert_eq!(hits[0]["is_bot"], true, "{found}");
    let sarge = hits[0]["player_id"].as_i64().unwrap();
    let alice = json(&format!("{base}/api/players?q=alice")).await;
    assert_eq!(alice["players"][0]["is_bot"], false, "{alice}");
    let (_, page) = get(&format!("{base}/players?q=sarge")).await;
    assert!(!page.contains("class=\"hit"), "{page}");
    assert!(page.contains("bots left out"), "{page}");
    let (_, page) = get(&format!("{base}/players?q=sarge&bots=1")).await;
    assert!(page.contains("<tr class=\"hit bot\""), "{page}");

    // No player page for a bot, unless asked.
    let (status, body) = get(&format!("{base}/player/{sarge}")).await;
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("bot"), "{body}");
    assert_eq!(get(&format!("{base}/api/players/{sarge}")).await.0, 404);
    // Nor a feed to watch (the page's `watch` link is a human's).
    assert_eq!(
        get(&format!("{base}/player/{sarge}/feed.atom")).await.0,
        404
    );
    let (status, page) = get(&format!("{base}/player/{sarge}?bots=1")).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("<span class=\"badge bot\""), "{page}");
    let api = json(&format!("{base}/api/players/{sarge}?bots=1")).await;
    assert_eq!(api["is_bot"], true, "{api}");
    assert_eq!(api["sessions"][0]["is_bot"], true, "{api}");
    let _ = web.stop.send(true);
}

/// A name in `[privacy] opt_out` is never stored; a name forgotten with `Store::forget` (what
/// `fragstat track forget` runs) disappears from every page, the API, the search and its
/// history, is never announced again (not even leaving), and is never stored again; their
/// servers still count them.
async fn opt_out_and_forget(database: String) {
    let server = Server::serving(q3(&[]));
    let c = config(
        database.clone(),
        server.addr,
        "[privacy]\nopt_out = [\"BOB\"]\n",
    );
    let tracker = Tracker::open(c).await.unwrap();
    let web = support::serve(tracker.state()).await;
    let base = web.base.clone();
    tracker.round().await.unwrap();
    let mut sse = Sse::open(&format!("{base}/api/events")).await;
    server.set(Some(q3(&PLAYERS)));
    tracker.round().await.unwrap();
    let events = sse.take(3).await;
    let names: Vec<String> = joined(&events).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["Alice", "Grunt", "Sarge"], "{events:?}");

    let seg = server.addr.to_string().replace(':', "%3A");
    let appears_nowhere = |name: &'static str| {
        let base = base.clone();
        let seg = seg.clone();
        async move {
            let lower = name.to_lowercase();
            let found = json(&format!("{base}/api/players?q={lower}&bots=1")).await;
            assert_eq!(found["players"], serde_json::json!([]), "{name}: {found}");
            let (_, page) = get(&format!("{base}/players?q={lower}&bots=1")).await;
            assert!(!page.contains("class=\"hit"), "{name}: {page}");
            let detail = json(&format!("{base}/api/servers/{seg}")).await;
            assert!(
                !detail.to_string().to_lowercase().contains(&lower),
                "{name}: {detail}"
            );
            let (_, page) = get(&format!("{base}/server/{seg}")).await;
            assert!(!page.to_lowercase().contains(&lower), "{name}: {page}");
        }
    };
    appears_nowhere("Bob").await;
    let detail = json(&format!("{base}/api/servers/{seg}")).await;
    assert_eq!(
        detail["server"]["num_players"], 4,
        "still counted: {detail}"
    );

    // Alice is kept, then forgotten (as `fragstat track forget alice` does, from its own
    // connection).
    let alice = json(&format!("{base}/api/players?q=alice")).await;
    let alice_id = alice["players"][0]["player_id"]
        .as_i64()
        .expect("Alice kept");
    let admin = fragstat_tracker::store::Store::open(&database)
        .await
        .unwrap();
    let done = admin.forget("ALICE").await.unwrap();
    assert_eq!((done.players, done.sessions), (1, 1), "{done:?}");
    admin.close().await;
    // Her history is gone at once; the live list and the writer's memory at the next round.
    assert_eq!(
        get(&format!("{base}/player/{alice_id}?bots=1")).await.0,
        404
    );
    assert_eq!(
        get(&format!("{base}/api/players/{alice_id}?bots=1"))
            .await
            .0,
        404
    );
    tracker.round().await.unwrap();
    appears_nowhere("Alice").await;
    appears_nowhere("Bob").await;
    // A client resuming from the first event is not replayed her join either (the SSE
    // buffer forgot it at the round).
    let boot = tracker.events().hub().boot();
    let mut resumed = Sse::open(&format!(
        "{base}/api/events?kind=player_joined&last_event_id={boot}-0"
    ))
    .await;
    // She leaves, and a new player comes: the only event is the newcomer's.
    server.set(Some(q3(&[
        ("^1Bob", 55, false),
        ("Sarge", 0, true),
        ("Grunt", 0, true),
        ("Carol", 30, false),
    ])));
    tracker.round().await.unwrap();
    let next = sse.take(1).await;
    assert_eq!(next[0]["event"], "player_joined", "{next:?}");
    assert_eq!(next[0]["name"], "Carol", "{next:?}");
    // Resumed: the kept joins but hers, then Carol's live.
    let replayed: Vec<String> = resumed
        .take(3)
        .await
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect();
    let mut kept = replayed[..2].to_vec();
    kept.sort();
    assert_eq!(
        (kept, &replayed[2]),
        (
            vec!["Grunt".to_string(), "Sarge".to_string()],
            &"Carol".to_string()
        ),
        "{replayed:?}"
    );
    server.set(Some(q3(&PLAYERS)));
    tracker.round().await.unwrap();
    let next = sse.take(1).await;
    assert_eq!(next[0]["event"], "player_left", "{next:?}");
    assert_eq!(next[0]["name"], "Carol", "{next:?}");
    appears_nowhere("Alice").await;
    let counts = tracker.store().counts().await.unwrap();
    // Sarge, Grunt, Carol: no Alice, no Bob.
    assert_eq!(counts.players, 3, "{counts:?}");
    let _ = web.stop.send(true);
}

#[tokio::test(flavor = "multi_thread")]
async fn opted_out_and_forgotten_players_appear_nowhere_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    opt_out_and_forget(dir.path().join("t.db").display().to_string()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn opted_out_and_forgotten_players_appear_nowhere_postgres() {
    let Some(pg) = fragstat_testkit::postgres::Postgres::start() else {
        return;
    };
    opt_out_and_forget(pg.url.clone()).await;
}

/// A q3 server at `addr` listing `names` (humans as far as anyone can tell).
fn listing(addr: &str, names: &[&str]) -> fragstat::Record {
    use fragstat::core::model::{Dialect, Player, ServerInfo, Text};
    let mut info = ServerInfo::default();
    info.name = Text::new(b"^3window".to_vec(), Dialect::Quake);
    info.map = Text::new(b"q3dm17".to_vec(), Dialect::Quake);
    info.max_players = 16;
    info.num_players = u32::try_from(names.len()).unwrap();
    info.players = Some(
        names
            .iter()
            .map(|n| {
                let mut p = Player::new(Text::new(n.as_bytes().to_vec(), Dialect::Quake));
                p.ping = Some(50);
                p
            })
            .collect(),
    );
    fragstat::Record::online(Some(addr.into()), "q3", info, None)
}

/// The search covers every player kept by default (a week here), newest first, says its
/// window, takes another (`hours`, a form field) and pages (`limit`, `page`).
#[tokio::test(flavor = "multi_thread")]
async fn search_covers_the_players_window_newest_first_and_pages() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let tracker = Tracker::open(support::quiet_config(&db, "retention_hours = 168"))
        .await
        .unwrap();
    let now = fragstat_tracker::round::now_ms();
    let hour = 3_600_000;
    for (at, name) in [
        (now - 72 * hour, "eve_old"),
        (now - 2 * hour, "eve_mid"),
        (now - 10_000, "eve_new"),
    ] {
        let round = fragstat_tracker::store::RoundData {
            at,
            finished: at + 5,
            records: vec![listing("127.0.0.1:27960", &[name])],
            ..Default::default()
        };
        tracker.store().write_round(&round).await.unwrap();
    }
    let web = support::serve(tracker.state()).await;
    let base = web.base.clone();
    let names = |v: &Value| -> Vec<String> {
        v["players"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_string())
            .collect()
    };
    // Three days ago is within the week kept: found by default, newest first.
    let all = json(&format!("{base}/api/players?q=eve")).await;
    assert_eq!(names(&all), ["eve_new", "eve_mid", "eve_old"], "{all}");
    assert_eq!(all["hours"], Value::Null);
    assert!(all["since"].as_i64().unwrap() <= now - 167 * hour, "{all}");
    assert_eq!(all["more"], false);
    let day = json(&format!("{base}/api/players?q=eve&hours=24")).await;
    assert_eq!(names(&day), ["eve_new", "eve_mid"], "{day}");
    // Pages of one.
    for (page, want, more) in [
        (1, "eve_new", true),
        (2, "eve_mid", true),
        (3, "eve_old", false),
    ] {
        let p = json(&format!("{base}/api/players?q=eve&limit=1&page={page}")).await;
        assert_eq!(names(&p), [want], "{p}");
        assert_eq!(p["more"], more, "{p}");
    }
    assert_eq!(
        get(&format!("{base}/api/players?q=eve&limit=500&page=11"))
            .await
            .0,
        400
    );
    // The page says its window and offers the others.
    let (_, page) = get(&format!("{base}/players?q=eve")).await;
    assert!(
        page.contains("Searching all the players kept (seen in the last 7 days"),
        "{page}"
    );
    assert!(page.contains("<select name=\"hours\">"), "{page}");
    assert!(
        page.contains("<option value=\"24\">the last 24 hours</option>"),
        "{page}"
    );
    assert_eq!(page.matches("<tr class=\"hit\"").count(), 3, "{page}");
    let (_, page) = get(&format!("{base}/players?q=eve&hours=24&limit=1")).await;
    assert!(
        page.contains("the players seen in the last 24 hours"),
        "{page}"
    );
    assert!(
        page.contains("<option value=\"24\" selected>the last 24 hours</option>"),
        "{page}"
    );
    assert!(page.contains("rel=\"next\""), "{page}");
    // A week is the most: the players are kept no longer.
    assert_eq!(
        get(&format!("{base}/api/players?q=eve&hours=169")).await.0,
        400
    );
    let _ = web.stop.send(true);
}
