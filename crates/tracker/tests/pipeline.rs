//! The whole tracker pipeline against an emulated farm (Quake III servers and a master from
//! the registry's emulators, on real loopback sockets): masters → probes → one transaction
//! per round → the pages and the JSON API over real HTTP; in SQLite and in a real PostgreSQL
//! server started by the test.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use fragstat::core::registry::{EmuMaster, EmuServer};
use fragstat::core::serve::run;
use fragstat::core::{Transport, UdpTransport};
use fragstat_tracker::config::{Config, Source};
use fragstat_tracker::store::{RoundData, ServerFilter, Sort, Store};
use fragstat_tracker::Tracker;
use tokio::sync::watch;

/// A hostile Quake III server name: markup, SQL and colour codes (a Quake III infostring
/// cannot carry `;`, `"` or `\\`).
const HOSTILE: &[u8] = b"^1<script>alert(1)</script>^7' OR 1=1 DROP TABLE servers--";
/// A hostile Teeworlds server name (UTF-8, `^` is a literal character there).
const HOSTILE_TW: &str = "<img src=x onerror=alert(2)>'; DROP TABLE servers;--^1";

/// Emulated servers and a master listing them (and one address where nothing answers).
struct Farm {
    servers: Vec<SocketAddr>,
    /// A Teeworlds server (not listed by the master) named [`HOSTILE_TW`], one player.
    tw: SocketAddr,
    /// A listed address where nothing listens (held for the test): `down`.
    down: fragstat_testkit::RefusingUdp,
    master: SocketAddr,
    stop: watch::Sender<bool>,
}

impl Drop for Farm {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// Servers: (name, map, players).
async fn farm(servers: &[(&[u8], &str, usize)]) -> Farm {
    let game = fragstat::game("q3").expect("q3");
    let (stop, rx) = watch::channel(false);
    let mut addrs = Vec::new();
    let spawn = |socket: Arc<dyn Transport>, service: Box<dyn fragstat::core::service::Service>| {
        let mut rx = rx.clone();
        tokio::spawn(run(socket, service, async move {
            while !*rx.borrow() {
                if rx.changed().await.is_err() {
                    break;
                }
            }
        }));
    };
    for (i, (name, map, players)) in servers.iter().enumerate() {
        let socket: Arc<dyn Transport> =
            Arc::new(UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap());
        addrs.push(socket.local_addr().unwrap());
        let c = EmuServer::new(name.to_vec(), *map, *players).with_seed(i as u64 + 1);
        spawn(
            socket,
            game.emulator()
                .expect("built with emulators")
                .emulated_server(&c)
                .unwrap(),
        );
    }
    let tw_game = fragstat::game("teeworlds").expect("teeworlds");
    let socket: Arc<dyn Transport> =
        Arc::new(UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap());
    let tw = socket.local_addr().unwrap();
    let c = EmuServer::new(HOSTILE_TW.as_bytes().to_vec(), "dm1", 1).with_seed(9);
    spawn(
        socket,
        tw_game
            .emulator()
            .expect("built with emulators")
            .emulated_server(&c)
            .unwrap(),
    );
    let down = fragstat_testkit::RefusingUdp::v4();
    let mut listed = addrs.clone();
    listed.push(down.addr);
    let socket: Arc<dyn Transport> =
        Arc::new(UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap());
    let master = socket.local_addr().unwrap();
    spawn(
        socket,
        game.emulator()
            .expect("built with emulators")
            .emulated_master(&EmuMaster::new(listed))
            .unwrap(),
    );
    Farm {
        servers: addrs,
        tw,
        down,
        master,
        stop,
    }
}

fn config(database: &str, farm: &Farm) -> Config {
    let mut c = Config {
        database: database.to_string(),
        listen: "127.0.0.1:0".parse().unwrap(),
        interval_secs: 0.2,
        retention_hours: 0.0,
        timeout_ms: 200,
        retries: 1,
        ..Config::default()
    };
    c.sources.push(Source {
        game: "q3".into(),
        masters: vec![farm.master.to_string()],
        servers: Vec::new(),
        ext: false,
    });
    c.sources.push(Source {
        game: "teeworlds".into(),
        masters: Vec::new(),
        servers: vec![farm.tw.to_string()],
        ext: false,
    });
    c
}

async fn get(client: &reqwest::Client, url: &str) -> (u16, String) {
    let r = client.get(url).send().await.expect(url);
    let status = r.status().as_u16();
    (status, r.text().await.expect("body"))
}

/// Runs three rounds against the farm into `database`, then checks the rows, the pages and
/// the API.
async fn pipeline(database: &str) {
    let farm = farm(&[
        (HOSTILE, "q3dm17", 2),
        (b"^2Green ^7Server", "q3dm6", 6),
        (b"Empty", "q3tourney2", 0),
        (b"^4Blue ^3Three", "q3dm6", 3),
    ])
    .await;
    let tracker = Tracker::open(config(database, &farm))
        .await
        .expect("open tracker");
    let store = tracker.store().clone();
    let mut ats = Vec::new();
    for _ in 0..3 {
        let r = tracker.round().await.expect("round");
        assert_eq!(r.masters.len(), 1);
        assert_eq!(r.masters[0].servers, Some(5), "{:?}", r.masters);
        ats.push(r.data.at);
        // Rounds are keyed by their start in milliseconds: the next starts in a later one.
        while std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
            <= u128::try_from(r.data.at).unwrap()
        {
            tokio::task::yield_now().await;
        }
    }

    // Rows: 6 servers (one down) in the series of each round; a session per player, all
    // still open; a state row per server (none changed after the first round).
    let counts = store.counts().await.unwrap();
    assert_eq!(counts.rounds, 3, "{counts:?}");
    assert_eq!(counts.servers, 6, "{counts:?}");
    assert_eq!(counts.series, 18, "{counts:?}");
    assert_eq!(counts.series_players, 3 * (2 + 6 + 3 + 1), "{counts:?}");
    assert_eq!(counts.sessions, 2 + 6 + 3 + 1, "{counts:?}");
    assert_eq!(counts.open_sessions, counts.sessions, "{counts:?}");
    assert_eq!(counts.changes, 6, "{counts:?}");
    let rounds = store.rounds(10).await.unwrap();
    assert!(
        rounds
            .iter()
            .all(|r| r.servers == 6 && r.online == 5 && r.players == 12),
        "{rounds:?}"
    );

    // The hostile name is stored byte for byte.
    let hostile = store
        .server(&farm.servers[0].to_string())
        .await
        .unwrap()
        .expect("hostile server");
    assert_eq!(hostile.name_raw.as_deref(), Some(HOSTILE));
    let tw = store
        .server(&farm.tw.to_string())
        .await
        .unwrap()
        .expect("teeworlds server");
    assert_eq!(tw.name_raw.as_deref(), Some(HOSTILE_TW.as_bytes()));
    assert_eq!(tw.dialect.as_deref(), Some("plain"));
    let down = store
        .server(&farm.down.addr.to_string())
        .await
        .unwrap()
        .expect("down server");
    // ICMP port unreachable: down at once, not a timeout.
    assert_eq!(down.status, "down");
    assert_eq!(down.last_online, None);

    // Filters and sorts, hostile input included.
    let all = store.servers(&ServerFilter::default()).await.unwrap();
    assert_eq!(all.len(), 6);
    assert_eq!(all[0].num_players, Some(6));
    assert_eq!(all[5].addr, farm.down.addr.to_string(), "offline last");
    let f = |name: &str| ServerFilter {
        name: Some(name.into()),
        ..ServerFilter::default()
    };
    let hits = store.servers(&f("drop table")).await.unwrap();
    assert_eq!(hits.len(), 2);
    assert!(
        store.servers(&f("%")).await.unwrap().is_empty(),
        "% is literal"
    );
    let hits = store.servers(&f("'; DROP TABLE servers;--")).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].addr, farm.tw.to_string());
    let by_map = store
        .servers(&ServerFilter {
            map: Some("DM6".into()),
            sort: Sort::Name,
            ..ServerFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(by_map.len(), 2);
    assert_eq!(
        by_map[0].addr,
        farm.servers[3].to_string(),
        "blue three < green"
    );
    // The country and password sorts (no country on loopback; the down server says no
    // password): valid in both backends, servers that answered first.
    for sort in [Sort::Country, Sort::Password] {
        for desc in [false, true] {
            let rows = store
                .servers(&ServerFilter {
                    sort,
                    desc: Some(desc),
                    ..ServerFilter::default()
                })
                .await
                .unwrap();
            assert_eq!(rows.len(), 6);
            assert_eq!(rows[5].addr, farm.down.addr.to_string(), "{sort:?}");
        }
    }
    // Several servers in one query (the player search's, a player page's): what one by one
    // reads; and the records of the games asked for.
    let addrs: Vec<&str> = all.iter().map(|s| s.addr.as_str()).collect();
    let many = store.servers_at(&addrs).await.unwrap();
    assert_eq!(many.len(), 6);
    for s in &all {
        assert_eq!(many.get(&s.addr), Some(s));
    }
    let records = store.records_at(&addrs, &["teeworlds"]).await.unwrap();
    let tw_addr = farm.tw.to_string();
    assert_eq!(records.keys().collect::<Vec<_>>(), [&tw_addr]);
    assert_eq!(
        records.get(&tw_addr),
        store.server_record(&tw_addr).await.unwrap().as_ref()
    );

    // History and players.
    let green = farm.servers[1].to_string();
    let history = store.history(&green, 0).await.unwrap();
    assert_eq!(history.iter().map(|h| h.at).collect::<Vec<_>>(), ats);
    assert!(history.iter().all(|h| h.num_players == Some(6)));
    assert!(history.iter().all(|h| h.map.as_deref() == Some("q3dm6")));
    let record: serde_json::Value =
        serde_json::from_str(&store.server_record(&green).await.unwrap().unwrap()).unwrap();
    assert_eq!(record["rules"]["mapname"], "q3dm6");
    assert!(
        record.get("players").is_none(),
        "players are sessions of their own"
    );
    let players = store.players_on(&green).await.unwrap();
    assert_eq!(players.len(), 6);
    assert_eq!(players[0].at, ats[2]);
    assert_eq!(players[0].joined, ats[0]);
    let name = players[0].name_text().display();
    let found = store
        .find_players(&name.to_uppercase(), 0, 100)
        .await
        .unwrap();
    // One player per identity (the emulators' names repeat on every server: one identity,
    // last seen on one of them).
    assert_eq!(found.len(), 1, "{name}: {found:?}");
    assert_eq!(found[0].player_id, players[0].player_id);
    assert!(found[0].online && found[0].addr.is_some(), "{found:?}");
    // The player's page, the map history and the uptime.
    let profile = store
        .player(players[0].player_id, 10)
        .await
        .unwrap()
        .expect("player");
    assert!(
        profile
            .sessions
            .iter()
            .any(|s| s.addr == green && s.left.is_none() && s.joined == ats[0]),
        "{profile:?}"
    );
    assert_eq!(profile.first_seen, ats[0]);
    let maps = store.map_history(&green, 0, 10).await.unwrap();
    assert_eq!(maps.len(), 1, "{maps:?}");
    assert_eq!(
        (maps[0].map.as_str(), maps[0].from, maps[0].to),
        ("q3dm6", ats[0], None)
    );
    let up = store.uptime(&green, 0).await.unwrap();
    assert_eq!(up.fraction, Some(1.0));
    assert_eq!((up.up_since, up.down_since), (Some(ats[0]), None));
    let up = store.uptime(&farm.down.addr.to_string(), 0).await.unwrap();
    assert_eq!(up.fraction, Some(0.0));
    assert_eq!(up.down_since, Some(ats[0]));

    // The web side, over real HTTP.
    let support::Web {
        base,
        stop: tx,
        task: web,
    } = support::serve(tracker.state()).await;
    let client = reqwest::Client::new();
    let (status, page) = get(&client, &format!("{base}/")).await;
    assert_eq!(status, 200);
    assert_eq!(page.matches("<tr class=\"server ").count(), 6, "{page}");
    assert!(
        !page.contains("<script>alert"),
        "hostile name rendered as markup"
    );
    assert!(!page.contains("<img"), "hostile name rendered as markup");
    assert!(
        page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{page}"
    );
    assert!(page.contains("&lt;img src=x onerror=alert(2)&gt;'; DROP TABLE servers;--^1"));
    // `^1` red, lightened for contrast on the page's background (the API keeps the game's).
    let red = fragstat_tracker::web::readable([255, 0, 0], fragstat_tracker::web::BACKGROUND);
    let red = format!("#{:02x}{:02x}{:02x}", red[0], red[1], red[2]);
    assert!(
        page.contains(&format!("style=\"color:{red};--light:")),
        "{red}: {page}"
    );
    let (status, page) = get(
        &client,
        &format!("{base}/?name=%27%3B+DROP+TABLE+servers%3B--&sort=ping"),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(page.matches("<tr class=\"server ").count(), 1);
    assert_eq!(get(&client, &format!("{base}/?sort=bogus")).await.0, 400);

    let (status, body) = get(&client, &format!("{base}/api/servers")).await;
    assert_eq!(status, 200);
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    let servers = json["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 6);
    let h = servers
        .iter()
        .find(|s| s["addr"] == farm.servers[0].to_string())
        .unwrap();
    assert_eq!(
        h["name_raw"],
        "^1<script>alert(1)</script>^7' OR 1=1 DROP TABLE servers--"
    );
    assert_eq!(
        h["name"],
        "<script>alert(1)</script>' OR 1=1 DROP TABLE servers--"
    );
    assert_eq!(h["name_runs"][0]["color"], "#ff0000");
    assert_eq!(json["last_round"]["at"], ats[2]);

    // The server page: the chart has the three rounds, the player table six rows.
    let seg = green.replace(':', "%3A");
    let (status, page) = get(&client, &format!("{base}/server/{seg}")).await;
    assert_eq!(status, 200);
    assert!(page.contains("<svg id=\"chart\""), "{page}");
    assert!(page.contains("data-points=\"3\""), "{page}");
    assert_eq!(page.matches("<polyline class=\"humans\"").count(), 1);
    // Every second emulated player a bot (ping 0, counted by getinfo): marked (issue 34).
    assert_eq!(page.matches("<tr class=\"player\"").count(), 3);
    assert_eq!(page.matches("<tr class=\"player bot\"").count(), 3);
    let (status, body) = get(
        &client,
        &format!("{base}/api/servers/{seg}/history?since=0"),
    )
    .await;
    assert_eq!(status, 200);
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(json["history"].as_array().unwrap().len(), 3);
    assert_eq!(
        get(&client, &format!("{base}/server/10.0.0.1%3A1")).await.0,
        404
    );
    let (status, page) = get(
        &client,
        &format!("{base}/players?q={}", name.to_lowercase()),
    )
    .await;
    assert_eq!(status, 200);
    assert!(page.contains("<tr class=\"hit\""), "{page}");
    // The hit links to the player's page, which lists where it played.
    let pid = found[0].player_id;
    assert!(page.contains(&format!("href=\"/player/{pid}\"")), "{page}");
    let (status, page) = get(&client, &format!("{base}/player/{pid}")).await;
    assert_eq!(status, 200);
    assert!(page.contains("<tr class=\"session\""), "{page}");
    assert_eq!(get(&client, &format!("{base}/player/999999")).await.0, 404);

    // Every path the OpenAPI document lists answers, with a real address for {addr} and a
    // real player for {id}.
    let (status, body) = get(&client, &format!("{base}/api/openapi.json")).await;
    assert_eq!(status, 200);
    let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.len() >= 7);
    for path in paths.keys() {
        // No parameter a path does not take (that is a 400; tests/openapi.rs checks each).
        let url = format!(
            "{base}{}",
            path.replace("{addr}", &seg)
                .replace("{id}", &pid.to_string())
        );
        // The status only: `/api/events` is a stream that ends when the tracker stops.
        let status = client.get(&url).send().await.expect(&url).status();
        assert_eq!(status, 200, "{url}");
    }
    // The Server schema's required keys are exactly the keys the API writes.
    let required: Vec<&str> = doc["components"]["schemas"]["Server"]["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let written: Vec<&str> = h.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(required, written);
    // And the player search's.
    let (status, body) = get(
        &client,
        &format!("{base}/api/players?q={}", name.to_lowercase()),
    )
    .await;
    assert_eq!(status, 200);
    let hits: serde_json::Value = serde_json::from_str(&body).unwrap();
    let hit = hits["players"][0].as_object().expect("a player found");
    let mut written: Vec<&str> = hit.keys().map(String::as_str).collect();
    let mut required: Vec<&str> = doc["components"]["schemas"]["PlayerHit"]["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    written.sort_unstable();
    required.sort_unstable();
    assert_eq!(required, written);

    let (status, metrics) = get(&client, &format!("{base}/metrics")).await;
    assert_eq!(status, 200);
    assert!(
        metrics.contains("fragstat_tracker_rounds_total 3"),
        "{metrics}"
    );
    assert!(metrics.contains("fragstat_tracker_servers{status=\"down\"} 1"));
    let _ = tx.send(true);
    web.await.unwrap().unwrap();

    // The table survived everything above.
    assert_eq!(store.counts().await.unwrap().servers, 6);
}

/// Retention: a round older than the retention goes when the next round is written.
async fn retention(database: &str) {
    let farm = farm(&[(b"Solo", "q3dm17", 1)]).await;
    let mut c = config(database, &farm);
    c.retention_hours = 1.0;
    c.snapshot_records = false;
    let tracker = Tracker::open(c).await.unwrap();
    let store = tracker.store();
    let old = fragstat_tracker::round::now_ms() - 2 * 3_600_000;
    store
        .write_round(&RoundData {
            at: old,
            finished: old,
            ..RoundData::default()
        })
        .await
        .unwrap();
    assert_eq!(store.rounds(10).await.unwrap().len(), 1);
    let r = tracker.round().await.unwrap();
    let rounds = store.rounds(10).await.unwrap();
    assert_eq!(rounds.len(), 1);
    assert_eq!(rounds[0].at, r.data.at);
    // The series is kept, the record only as the latest state.
    let solo = farm.servers[0].to_string();
    assert_eq!(
        store.history(&solo, 0).await.unwrap()[0].num_players,
        Some(1)
    );
    assert!(store.server_record(&solo).await.unwrap().is_some());
}

/// Names and maps with NUL and invalid UTF-8 bytes are written (PostgreSQL's TEXT refuses
/// U+0000) and read back byte for byte.
async fn odd_bytes(database: &str) {
    use fragstat::core::model::{Dialect, Text};
    use fragstat::core::record::Record;
    let store = Store::open(database).await.unwrap();
    let mut info = fragstat::ServerInfo::default();
    info.name = Text::new(b"nul\0name \xff\xfe ^1x".to_vec(), Dialect::Quake);
    info.map = Text::new(b"map\0".to_vec(), Dialect::Plain);
    info.gametype = Some("g\0t".into());
    let mut p = fragstat::Player::default();
    p.name = Text::new(b"p\0\xff".to_vec(), Dialect::Plain);
    info.players = Some(vec![p]);
    info.num_players = 1;
    let rec = Record::online(Some("192.0.2.1:27960".into()), "q3", info, None);
    store
        .write_round(&RoundData {
            at: 1000,
            finished: 1001,
            records: vec![rec],
            ..RoundData::default()
        })
        .await
        .expect("odd bytes written");
    let row = store.server("192.0.2.1:27960").await.unwrap().unwrap();
    assert_eq!(
        row.name_raw.as_deref(),
        Some(&b"nul\0name \xff\xfe ^1x"[..])
    );
    assert_eq!(row.map.as_deref(), Some("map\u{FFFD}"));
    let players = store.players_on("192.0.2.1:27960").await.unwrap();
    assert_eq!(players[0].name_raw, b"p\0\xff");
    let record: serde_json::Value = serde_json::from_str(
        &store
            .server_record("192.0.2.1:27960")
            .await
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(record["name_raw"], "nul\u{0}name \u{ff}\u{fe} ^1x");
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_odd_bytes() {
    let dir = tempfile::tempdir().unwrap();
    odd_bytes(&dir.path().join("o.db").display().to_string()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_odd_bytes() {
    let Some(pg) = fragstat_testkit::postgres::Postgres::start() else {
        return;
    };
    odd_bytes(&pg.url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_pipeline_against_emulated_farm() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("track.db");
    pipeline(&db.display().to_string()).await;
    // Reopening runs no migration twice and keeps the rows.
    let store = Store::open(&db.display().to_string()).await.unwrap();
    assert_eq!(store.migrations().await.unwrap(), vec![1, 2, 3, 4, 5]);
    assert_eq!(store.counts().await.unwrap().rounds, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_retention_prunes_old_rounds() {
    let dir = tempfile::tempdir().unwrap();
    retention(&dir.path().join("r.db").display().to_string()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_pipeline_against_emulated_farm() {
    let Some(pg) = fragstat_testkit::postgres::Postgres::start() else {
        return;
    };
    pipeline(&pg.url).await;
    let store = Store::open(&pg.url).await.unwrap();
    assert_eq!(store.migrations().await.unwrap(), vec![1, 2, 3, 4, 5]);
    assert_eq!(store.counts().await.unwrap().rounds, 3);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_retention_prunes_old_rounds() {
    let Some(pg) = fragstat_testkit::postgres::Postgres::start() else {
        return;
    };
    retention(&pg.url).await;
}

/// An HTTP master (DDNet's `servers.json`, served on loopback) lists an emulated DDNet
/// server; the tracker fetches the list, probes the server over UDP and stores its players.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_master_lists_ddnet_servers() {
    let game = fragstat::game("ddnet").expect("ddnet");
    let socket: Arc<dyn Transport> =
        Arc::new(UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap());
    let server = socket.local_addr().unwrap();
    let c = EmuServer::new(b"DDNet ^1tracked".to_vec(), "Tutorial", 3).with_seed(4);
    let (stop, mut rx) = watch::channel(false);
    tokio::spawn(run(
        socket,
        game.emulator()
            .expect("built with emulators")
            .emulated_server(&c)
            .unwrap(),
        async move {
            let _ = rx.changed().await;
        },
    ));
    let body = serde_json::json!({"servers": [{
        "addresses": [format!("tw-0.6+udp://{server}")],
        "location": "eu:de",
        "info": {"max_clients": 16, "max_players": 16, "passworded": false,
                 "game_type": "DDraceNetwork", "name": "DDNet ^1tracked",
                 "map": {"name": "Tutorial"}, "version": "0.6.4, 16.4", "clients": []}
    }]})
    .to_string();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let http = listener.local_addr().unwrap();
    let app = axum::Router::new().route(
        "/servers.json",
        axum::routing::get(move || {
            let body = body.clone();
            async move { body }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });

    let dir = tempfile::tempdir().unwrap();
    let mut c = Config {
        database: dir.path().join("d.db").display().to_string(),
        timeout_ms: 300,
        ..Config::default()
    };
    c.sources.push(Source {
        game: "ddnet".into(),
        masters: vec![
            format!("http://{http}/servers.json"),
            format!("http://{http}/missing.json"),
        ],
        servers: Vec::new(),
        ext: false,
    });
    let tracker = Tracker::open(c).await.unwrap();
    let r = tracker.round().await.unwrap();
    assert_eq!(r.masters.len(), 2, "{:?}", r.masters);
    assert_eq!(r.masters[0].servers, Some(1), "{:?}", r.masters);
    // The client's error stays typed up to the round's report.
    assert!(
        matches!(
            r.masters[1].error.as_ref(),
            Some(fragstat::Error::Http {
                status: Some(404),
                ..
            })
        ),
        "{:?}",
        r.masters
    );
    let row = tracker
        .store()
        .server(&server.to_string())
        .await
        .unwrap()
        .expect("listed server");
    assert_eq!(row.status, "online");
    assert_eq!(row.game, "ddnet");
    assert_eq!(row.dialect.as_deref(), Some("plain"));
    assert_eq!(row.name_raw.as_deref(), Some(&b"DDNet ^1tracked"[..]));
    // The list's `location` (eu:de) is the server's country, stored with it.
    assert_eq!(row.country.as_deref(), Some("DE"));
    assert_eq!(
        tracker
            .store()
            .players_on(&server.to_string())
            .await
            .unwrap()
            .len(),
        3
    );
    let _ = stop.send(true);
}

/// Seeds `n` player identities straight into the database (names `seed…`, some with an `a`).
async fn seed_players(database: &str, n: i64) {
    sqlx::any::install_default_drivers();
    let pool = sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(&fragstat_tracker::store::database_url(database))
        .await
        .unwrap();
    let now = fragstat_tracker::round::now_ms();
    // `name_raw` holds bytes: a text literal would be stored (SQLite) as TEXT.
    let bytes = if database.starts_with("postgres") {
        "BYTEA"
    } else {
        "BLOB"
    };
    let mut tx = pool.begin().await.unwrap();
    let mut i = 0;
    while i < n {
        let rows = (n - i).min(500);
        let mut sql = String::from(
            "INSERT INTO players (name_raw, dialect, name, first_seen, last_seen) VALUES ",
        );
        for k in 0..rows {
            let id = i + k;
            if k > 0 {
                sql.push_str(", ");
            }
            // Numbers only: no bound value needed, nothing to escape. Seen in the last two
            // and a half days (inside every search window), every name with an `a`.
            let seen = now - id * 1000;
            sql.push_str(&format!(
                "(CAST('seed{id}a' AS {bytes}), 'plain', 'seed{id}a', {seen}, {seen})"
            ));
        }
        sqlx::query(&sql).execute(&mut *tx).await.unwrap();
        i += rows;
    }
    tx.commit().await.unwrap();
    pool.close().await;
}

/// R7: web load never makes a round fail. With 200,000 players seeded (all seen in the last
/// days, every name with an `a`), 16 clients search `/api/players` over the widest window it
/// takes (30 days) without pause — `a`, which matches every name and is too short for the
/// trigram index, so each walks the whole table, and `qz`, which matches none — while rounds
/// are written: every round is written (the writer has its own connection) and every search
/// is answered.
async fn searches_during_a_round(database: &str) {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let farm = farm(&[(b"Busy", "q3dm17", 4), (b"Quiet", "q3dm6", 1)]).await;
    // No API request rate ([web.api]): this test is about rounds under web load.
    let mut c = config(database, &farm);
    (c.web.api.rate, c.web.api.site_rate, c.web.api.net_rate) = (0, 0, 0);
    let tracker = Tracker::open(c).await.unwrap();
    tracker.round().await.expect("first round");
    seed_players(database, 200_000).await;
    let listener = fragstat_tracker::web::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (tx, mut rx) = watch::channel(false);
    // Room above the 16 clients from one address and no request rate: this test is about
    // rounds under web load, not the guard (a client's pool briefly opens a second
    // connection while its first goes back to the pool; at the per-host cap that one
    // displaces an idle one, maybe the client's own, whose next request then fails).
    let limits = fragstat_http_guard::Limits {
        max_per_ip: 64,
        request_rate: fragstat_http_guard::Rate::UNLIMITED,
        net_request_rate: fragstat_http_guard::Rate::UNLIMITED,
        ..fragstat_http_guard::Limits::default()
    };
    let web = tokio::spawn(fragstat_tracker::web::serve_guarded(
        listener,
        tracker.state(),
        limits,
        fragstat_http_guard::ClientIp::default(),
        async move {
            let _ = rx.changed().await;
        },
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(AtomicUsize::new(0));
    let mut clients = Vec::new();
    for c in 0..16 {
        let (stop, answered, started, base) = (
            stop.clone(),
            answered.clone(),
            started.clone(),
            base.clone(),
        );
        clients.push(tokio::spawn(async move {
            let client = reqwest::Client::new();
            let q = if c % 2 == 0 { "a" } else { "qz" };
            // The widest search the API takes (all of history here, retention 0: 30 days).
            let url = format!("{base}/api/players?q={q}&hours=720&limit=500");
            let mut statuses = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                started.fetch_add(1, Ordering::Relaxed);
                // 0: the connection closed unanswered (the HTTP guard's limits, when the
                // machine is loaded far past this test's own load).
                let status = match client.get(&url).send().await {
                    Ok(r) => {
                        let s = r.status().as_u16();
                        let _ = r.bytes().await;
                        s
                    }
                    Err(_) => 0,
                };
                statuses.push(status);
                answered.fetch_add(1, Ordering::Relaxed);
            }
            statuses
        }));
    }
    // The load is on before the rounds start.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while answered.load(Ordering::Relaxed) < 16 {
        assert!(tokio::time::Instant::now() < deadline, "no search answered");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for _ in 0..3 {
        // More searches than the readers' pool has connections are in flight.
        let in_flight = started.load(Ordering::Relaxed) - answered.load(Ordering::Relaxed);
        assert!(in_flight >= 8, "{in_flight} searches in flight");
        tracker.round().await.expect("a round under web load");
    }
    stop.store(true, Ordering::Relaxed);
    let mut statuses = Vec::new();
    for c in clients {
        statuses.extend(c.await.unwrap());
    }
    // Answered: found, or (a reader past its time limit: the database is busy) 503, to be
    // asked again; never left hanging, never an error. Most searches are answered.
    assert!(
        statuses.iter().all(|s| matches!(*s, 0 | 200 | 503)),
        "{statuses:?}"
    );
    assert!(statuses.contains(&200), "{statuses:?}");
    assert!(
        statuses.iter().filter(|s| **s == 0).count() * 10 <= statuses.len(),
        "{statuses:?}"
    );
    // The searches had rows to walk: the seeded players are found.
    let (status, body) = get(
        &reqwest::Client::new(),
        &format!("{base}/api/players?q=a&hours=720&limit=500"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let found: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(found["players"].as_array().map(Vec::len), Some(500));
    // Wider windows and longer lists are refused, not run.
    let client = reqwest::Client::new();
    for q in ["hours=1000000", "limit=1000"] {
        let (status, _) = get(&client, &format!("{base}/api/players?q=a&{q}")).await;
        assert_eq!(status, 400, "{q}");
    }
    let store = tracker.store();
    assert_eq!(store.rounds(10).await.unwrap().len(), 4);
    // Every round whole: the two servers, the address where nothing listens, Teeworlds.
    assert_eq!(store.counts().await.unwrap().series, 4 * 4);
    let _ = tx.send(true);
    web.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_rounds_are_written_under_search_load() {
    let dir = tempfile::tempdir().unwrap();
    searches_during_a_round(&dir.path().join("load.db").display().to_string()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_rounds_are_written_under_search_load() {
    let Some(pg) = fragstat_testkit::postgres::Postgres::start() else {
        return;
    };
    searches_during_a_round(&pg.url).await;
}
