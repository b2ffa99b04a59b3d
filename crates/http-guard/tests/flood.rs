//! Floods against the guarded listener on loopback: idle connections, slow bodies, too many
//! connections from one host and in all; a well-behaved client is still served. No timing
//! is asserted: every wait has a generous deadline (docs/testing.md).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::routing::{get, post};
use fragstat_http_guard::{ClientAddr, ClientIp, Limits, Server, Stats};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const DEADLINE: Duration = Duration::from_secs(60);

fn limits() -> Limits {
    Limits {
        header_read_timeout: Duration::from_millis(500),
        tls_accept_timeout: Duration::from_millis(500),
        request_timeout: Duration::from_millis(800),
        max_lifetime: Duration::from_secs(60),
        max_connections: 12,
        max_per_ip: 4,
    }
}

async fn start(client_ip: ClientIp) -> (SocketAddr, Arc<Stats>, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stats = Arc::new(Stats::default());
    let app = axum::Router::new()
        .route("/", get(|| async { "ok\n" }))
        .route(
            "/who",
            get(
                |axum::Extension(ClientAddr(a)): axum::Extension<ClientAddr>| async move {
                    a.ip().to_string()
                },
            ),
        )
        .route(
            "/body",
            post(|b: axum::body::Bytes| async move { b.len().to_string() }),
        );
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let server = Server {
        listener,
        tls: None,
        limits: limits(),
        client_ip,
        stats: Arc::clone(&stats),
    };
    tokio::spawn(server.serve(app, async move {
        let _ = rx.await;
    }));
    (addr, stats, tx)
}

async fn connect_from(from: [u8; 4], to: SocketAddr) -> TcpStream {
    let s = TcpSocket::new_v4().unwrap();
    s.bind(SocketAddr::from((from, 0))).unwrap();
    s.connect(to).await.unwrap()
}

/// Sends a GET and reads the whole answer (the request asks to close).
async fn get_from(from: [u8; 4], to: SocketAddr, path: &str, extra: &str) -> String {
    let mut s = connect_from(from, to).await;
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{extra}\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = String::new();
    let _ = tokio::time::timeout(DEADLINE, s.read_to_string(&mut out)).await;
    out
}

/// True once the peer has closed `s` (EOF or reset), within the deadline.
async fn closed(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 1024];
    let r = tokio::time::timeout(DEADLINE, async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return true,
                Ok(_) => continue,
            }
        }
    })
    .await;
    r.unwrap_or(false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_are_closed_and_the_per_ip_cap_holds() {
    let (addr, stats, _stop) = start(ClientIp::default()).await;
    // Four idle connections from one host: the cap. A fifth is closed at once.
    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(connect_from([127, 0, 0, 21], addr).await);
    }
    // Make sure the server has taken the four before the fifth.
    let mut fifth = loop {
        let mut s = connect_from([127, 0, 0, 21], addr).await;
        if closed(&mut s).await
            && stats
                .refused_per_ip
                .load(std::sync::atomic::Ordering::Relaxed)
                > 0
        {
            break s;
        }
    };
    assert!(closed(&mut fifth).await);
    // Another host is served meanwhile.
    assert!(get_from([127, 0, 0, 22], addr, "/", "")
        .await
        .contains("200 OK"));
    // The idle ones are closed by the header timeout.
    for s in &mut idle {
        assert!(closed(s).await, "an idle connection stayed open");
    }
    // A kept-alive connection that goes quiet after a request is closed too.
    let mut s = connect_from([127, 0, 0, 23], addr).await;
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    assert!(closed(&mut s).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_body_is_cut_and_the_cap_in_all_frees_up() {
    let (addr, stats, _stop) = start(ClientIp::default()).await;
    // Slowloris: twelve connections from twelve hosts (the cap in all), each sending a body
    // 10 bytes short of its length and then nothing.
    let mut slow = Vec::new();
    for i in 0..12u8 {
        let mut s = connect_from([127, 0, 1, i + 1], addr).await;
        s.write_all(b"POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
            .await
            .unwrap();
        slow.push(s);
    }
    // Every one is cut by the request timeout (408, then closed).
    for s in &mut slow {
        let mut out = Vec::new();
        let _ = tokio::time::timeout(DEADLINE, s.read_to_end(&mut out)).await;
        let text = String::from_utf8_lossy(&out);
        assert!(text.is_empty() || text.contains("408"), "{text}");
    }
    assert!(
        stats
            .request_timeouts
            .load(std::sync::atomic::Ordering::Relaxed)
            >= 1
    );
    // Room again: a client is served.
    let mut ok = String::new();
    for _ in 0..100 {
        ok = get_from([127, 0, 2, 1], addr, "/", "").await;
        if ok.contains("200 OK") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ok.contains("200 OK"), "{ok}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_address_is_the_trusted_proxys_word_only() {
    let (addr, _stats, _stop) = start(ClientIp {
        header: Some(axum::http::HeaderName::from_static("x-real-ip")),
        trusted: ClientIp::parse_networks(&["127.0.0.31/32".into()]).unwrap(),
    })
    .await;
    let trusted = get_from([127, 0, 0, 31], addr, "/who", "X-Real-IP: 127.0.0.77\r\n").await;
    assert!(trusted.ends_with("127.0.0.77"), "{trusted}");
    let untrusted = get_from([127, 0, 0, 32], addr, "/who", "X-Real-IP: 127.0.0.77\r\n").await;
    assert!(untrusted.ends_with("127.0.0.32"), "{untrusted}");
    let silent = get_from([127, 0, 0, 31], addr, "/who", "").await;
    assert!(silent.contains("400"), "{silent}");
    // Trusted proxies are not held to the per-IP cap (their connections carry many clients).
    let mut held = Vec::new();
    for _ in 0..6 {
        held.push(connect_from([127, 0, 0, 31], addr).await);
    }
    let again = get_from([127, 0, 0, 31], addr, "/who", "X-Real-IP: 127.0.0.78\r\n").await;
    assert!(again.ends_with("127.0.0.78"), "{again}");
}
