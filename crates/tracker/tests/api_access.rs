//! The API's keys and request rates (`[web.api]`) flooded over real HTTP, the web guard's own
//! rates off so only the API's count: a host flooding `/api/` is answered 429 with
//! `Retry-After` and a JSON body while its neighbour, a keyed client on the flooder's own
//! address, a host of another /24 (when a whole /24 floods) and of another /16 (when a /16
//! floods) are still served; an unknown key is a 401. Behind a trusted proxy the client is
//! the one its header names (IPv6 /64, /56 prefixes). And every API error is JSON, pages'
//! text, and an unknown query parameter is refused naming it.

mod support;

use std::net::IpAddr;

use fragstat_tracker::Tracker;
use serde_json::Value;
use tokio::sync::watch;

const KEY: &str = "k3y-0123456789abcdef";

/// A tracker with the API's rates small (host 5 at once, /24 10, /16 15; 1 to 3 a second),
/// one key, the guard's rates off, and `web` added to `[web]`.
async fn tracker(dir: &tempfile::TempDir, web: &str) -> Tracker {
    let config = support::quiet_config(
        &dir.path().join("t.db"),
        &format!(
            "[web]\nrequest_rate = 0\nnet_request_rate = 0\n{web}\n[web.api]\nrate = 1\nburst = 5\nsite_rate = 2\nsite_burst = 10\nnet_rate = 3\nnet_burst = 15\n[[web.api.keys]]\nname = \"bot\"\nkey = \"{KEY}\"\nrate = 100\nburst = 1000\n"
        ),
    );
    Tracker::open(config).await.unwrap()
}

/// Serves `tracker` behind the guard its configuration describes.
async fn serve(tracker: &Tracker) -> (String, watch::Sender<bool>) {
    let listener = fragstat_tracker::web::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, mut rx) = watch::channel(false);
    tokio::spawn(fragstat_tracker::web::serve_guarded(
        listener,
        tracker.state(),
        tracker.config().web.limits(),
        tracker.config().web.client_ip().unwrap(),
        async move {
            let _ = rx.wait_for(|s| *s).await;
        },
    ));
    (base, stop)
}

fn from(ip: [u8; 4]) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(Some(IpAddr::from(ip)))
        .build()
        .unwrap()
}

/// `n` GETs of `url`: how many were served (200); every refusal checked (429, Retry-After of
/// at least a second, the JSON body).
async fn flood(req: impl Fn() -> reqwest::RequestBuilder, n: usize) -> usize {
    let mut served = 0;
    for _ in 0..n {
        let r = req().send().await.unwrap();
        match r.status().as_u16() {
            200 => served += 1,
            429 => {
                let after: u64 = r.headers()["retry-after"]
                    .to_str()
                    .unwrap()
                    .parse()
                    .unwrap();
                assert!(after >= 1);
                assert!(r.headers()["content-type"]
                    .to_str()
                    .unwrap()
                    .starts_with("application/json"));
                let v: Value = r.json().await.unwrap();
                assert_eq!(v["status"], 429);
                assert_eq!(v["retry_after"], after);
                assert!(
                    v["error"].as_str().unwrap().contains("too many requests"),
                    "{v}"
                );
            }
            other => panic!("{other}"),
        }
    }
    served
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_is_held_to_its_rate_while_others_and_keys_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let t = tracker(&dir, "").await;
    let (base, _stop) = serve(&t).await;
    let url = format!("{base}/api/rounds");

    // One host floods: held to its burst (and its rate while the flood lasts).
    let flooder = from([127, 1, 0, 1]);
    let served = flood(|| flooder.get(&url), 200).await;
    eprintln!("the flooding host: {served} of 200 served");
    assert!((5..100).contains(&served), "{served}");
    // Its neighbour in the /24 has its own share.
    assert_eq!(flood(|| from([127, 1, 0, 2]).get(&url), 3).await, 3);
    // The key, from the flooder's own address: its own bucket.
    let keyed = flood(|| flooder.get(&url).bearer_auth(KEY), 50).await;
    assert_eq!(keyed, 50, "the keyed client on the flooding host");
    let keyed = flood(|| flooder.get(&url).header("x-api-key", KEY), 10).await;
    assert_eq!(keyed, 10);
    // An unknown key: 401, JSON, never served as keyless.
    let r = flooder
        .get(&url)
        .bearer_auth("not-the-key-0123456789")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(r.headers()["www-authenticate"], "Bearer");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["status"], 401);

    // Thirty hosts of one /24 flood: the /24 is held to its share; another /24 of the same
    // /16 is served.
    let mut served = 0;
    for h in 1..=30 {
        served += flood(|| from([127, 2, 1, h]).get(&url), 10).await;
    }
    eprintln!("thirty hosts of one /24: {served} of 300 served");
    assert!(served < 150, "{served}");
    assert_eq!(flood(|| from([127, 2, 2, 1]).get(&url), 3).await, 3);
    // Hosts over a whole /16 (a /24 each): the /16 held; another /16 served.
    let mut served = 0;
    for s in 1..=30 {
        served += flood(|| from([127, 3, s, 1]).get(&url), 5).await;
    }
    eprintln!("thirty /24s of one /16: {served} of 150 served");
    assert!(served < 100, "{served}");
    assert_eq!(flood(|| from([127, 4, 0, 1]).get(&url), 3).await, 3);
    let m = t.metrics().encode();
    assert!(
        m.contains("fragstat_tracker_api_key_requests_total{key=\"bot\"} 60"),
        "{m}"
    );
    assert!(
        m.contains("fragstat_tracker_api_unknown_key_total 1"),
        "{m}"
    );
    assert!(!m.contains(KEY), "the key is never shown");
    // Pages are not the API's to limit: the flooder still gets the browser page.
    assert_eq!(
        flooder
            .get(format!("{base}/"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
}

/// Behind a trusted proxy: the client is the header's address, IPv6 prefixes share.
#[tokio::test(flavor = "multi_thread")]
async fn behind_a_proxy_the_header_names_the_client() {
    let dir = tempfile::tempdir().unwrap();
    let t = tracker(
        &dir,
        "connecting_ip_header = \"X-Real-IP\"\ntrusted_proxies = [\"127.0.0.1/32\"]",
    )
    .await;
    let (base, _stop) = serve(&t).await;
    let url = format!("{base}/api/rounds");
    let proxy = reqwest::Client::new();
    let as_ip = |ip: &'static str| {
        let (proxy, url) = (proxy.clone(), url.clone());
        move || proxy.get(&url).header("x-real-ip", ip)
    };
    let served = flood(as_ip("2001:db8:0:1::1"), 100).await;
    assert!((5..50).contains(&served), "{served}");
    // Another /64 of the same /56: its own share; another host of the flooding /64: the same.
    assert_eq!(flood(as_ip("2001:db8:0:2::1"), 3).await, 3);
    assert!(flood(as_ip("2001:db8:0:1::2"), 3).await < 3, "the same /64");
    // A key through the proxy, for the flooding address.
    let keyed = flood(|| as_ip("2001:db8:0:1::1")().bearer_auth(KEY), 20).await;
    assert_eq!(keyed, 20);
    // Other /56s of the /48 flood the /48 (burst 15); another /48 is served.
    let mut served = 0;
    for s in 1..=20u16 {
        let ip: &'static str = Box::leak(format!("2001:db8:5:{:x}00::1", s).into_boxed_str());
        served += flood(as_ip(ip), 5).await;
    }
    assert!(served < 60, "{served}");
    assert_eq!(flood(as_ip("2001:db8:6::1"), 3).await, 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn api_errors_are_json_and_unknown_parameters_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = support::quiet_config(
        &dir.path().join("t.db"),
        "[web.api]\nrate = 0\nsite_rate = 0\nnet_rate = 0\n",
    );
    let t = Tracker::open(config).await.unwrap();
    let (base, _stop) = serve(&t).await;
    let c = reqwest::Client::new();
    let json = |r: reqwest::Response| async move {
        let status = r.status().as_u16();
        let ct = r.headers()["content-type"].to_str().unwrap().to_string();
        assert!(ct.starts_with("application/json"), "{status}: {ct}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["status"], status, "{v}");
        (status, v["error"].as_str().unwrap().to_string())
    };
    for (path, status, says) in [
        ("/api/servers?gmae=q3", 400, "gmae"),
        ("/api/servers?game=q3&foo=bar", 400, "foo"),
        ("/api/servers/127.0.0.1%3A1?x=1", 400, "\"x\""),
        ("/api/masters?verbose=1", 400, "verbose"),
        ("/api/openapi.json?v=2", 400, "\"v\""),
        ("/api/events?gmae=q3", 400, "gmae"),
        ("/api/events?kind=", 400, "kind"),
        ("/api/events?server=notanaddr", 400, "server"),
        ("/api/events?server=127.0.0.1:99999", 400, "server"),
        ("/api/events?game=nosuch", 400, "game"),
        ("/api/servers?limit=-1", 400, "limit"),
        ("/api/servers?game=q3&game=oa", 400, "game"),
        ("/api/servers/127.0.0.1%3A1", 404, "no such server"),
        ("/api/players/abc", 400, "player id"),
        ("/api/nosuch", 404, "no such"),
    ] {
        let (s, e) = json(c.get(format!("{base}{path}")).send().await.unwrap()).await;
        assert_eq!(s, status, "{path}: {e}");
        assert!(e.contains(says), "{path}: {e}");
    }
    let (s, _) = json(c.post(format!("{base}/api/servers")).send().await.unwrap()).await;
    assert_eq!(s, 405);
    // Pages: text, the parameter named.
    for (path, says) in [
        ("/?gmae=q3", "gmae"),
        ("/players?q=a&hourz=2", "hourz"),
        ("/server/127.0.0.1%3A1?hour=2", "hour"),
        ("/healthz?x=1", "\"x\""),
        ("/metrics?x=1", "\"x\""),
    ] {
        let r = c.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(r.status(), 400, "{path}");
        assert!(r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain"));
        let text = r.text().await.unwrap();
        assert!(text.contains(says), "{path}: {text}");
    }
    let r = c.get(format!("{base}/nosuch")).send().await.unwrap();
    assert_eq!(r.status(), 404);
    assert!(r.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
}
