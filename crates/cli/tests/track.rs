//! `fragstat track` and `fragstat demo --track`, end to end: the binary polls an emulated
//! farm (`fragstat serve`, a hostile server name among them) and a real OpenArena server,
//! serves its pages, and headless Chromium renders them (rows, the JavaScript refresh, the
//! chart; screenshots kept under `target/tracker-e2e/`). Killing the tracker with SIGKILL
//! while it writes rounds leaves every earlier round whole.

use std::process::Command;

use fragstat_testkit::browser::Chromium;
use fragstat_testkit::{spawn_serve, OpenArena, OpenArenaConfig};

mod support;
use support::{artifacts, bin, http_get as get, http_json as get_json, jitter, Running};

fn start(args: &[&str]) -> Running {
    Running::start(args, &[])
}

/// The servers' addresses in the browser's rows, in order.
fn row_addrs(dom: &str) -> Vec<String> {
    dom.split("<tr class=\"server ")
        .skip(1)
        .filter_map(|r| attr_after(r, "", "data-addr=\""))
        .collect()
}

/// The value of the first `attr` (`href="`) after `marker` in `dom`.
fn attr_after(dom: &str, marker: &str, attr: &str) -> Option<String> {
    let rest = dom.get(dom.find(marker)? + marker.len()..)?;
    let rest = rest.get(rest.find(attr)? + attr.len()..)?;
    Some(rest.get(..rest.find('"')?)?.replace("&amp;", "&"))
}

/// The link of the header that sorts by `key`.
fn header_href(dom: &str, key: &str) -> Option<String> {
    let at = dom.find(&format!("data-sort=\"{key}\""))?;
    let head = dom.get(..at)?;
    let start = head.rfind("href=\"")? + 6;
    let rest = dom.get(start..)?;
    Some(rest.get(..rest.find('"')?)?.replace("&amp;", "&"))
}

/// A page's link (`/…`) as a URL of the tracker at `base` (`http://…/`).
fn absolute(base: &str, link: &str) -> String {
    format!("{}{link}", base.trim_end_matches('/'))
}

const HOSTILE: &str = "^1<script>alert(1)</script>^7' OR 1=1 DROP TABLE servers--";

#[test]
fn track_polls_farm_and_real_openarena_and_renders_in_chromium() {
    // Three bots and no human: the page must say 0 humans (+3 bots).
    let Some(oa) = OpenArena::start(OpenArenaConfig {
        bots: vec!["sarge".into(), "grism".into(), "kyonshi".into()],
        ..OpenArenaConfig::default()
    }) else {
        return;
    };
    let chromium = Chromium::find();
    let farm = spawn_serve(
        bin(),
        &[
            "q3",
            "--listen",
            "127.0.0.1:0",
            "--count",
            "3",
            "--players",
            "4",
            "--master",
            "--master-listen",
            "127.0.0.1:0",
        ],
    );
    let hostile = spawn_serve(
        bin(),
        &[
            "q3",
            "--listen",
            "127.0.0.1:0",
            "--name",
            HOSTILE,
            "--players",
            "2",
        ],
    );
    // A DDNet server listed by an HTTP servers.json that says where it is (`eu:de`): its
    // flag comes from the list, not from an address (loopback has no country).
    let ddnet = spawn_serve(
        bin(),
        &[
            "ddnet",
            "--listen",
            "127.0.0.1:0",
            "--players",
            "4",
            "--master",
            "--master-listen",
            "127.0.0.1:0",
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("track.db");
    let config = dir.path().join("track.toml");
    std::fs::write(
        &config,
        format!(
            "database = {db:?}\nlisten = \"127.0.0.1:0\"\ninterval_secs = 2.5\ntimeout_ms = 300\nretries = 2\n\n\
             [[source]]\ngame = \"q3\"\nmasters = [\"{}\"]\nservers = [\"{}\"]\n\n\
             [[source]]\ngame = \"openarena\"\nservers = [\"{}\"]\n\n\
             [[source]]\ngame = \"ddnet\"\nmasters = [\"{}\"]\n",
            farm.master.unwrap(),
            hostile.servers[0],
            oa.addr,
            ddnet.master_url.as_deref().expect("the DDNet list's URL"),
        ),
    )
    .unwrap();
    let mut tracker = start(&["track", "--config", config.to_str().unwrap()]);
    let url = tracker.tracker_url();
    // ioq3 answers one getinfo/getstatus per second per address after a burst of ten, so
    // rounds come every 2.5 s here.
    let rounds = tracker.rounds(3);
    assert!(
        rounds
            .iter()
            .all(|r| r.contains("6 of 6 servers online") && r.contains("listed 3")),
        "{rounds:?}"
    );

    // The API: the farm, the hostile server and the real OpenArena server with its bots.
    let api = get_json(&format!("{url}api/servers"));
    let servers = api["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 6, "{api}");
    let oa_row = servers
        .iter()
        .find(|s| s["addr"] == oa.addr.to_string())
        .expect("OpenArena row");
    assert_eq!(oa_row["game"], "openarena");
    assert_eq!(oa_row["status"], "online");
    assert_eq!(oa_row["name_raw"], "My ^1OA^7 Server");
    // getinfo + getstatus: the bots are told apart (ioq3's getstatus pings bots as 0).
    assert_eq!(oa_row["num_players"], 3, "{oa_row}");
    assert_eq!(oa_row["num_bots"], 3, "{oa_row}");
    assert_eq!(oa_row["num_humans"], 0, "{oa_row}");
    assert_eq!(oa_row["map"], "oa_dm1");
    assert_eq!(oa_row["game_title"], "OpenArena");
    let dd_row = servers
        .iter()
        .find(|s| s["game"] == "ddnet")
        .expect("DDNet row");
    assert_eq!(dd_row["country"], "DE", "{dd_row}");
    assert_eq!(
        dd_row["join_url"],
        format!("ddnet://{}", dd_row["addr"].as_str().unwrap())
    );
    let seg = oa.addr.to_string().replace(':', "%3A");
    let detail = get_json(&format!("{url}api/servers/{seg}"));
    let mut names: Vec<String> = detail["players"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_lowercase())
        .collect();
    names.sort();
    assert_eq!(names, ["grism", "kyonshi", "sarge"], "{detail}");
    assert!(
        detail["players"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["is_bot"] == true),
        "{detail}"
    );
    assert_eq!(detail["record"]["rules"]["gamename"], "baseoa");
    // Where is Sarge playing? On the real server (a bot: found when bots are asked for).
    let found = get_json(&format!("{url}api/players?q=SARGE&bots=1"));
    assert!(
        found["players"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["addr"] == oa.addr.to_string()),
        "{found}"
    );
    let history = get_json(&format!("{url}api/servers/{seg}/history?since=0"));
    assert!(history["history"].as_array().unwrap().len() >= 3);
    let (_, metrics) = get(&format!("{url}metrics"));
    assert!(
        metrics.contains("fragstat_tracker_players{game=\"openarena\"} 3"),
        "{metrics}"
    );

    // The page in a real browser: rows after the JavaScript refresh, the hostile name as text,
    // the chart.
    if let Some(chromium) = chromium {
        let dom = chromium.dump_dom(&url, 3000);
        assert_eq!(
            dom.matches("<tr class=\"server online\"").count(),
            6,
            "{dom}"
        );
        // Humans and bots apart; the DDNet server's flag (🇩🇪, from its list's location).
        assert!(dom.contains("0 (+3 bots)/8"), "{dom}");
        assert!(
            dom.contains("<span class=\"flag\" role=\"img\" aria-label=\"DE\" title=\"DE\">\u{1F1E9}\u{1F1EA}</span><span class=\"cc\">DE</span>"),
            "{dom}"
        );
        assert!(dom.contains("href=\"ddnet://"), "{dom}");
        assert!(
            dom.contains("id=\"updated\">updated "),
            "the refresh did not run: {dom}"
        );
        assert!(
            dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{dom}"
        );
        assert!(!dom.contains("<script>alert"), "{dom}");
        assert!(dom.contains(&oa.addr.to_string()));
        // Filtered by the query string (the form is filled from it, the refresh keeps it).
        let dom = chromium.dump_dom(&format!("{url}?game=openarena"), 3000);
        assert_eq!(
            dom.matches("<tr class=\"server online\"").count(),
            1,
            "{dom}"
        );
        // Sorting: follow the Name header's link (what a click does), the rows reorder —
        // after the refresh script ran, which keeps the page's sort.
        let dom = chromium.dump_dom(&url, 3000);
        let default_order = row_addrs(&dom);
        let name_link = header_href(&dom, "name").expect("the Name header's link");
        let sorted = chromium.dump_dom(&absolute(&url, &name_link), 3000);
        assert!(sorted.contains("aria-sort=\"ascending\""), "{sorted}");
        let by_name = row_addrs(&sorted);
        assert_eq!(by_name.len(), 6, "{sorted}");
        assert_ne!(by_name, default_order, "sorting by name reordered nothing");
        let desc_link = header_href(&sorted, "name").expect("the Name header again");
        let reversed = row_addrs(&chromium.dump_dom(&absolute(&url, &desc_link), 3000));
        let mut online_by_name = by_name.clone();
        online_by_name.reverse();
        assert_eq!(
            reversed, online_by_name,
            "a second click reverses the order"
        );
        // Pagination: two rows a page; page 2 exists and differs, also after the refresh.
        let page1 = chromium.dump_dom(&format!("{url}?per_page=2&sort=name"), 3000);
        let rows1 = row_addrs(&page1);
        assert_eq!(rows1.len(), 2, "{page1}");
        let next = attr_after(&page1, "rel=\"next\"", "href=\"").expect("a next link");
        let page2 = chromium.dump_dom(&absolute(&url, &next), 3000);
        let rows2 = row_addrs(&page2);
        assert_eq!(rows2.len(), 2, "{page2}");
        assert!(
            rows1.iter().all(|a| !rows2.contains(a)),
            "{rows1:?} {rows2:?}"
        );
        assert_eq!(&by_name[2..4], &rows2[..], "page 2 of the same order");

        let page = format!("{url}server/{seg}");
        let dom = chromium.dump_dom(&page, 1000);
        assert!(dom.contains("<svg id=\"chart\""), "{dom}");
        assert!(dom.contains("<polyline class=\"humans\""), "{dom}");
        // The bots, marked as bots.
        assert_eq!(dom.matches("<tr class=\"player bot\"").count(), 3, "{dom}");
        assert_eq!(dom.matches("<span class=\"badge bot\"").count(), 3, "{dom}");
        assert!(dom.contains("Server variables"), "{dom}");
        // The player page, linked from a human's name (bots have none).
        let farm_seg = farm.servers[0].to_string().replace(':', "%3A");
        let farm_dom = chromium.dump_dom(&format!("{url}server/{farm_seg}"), 1000);
        let player =
            attr_after(&farm_dom, "<tr class=\"player\"", "href=\"").expect("a player link");
        assert!(player.contains("/player/"), "{player}");
        let player_page = absolute(&url, &player);
        let pdom = chromium.dump_dom(&player_page, 1000);
        assert!(pdom.contains("<tr class=\"session\""), "{pdom}");
        assert!(pdom.contains("id=\"played\""), "{pdom}");
        // The DDNet server's page: race times, not -9999.
        let dd_seg = dd_row["addr"].as_str().unwrap().replace(':', "%3A");
        let dd_page = format!("{url}server/{dd_seg}");
        let ddom = chromium.dump_dom(&dd_page, 1000);
        assert!(ddom.contains(">Time</th>"), "{ddom}");
        assert!(!ddom.contains("-9999"), "{ddom}");
        let out = artifacts("tracker-e2e");
        chromium.screenshot(&url, &out.join("browser.png"), 1100, 700, 3000);
        chromium.screenshot(&page, &out.join("server.png"), 1100, 1300, 1000);
        chromium.screenshot(&url, &out.join("phone.png"), 390, 844, 3000);
        chromium.screenshot(&player_page, &out.join("player.png"), 1100, 700, 1000);
        chromium.screenshot(&dd_page, &out.join("ddnet.png"), 1100, 1300, 1000);
        eprintln!("screenshots in {}", out.display());
    }

    drop(tracker);
}

/// SIGKILL while rounds of 200 servers with 8 players each are written back to back: after
/// each kill the database opens and every round in it is whole (as many series rows as the
/// round says it probed, and the players it counted), and the next tracker goes on adding rounds.
#[test]
fn sigkill_mid_round_keeps_earlier_rounds() {
    let farm = spawn_serve(
        bin(),
        &[
            "q3",
            "--listen",
            "127.0.0.1:0",
            "--count",
            "200",
            "--players",
            "8",
            "--master",
            "--master-listen",
            "127.0.0.1:0",
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("track.db");
    let master = farm.master.unwrap().to_string();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut kept = 0;
    for (i, wait_ms) in [0u64, 37, 113, 71].into_iter().enumerate() {
        let mut tracker = start(&[
            "track",
            "--game",
            "q3",
            "--master",
            &master,
            "--db",
            db.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
            "--interval-secs",
            "0.05",
            "--timeout-ms",
            "500",
        ]);
        tracker.tracker_url();
        let rounds = tracker.rounds(2);
        assert!(
            rounds
                .iter()
                .all(|r| r.contains("200 of 201 servers online")
                    || r.contains("200 of 200 servers online")),
            "{rounds:?}"
        );
        // Not synchronisation: the kill lands at some moment of the round's work.
        jitter(wait_ms);
        tracker.kill(); // SIGKILL, most likely inside a round's probing or its transaction
        rt.block_on(async {
            let store = fragstat_tracker::store::Store::open(db.to_str().unwrap())
                .await
                .expect("reopen after SIGKILL");
            let rounds = store.rounds(100_000).await.unwrap();
            assert!(
                rounds.len() >= kept + 2,
                "run {i}: {} rounds, {kept} before",
                rounds.len()
            );
            kept = rounds.len();
            let counts = store.counts().await.unwrap();
            let servers: i64 = rounds.iter().map(|r| r.servers).sum();
            let players: i64 = rounds.iter().map(|r| r.players).sum();
            assert_eq!(counts.series, servers, "run {i}: a round was half written");
            assert_eq!(
                counts.series_players, players,
                "run {i}: a round was half written"
            );
            assert!(
                rounds.iter().all(|r| r.online == 200 && r.players == 1600),
                "{rounds:?}"
            );
            store.close().await;
        });
    }
}

#[test]
fn demo_track_serves_the_farm() {
    let mut demo = start(&[
        "demo",
        "--track",
        "--listen",
        "127.0.0.1:0",
        "--interval-secs",
        "0.5",
    ]);
    let url = demo.tracker_url();
    demo.rounds(1);
    let api = get_json(&format!("{url}api/servers"));
    let servers = api["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 7, "{api}");
    let online = servers.iter().filter(|s| s["status"] == "online").count();
    assert_eq!(online, 6, "{api}");
    assert!(
        servers
            .iter()
            .any(|s| s["name"] == "fragstat demo #1" && s["name_raw"] == "^1fragstat ^7demo ^3#1"),
        "{api}"
    );
    let (status, page) = get(&url);
    assert_eq!(status, 200);
    assert_eq!(
        page.matches("<tr class=\"server online\"").count(),
        6,
        "{page}"
    );
}

#[test]
fn track_usage_errors() {
    for args in [
        &["track"][..],
        &["track", "--master", "127.0.0.1:1"],
        &["track", "--game", "nope", "--server", "127.0.0.1:1"],
        &["track", "--game", "q3"],
        &[
            "track",
            "--game",
            "q3",
            "--server",
            "127.0.0.1:1",
            "--interval-secs",
            "0",
        ],
    ] {
        let out = Command::new(bin()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty());
    }
}

#[test]
fn track_config_errors_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (text, says) in [
        ("bogus = 1\n", "unknown field"),
        (
            "[[source]]\ngame = \"nope\"\nservers = [\"127.0.0.1:1\"]\n",
            "unknown game",
        ),
        ("interval_secs = \"x\"\n", "invalid type"),
        (
            "retention_hours = -1\n[[source]]\ngame = \"q3\"\nservers = [\"127.0.0.1:1\"]\n",
            "retention_hours",
        ),
    ] {
        let path = dir.path().join("track.toml");
        std::fs::write(&path, text).unwrap();
        let out = Command::new(bin())
            .args(["track", "--config", path.to_str().unwrap()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {err}");
        assert!(err.contains(says), "{text}: {err}");
    }
    let out = Command::new(bin())
        .args(["track", "--config", "/nonexistent/track.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// How many times `needle` occurs in `hay`.
fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// A PostgreSQL URL (from $FRAGSTAT_DB) whose port refuses connections: the tracker says so at
/// once (not after the pool's 30 s), names the server, says why once, and never prints the
/// password.
#[test]
fn an_unreachable_postgresql_is_said_at_once_without_the_password() {
    let refusing = fragstat_testkit::RefusingTcp::v4();
    let url = format!("postgres://fragstat:s3cret-pw@{}/tracker", refusing.addr);
    let started = std::time::Instant::now();
    let out = Command::new(bin())
        .args(["track", "--game", "q3", "--server", "127.0.0.1:27960"])
        .args(["--rounds", "1"])
        .env("FRAGSTAT_DB", &url)
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    let took = started.elapsed();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!(
            "PostgreSQL at 127.0.0.1:{}, database \"tracker\", user \"fragstat\"",
            refusing.addr.port()
        )),
        "{text}"
    );
    assert_eq!(count(&text, "connection refused"), 1, "{text}");
    assert!(!text.contains("s3cret"), "{text}");
    // Far under the pool's 30 s (the tracker gives up on a refused connection at once).
    assert!(took < std::time::Duration::from_secs(20), "took {took:?}");
    println!("unreachable PostgreSQL said in {took:?}: {text}");

    // A server that takes the connection and never answers: said after the 2 s deadline.
    let mute = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "postgres://fragstat:s3cret-pw@{}/tracker",
        mute.local_addr().unwrap()
    );
    let out = Command::new(bin())
        .args(["track", "--game", "q3", "--server", "127.0.0.1:27960"])
        .args(["--db", &url])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert_eq!(count(&text, "no answer within 2 s"), 1, "{text}");
    assert!(!text.contains("s3cret"), "{text}");

    // The same from $DATABASE_URL, and a URL with `?password=`.
    let url = format!(
        "postgres://fragstat@{}/tracker?password=s3cret-pw",
        refusing.addr
    );
    let out = Command::new(bin())
        .args(["track", "--game", "q3", "--server", "127.0.0.1:27960"])
        .env("DATABASE_URL", &url)
        .env_remove("FRAGSTAT_DB")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("connection refused"), "{text}");
    assert!(!text.contains("s3cret"), "{text}");
}

/// A real PostgreSQL: a database that does not exist is named as such; a configuration file
/// that names no database takes $DATABASE_URL, and the tracker says what it tracks into in
/// words with the password hidden.
#[test]
fn postgresql_causes_and_database_url_from_the_environment() {
    let Some(pg) = fragstat_testkit::postgres::Postgres::start() else {
        return;
    };
    let base = format!("postgres://postgres:hunter2@127.0.0.1:{}", pg.port);
    let out = Command::new(bin())
        .args(["track", "--game", "q3", "--server", "127.0.0.1:27960"])
        .args(["--db", &format!("{base}/no_such_db")])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert_eq!(
        count(&text, "database \"no_such_db\" does not exist"),
        1,
        "{text}"
    );
    assert!(!text.contains("hunter2"), "{text}");

    // A configuration file with no `database`: $DATABASE_URL is used.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("track.toml");
    let silent = fragstat_testkit::SilentUdp::v4();
    std::fs::write(
        &path,
        format!(
            "[[source]]\ngame = \"q3\"\nservers = [\"{}\"]\n",
            silent.addr
        ),
    )
    .unwrap();
    let mut tracker = Running::start(
        &[
            "track",
            "--config",
            path.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
            "--timeout-ms",
            "100",
            "--retries",
            "0",
        ],
        &[("DATABASE_URL", &format!("{base}/postgres"))],
    );
    let line = tracker.wait_line("the tracker's URL", |l| l.contains("browse http://"));
    assert!(
        line.contains(&format!(
            "tracking into postgres://postgres:***@127.0.0.1:{}/postgres (PostgreSQL)",
            pg.port
        )),
        "{line}"
    );
    let round = tracker.wait_line("a round", |l| l.starts_with("round "));
    // Named by number and time.
    assert!(round.starts_with("round 1 (20"), "{round}");
    assert!(round.contains("Z): 0 of 1 servers online"), "{round}");
}
