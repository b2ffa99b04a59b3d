//! Errors as a user meets them (issue 32 item 5, trial findings 1 and 4): typed, with their
//! `source()` chain, and a bad address refused before anything is sent. Loopback only.

use std::error::Error as _;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use fragstat::{Client, Error};
use futures_util::StreamExt;

/// Long enough that a query which waited out its attempts (2 × 10 s) cannot pass for one
/// refused up front, short enough that a slow machine never fails a refusal (5 s).
fn patient() -> fragstat::ClientBuilder {
    Client::builder()
        .timeout(Duration::from_secs(10))
        .retries(1)
}
const UP_FRONT: Duration = Duration::from_secs(5);

/// Port 0 and a port over 65535 are the caller's mistake: `InvalidInput` at once, not a
/// `Resolve` error and not an I/O error after every attempt has timed out.
#[tokio::test(flavor = "multi_thread")]
async fn port_0_and_bad_ports_are_invalid_input_at_once() {
    let q3 = fragstat::game("q3").unwrap();
    let client = patient().build().unwrap();
    let zero: SocketAddr = "127.0.0.1:0".parse().unwrap();
    for target in [
        fragstat::Target::from("127.0.0.1:0"),
        fragstat::Target::from("127.0.0.1:99999"),
        fragstat::Target::from("[::1]:0"),
        fragstat::Target::from(zero),
    ] {
        let started = Instant::now();
        let e = client.query(&q3, target.clone()).await.unwrap_err();
        assert!(
            started.elapsed() < UP_FRONT,
            "{target:?}: {:?}",
            started.elapsed()
        );
        assert!(
            matches!(&e, Error::InvalidInput(m) if m.contains("port")),
            "{target:?}: {e:?}"
        );
    }
    // The same in a scan: that item fails at once, the others are untouched.
    let started = Instant::now();
    let items: Vec<_> = client.scan(&q3, [zero]).collect().await;
    assert!(started.elapsed() < UP_FRONT, "{:?}", started.elapsed());
    assert_eq!(items.len(), 1);
    assert!(
        matches!(&items[0].1, Err(Error::InvalidInput(m)) if m.contains("port 0")),
        "{:?}",
        items[0].1
    );
}

/// An HTTP list whose server hangs up keeps the HTTP client's error as its `source()`.
#[tokio::test(flavor = "multi_thread")]
async fn http_errors_keep_their_source() {
    let ddnet = fragstat::game("ddnet").unwrap();
    // Accepts and closes every connection: the request gets no response.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        while let Ok((conn, _)) = listener.accept().await {
            drop(conn);
        }
    });
    let client = Client::builder()
        .http_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/servers.json");
    let list = client.master_list(&ddnet, [url.as_str()]).await.unwrap();
    let e = list.reports()[0].error.as_ref().expect("an error");
    assert!(matches!(e, Error::Http { status: None, .. }), "{e:?}");
    assert!(e.source().is_some(), "{e:?}");
    server.abort();
}
