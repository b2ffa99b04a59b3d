//! What other sites take from the tracker, over real HTTP on loopback: a server's banner
//! (SVG and PNG in every size, hostile names inert, cached per round with ETag/304), its
//! widget (framable by any site, unlike the pages; no script, nothing fetched elsewhere),
//! their own request rate (a flooding host and a flooding network answered 429 while another
//! network is served), the snippets on the server page, the Atom feeds of a server's events
//! and a player's sessions (valid Atom, stable ids; in SQLite and PostgreSQL), the icon and
//! robots.txt.

mod support;

use fragstat::core::model::{Dialect, Player, ServerInfo, Text};
use fragstat::core::record::{Record, Status};
use fragstat_tracker::store::{EventKind, RoundData, Store};
use fragstat_tracker::Tracker;

const ADDR: &str = "127.0.0.1:27960";
const SEG: &str = "127.0.0.1%3A27960";
/// A name that tries every way out of text: markup, an entity, a CDATA end, quotes, a
/// control character XML cannot hold, a bidi override.
const HOSTILE: &[u8] = b"^1<script>alert(1)</script>^7&amp;]]>\"'\x01\xe2\x80\xaeX";

fn online(name: &[u8], map: &str, players: &[&str]) -> Record {
    let mut info = ServerInfo::default();
    info.name = Text::new(name.to_vec(), Dialect::Ioq3);
    info.map = Text::new(map.as_bytes().to_vec(), Dialect::Plain);
    info.gametype = Some("ffa".into());
    info.num_players = u32::try_from(players.len()).unwrap();
    info.max_players = 16;
    info.num_bots = Some(0);
    info.players = Some(
        players
            .iter()
            .map(|p| {
                let mut pl = Player::new(Text::new(p.as_bytes().to_vec(), Dialect::Ioq3));
                pl.is_bot = Some(false);
                pl
            })
            .collect(),
    );
    Record::online(
        Some(ADDR.into()),
        "q3",
        info,
        Some(std::time::Duration::from_millis(12)),
    )
}

fn down() -> Record {
    Record::failed(Some(ADDR.into()), "q3", Status::Timeout, "no reply".into())
}

/// Rounds 10 s apart ending now: up on q3dm17 with two players, then q3dm6 with one (and a
/// hostile player), down, up again.
fn rounds() -> Vec<RoundData> {
    let now = fragstat_tracker::round::now_ms();
    let hostile = std::str::from_utf8(&HOSTILE[..20]).unwrap();
    let records = [
        online(HOSTILE, "q3dm17", &["^2Alice", "Bob"]),
        online(HOSTILE, "q3dm6", &["^2Alice", hostile]),
        down(),
        online(HOSTILE, "q3dm6", &["^2Alice"]),
    ];
    let n = records.len() as i64;
    records
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let at = now - (n - i as i64) * 10_000;
            RoundData {
                at,
                finished: at + 5,
                records: vec![r],
                ..RoundData::default()
            }
        })
        .collect()
}

struct Site {
    web: support::Web,
    client: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Site {
    async fn get(&self, path: &str) -> reqwest::Response {
        let url = format!("{}{path}", self.web.base);
        self.client.get(url).send().await.expect(path)
    }

    async fn text(&self, path: &str) -> String {
        let r = self.get(path).await;
        assert_eq!(r.status(), 200, "{path}");
        r.text().await.unwrap()
    }

    async fn close(self) {
        let _ = self.web.stop.send(true);
        self.web.task.await.unwrap().unwrap();
    }
}

async fn site() -> Site {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("embeds.db");
    let config = support::quiet_config(db.as_ref(), "retention_hours = 48\n");
    let tracker = Tracker::open(config).await.unwrap();
    for round in &rounds() {
        tracker.store().write_round(round).await.unwrap();
    }
    Site {
        web: support::serve(tracker.state()).await,
        client: reqwest::Client::new(),
        _dir: dir,
    }
}

/// Every size as SVG (parsed by usvg) and PNG (decoded), its size as asked; the name's
/// markup is text; a second ask with the ETag is a 304.
#[tokio::test(flavor = "multi_thread")]
async fn banners_in_every_size_are_valid_and_escaped() {
    let s = site().await;
    for (w, h) in fragstat_tracker::web::BANNER_SIZES {
        for colors in ["1", "0"] {
            let q = format!("?size={w}x{h}&colors={colors}");
            let r = s.get(&format!("/server/{SEG}/banner.svg{q}")).await;
            assert_eq!(r.status(), 200);
            assert_eq!(r.headers()["content-type"], "image/svg+xml");
            let svg = r.text().await.unwrap();
            assert!(!svg.contains("<script"), "{svg}");
            assert!(
                svg.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
                "{svg}"
            );
            assert!(!svg.contains('\u{1}') && !svg.contains("]]>"), "{svg}");
            let tree = resvg::usvg::Tree::from_str(&svg, &resvg::usvg::Options::default()).unwrap();
            assert_eq!(
                (tree.size().width(), tree.size().height()),
                (w as f32, h as f32)
            );
            // The name's red where colours are asked for, none where not.
            assert_eq!(svg.contains("<tspan fill=\"#"), colors == "1", "{svg}");
            let r = s.get(&format!("/server/{SEG}/banner.png{q}")).await;
            assert_eq!(r.status(), 200);
            assert_eq!(r.headers()["content-type"], "image/png");
            let png = r.bytes().await.unwrap();
            let pixmap = resvg::tiny_skia::Pixmap::decode_png(&png).unwrap();
            assert_eq!((pixmap.width(), pixmap.height()), (w, h));
            // Text was drawn: the name's red is there, with colours.
            let red = pixmap
                .pixels()
                .iter()
                .filter(|p| p.red() > 200 && p.green() < 120 && p.alpha() == 255)
                .count();
            assert_eq!(red > 0, colors == "1", "{w}x{h} colors={colors}: {red}");
        }
    }
    // Cached per round: the same bytes and ETag; 304 for a client that has them.
    let a = s.get(&format!("/server/{SEG}/banner.png")).await;
    let tag = a.headers()["etag"].to_str().unwrap().to_string();
    assert!(a.headers()["cache-control"]
        .to_str()
        .unwrap()
        .starts_with("public, max-age="));
    let b = s
        .client
        .get(format!("{}/server/{SEG}/banner.png", s.web.base))
        .header("if-none-match", &tag)
        .send()
        .await
        .unwrap();
    assert_eq!(b.status(), 304);
    for bad in ["?size=1x1", "?size=468x60&colors=2"] {
        let r = s.get(&format!("/server/{SEG}/banner.svg{bad}")).await;
        assert_eq!(r.status(), 400, "{bad}");
    }
    assert_eq!(
        s.get("/server/127.0.0.1%3A1/banner.png").await.status(),
        404
    );
    s.close().await;
}

/// The widget may be framed by any site, the pages by none; it runs no script and fetches
/// nothing from anywhere (its links are this site's paths); it refreshes itself.
#[tokio::test(flavor = "multi_thread")]
async fn the_widget_is_framable_and_self_contained() {
    let s = site().await;
    let r = s.get(&format!("/server/{SEG}/widget")).await;
    assert_eq!(r.status(), 200);
    let csp = r.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(csp.contains("frame-ancestors *"), "{csp}");
    assert!(
        csp.contains("default-src 'none'") && !csp.contains("script-src"),
        "{csp}"
    );
    assert!(r.headers().get("x-frame-options").is_none());
    let html = r.text().await.unwrap();
    assert!(!html.contains("<script"), "{html}");
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "{html}"
    );
    assert!(html.contains("http-equiv=\"refresh\""), "{html}");
    assert!(html.contains("&lt;script&gt;"), "{html}");
    assert!(html.contains("id=\"players\">1/16<"), "{html}");
    // The pages keep their own policy.
    let page = s.get(&format!("/server/{SEG}")).await;
    let csp = page.headers()["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert_eq!(page.headers()["x-frame-options"], "DENY");
    s.close().await;
}

/// The server page offers the banner, the widget and the feed, with snippets to copy; the
/// server and player pages name their feeds in their heads, and every page its icon.
#[tokio::test(flavor = "multi_thread")]
async fn the_server_page_offers_snippets_and_feeds() {
    let s = site().await;
    let page = s.text(&format!("/server/{SEG}")).await;
    for want in [
        "id=\"embed\"",
        &format!("src=\"/server/{SEG}/banner.png\""),
        &format!("[url=/server/{SEG}][img]/server/{SEG}/banner.png[/img][/url]"),
        &format!("[![{ADDR}](/server/{SEG}/banner.png)](/server/{SEG})"),
        &format!("&lt;iframe src=&quot;/server/{SEG}/widget&quot;"),
        &format!(
            "<link rel=\"alternate\" type=\"application/atom+xml\" href=\"/server/{SEG}/feed.atom\""
        ),
        "<link rel=\"icon\" type=\"image/svg+xml\" href=\"/favicon.svg\">",
    ] {
        assert!(page.contains(want), "{want}");
    }
    let players = s.text("/players?q=alice").await;
    let id = players
        .split("href=\"/player/")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_string();
    let player = s.text(&format!("/player/{id}")).await;
    assert!(player.contains(&format!(
        "<link rel=\"alternate\" type=\"application/atom+xml\" href=\"/player/{id}/feed.atom\""
    )));
    s.close().await;
}

fn parse_atom(xml: &str) -> atom_syndication::Feed {
    // Well-formed XML, event by event, then Atom.
    let mut r = quick_xml::Reader::from_str(xml);
    loop {
        match r.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(_) => {}
            Err(e) => panic!("{e}: {xml}"),
        }
    }
    xml.parse::<atom_syndication::Feed>().unwrap()
}

/// The server's feed: its map change, going down and up, its joins, newest first, each
/// with a stable id; the player's feed: its sessions; names as text, never markup.
#[tokio::test(flavor = "multi_thread")]
async fn feeds_are_valid_atom_with_stable_ids() {
    let s = site().await;
    let r = s.get(&format!("/server/{SEG}/feed.atom")).await;
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/atom+xml"));
    let xml = r.text().await.unwrap();
    let feed = parse_atom(&xml);
    let titles: Vec<&str> = feed.entries().iter().map(|e| e.title().as_str()).collect();
    assert!(
        titles.iter().any(|t| t.ends_with(": map q3dm6 (ffa)")),
        "{titles:?}"
    );
    assert!(titles.iter().any(|t| t.ends_with(" is down")), "{titles:?}");
    assert!(titles.iter().any(|t| t.ends_with(" is up")), "{titles:?}");
    assert!(
        titles.iter().any(|t| t.starts_with("Alice joined ")),
        "{titles:?}"
    );
    assert!(
        titles
            .iter()
            .any(|t| t.contains("<script>alert(1)</script>")),
        "{titles:?}"
    );
    assert!(!xml.contains("<script>"), "{xml}");
    let times: Vec<_> = feed.entries().iter().map(|e| *e.updated()).collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "newest first");
    assert!(feed.links().iter().any(|l| l.rel() == "self"));
    let ids: Vec<String> = feed.entries().iter().map(|e| e.id().to_string()).collect();
    let again = parse_atom(&s.text(&format!("/server/{SEG}/feed.atom")).await);
    let ids2: Vec<String> = again.entries().iter().map(|e| e.id().to_string()).collect();
    assert_eq!(ids, ids2);
    assert_eq!(
        ids.len(),
        ids.iter().collect::<std::collections::HashSet<_>>().len()
    );
    assert!(ids.iter().all(|i| i.starts_with("urn:uuid:")));

    let players = s.text("/players?q=alice").await;
    let id = players
        .split("href=\"/player/")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_string();
    let pf = parse_atom(&s.text(&format!("/player/{id}/feed.atom")).await);
    assert!(
        pf.title().as_str().starts_with("Alice"),
        "{}",
        pf.title().as_str()
    );
    assert!(!pf.entries().is_empty());
    assert!(pf
        .entries()
        .iter()
        .all(|e| e.title().as_str().starts_with("Alice ")));
    assert_eq!(s.get("/player/999999/feed.atom").await.status(), 404);
    assert_eq!(s.get("/server/127.0.0.1%3A1/feed.atom").await.status(), 404);
    s.close().await;
}

/// The store's events of a server, the same in both backends.
async fn events_in(url: &str) {
    let store = Store::open(url).await.unwrap();
    for round in &rounds() {
        store.write_round(round).await.unwrap();
    }
    let id = store.server(ADDR).await.unwrap().unwrap().id;
    let events = store.server_events(id, 0, 50).await.unwrap();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match &e.kind {
            EventKind::Up => "up",
            EventKind::Down => "down",
            EventKind::Map { .. } => "map",
            EventKind::Join(_) => "join",
            EventKind::Leave(_) => "leave",
        })
        .collect();
    for k in ["up", "down", "map", "join"] {
        assert!(kinds.contains(&k), "{url}: {kinds:?}");
    }
    assert!(events.windows(2).all(|w| w[0].at >= w[1].at));
    assert!(store.server_events(id, 0, 2).await.unwrap().len() <= 2);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_server_events() {
    let dir = tempfile::tempdir().unwrap();
    events_in(&dir.path().join("ev.db").display().to_string()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_server_events() {
    let Some(pg) = fragstat_testkit::postgres::Postgres::start() else {
        return;
    };
    events_in(&pg.url).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn robots_and_the_icon() {
    let s = site().await;
    let robots = s.text("/robots.txt").await;
    assert!(robots.contains("Disallow: /*?\n") && robots.contains("Disallow: /api/\n"));
    let r = s.get("/favicon.svg").await;
    assert_eq!(r.headers()["content-type"], "image/svg+xml");
    let cc = r.headers()["cache-control"].to_str().unwrap().to_string();
    let age: u64 = cc.trim_start_matches("public, max-age=").parse().unwrap();
    assert!(age >= 30 * 24 * 3600, "{cc}");
    let svg = r.text().await.unwrap();
    resvg::usvg::Tree::from_str(&svg, &resvg::usvg::Options::default()).unwrap();
    s.close().await;
}

/// A tracker with [`rounds`] served behind the web guard with its own rates off, trusting
/// loopback's `X-Real-IP`: its base URL, its stop, its task, its directory.
async fn guarded() -> (
    String,
    tokio::sync::watch::Sender<bool>,
    tokio::task::JoinHandle<std::io::Result<()>>,
    tempfile::TempDir,
) {
    use fragstat_http_guard::{ClientIp, Limits, Rate};
    let dir = tempfile::tempdir().unwrap();
    let config = support::quiet_config(dir.path().join("f.db").as_ref(), "");
    let tracker = Tracker::open(config).await.unwrap();
    for round in &rounds() {
        tracker.store().write_round(round).await.unwrap();
    }
    let listener = fragstat_tracker::web::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let limits = Limits {
        request_rate: Rate::UNLIMITED,
        net_request_rate: Rate::UNLIMITED,
        ..Limits::default()
    };
    let client_ip = ClientIp::from_header("x-real-ip", &["127.0.0.0/8".into()]).unwrap();
    let (stop, mut rx) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(fragstat_tracker::web::serve_guarded(
        listener,
        tracker.state(),
        limits,
        client_ip,
        async move {
            let _ = rx.wait_for(|s| *s).await;
        },
    ));
    (base, stop, task, dir)
}

/// Banners, widgets and feeds have their own rate (`embed.rs`): one host flooding them gets its
/// burst and is then answered 429 with `Retry-After`; its neighbours share their network's
/// rate; when the network has spent it, a new host of it waits too, while a host of another
/// network, and the flooding network's page views, are served. (Behind a trusted proxy on
/// loopback whose header names the clients; the web guard's own rates are off, so the
/// 429s are the embeds'.)
#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_banner_requests_leaves_other_networks_served() {
    use fragstat_http_guard::Rate;
    use fragstat_tracker::web::{EMBED_HOST_RATE, EMBED_NET_RATE};

    let (base, stop, task, _dir) = guarded().await;
    let client = reqwest::Client::new();
    let ask = |path: &'static str, ip: String| {
        let req = client.get(format!("{base}{path}")).header("x-real-ip", ip);
        async move { req.send().await.unwrap() }
    };
    const BANNER: &str = "/server/127.0.0.1%3A27960/banner.svg";
    let started = std::time::Instant::now();
    // Requests a rate may have let through by now, beyond its burst.
    let allowed = |r: Rate| {
        u64::from(r.burst) + (started.elapsed().as_secs_f64() * f64::from(r.per_sec)) as u64 + 1
    };

    // One host: its burst, then 429.
    let mut served = 0u64;
    let refused = loop {
        let r = ask(BANNER, "203.0.113.7".into()).await;
        match r.status().as_u16() {
            200 => served += 1,
            429 => break r,
            s => panic!("{s}"),
        }
        assert!(served <= allowed(EMBED_HOST_RATE), "{served}");
    };
    assert!(served >= u64::from(EMBED_HOST_RATE.burst), "{served}");
    let wait: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(wait >= 1);

    // Its neighbours: served, until the network's rate is spent.
    let mut net_served = served;
    let mut host = 8;
    'net: loop {
        assert!(host < 250, "the network was never held");
        loop {
            let r = ask(BANNER, format!("203.0.113.{host}")).await;
            match r.status().as_u16() {
                200 => net_served += 1,
                429 => break,
                s => panic!("{s}"),
            }
        }
        assert!(net_served <= allowed(EMBED_NET_RATE), "{net_served}");
        // A fresh host of the network that is refused at once: the network is spent.
        host += 1;
        if ask(BANNER, format!("203.0.113.{host}")).await.status() == 429 {
            break 'net;
        }
        net_served += 1;
    }
    assert!(
        net_served >= u64::from(EMBED_NET_RATE.burst),
        "{net_served}"
    );

    // The feeds share the rate: refused to the spent network, served to another.
    const FEED: &str = "/server/127.0.0.1%3A27960/feed.atom";
    let r = ask(FEED, "203.0.113.251".into()).await;
    assert_eq!(r.status(), 429);
    assert_eq!(ask(FEED, "198.51.100.9".into()).await.status(), 200);
    // Another network is served, and so are the flooding network's page views.
    let r = ask(BANNER, "198.51.100.7".into()).await;
    assert_eq!(r.status(), 200);
    let r = ask("/server/127.0.0.1%3A27960/widget", "198.51.100.8".into()).await;
    assert_eq!(r.status(), 200);
    let r = ask("/", "203.0.113.7".into()).await;
    assert_eq!(r.status(), 200);

    let _ = stop.send(true);
    task.await.unwrap().unwrap();
}
