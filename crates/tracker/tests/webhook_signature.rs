//! The webhook's signature, checked as a receiver would: a real delivery (a server goes
//! silent between two rounds) reaches a local receiver, which verifies
//! `X-Fragstat-Signature` with the `hmac` crate over `X-Fragstat-Timestamp`, `.` and the
//! body exactly as received (the recipe of docs/tracker.md), and finds that a tampered body,
//! another timestamp or another secret do not verify. The delivery carries a `User-Agent`
//! and an `X-Fragstat-Delivery` id; a tracker without a secret sends no signature.

mod support;

use std::time::Duration;

use axum::http::HeaderMap;
use fragstat_tracker::config::{Config, Secret, Source};
use fragstat_tracker::Tracker;
use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use support::switch::Server;
use tokio::sync::mpsc;

const SECRET: &str = "a-long-shared-secret-0123456789";

/// A receiver keeping every POST's headers and raw body.
async fn receiver() -> (String, mpsc::UnboundedReceiver<(HeaderMap, Vec<u8>)>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::unbounded_channel();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: axum::body::Bytes| {
            let tx = tx.clone();
            async move {
                let _ = tx.send((headers, body.to_vec()));
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, rx)
}

fn config(
    dir: &tempfile::TempDir,
    server: std::net::SocketAddr,
    hook: &str,
    secret: Option<&str>,
) -> Config {
    let mut c = Config {
        database: dir.path().join("t.db").display().to_string(),
        interval_secs: 0.2,
        timeout_ms: 100,
        retries: 1,
        webhook: Some(hook.into()),
        webhook_secret: secret.map(Secret::new),
        ..Config::default()
    };
    c.sources.push(Source {
        game: "q3".into(),
        masters: Vec::new(),
        servers: vec![server.to_string()],
        ext: false,
    });
    c
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// The receiver's check: the HMAC-SHA256 under `secret` of `timestamp.body`, compared in
/// constant time (`verify_slice`).
fn verifies(secret: &[u8], timestamp: &str, body: &[u8], signature: &str) -> bool {
    let Some(hex) = signature.strip_prefix("sha256=") else {
        return false;
    };
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret).unwrap();
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    mac.verify_slice(&unhex(hex)).is_ok()
}

#[tokio::test]
async fn a_real_delivery_verifies_and_a_tampered_one_does_not() {
    let server = Server::start("^2signed", "q3dm6", 1);
    let dir = tempfile::tempdir().unwrap();
    let (url, mut posts) = receiver().await;
    let tracker = Tracker::open(config(&dir, server.addr, &url, Some(SECRET)))
        .await
        .unwrap();
    tracker.round().await.unwrap(); // the baseline
    server.set(None);
    tracker.round().await.unwrap(); // server_down
    let (headers, body) = tokio::time::timeout(Duration::from_secs(60), posts.recv())
        .await
        .expect("a delivery in time")
        .unwrap();
    let h = |n: &str| headers.get(n).map(|v| v.to_str().unwrap().to_string());
    let ts = h("x-fragstat-timestamp").expect("a timestamp");
    let sig = h("x-fragstat-signature").expect("a signature");
    assert!(h("user-agent").unwrap().starts_with("fragstat-track/"));
    assert_eq!(h("x-fragstat-delivery").unwrap().len(), 32);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let at: u64 = ts.parse().unwrap();
    assert!(now.abs_diff(at) < 300, "a fresh timestamp: {at} vs {now}");
    assert!(String::from_utf8_lossy(&body).contains("server_down"));

    assert!(
        verifies(SECRET.as_bytes(), &ts, &body, &sig),
        "the real delivery verifies"
    );
    let mut tampered = body.clone();
    let i = tampered.iter().position(|b| *b == b'd').unwrap();
    tampered[i] = b'D';
    assert!(
        !verifies(SECRET.as_bytes(), &ts, &tampered, &sig),
        "a tampered body"
    );
    let later = (at + 1).to_string();
    assert!(
        !verifies(SECRET.as_bytes(), &later, &body, &sig),
        "another timestamp"
    );
    assert!(
        !verifies(b"another-secret-0123456789", &ts, &body, &sig),
        "another secret"
    );

    // Without a secret: delivered, unsigned.
    let dir2 = tempfile::tempdir().unwrap();
    let (url2, mut posts2) = receiver().await;
    let plain = Tracker::open(config(&dir2, server.addr, &url2, None))
        .await
        .unwrap();
    server.set(Some(support::switch::emulated("^2signed", "q3dm6", 1)));
    plain.round().await.unwrap();
    server.set(None);
    plain.round().await.unwrap();
    let (headers, _) = tokio::time::timeout(Duration::from_secs(60), posts2.recv())
        .await
        .expect("a delivery in time")
        .unwrap();
    assert!(!headers.contains_key("x-fragstat-signature"));
    assert!(headers.contains_key("x-fragstat-delivery"));
}
