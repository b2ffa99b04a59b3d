//! Behind a reverse proxy every visitor comes from the proxy's address (127.0.0.1). With
//! the settings docs/tracker.md gives for it (`[web] connecting_ip_header = "X-Real-IP"`,
//! `trusted_proxies = ["127.0.0.1/32"]`), 17 visitors' `/api/events` widgets stay open and
//! pages and `/api/servers` are still served to everyone; with the default settings the
//! proxy is one visitor, and its per-host caps turn the widgets away (trial M1).

mod support;

use fragstat_tracker::store::RoundData;
use fragstat_tracker::Tracker;
use tokio::sync::watch;

/// Visitors with a widget open: one more than the default per-address connection cap.
const WIDGETS: usize = 17;

struct Site {
    base: String,
    stop: watch::Sender<bool>,
    web: tokio::task::JoinHandle<std::io::Result<()>>,
    /// Kept: its events hub ends every stream when it is dropped.
    tracker: Tracker,
    _dir: tempfile::TempDir,
}

impl Site {
    /// `fragstat_tracker_sse_clients` now.
    async fn sse_clients(&self) -> String {
        let m = reqwest::Client::new()
            .get(format!("{}/metrics", self.base))
            .header("X-Real-IP", "192.0.2.1")
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        m.lines()
            .find_map(|l| l.strip_prefix("fragstat_tracker_sse_clients "))
            .unwrap()
            .to_string()
    }
}

/// A tracker with one round written, served on loopback behind its guard with `web` as
/// its `[web]` table.
async fn site(web: &str) -> Site {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("proxy.db");
    let config = support::quiet_config(db.as_ref(), &format!("[web]\n{web}"));
    let tracker = Tracker::open(config).await.unwrap();
    let now = fragstat_tracker::round::now_ms();
    tracker
        .store()
        .write_round(&RoundData {
            at: now,
            finished: now + 5,
            ..RoundData::default()
        })
        .await
        .unwrap();
    let listener = fragstat_tracker::web::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, mut rx) = watch::channel(false);
    let web = tokio::spawn(fragstat_tracker::web::serve_guarded(
        listener,
        tracker.state(),
        tracker.config().web.limits(),
        tracker.config().web.client_ip().unwrap(),
        async move {
            let _ = rx.wait_for(|s| *s).await;
        },
    ));
    Site {
        base,
        stop,
        web,
        tracker,
        _dir: dir,
    }
}

/// The visitor `i`'s address as the proxy names it: each in a network of its own.
fn visitor(i: usize) -> String {
    format!("198.{}.0.7", 18 + i)
}

/// Opens the widgets' streams (each on a connection of its own, as the proxy would), and
/// returns the statuses with the streams still open.
async fn open_widgets(base: &str) -> (Vec<u16>, Vec<reqwest::Response>) {
    let mut statuses = Vec::new();
    let mut open = Vec::new();
    for i in 0..WIDGETS {
        // One client per visitor: no connection shared between them.
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()
            .unwrap();
        match client
            .get(format!("{base}/api/events"))
            .header("X-Real-IP", visitor(i))
            .send()
            .await
        {
            Ok(r) => {
                statuses.push(r.status().as_u16());
                if r.status() == 200 {
                    open.push(r);
                }
            }
            // Closed by the guard before any answer.
            Err(_) => statuses.push(0),
        }
    }
    (statuses, open)
}

/// What `n` visitors' page and API loads get, all at once while the widgets are open.
async fn loads(base: &str, n: usize) -> Vec<u16> {
    let client = reqwest::Client::new();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..n {
        let path = ["/", "/api/servers", "/players?q=a", "/metrics"][i % 4];
        let req = client
            .get(format!("{base}{path}"))
            .header("X-Real-IP", visitor(100 + i));
        tasks.spawn(async move { req.send().await.map_or(0, |r| r.status().as_u16()) });
    }
    let mut out = Vec::new();
    while let Some(s) = tasks.join_next().await {
        out.push(s.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seventeen_sse_widgets_behind_a_proxy_with_the_documented_settings() {
    let s =
        site("connecting_ip_header = \"X-Real-IP\"\ntrusted_proxies = [\"127.0.0.1/32\"]\n").await;
    let (statuses, open) = open_widgets(&s.base).await;
    assert_eq!(statuses, vec![200; WIDGETS], "every widget served");
    assert_eq!(open.len(), WIDGETS);
    assert_eq!(s.sse_clients().await, WIDGETS.to_string(), "streams open");
    // With all of them open, 40 more visitors' pages and API calls are all answered.
    let got = loads(&s.base, 40).await;
    assert_eq!(
        got,
        vec![200; 40],
        "pages and /api/servers with {WIDGETS} widgets open"
    );
    // The proxy's own requests without the header are refused: it must always set it.
    let r = reqwest::get(format!("{}/api/servers", s.base))
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    drop(open);
    s.tracker.events().close();
    let _ = s.stop.send(true);
    s.web.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_proxy_the_default_settings_see_one_visitor() {
    let s = site("").await;
    let (statuses, open) = open_widgets(&s.base).await;
    // The proxy's header is not believed: 17 widgets are one host's, and it gets
    // `sse_max_per_host` (2) streams; the others are answered 503.
    let served = statuses.iter().filter(|s| **s == 200).count();
    assert_eq!(served, 2, "{statuses:?}");
    assert!(
        statuses.iter().all(|s| matches!(s, 200 | 503)),
        "{statuses:?}"
    );
    drop(open);
    s.tracker.events().close();
    let _ = s.stop.send(true);
    s.web.await.unwrap().unwrap();
}
