//! Stats, from known sessions: each game's players over time (per round, then downsampled),
//! the 24-hour peak and the records, the top players of a game and of a server (bots left
//! out, sessions split by game), the maps' time; in SQLite and in a real PostgreSQL server.
//! Then the pages and the API over HTTP: `/stats`, `/top`, `/maps`, `/api/stats`,
//! `/api/top`, `/api/maps`, their parameters' checks, and the server page's chart block.

mod support;

use fragstat::core::model::{Dialect, Player, ServerInfo, Text};
use fragstat::core::record::Record;
use fragstat_tracker::store::{History, Period, RoundData, Store};

const A: &str = "192.0.2.10:27960";
const B: &str = "192.0.2.11:27960";
const C: &str = "192.0.2.12:27960";
const MINUTE: i64 = 60_000;
/// 2026-11-25 (a Wednesday) 12:00 UTC: the week began on Monday the 23rd.
const T0: i64 = 1_795_608_000_000;

/// A server of `game` on `map` with `humans` and `bots` (marked as bots).
fn online(addr: &str, game: &str, map: &str, humans: &[&str], bots: &[&str]) -> Record {
    let mut info = ServerInfo::default();
    info.name = Text::new(addr.as_bytes().to_vec(), Dialect::Plain);
    info.map = Text::new(map.as_bytes().to_vec(), Dialect::Plain);
    info.max_players = 16;
    info.num_players = u32::try_from(humans.len() + bots.len()).unwrap();
    info.num_bots = Some(u32::try_from(bots.len()).unwrap());
    let mut list = Vec::new();
    for (names, bot) in [(humans, false), (bots, true)] {
        for n in names {
            let mut p = Player::new(Text::new(n.as_bytes().to_vec(), Dialect::Plain));
            p.score = Some(1);
            p.is_bot = Some(bot);
            list.push(p);
        }
    }
    info.players = Some(list);
    Record::online(Some(addr.into()), game, info, None)
}

/// Round `k` (minute k after `t0`): A (q3) on m1 then m2 from minute 20, with ann (minutes
/// 0–29), bob (0–9) and the bot Sarge throughout; B (q3, m1) with cat (0–44); C
/// (openarena, oa_dm1) with ann (5–24).
fn round(t0: i64, k: i64) -> RoundData {
    let pick = |names: &[(&'static str, std::ops::Range<i64>)]| -> Vec<&'static str> {
        names
            .iter()
            .filter(|(_, r)| r.contains(&k))
            .map(|(n, _)| *n)
            .collect()
    };
    let a_map = if k < 20 { "m1" } else { "m2" };
    let at = t0 + k * MINUTE;
    RoundData {
        at,
        finished: at,
        records: vec![
            online(
                A,
                "q3",
                a_map,
                &pick(&[("ann", 0..30), ("bob", 0..10)]),
                &["Sarge"],
            ),
            online(B, "q3", "m1", &pick(&[("cat", 0..45)]), &[]),
            online(C, "openarena", "oa_dm1", &pick(&[("ann", 5..25)]), &[]),
        ],
        ..RoundData::default()
    }
}

/// Writes rounds 0 to 60 from `t0`, each with its upkeep.
async fn write(store: &Store, t0: i64) {
    for k in 0..=60 {
        let r = round(t0, k);
        store.write_round(&r).await.unwrap();
        store.maintain(r.at).await.unwrap();
    }
}

fn names(page: &fragstat_tracker::store::TopPage) -> Vec<(String, i64)> {
    page.players
        .iter()
        .map(|p| (p.name_text().display(), p.seconds))
        .collect()
}

async fn stats_from_known_sessions(url: &str) {
    // Per-round series for 30 minutes, then 10-minute buckets: the first half hour is
    // downsampled by the end.
    let history = History {
        raw: std::time::Duration::from_secs(1800),
        ..History::default()
    };
    let store = Store::open(url).await.unwrap().with_history(history);
    write(&store, T0).await;
    let now = T0 + 60 * MINUTE;

    // Top players: ended sessions, by game, bots left out.
    let q3 = store
        .top_players("q3", Period::Week, now, 0, 10)
        .await
        .unwrap();
    assert_eq!(
        names(&q3),
        [
            ("cat".into(), 2700),
            ("ann".into(), 1800),
            ("bob".into(), 600)
        ]
    );
    assert_eq!(q3.total, 3);
    assert_eq!(
        q3.since,
        T0 - (2 * 24 + 12) * 60 * MINUTE,
        "Monday 00:00 UTC"
    );
    let month = store
        .top_players("q3", Period::Month, now, 1, 1)
        .await
        .unwrap();
    assert_eq!(names(&month), [("ann".into(), 1800)]);
    assert_eq!(month.players[0].rank, 2);
    let oa = store
        .top_players("openarena", Period::Week, now, 0, 10)
        .await
        .unwrap();
    assert_eq!(names(&oa), [("ann".into(), 1200)]);
    // A server's: its own sessions.
    let a = store
        .server_top_players(A, Period::Week, now, 0, 10)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(names(&a), [("ann".into(), 1800), ("bob".into(), 600)]);
    assert!(store
        .server_top_players("192.0.2.99:1", Period::Week, now, 0, 10)
        .await
        .unwrap()
        .is_none());

    // Numbers now, peaks and records: humans are players less bots.
    let games = store.game_stats(now).await.unwrap();
    let g = |id: &str| games.iter().find(|g| g.game == id).unwrap().clone();
    let (site, q3s, oas) = (g("*"), g("q3"), g("openarena"));
    assert_eq!((site.servers_online, site.humans, site.bots), (3, 0, 1));
    assert_eq!(
        site.record.map(|r| (r.humans, r.at)),
        Some((4, T0 + 5 * MINUTE))
    );
    assert_eq!(q3s.record.map(|r| (r.humans, r.at)), Some((3, T0)));
    assert_eq!(oas.record.map(|r| r.humans), Some(1));
    // The last 24 h hold every round: the peak is the record (the downsampled buckets'
    // most is their rounds' most).
    assert_eq!(site.peak_24h.map(|p| p.humans), Some(4));
    assert_eq!(q3s.peak_24h.map(|p| p.humans), Some(3));

    // Players over time: downsampled buckets then rounds, averaged per step.
    let points = store
        .players_over_time(None, T0, 10 * MINUTE)
        .await
        .unwrap();
    assert_eq!(points.len(), 7, "{points:?}");
    // Minutes 0–9: q3 3 humans throughout, openarena 1 from minute 5: 3.5 on average.
    assert_eq!(points[0].at, T0);
    assert_eq!(points[0].rounds, 10);
    assert!((points[0].humans - 3.5).abs() < 1e-9, "{points:?}");
    assert!((points[0].bots - 1.0).abs() < 1e-9, "{points:?}");
    assert_eq!(points[0].humans_max, 4);
    // Minutes 50–59: nobody but the bot.
    assert_eq!(points[5].humans, 0.0);
    let q3_points = store
        .players_over_time(Some("q3"), T0, 10 * MINUTE)
        .await
        .unwrap();
    assert!((q3_points[0].humans - 3.0).abs() < 1e-9, "{q3_points:?}");
    // Minutes 30–39, per round by then: cat alone.
    assert!((q3_points[3].humans - 1.0).abs() < 1e-9, "{q3_points:?}");

    // Maps: humans × time between rounds, servers × time, this week; the servers on each now.
    let maps = store.maps(None, Period::Week, now).await.unwrap();
    let m = |g: &str, name: &str| {
        maps.iter()
            .find(|m| m.game == g && m.map == name)
            .unwrap()
            .clone()
    };
    let m1 = m("q3", "m1");
    // m1: bob 9 rounds, ann 19, cat 44 (the first round has no time before it).
    assert_eq!(m1.player_seconds, (9 + 19 + 44) * 60);
    assert_eq!(m1.server_seconds, (19 + 60) * 60);
    assert_eq!((m1.servers, m1.humans), (1, 0));
    assert_eq!(m("q3", "m2").player_seconds, 10 * 60);
    assert_eq!(maps[0].map, "m1", "most time played first");
    let only_oa = store
        .maps(Some("openarena"), Period::Week, now)
        .await
        .unwrap();
    assert_eq!(only_oa.len(), 1);
    assert_eq!(only_oa[0].player_seconds, 20 * 60);

    // Cached per round: the same answer until the next round is written.
    let first = store
        .cached("k", async {
            Ok::<_, fragstat_tracker::store::StoreError>(1)
        })
        .await
        .unwrap();
    let again = store
        .cached("k", async {
            Ok::<_, fragstat_tracker::store::StoreError>(2)
        })
        .await
        .unwrap();
    assert_eq!((*first, *again), (1, 1));
    store.write_round(&round(T0, 61)).await.unwrap();
    let after = store
        .cached("k", async {
            Ok::<_, fragstat_tracker::store::StoreError>(3)
        })
        .await
        .unwrap();
    assert_eq!(*after, 3);
    // Flooded with distinct keys (every page number a client can ask for), the cache stays
    // bounded, and a visitor's query is still answered, and right.
    for i in 0..2_000 {
        store
            .cached(&format!("flood {i}"), async {
                Ok::<_, fragstat_tracker::store::StoreError>(i)
            })
            .await
            .unwrap();
        assert!(store.stats_cache_len() <= 512);
    }
    let q3 = store
        .top_players("q3", Period::Week, now, 0, 10)
        .await
        .unwrap();
    let cached = store
        .cached("q3 week", async {
            Ok::<_, fragstat_tracker::store::StoreError>(q3.clone())
        })
        .await
        .unwrap();
    assert_eq!(names(&cached)[0], ("cat".into(), 2700));
    // A forgotten player (`fragstat track forget`) leaves the rankings too.
    let done = store.forget("CAT").await.unwrap();
    assert_eq!(done.players, 1);
    let q3 = store
        .top_players("q3", Period::Week, now, 0, 10)
        .await
        .unwrap();
    assert_eq!(
        names(&q3),
        [("ann".into(), 1800), ("bob".into(), 600)],
        "cat forgotten"
    );
    assert_eq!(q3.total, 2);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_stats_from_known_sessions() {
    let dir = tempfile::tempdir().unwrap();
    stats_from_known_sessions(&dir.path().join("stats.db").display().to_string()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_stats_from_known_sessions() {
    let Some(pg) = fragstat_testkit::postgres::Postgres::start() else {
        return;
    };
    stats_from_known_sessions(&pg.url).await;
}

/// A tracker whose store holds rounds 0 to 60 of [`round`] ending now, each with its
/// upkeep, served on loopback.
async fn site() -> (support::Web, tempfile::TempDir, i64) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("web.db");
    let config = support::quiet_config(db.as_ref(), "retention_hours = 200\n");
    let tracker = fragstat_tracker::Tracker::open(config).await.unwrap();
    let t0 = fragstat_tracker::round::now_ms() - 60 * MINUTE;
    write(tracker.store(), t0).await;
    (support::serve(tracker.state()).await, dir, t0)
}

async fn get(url: &str) -> (u16, String) {
    let r = reqwest::get(url).await.expect(url);
    (r.status().as_u16(), r.text().await.unwrap())
}

async fn json(url: &str) -> serde_json::Value {
    let (status, body) = get(url).await;
    assert_eq!(status, 200, "{url}: {body}");
    serde_json::from_str(&body).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn stats_pages_and_api() {
    let (web, _dir, t0) = site().await;
    let b = &web.base;
    // Sessions that crossed the start of this week or month count in part only.
    let whole = |p: Period| p.start(t0) <= t0;

    let s = json(&format!("{b}/api/stats")).await;
    assert_eq!(s["hours"], 24.0);
    assert_eq!(s["games"][0]["game"], "*");
    assert_eq!(s["games"][0]["record"]["humans"], 4, "{s}");
    assert_eq!(s["games"][0]["bots"], 1, "{s}");
    let points = s["points"].as_array().unwrap();
    assert!(points.len() >= 8, "{s}");
    assert!(s["since"].as_i64().unwrap() <= s["until"].as_i64().unwrap() - 24 * 60 * MINUTE);
    let q3 = json(&format!("{b}/api/stats?game=oa&hours=2")).await;
    assert_eq!(q3["game"], "openarena");
    assert_eq!(q3["hours"], 2.0);

    let top = json(&format!("{b}/api/top?game=q3")).await;
    assert_eq!(top["period"], "week");
    let ranking = &top["rankings"][0];
    if whole(Period::Week) {
        let players: Vec<&str> = ranking["players"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(players, ["cat", "ann", "bob"], "{top}");
        assert_eq!(ranking["players"][0]["seconds"], 2700);
    }
    let paged = json(&format!(
        "{b}/api/top?game=q3&per_page=1&page=2&period=month"
    ))
    .await;
    assert_eq!(paged["rankings"][0]["players"][0]["rank"], 2, "{paged}");
    let server = json(&format!("{b}/api/top?server={}", A.replace(':', "%3A"))).await;
    assert_eq!(server["rankings"][0]["server"], A);
    let every = json(&format!("{b}/api/top")).await;
    assert_eq!(every["rankings"].as_array().unwrap().len(), 2, "{every}");

    let maps = json(&format!("{b}/api/maps?game=q3")).await;
    assert_eq!(maps["total"], 2, "{maps}");
    if whole(Period::Week) {
        let first = &maps["maps"][0];
        assert_eq!(
            (&first["map"], &first["servers"]),
            (&"m1".into(), &1.into())
        );
    }
    let page2 = json(&format!("{b}/api/maps?per_page=1&page=2")).await;
    assert_eq!(page2["maps"].as_array().unwrap().len(), 1);
    assert_eq!(page2["pages"], 3);

    for (path, says) in [
        ("/api/stats?game=nosuch", "game"),
        ("/api/stats?hours=0", "hours"),
        ("/api/stats?hours=201", "hours"),
        ("/api/top?period=year", "period"),
        ("/api/top?game=q3&server=1.2.3.4:5", "game and server"),
        ("/api/top?game=q3&per_page=201", "per_page"),
        ("/api/top?game=q3&page=10001", "page"),
        ("/api/maps?page=0", "page"),
        ("/stats?game=nosuch", "game"),
        ("/top?period=day", "period"),
        ("/maps?per_page=x", "per_page"),
    ] {
        let (status, body) = get(&format!("{b}{path}")).await;
        assert_eq!(status, 400, "{path}: {body}");
        assert!(body.contains(says), "{path}: {body}");
    }
    assert_eq!(
        get(&format!("{b}/api/top?server=192.0.2.99%3A1")).await.0,
        404
    );

    // The pages: the chart with its window links, the numbers, the lists.
    let (status, page) = get(&format!("{b}/stats")).await;
    assert_eq!(status, 200);
    assert!(page.contains("<svg id=\"chart\""), "{page}");
    assert!(page.contains("<polyline class=\"humans\""), "{page}");
    assert!(page.contains("href=\"/stats?hours=168\""), "{page}");
    assert!(
        page.contains("<strong aria-current=\"page\">24 h</strong>"),
        "{page}"
    );
    assert!(!page.contains("hours=720"), "200 hours kept: {page}");
    assert!(page.contains("<tr class=\"game\""), "{page}");
    let (_, page) = get(&format!("{b}/top?game=q3")).await;
    if whole(Period::Week) {
        assert!(page.contains("<tr class=\"ranked\""), "{page}");
    }
    assert!(page.contains("this month"), "{page}");
    let (_, page) = get(&format!("{b}/top")).await;
    assert!(page.contains(">OpenArena</a></h2>"), "{page}");
    let (_, page) = get(&format!("{b}/maps")).await;
    assert_eq!(page.matches("<tr class=\"map\"").count(), 3, "{page}");
    // The server page's chart: the window links, humans and bots, the map change marked.
    let (_, page) = get(&format!("{b}/server/{}", A.replace(':', "%3A"))).await;
    assert!(page.contains("<polyline class=\"bots\""), "{page}");
    assert!(page.contains(">m2</text>"), "{page}");
    assert!(page.contains("hours=168"), "{page}");
    assert!(page.contains("/top?server=192.0.2.10%3A27960"), "{page}");
    let _ = web.stop.send(true);
    web.task.await.unwrap().unwrap();
}
