//! The web side over real HTTP, on rounds written straight into the store: every parameter's
//! validation (400 with a message), CORS off and on, compression, ETag/304 and
//! Cache-Control, the base path (every link on every page followed), sorting and
//! pagination, the country and password columns, a server page's "down since", uptime and
//! map history, copy buttons and join links, race times on a player's page; and countries
//! from a real MMDB (the CC0 `@ip-location-db` package) for public addresses taken from the
//! fixtures, looked up only — also end to end, from a config naming the file through a round
//! over emulated servers in a simulated network to the page.

mod support;

use std::path::PathBuf;

use fragstat::core::model::{Dialect, Player, ServerInfo, Text};
use fragstat::core::record::{Record, Status};
use fragstat_tracker::config::Config;
use fragstat_tracker::geoip::Countries;
use fragstat_tracker::store::RoundData;
use fragstat_tracker::Tracker;
use tokio::sync::watch;

/// A server that answered: `name` (Quake III colours), `players` humans and `bots` bots.
fn online(addr: &str, name: &[u8], map: &str, players: u32, bots: u32, rtt_ms: u64) -> Record {
    let mut info = ServerInfo::default();
    info.name = Text::new(name.to_vec(), Dialect::Ioq3);
    info.map = Text::new(map.as_bytes().to_vec(), Dialect::Plain);
    info.gametype = Some("ffa".into());
    info.num_players = players + bots;
    info.max_players = 16;
    info.num_bots = Some(bots);
    info.password = Some(players == 0);
    info.rules.push("g_gametype", "0");
    info.rules.push("sv_hostname", name);
    let mut list = Vec::new();
    for i in 0..players + bots {
        let mut p = Player::new(Text::new(
            format!(
                "^4{name}{i}",
                name = if i < players { "human" } else { "bot" }
            )
            .into_bytes(),
            Dialect::Ioq3,
        ));
        p.score = Some(i32::try_from(i).unwrap());
        p.is_bot = Some(i >= players);
        list.push(p);
    }
    info.players = Some(list);
    Record::online(
        Some(addr.into()),
        "q3",
        info,
        Some(std::time::Duration::from_millis(rtt_ms)),
    )
}

/// Seven servers: names A…F and one that does not answer.
fn records() -> Vec<Record> {
    vec![
        online("127.0.0.1:27960", b"^1Alpha", "q3dm17", 3, 0, 20),
        online("127.0.0.1:27961", b"^4Bravo", "q3dm6", 1, 3, 5),
        online("127.0.0.1:27962", b"Charlie", "q3dm1", 6, 1, 50),
        online("127.0.0.1:27963", b"Delta", "q3tourney2", 0, 0, 10),
        online("127.0.0.1:27964", b"Echo", "q3dm17", 2, 0, 40),
        online("127.0.0.1:27965", b"Foxtrot", "q3dm7", 4, 2, 30),
        Record::failed(
            Some("127.0.0.1:27966".into()),
            "q3",
            Status::Timeout,
            "no reply".into(),
        ),
    ]
}

struct Site {
    base: String,
    client: reqwest::Client,
    stop: watch::Sender<bool>,
    web: tokio::task::JoinHandle<std::io::Result<()>>,
    _dir: tempfile::TempDir,
}

impl Site {
    async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect(path)
    }

    async fn text(&self, path: &str) -> (u16, String) {
        let r = self.get(path).await;
        (r.status().as_u16(), r.text().await.unwrap())
    }

    async fn json(&self, path: &str) -> serde_json::Value {
        let (status, body) = self.text(path).await;
        assert_eq!(status, 200, "{path}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    async fn close(self) {
        let _ = self.stop.send(true);
        self.web.await.unwrap().unwrap();
    }
}

/// A tracker whose store holds two rounds of [`records`], its web side served on loopback
/// with `web` as its `[web]` table.
async fn site(web: &str) -> Site {
    let now = fragstat_tracker::round::now_ms();
    let rounds = [now - 20_000, now - 10_000]
        .into_iter()
        .map(|at| RoundData {
            at,
            finished: at + 5,
            records: records(),
            ..RoundData::default()
        })
        .collect();
    site_with(web, rounds).await
}

/// A tracker whose store holds `rounds` (written in order), its web side served on loopback
/// with `web` as its `[web]` table.
async fn site_with(web: &str, rounds: Vec<RoundData>) -> Site {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("web.db");
    // Never polled: the rounds are written below.
    let config = support::quiet_config(db.as_ref(), &format!("retention_hours = 48\n[web]\n{web}"));
    let tracker = Tracker::open(config).await.unwrap();
    for round in &rounds {
        tracker.store().write_round(round).await.unwrap();
    }
    serve(&tracker, dir).await
}

/// Serves `tracker`'s web side on loopback.
async fn serve(tracker: &Tracker, dir: tempfile::TempDir) -> Site {
    let support::Web {
        base,
        stop,
        task: web,
    } = support::serve(tracker.state()).await;
    Site {
        base,
        client: reqwest::Client::new(),
        stop,
        web,
        _dir: dir,
    }
}

fn addrs(json: &serde_json::Value) -> Vec<String> {
    json["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["addr"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn parameters_out_of_range_are_refused_with_a_message() {
    let s = site("").await;
    for (path, says) in [
        ("/api/servers?limit=-1", "limit"),
        ("/api/servers?limit=501", "limit"),
        ("/api/servers?per_page=0", "per_page"),
        ("/api/servers?online=yes", "online"),
        ("/api/servers?page=0", "page"),
        ("/api/servers?page=x", "page"),
        ("/api/servers?sort=bogus", "sort"),
        ("/api/servers?order=up", "order"),
        ("/api/servers?game=nosuchgame", "game"),
        ("/?online=yes", "online"),
        ("/?sort=bogus", "sort"),
        ("/api/players?q=a&hours=49", "hours"),
        ("/api/players?q=a&hours=-1", "hours"),
        ("/api/players?q=a&hours=1e9", "hours"),
        ("/api/players?q=a&limit=0", "limit"),
        ("/players?q=a&hours=1000000", "hours"),
        ("/api/rounds?limit=-5", "limit"),
        ("/api/servers/127.0.0.1%3A27960/history?since=-1", "since"),
        ("/api/servers/127.0.0.1%3A27960/history?hours=100", "hours"),
        ("/api/players/abc", "player id"),
    ] {
        let (status, body) = s.text(path).await;
        assert_eq!(status, 400, "{path}: {body}");
        assert!(body.contains(says), "{path}: {body}");
    }
    // In range, and the forms that mean "not given", are taken.
    for path in [
        "/api/servers?online=1&page=1&per_page=500&sort=name&order=desc",
        "/api/servers?online=&sort=&game=oa",
        "/api/servers?online=false&limit=3",
        "/api/players?q=human&hours=48",
        "/api/servers/127.0.0.1%3A27960/history?hours=48",
    ] {
        let (status, body) = s.text(path).await;
        assert_eq!(status, 200, "{path}: {body}");
    }
    // `online=1`: the server that did not answer is left out; `game` takes an alias.
    assert_eq!(addrs(&s.json("/api/servers?online=1").await).len(), 6);
    assert_eq!(addrs(&s.json("/api/servers?online=0").await).len(), 7);
    assert_eq!(addrs(&s.json("/api/servers?game=q3a").await).len(), 7);
    s.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sorting_and_pagination() {
    let s = site("").await;
    // Default: online first, most humans first.
    let all = s.json("/api/servers").await;
    assert_eq!(all["total"], 7);
    assert_eq!(all["sort"], "players");
    assert_eq!(all["order"], "desc");
    let order = addrs(&all);
    assert_eq!(order.first().unwrap(), "127.0.0.1:27962", "6 humans");
    assert_eq!(order.last().unwrap(), "127.0.0.1:27966", "no answer: last");
    let first = &all["servers"][0];
    assert_eq!(first["num_humans"], 6);
    assert_eq!(first["num_bots"], 1);
    assert_eq!(first["game_title"], "Quake III Arena");
    assert_eq!(first["join_url"], "quake3://connect/127.0.0.1:27962");
    // By name, both ways (colours stripped).
    let names = |j: &serde_json::Value| -> Vec<String> {
        j["servers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["status"] == "online")
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect()
    };
    let asc = names(&s.json("/api/servers?sort=name").await);
    assert_eq!(
        asc,
        ["Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot"]
    );
    let desc = names(&s.json("/api/servers?sort=name&order=desc").await);
    assert_eq!(
        desc,
        ["Foxtrot", "Echo", "Delta", "Charlie", "Bravo", "Alpha"]
    );
    let ping = addrs(&s.json("/api/servers?sort=ping").await);
    assert_eq!(ping[0], "127.0.0.1:27961", "5 ms");
    let bots = addrs(&s.json("/api/servers?sort=bots").await);
    assert_eq!(bots[0], "127.0.0.1:27961", "3 bots");
    // Pages: 3 a page, pages differ, together they are the whole list.
    let mut paged = Vec::new();
    for page in 1..=3 {
        let j = s
            .json(&format!("/api/servers?sort=name&per_page=3&page={page}"))
            .await;
        assert_eq!(j["pages"], 3);
        assert_eq!(j["page"], page);
        paged.extend(addrs(&j));
    }
    assert_eq!(paged, addrs(&s.json("/api/servers?sort=name").await));
    let beyond = s.json("/api/servers?per_page=3&page=4").await;
    assert!(beyond["servers"].as_array().unwrap().is_empty());

    // The page: headers link to their sort keeping the filters, the active one has
    // aria-sort, and the page links keep everything.
    let (status, page) = s.text("/?map=q3dm&sort=name&per_page=2").await;
    assert_eq!(status, 200);
    assert!(
        page.contains("aria-sort=\"ascending\""),
        "the active header: {page}"
    );
    assert!(
        page.contains("href=\"/?map=q3dm&amp;per_page=2&amp;sort=name&amp;order=desc\""),
        "clicking the active header reverses it, keeping map and per_page: {page}"
    );
    assert!(
        page.contains("href=\"/?map=q3dm&amp;per_page=2&amp;sort=ping&amp;order=asc\""),
        "{page}"
    );
    assert!(
        page.contains("rel=\"next\" href=\"/?map=q3dm&amp;sort=name&amp;per_page=2&amp;page=2\""),
        "{page}"
    );
    assert!(!page.contains("rel=\"prev\""), "{page}");
    assert_eq!(page.matches("<tr class=\"server ").count(), 2);
    let (_, page2) = s.text("/?map=q3dm&sort=name&per_page=2&page=2").await;
    assert!(page2.contains("rel=\"prev\""), "{page2}");
    assert_ne!(page, page2);
    // Humans and bots apart, bots marked on the server page.
    assert!(page.contains("1 (+3 bots)/16"), "{page}");
    let (_, server) = s.text("/server/127.0.0.1%3A27961").await;
    assert_eq!(
        server.matches("<span class=\"badge bot\"").count(),
        3,
        "{server}"
    );
    assert_eq!(
        server.matches("<tr class=\"player bot\"").count(),
        3,
        "{server}"
    );
    assert!(server.contains("Server variables"), "{server}");
    assert!(server.contains("<th>g_gametype</th><td>0</td>"), "{server}");
    let delta = s.json("/api/servers/127.0.0.1%3A27963").await;
    assert_eq!(delta["server"]["password"], true);
    assert_eq!(all["servers"][0]["password"], false);
    assert!(server.contains("name=\"viewport\""), "{server}");
    // A server that never answered: a heading, no "Players 0/0".
    let (_, down) = s.text("/server/127.0.0.1%3A27966").await;
    assert!(down.contains("<h1>127.0.0.1:27966"), "{down}");
    assert!(!down.contains("0 / 0") && !down.contains("0/0"), "{down}");
    assert!(down.contains("no answer in the last round"), "{down}");
    s.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn etag_cache_control_and_compression() {
    let s = site("").await;
    let r = s.get("/api/servers").await;
    assert_eq!(r.status(), 200);
    let tag = r.headers()["etag"].to_str().unwrap().to_string();
    assert!(tag.starts_with('"') && tag.len() == 34, "{tag}");
    // interval_secs = 10: half of it.
    assert_eq!(r.headers()["cache-control"], "public, max-age=5");
    let body = r.bytes().await.unwrap();
    assert_eq!(tag, fragstat_tracker::web::etag_of(&body));
    // The same answer again: 304, empty.
    let r = s
        .client
        .get(format!("{}/api/servers", s.base))
        .header("If-None-Match", &tag)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 304);
    assert_eq!(r.headers()["etag"].to_str().unwrap(), tag);
    assert!(r.bytes().await.unwrap().is_empty());
    // Another answer, another tag; a stale tag gets the body.
    let other = s.get("/api/servers?sort=name").await;
    assert_ne!(other.headers()["etag"].to_str().unwrap(), tag);
    let r = s
        .client
        .get(format!("{}/api/servers?sort=name", s.base))
        .header("If-None-Match", &tag)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // Pages are not cached that way.
    assert!(s.get("/").await.headers().get("etag").is_none());

    // gzip and br when asked, plain when not; each encoding its own strong tag.
    for enc in ["gzip", "br"] {
        let r = s
            .client
            .get(format!("{}/api/servers", s.base))
            .header("Accept-Encoding", enc)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-encoding"], enc);
        assert_ne!(r.headers()["etag"].to_str().unwrap(), tag);
        let bytes = r.bytes().await.unwrap();
        assert!(
            bytes.len() < body.len(),
            "{enc}: {} of {}",
            bytes.len(),
            body.len()
        );
        if enc == "gzip" {
            assert_eq!(&bytes[..2], &[0x1f, 0x8b]);
        }
    }
    let (_, page) = (
        (),
        s.client
            .get(format!("{}/", s.base))
            .header("Accept-Encoding", "gzip")
            .send()
            .await
            .unwrap(),
    );
    assert_eq!(page.headers()["content-encoding"], "gzip");
    assert!(s
        .get("/api/servers")
        .await
        .headers()
        .get("content-encoding")
        .is_none());
    s.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cors_only_when_configured() {
    let origin = "https://example.org";
    let ask = |s: &Site, from: &str| {
        s.client
            .get(format!("{}/api/servers", s.base))
            .header("Origin", from)
            .send()
    };
    // Off by default: no header for anyone.
    let s = site("").await;
    let r = ask(&s, origin).await.unwrap();
    assert!(r.headers().get("access-control-allow-origin").is_none());
    s.close().await;
    // One origin: that one, not another; the preflight answered.
    let s = site("cors_origins = [\"https://example.org\"]").await;
    let r = ask(&s, origin).await.unwrap();
    assert_eq!(r.headers()["access-control-allow-origin"], origin);
    let r = ask(&s, "https://evil.example").await.unwrap();
    assert!(r.headers().get("access-control-allow-origin").is_none());
    let r = s
        .client
        .request(reqwest::Method::OPTIONS, format!("{}/api/servers", s.base))
        .header("Origin", origin)
        .header("Access-Control-Request-Method", "GET")
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    assert_eq!(r.headers()["access-control-allow-origin"], origin);
    s.close().await;
    // Anyone.
    let s = site("cors_origins = [\"*\"]").await;
    let r = ask(&s, "https://anyone.example").await.unwrap();
    assert_eq!(r.headers()["access-control-allow-origin"], "*");
    s.close().await;
}

/// Every `href`, `action` and `src` in a page.
fn links(page: &str) -> Vec<String> {
    let mut out = Vec::new();
    for attr in ["href=\"", "action=\""] {
        for part in page.split(attr).skip(1) {
            if let Some(end) = part.find('"') {
                out.push(part[..end].replace("&amp;", "&"));
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn under_a_base_path_every_link_works() {
    let s = site("base_path = \"/servers\"\ntitle = \"Frag <Central>\"").await;
    assert_eq!(
        s.get("/").await.status(),
        404,
        "nothing outside the base path"
    );
    assert_eq!(s.get("/api/servers").await.status(), 404);
    let (status, home) = s.text("/servers/").await;
    assert_eq!(status, 200);
    assert!(
        home.contains("Frag &lt;Central&gt;"),
        "the title, escaped: {home}"
    );
    assert!(
        home.contains("data-base=\"/servers\""),
        "the script's base: {home}"
    );
    // `/servers` itself leads to the browser.
    let r = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(format!("{}/servers", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["location"], "/servers/");
    // Crawl: every link of every page reached, two levels deep, answers 200 and stays
    // under the base path (join links use the games' schemes).
    let mut seen = std::collections::BTreeSet::new();
    let mut todo = vec!["/servers/".to_string()];
    let mut depth = 0;
    while !todo.is_empty() && depth < 3 {
        let mut next = Vec::new();
        for path in std::mem::take(&mut todo) {
            if !seen.insert(path.clone()) {
                continue;
            }
            let (status, body) = s.text(&path).await;
            assert_eq!(status, 200, "{path}");
            if !body.trim_start().starts_with("<!DOCTYPE") {
                continue;
            }
            for l in links(&body) {
                if l.starts_with("quake3://") {
                    continue;
                }
                assert!(l.starts_with("/servers/"), "{l} on {path}");
                next.push(l);
            }
        }
        todo = next;
        depth += 1;
    }
    for must in [
        "/servers/players",
        "/servers/api/servers",
        "/servers/api/openapi.json",
        "/servers/metrics",
        "/servers/server/127.0.0.1%3A27960",
    ] {
        assert!(seen.contains(must), "{must} not linked: {seen:?}");
    }
    assert!(
        seen.iter().any(|p| p.starts_with("/servers/player/")),
        "{seen:?}"
    );
    assert!(seen.iter().any(|p| p.starts_with("/servers/?")), "{seen:?}");
    // The API under it too, and the script fetches from it.
    let j = s.json("/servers/api/servers?per_page=1").await;
    assert_eq!(j["servers"].as_array().unwrap().len(), 1);
    s.close().await;
}

/// The MMDB the tests use: `$FRAGSTAT_GEOIP_MMDB`, else where `cargo xtask test` installs
/// the CC0 package (`target/geoip`).
fn mmdb() -> Option<PathBuf> {
    let path = std::env::var_os("FRAGSTAT_GEOIP_MMDB")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
                "../../target/geoip/node_modules/@ip-location-db/geo-whois-asn-country-mmdb/geo-whois-asn-country.mmdb",
            )
        });
    if path.is_file() {
        return Some(path);
    }
    let msg = format!(
        "GeoIP test database not at {} (run `cargo xtask test`, or set FRAGSTAT_GEOIP_MMDB)",
        path.display()
    );
    assert!(!fragstat_testkit::in_ci(), "{msg}");
    eprintln!("SKIPPED (not in CI): {msg}");
    None
}

#[test]
fn countries_from_a_real_mmdb_and_declared_locations() {
    let Some(path) = mmdb() else {
        return;
    };
    let c = Countries::open(&path).unwrap();
    assert!(c.has_geoip());
    // Public addresses from tests/fixtures/quake3 (a master's list and a status reply),
    // looked up in the file only: no packet goes to them.
    for (addr, country) in [
        ("188.40.71.213:27970", "DE"),
        ("178.62.202.219:27960", "NL"),
        ("24.166.252.209:27966", "US"),
    ] {
        assert_eq!(c.country_of_addr(addr).as_deref(), Some(country), "{addr}");
    }
    // IPv4-mapped IPv6 reads as its IPv4 address; loopback and documentation ranges have
    // no country.
    assert_eq!(
        c.country_of_addr("[::ffff:188.40.71.213]:27970").as_deref(),
        Some("DE")
    );
    assert_eq!(c.country_of_addr("127.0.0.1:27960"), None);
    assert_eq!(c.country_of_addr("192.0.2.1:27960"), None);
    // A record: GeoIP of its address…
    let r = Record::failed(
        Some("188.40.71.213:27970".into()),
        "q3",
        Status::Timeout,
        "x".into(),
    );
    assert_eq!(c.country(&r).as_deref(), Some("DE"));
    // …unless its list declares a location (DDNet's servers.json), which wins.
    let mut info = ServerInfo::default();
    info.location = Some("na:us".into());
    let r = Record::online(Some("188.40.71.213:8303".into()), "ddnet", info, None);
    assert_eq!(c.country(&r).as_deref(), Some("US"));
    // Not a file of the format: a message naming the file.
    let bad = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(bad.path(), b"not an mmdb").unwrap();
    let e = Countries::open(bad.path()).unwrap_err();
    assert!(
        e.to_string().contains(&bad.path().display().to_string()),
        "{e}"
    );
}

/// A server that answered, of any game: `players` as (name, score), the record's score kind
/// (`points`, `time`) where given.
fn answered(
    addr: &str,
    game: &str,
    name: &str,
    map: &str,
    gametype: &str,
    players: &[(&str, i32)],
    score_kind: Option<&str>,
) -> Record {
    let dialect = if game == "ddnet" || game.starts_with("teeworlds") {
        Dialect::Plain
    } else {
        Dialect::Ioq3
    };
    let mut info = ServerInfo::default();
    info.name = Text::new(name.as_bytes().to_vec(), dialect);
    info.map = Text::new(map.as_bytes().to_vec(), Dialect::Plain);
    info.gametype = Some(gametype.into());
    info.num_players = u32::try_from(players.len()).unwrap();
    info.max_players = 16;
    info.password = Some(false);
    let mut list = Vec::new();
    for (n, score) in players {
        let mut p = Player::new(Text::new(n.as_bytes().to_vec(), dialect));
        p.score = Some(*score);
        list.push(p);
    }
    info.players = Some(list);
    info.score_kind = score_kind.map(|k| k.parse().unwrap());
    Record::online(
        Some(addr.into()),
        game,
        info,
        Some(std::time::Duration::from_millis(10)),
    )
}

/// The `<tr class="server …">` rows of a browser page, each as its HTML.
fn server_rows(page: &str) -> Vec<&str> {
    page.split("<tr class=\"server ")
        .skip(1)
        .map(|r| r.split("</tr>").next().unwrap())
        .collect()
}

/// The cell of class `class` in a row (its inner HTML).
fn cell<'a>(row: &'a str, class: &str) -> &'a str {
    let open = format!("<td class=\"{class}\">");
    let start = row
        .find(&open)
        .unwrap_or_else(|| panic!("no {class} in {row}"))
        + open.len();
    let end = row[start..].find("</td>").unwrap() + start;
    &row[start..end]
}

/// The rows' addresses, in page order.
fn row_addrs(page: &str) -> Vec<String> {
    server_rows(page)
        .iter()
        .map(|r| {
            let a = r.split("data-addr=\"").nth(1).unwrap();
            a[..a.find('"').unwrap()].to_string()
        })
        .collect()
}

/// Country and password are columns of their own, sortable like the others both ways (missing
/// values last), kept on a phone; the name cell has neither.
#[tokio::test(flavor = "multi_thread")]
async fn country_and_password_columns_sort() {
    let now = fragstat_tracker::round::now_ms();
    let countries: std::collections::HashMap<String, String> = [
        ("127.0.0.1:27962", "US"),
        ("127.0.0.1:27960", "DE"),
        ("127.0.0.1:27961", "NL"),
    ]
    .into_iter()
    .map(|(a, c)| (a.to_string(), c.to_string()))
    .collect();
    // And one that answers without saying whether it asks for a password.
    let mut silent = answered("127.0.0.1:27967", "q3", "Golf", "q3dm2", "ffa", &[], None);
    silent.info.as_mut().unwrap().password = None;
    let mut records = records();
    records.push(silent);
    let s = site_with(
        "",
        vec![RoundData {
            at: now - 10_000,
            finished: now - 9_995,
            records,
            countries,
            ..Default::default()
        }],
    )
    .await;
    let (status, page) = s.text("/").await;
    assert_eq!(status, 200);
    // The headers: links to their sort (ascending first), no `opt` (shown on a phone, as a
    // symbol there, the word kept for screen readers).
    for (key, label, short) in [("country", "Country", "🌐"), ("password", "Password", "🔒")] {
        let th = format!(
            "<th class=\"{key}\"><a class=\"sort\" href=\"/?sort={key}&amp;order=asc\" data-sort=\"{key}\" title=\"{label}\"><span class=\"long\">{label}</span><span class=\"short\" aria-hidden=\"true\">{short}</span></a></th>"
        );
        assert!(page.contains(&th), "{th}: {page}");
    }
    let rows = server_rows(&page);
    assert_eq!(rows.len(), 8);
    let row = |addr: &str| {
        *rows
            .iter()
            .find(|r| r.contains(&format!("data-addr=\"{addr}\"")))
            .unwrap()
    };
    assert_eq!(
        cell(row("127.0.0.1:27960"), "country"),
        "<span class=\"flag\" role=\"img\" aria-label=\"DE\" title=\"DE\">\u{1F1E9}\u{1F1EA}</span><span class=\"cc\">DE</span>"
    );
    assert_eq!(cell(row("127.0.0.1:27964"), "country"), "-");
    // Delta (no humans) asks for a password; the others say they do not, but Golf and the
    // server that never answered.
    assert_eq!(
        cell(row("127.0.0.1:27963"), "password"),
        "<span class=\"lock\" role=\"img\" aria-label=\"password\" title=\"password\">🔒</span>"
    );
    assert_eq!(
        cell(row("127.0.0.1:27960"), "password"),
        "<span class=\"sr\">no</span>"
    );
    assert_eq!(
        cell(row("127.0.0.1:27966"), "password"),
        "<span title=\"the game does not say\">-</span>"
    );
    assert_eq!(
        cell(row("127.0.0.1:27967"), "password"),
        cell(row("127.0.0.1:27966"), "password")
    );
    for r in &rows {
        let name = cell(r, "name");
        assert!(!name.contains("flag") && !name.contains("lock"), "{name}");
    }
    // The phone layout hides the `.opt` columns, and shows the symbols for the long headers.
    let phone = page
        .split("@media (max-width:700px){")
        .nth(1)
        .expect("a phone layout");
    let phone = &phone[..phone.find("\n}").unwrap()];
    assert!(phone.contains(".opt{display:none}"), "{phone}");
    assert!(phone.contains("th .short{display:inline}"), "{phone}");
    assert!(!phone.contains(".country{display:none") && !phone.contains(".password{display:none"));

    // By country: online first, then the code, servers without one last, both ways.
    let (_, asc) = s.text("/?sort=country").await;
    assert!(
        asc.contains("<th class=\"country\" aria-sort=\"ascending\"><a class=\"sort\" href=\"/?sort=country&amp;order=desc\""),
        "clicking it again reverses it: {asc}"
    );
    let order = row_addrs(&asc);
    assert_eq!(
        order[..3],
        ["127.0.0.1:27960", "127.0.0.1:27961", "127.0.0.1:27962"],
        "DE, NL, US"
    );
    assert_eq!(order[7], "127.0.0.1:27966", "offline last");
    let desc = row_addrs(&s.text("/?sort=country&order=desc").await.1);
    assert_eq!(
        desc[..3],
        ["127.0.0.1:27962", "127.0.0.1:27961", "127.0.0.1:27960"],
        "US, NL, DE, then none"
    );
    assert_eq!(
        addrs(&s.json("/api/servers?sort=country").await),
        order,
        "the API and the page agree"
    );
    // By password: the one that asks for one after those that do not ascending, first
    // descending; the one whose game does not say last of those that answered either way.
    let asc = row_addrs(&s.text("/?sort=password").await.1);
    assert_eq!(
        asc[5..],
        ["127.0.0.1:27963", "127.0.0.1:27967", "127.0.0.1:27966"],
        "{asc:?}"
    );
    let desc = addrs(&s.json("/api/servers?sort=password&order=desc").await);
    assert_eq!(desc[0], "127.0.0.1:27963", "{desc:?}");
    assert_eq!(
        desc[6..],
        ["127.0.0.1:27967", "127.0.0.1:27966"],
        "{desc:?}"
    );
    s.close().await;
}

/// The server page of a server that went down: "down since" the first round it missed, its
/// uptime over the rounds probed, and the maps it ran (newest first, each until the next
/// change); one that stayed up: "up since", no "down since".
#[tokio::test(flavor = "multi_thread")]
async fn server_page_shows_down_since_uptime_and_map_history() {
    let now = fragstat_tracker::round::now_ms();
    let at = [now - 40_000, now - 30_000, now - 20_000, now - 10_000];
    let gone = "127.0.0.1:27970";
    let up = "127.0.0.1:27971";
    let round = |i: usize| {
        let first = match i {
            0 => answered(gone, "q3", "Gone", "q3dm1", "ffa", &[], None),
            1 => answered(gone, "q3", "Gone", "q3dm7", "ctf", &[], None),
            _ => Record::failed(Some(gone.into()), "q3", Status::Timeout, "no reply".into()),
        };
        RoundData {
            at: at[i],
            finished: at[i] + 5,
            records: vec![
                first,
                answered(up, "q3", "Stays", "q3dm17", "ffa", &[("a", 1)], None),
            ],
            ..RoundData::default()
        }
    };
    let s = site_with("", (0..4).map(round).collect()).await;
    let (status, page) = s.text("/server/127.0.0.1%3A27970").await;
    assert_eq!(status, 200, "{page}");
    let t = fragstat_tracker::web::time_text;
    assert!(
        page.contains("<span class=\"badge down\">timeout</span>"),
        "{page}"
    );
    assert!(
        page.contains(&format!(
            ", down since <time datetime=\"{0}\" title=\"{0}\">",
            t(at[2])
        )),
        "{page}"
    );
    assert!(!page.contains("up since"), "{page}");
    // Two rounds of four answered.
    assert!(page.contains("<td id=\"uptime\">50.0 % since "), "{page}");
    // The maps: q3dm7 (ctf) from the second round until it went down, q3dm1 before it.
    let maps = page
        .split("<table id=\"maps\">")
        .nth(1)
        .expect("a map table")
        .split("</table>")
        .next()
        .unwrap();
    let rows: Vec<&str> = maps.split("<tr class=\"map\">").skip(1).collect();
    assert_eq!(rows.len(), 2, "{maps}");
    for (row, (map, gt, from, to)) in rows.iter().zip([
        ("q3dm7", "ctf", at[1], at[2]),
        ("q3dm1", "ffa", at[0], at[1]),
    ]) {
        assert!(
            row.starts_with(&format!("<td>{map}</td><td class=\"opt\">{gt}</td>")),
            "{row}"
        );
        assert!(
            row.contains(&format!("<time datetime=\"{0}\" title=\"{0}\">", t(from))),
            "{row}"
        );
        assert!(
            row.contains(&format!("<time datetime=\"{0}\" title=\"{0}\">", t(to))),
            "{row}"
        );
    }
    // The API says the same.
    let j = s.json("/api/servers/127.0.0.1%3A27970").await;
    assert_eq!(j["down_since"], at[2]);
    assert_eq!(j["uptime"]["fraction"], 0.5);
    assert_eq!(j["map_history"][0]["map"], "q3dm7");
    assert_eq!(j["map_history"][0]["to"], at[2]);

    let (_, page) = s.text("/server/127.0.0.1%3A27971").await;
    assert!(
        page.contains(&format!(
            ", up since <time datetime=\"{0}\" title=\"{0}\">",
            t(at[0])
        )),
        "{page}"
    );
    assert!(!page.contains("down since"), "{page}");
    assert!(page.contains("<td id=\"uptime\">100.0 % since "), "{page}");
    assert!(
        page.contains("<td>now</td>"),
        "the map it still runs: {page}"
    );
    s.close().await;
}

/// A copy button with the address everywhere an address is shown, and a join link only where
/// the game's client has a URL scheme: on the browser and on the server page.
#[tokio::test(flavor = "multi_thread")]
async fn copy_buttons_and_join_links() {
    let now = fragstat_tracker::round::now_ms();
    let servers = [
        ("127.0.0.1:27980", "openarena", None),
        (
            "127.0.0.1:27981",
            "q3",
            Some("quake3://connect/127.0.0.1:27981"),
        ),
        ("127.0.0.1:8303", "ddnet", Some("ddnet://127.0.0.1:8303")),
        ("127.0.0.1:8304", "teeworlds07", None),
        (
            "127.0.0.1:44400",
            "warsow",
            Some("warsow://127.0.0.1:44400"),
        ),
    ];
    let records = servers
        .iter()
        .map(|(addr, game, _)| answered(addr, game, game, "m", "dm", &[], None))
        .collect();
    let s = site_with(
        "",
        vec![RoundData {
            at: now - 10_000,
            finished: now - 9_995,
            records,
            ..RoundData::default()
        }],
    )
    .await;
    let (_, browser) = s.text("/").await;
    let rows = server_rows(&browser);
    assert_eq!(rows.len(), servers.len(), "{browser}");
    for (addr, game, join) in servers {
        let copy = format!(
            "<button class=\"copy\" type=\"button\" data-copy=\"{addr}\" hidden title=\"copy the address\">copy</button>"
        );
        let row = rows
            .iter()
            .find(|r| r.contains(&format!("data-addr=\"{addr}\"")))
            .unwrap();
        let (_, server) = s
            .text(&format!("/server/{}", addr.replace(':', "%3A")))
            .await;
        let info = server.split("<table id=\"info\">").nth(1).unwrap();
        let info = info.split("</tr>").next().unwrap();
        for (what, html) in [("browser", cell(row, "address opt")), ("server page", info)] {
            assert!(
                html.contains(&format!("<code>{addr}</code>")),
                "{game} {what}: {html}"
            );
            assert!(html.contains(&copy), "{game} {what}: {html}");
            match join {
                Some(url) => assert!(
                    html.contains(&format!(
                        "<a class=\"join\" href=\"{url}\" title=\"join with the game's client\">join</a>"
                    )),
                    "{game} {what}: {html}"
                ),
                None => assert!(!html.contains("class=\"join\""), "{game} {what}: {html}"),
            }
        }
        // The API's join URL for the refresh script is the same.
        let j = s
            .json(&format!("/api/servers/{}", addr.replace(':', "%3A")))
            .await;
        assert_eq!(j["server"]["join_url"].as_str(), join, "{game}");
    }
    // The script shows the buttons (hidden without it: the address is there to select).
    assert!(browser.contains("showCopyButtons(document)"), "{browser}");
    s.close().await;
}

/// A player's page shows a race server's last score as a time, as the server page does: by
/// the record's score kind where it says (DDNet's `client_score_kind`, even for a game type
/// that is no race), else by the game type.
#[tokio::test(flavor = "multi_thread")]
async fn player_page_shows_race_times() {
    let now = fragstat_tracker::round::now_ms();
    let mut records = vec![
        // A race game type: a time (0.6 sends negated seconds).
        answered(
            "127.0.0.1:8303",
            "ddnet",
            "Race",
            "Tutorial",
            "DDraceNetwork",
            &[("racer", -95)],
            None,
        ),
        // No race in the game type, but the record says its scores are times.
        answered(
            "127.0.0.1:8304",
            "ddnet",
            "Gores",
            "Gores1",
            "Gores",
            &[("racer", 125)],
            Some("time"),
        ),
        // A race game type whose record says points.
        answered(
            "127.0.0.1:8305",
            "ddnet",
            "Block",
            "Block1",
            "DDraceNetwork",
            &[("racer", 42)],
            Some("points"),
        ),
        // Another game: a number.
        answered(
            "127.0.0.1:27960",
            "q3",
            "Quake",
            "q3dm17",
            "ffa",
            &[("racer", 17)],
            None,
        ),
    ];
    // The racer plays for a clan on the first.
    records[0].info.as_mut().unwrap().players.as_mut().unwrap()[0].clan =
        Some(Text::new(b"Tee Clan".to_vec(), Dialect::Plain));
    let s = site_with(
        "",
        vec![RoundData {
            at: now - 10_000,
            finished: now - 9_995,
            records,
            ..RoundData::default()
        }],
    )
    .await;
    let found = s.json("/api/players?q=racer").await;
    let ids: Vec<i64> = found["players"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["player_id"].as_i64().unwrap())
        .collect();
    assert!(!ids.is_empty(), "{found}");
    // The last score of each server's session, whichever player identity holds it.
    let mut scores = std::collections::BTreeMap::new();
    for id in ids {
        let (status, page) = s.text(&format!("/player/{id}")).await;
        assert_eq!(status, 200, "{page}");
        for row in page.split("<tr class=\"session\">").skip(1) {
            let addr = row.split("href=\"/server/").nth(1).unwrap();
            let addr = addr[..addr.find('"').unwrap()].replace("%3A", ":");
            let score = row.split("<td class=\"num opt\">").nth(1).unwrap();
            let score = score[..score.find("</td>").unwrap()].to_string();
            scores.insert(addr, score);
        }
    }
    let want: std::collections::BTreeMap<String, String> = [
        ("127.0.0.1:8303", "1:35"),
        ("127.0.0.1:8304", "2:05"),
        ("127.0.0.1:8305", "42"),
        ("127.0.0.1:27960", "17"),
    ]
    .into_iter()
    .map(|(a, v)| (a.to_string(), v.to_string()))
    .collect();
    assert_eq!(scores, want);
    // The server page says the same, with the clan in its column.
    let (_, race) = s.text("/server/127.0.0.1%3A8303").await;
    assert!(
        race.contains("<thead><tr><th>Name</th><th>Clan</th><th class=\"num\">Time</th>"),
        "{race}"
    );
    assert!(
        race.contains("<td>Tee Clan</td><td class=\"num\">1:35</td>"),
        "{race}"
    );
    // The search page links each hit's last server by its name (the servers read in one
    // query), not by its address.
    let (_, search) = s.text("/players?q=racer").await;
    let hits: Vec<&str> = search.split("<tr class=\"hit\">").skip(1).collect();
    assert!(!hits.is_empty(), "{search}");
    for hit in hits {
        let last = hit.split("href=\"/server/").nth(1).expect("a server link");
        let text = &last[last.find('>').unwrap() + 1..last.find("</a>").unwrap()];
        assert!(
            ["Race", "Gores", "Block", "Quake"]
                .iter()
                .any(|n| text.contains(&format!(">{n}<"))),
            "{hit}"
        );
    }
    s.close().await;
}

/// An emulated server as a [`SimNet`] responder: each datagram handled at once, the replies
/// to the client kept.
fn responder(
    mut service: Box<dyn fragstat::core::service::Service>,
    client: std::net::SocketAddr,
) -> fragstat::core::testing::Responder {
    let mut out = Vec::new();
    service.start(std::time::Instant::now(), &mut out);
    let service = std::sync::Mutex::new(service);
    std::sync::Arc::new(move |datagram: &[u8]| {
        let mut out = Vec::new();
        service
            .lock()
            .unwrap()
            .handle(std::time::Instant::now(), client, datagram, &mut out);
        out.into_iter()
            .filter(|(to, _)| *to == client)
            .map(|(_, d)| d)
            .collect()
    })
}

/// The whole GeoIP path: a `track.toml` naming the CC0 MMDB (`geoip = "PATH"`), a round
/// through the tracker's own round function over emulated servers at public addresses from
/// the fixtures, the countries stored, `/api/servers`' `country`, and the flags on the page.
/// The servers live in a simulated network inside the test ([`SimNet`]): the public
/// addresses are looked up in the file and used as keys, and no packet goes to them. The
/// DDNet server's list is served over loopback HTTP. The same round with
/// `country_from_name = false` reads the name's tag no more.
#[tokio::test(flavor = "multi_thread")]
async fn geoip_end_to_end_from_the_config_to_the_page() {
    use fragstat::core::registry::EmuServer;
    use fragstat::core::testing::{Faults, SimNet};
    use fragstat::core::Transport;
    let Some(mmdb) = mmdb() else {
        return;
    };
    // Quake III servers: (address, name, the country expected and why).
    let q3 = [
        // GeoIP.
        ("188.40.71.213:27970", &b"^2Frankfurt ^7FFA"[..], "DE"),
        ("178.62.202.219:27960", &b"Amsterdam ^1Tourney"[..], "NL"),
        // A tag in the name (colours stripped) over the address (US).
        ("24.166.252.209:27966", &b"^3[^7NL^3]^7 Dutch CTF"[..], "NL"),
        // `[EU]` is no country: the address (US).
        ("74.91.112.64:27960", &b"[EU] Chicago Instagib"[..], "US"),
    ];
    // A DDNet server whose list says `na:us`, named `[RU] …`, at a German address: the list.
    let ddnet = "185.107.96.110:8303";
    let net = SimNet::new(Faults::default(), 1);
    let me = net.local_addr().unwrap();
    let q3_game = fragstat::game("q3").unwrap();
    for (i, (addr, name, _)) in q3.iter().enumerate() {
        let c = EmuServer::new(name.to_vec(), "q3dm17", 2).with_seed(i as u64 + 1);
        let service = q3_game.emulator().unwrap().emulated_server(&c).unwrap();
        net.add_server(addr.parse().unwrap(), responder(service, me));
    }
    let dd_game = fragstat::game("ddnet").unwrap();
    let c = EmuServer::new(b"[RU] DDraceNetwork".to_vec(), "Tutorial", 1).with_seed(9);
    let service = dd_game.emulator().unwrap().emulated_server(&c).unwrap();
    net.add_server(ddnet.parse().unwrap(), responder(service, me));
    let list = serde_json::json!({"servers": [{
        "addresses": [format!("tw-0.6+udp://{ddnet}")],
        "location": "na:us",
        "info": {"max_clients": 16, "max_players": 16, "passworded": false,
                 "game_type": "DDraceNetwork", "name": "[RU] DDraceNetwork",
                 "map": {"name": "Tutorial"}, "version": "0.6.4, 16.4", "clients": []}
    }]})
    .to_string();
    let http = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let list_url = format!("http://{}/servers.json", http.local_addr().unwrap());
    let app = axum::Router::new().route(
        "/servers.json",
        axum::routing::get(move || {
            let list = list.clone();
            async move { list }
        }),
    );
    let list_server = tokio::spawn(async move { axum::serve(http, app).await });
    let client = fragstat::Client::builder()
        .transports(Some(net.clone() as std::sync::Arc<dyn Transport>), None)
        .timeout(std::time::Duration::from_millis(500))
        .retries(2)
        .build()
        .unwrap();

    let q3_servers: Vec<String> = q3.iter().map(|(a, _, _)| format!("{a:?}")).collect();
    let round_with = |name_tags: bool| {
        let dir = tempfile::tempdir().unwrap();
        let toml = format!(
            "database = {db:?}\ngeoip = {mmdb:?}\ncountry_from_name = {name_tags}\n\
             [[source]]\ngame = \"q3\"\nservers = [{q3}]\n\
             [[source]]\ngame = \"ddnet\"\nmasters = [{list_url:?}]\n",
            db = dir.path().join("geo.db"),
            q3 = q3_servers.join(", "),
        );
        let client = &client;
        async move {
            let tracker = Tracker::open(Config::from_toml(&toml).unwrap())
                .await
                .unwrap();
            let state = tracker.state();
            assert!(state.countries.has_geoip(), "the config's MMDB is loaded");
            // The tracker's round (poll, countries, write, upkeep) through the simulated
            // network.
            let report = fragstat_tracker::round::round(
                client,
                tracker.store(),
                tracker.config(),
                tracker.metrics(),
                &state.countries,
            )
            .await
            .unwrap();
            assert_eq!(report.data.records.len(), 5, "{:?}", report.data.records);
            assert!(
                report
                    .data
                    .records
                    .iter()
                    .all(|r| r.status == Status::Online),
                "{:?}",
                report.data.records
            );
            (tracker, dir)
        }
    };

    let (tracker, dir) = round_with(true).await;
    let mut want: Vec<(&str, &str)> = q3.iter().map(|(a, _, c)| (*a, *c)).collect();
    want.push((ddnet, "US"));
    for (addr, country) in &want {
        let row = tracker.store().server(addr).await.unwrap().expect(addr);
        assert_eq!(row.country.as_deref(), Some(*country), "{addr} stored");
    }
    // Every datagram went to one of the servers above, inside the simulated network.
    let targets: std::collections::BTreeSet<String> =
        net.sent().iter().map(|s| s.to.to_string()).collect();
    let expected: std::collections::BTreeSet<String> =
        want.iter().map(|(a, _)| a.to_string()).collect();
    assert_eq!(targets, expected);

    let s = serve(&tracker, dir).await;
    let api = s.json("/api/servers?per_page=500").await;
    for (addr, country) in &want {
        let row = api["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["addr"] == *addr)
            .unwrap_or_else(|| panic!("{addr}: {api}"));
        assert_eq!(row["country"], *country, "{addr} in the API");
    }
    let (_, page) = s.text("/?sort=country").await;
    let flag = |c: &str| {
        let f = fragstat_tracker::geoip::flag(c).unwrap();
        format!("<span class=\"flag\" role=\"img\" aria-label=\"{c}\" title=\"{c}\">{f}</span><span class=\"cc\">{c}</span>")
    };
    let rows = server_rows(&page);
    assert_eq!(rows.len(), want.len(), "{page}");
    for (addr, country) in &want {
        let row = rows
            .iter()
            .find(|r| r.contains(&format!("data-addr=\"{addr}\"")))
            .unwrap_or_else(|| panic!("{addr}: {page}"));
        assert_eq!(cell(row, "country"), flag(country), "{addr} on the page");
    }
    // Sorted by country: DE, NL, NL, US, US.
    let order: Vec<&str> = row_addrs(&page)
        .iter()
        .map(|a| want.iter().find(|(w, _)| w == a).unwrap().1)
        .collect();
    assert_eq!(order, ["DE", "NL", "NL", "US", "US"]);
    // The server page.
    let (_, server) = s.text("/server/24.166.252.209%3A27966").await;
    assert!(
        server.contains(&format!("<tr><th>Country</th><td>{}</td></tr>", flag("NL"))),
        "{server}"
    );
    s.close().await;

    // Tags off: the tagged server is where its address is; the list still wins.
    let (tracker, _dir) = round_with(false).await;
    let store = tracker.store();
    let tagged = store.server("24.166.252.209:27966").await.unwrap().unwrap();
    assert_eq!(tagged.country.as_deref(), Some("US"));
    let listed = store.server(ddnet).await.unwrap().unwrap();
    assert_eq!(listed.country.as_deref(), Some("US"));
    list_server.abort();
}
