//! Floods against the guarded listener on loopback: idle connections (from one host, one /24,
//! 1,100 hosts), slow bodies, request floods, too many connections from one host and in all;
//! a well-behaved client is still served. 127.0.0.0/8 is all loopback on Linux, so client
//! sockets bound to 127.a.b.c are as many hosts and /24s. No timing is asserted: every wait
//! has a generous deadline (docs/testing.md).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::routing::{get, post};
use fragstat_http_guard::{ClientAddr, ClientIp, Limits, Rate, Server, Stats};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const DEADLINE: Duration = Duration::from_secs(60);

fn limits() -> Limits {
    Limits {
        header_read_timeout: Duration::from_millis(500),
        first_byte_timeout: Duration::from_millis(500),
        keep_alive_timeout: Duration::from_millis(500),
        tls_accept_timeout: Duration::from_millis(500),
        request_timeout: Duration::from_millis(800),
        max_lifetime: Duration::from_secs(60),
        max_connections: 12,
        max_per_ip: 4,
        request_rate: Rate::UNLIMITED,
        net_request_rate: Rate::UNLIMITED,
        ..Limits::default()
    }
}

struct Running {
    addr: SocketAddr,
    stats: Arc<Stats>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

fn count(c: &std::sync::atomic::AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

async fn start(client_ip: ClientIp) -> Running {
    start_with(limits(), client_ip).await
}

async fn start_with(limits: Limits, client_ip: ClientIp) -> Running {
    fragstat_http_guard::raise_fd_limit();
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
            "/hold",
            get(|| async {
                HELD.fetch_add(1, Ordering::SeqCst);
                std::future::pending::<()>().await;
            }),
        )
        .route(
            "/body",
            post(|b: axum::body::Bytes| async move { b.len().to_string() }),
        );
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let server = Server {
        listener,
        tls: None,
        limits,
        client_ip,
        stats: Arc::clone(&stats),
    };
    tokio::spawn(server.serve(app, async move {
        let _ = rx.await;
    }));
    Running {
        addr,
        stats,
        _stop: tx,
    }
}

async fn connect_from(from: [u8; 4], to: SocketAddr) -> std::io::Result<TcpStream> {
    let s = TcpSocket::new_v4()?;
    s.set_reuseaddr(true)?;
    s.bind(SocketAddr::from((from, 0)))?;
    s.connect(to).await
}

/// Sends a GET and reads the whole answer (the request asks to close); empty when the
/// connection was refused or closed before an answer.
async fn get_within(
    from: [u8; 4],
    to: SocketAddr,
    path: &str,
    extra: &str,
    within: Duration,
) -> String {
    let Ok(mut s) = connect_from(from, to).await else {
        return String::new();
    };
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{extra}\r\n");
    if s.write_all(req.as_bytes()).await.is_err() {
        return String::new();
    }
    let mut out = Vec::new();
    let _ = tokio::time::timeout(within, s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

async fn get_from(from: [u8; 4], to: SocketAddr, path: &str, extra: &str) -> String {
    get_within(from, to, path, extra, DEADLINE).await
}

/// Requests to `/hold` that reached the app (they are then held until the request timeout).
static HELD: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

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

/// Holds one idle connection from `from`, reopening it (after `pause`) whenever the server
/// closes it, until `stop`.
async fn hold_idle(from: [u8; 4], to: SocketAddr, pause: Duration, stop: Arc<AtomicBool>) {
    let mut buf = [0u8; 64];
    while !stop.load(Ordering::Relaxed) {
        if let Ok(mut s) = connect_from(from, to).await {
            // Until closed, or the attack ends.
            loop {
                match tokio::time::timeout(Duration::from_millis(200), s.read(&mut buf)).await {
                    Ok(Ok(0) | Err(_)) => break,
                    Ok(Ok(_)) => continue,
                    Err(_) if stop.load(Ordering::Relaxed) => return,
                    Err(_) => continue,
                }
            }
        }
        tokio::time::sleep(pause).await;
    }
}

/// Legitimate GETs from `from`, one every `every`: how many were answered 200.
async fn legit_gets(from: [u8; 4], to: SocketAddr, n: usize, every: Duration) -> usize {
    let mut ok = 0;
    for _ in 0..n {
        let r = get_within(from, to, "/", "", Duration::from_secs(5)).await;
        if r.starts_with("HTTP/1.1 200") {
            ok += 1;
        }
        tokio::time::sleep(every).await;
    }
    ok
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_of_one_host_make_room_for_its_own_and_the_cap_holds() {
    let srv = start(ClientIp::default()).await;
    let addr = srv.addr;
    // Four idle connections from one host: the cap.
    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(connect_from([127, 0, 0, 21], addr).await.unwrap());
    }
    // A fifth from the same host takes the place of the oldest idle one.
    let mut fifth = connect_from([127, 0, 0, 21], addr).await.unwrap();
    assert!(closed(&mut idle[0]).await, "the oldest idle one was closed");
    assert!(count(&srv.stats.evicted_idle) >= 1);
    // Another host is served meanwhile.
    assert!(get_from([127, 0, 0, 22], addr, "/", "")
        .await
        .contains("200 OK"));
    // The idle ones are closed by the first-byte deadline.
    for s in idle.iter_mut().skip(1).chain([&mut fifth]) {
        assert!(closed(s).await, "an idle connection stayed open");
    }
    assert!(count(&srv.stats.idle_timeouts) >= 1);
    // A kept-alive connection that goes quiet after a request is closed too.
    let mut s = connect_from([127, 0, 0, 23], addr).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    assert!(closed(&mut s).await);
}

/// A connection answering a request is never displaced: a host whose connections are all
/// busy is refused its next one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_connections_are_not_displaced() {
    let srv = start_with(
        Limits {
            request_timeout: Duration::from_secs(60),
            ..limits()
        },
        ClientIp::default(),
    )
    .await;
    let mut busy = Vec::new();
    for _ in 0..4 {
        let mut s = connect_from([127, 0, 5, 1], srv.addr).await.unwrap();
        s.write_all(b"GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        busy.push(s);
    }
    // Until all four are being answered (the only test that uses /hold).
    let t0 = tokio::time::Instant::now();
    while HELD.load(Ordering::SeqCst) < 4 && t0.elapsed() < DEADLINE {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut fifth = connect_from([127, 0, 5, 1], srv.addr).await.unwrap();
    assert!(closed(&mut fifth).await);
    assert_eq!(count(&srv.stats.refused_per_ip), 1);
    assert_eq!(count(&srv.stats.evicted_idle), 0);
    // The held ones are still open: a byte more would be read by the server, not refused.
    for s in &mut busy {
        let mut b = [0u8; 1];
        let r = tokio::time::timeout(Duration::from_millis(50), s.read(&mut b)).await;
        assert!(r.is_err(), "a busy connection was closed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_body_is_cut_and_the_cap_in_all_frees_up() {
    let srv = start(ClientIp::default()).await;
    let addr = srv.addr;
    // Slowloris: twelve connections from twelve hosts (the cap in all), each sending a body
    // 10 bytes short of its length and then nothing.
    let mut slow = Vec::new();
    for i in 0..12u8 {
        let mut s = connect_from([127, 0, 1, i + 1], addr).await.unwrap();
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
    assert!(count(&srv.stats.request_timeouts) >= 1);
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
    let srv = start(ClientIp {
        header: Some(axum::http::HeaderName::from_static("x-real-ip")),
        trusted: ClientIp::parse_networks(&["127.0.0.31/32".into()]).unwrap(),
    })
    .await;
    let addr = srv.addr;
    let trusted = get_from([127, 0, 0, 31], addr, "/who", "X-Real-IP: 127.0.0.77\r\n").await;
    assert!(trusted.ends_with("127.0.0.77"), "{trusted}");
    let untrusted = get_from([127, 0, 0, 32], addr, "/who", "X-Real-IP: 127.0.0.77\r\n").await;
    assert!(untrusted.ends_with("127.0.0.32"), "{untrusted}");
    let silent = get_from([127, 0, 0, 31], addr, "/who", "").await;
    assert!(silent.contains("400"), "{silent}");
    // Trusted proxies are not held to the per-IP cap (their connections carry many clients).
    let mut held = Vec::new();
    for _ in 0..6 {
        held.push(connect_from([127, 0, 0, 31], addr).await.unwrap());
    }
    let again = get_from([127, 0, 0, 31], addr, "/who", "X-Real-IP: 127.0.0.78\r\n").await;
    assert!(again.ends_with("127.0.0.78"), "{again}");
}

/// L3: a proxy that appends its own header line leaves the client's forged first line before
/// it; the last line is the proxy's word.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_first_header_line_is_not_believed() {
    let srv = start(ClientIp {
        header: Some(axum::http::HeaderName::from_static("x-forwarded-for")),
        trusted: ClientIp::parse_networks(&["127.0.0.41/32".into()]).unwrap(),
    })
    .await;
    let forged = "X-Forwarded-For: 127.0.0.66\r\nX-Forwarded-For: 127.0.0.65, 127.0.0.77\r\n";
    let who = get_from([127, 0, 0, 41], srv.addr, "/who", forged).await;
    assert!(who.ends_with("127.0.0.77"), "{who}");
}

/// E2 of the review: 32 hosts of one /24, each holding 16 idle connections (512, the
/// listener's cap in all) and reopening them when closed; a client of another /24 is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_of_one_site_leave_room_for_others() {
    let srv = start_with(
        Limits {
            max_lifetime: Duration::from_secs(60),
            ..Limits::default()
        },
        ClientIp::default(),
    )
    .await;
    let stop = Arc::new(AtomicBool::new(false));
    let mut attack = Vec::new();
    for host in 0..32u8 {
        for _ in 0..16 {
            attack.push(tokio::spawn(hold_idle(
                [127, 1, 0, host + 1],
                srv.addr,
                Duration::from_millis(100),
                Arc::clone(&stop),
            )));
        }
    }
    // Until the attackers hold what they can (the /24's cap).
    let t0 = tokio::time::Instant::now();
    while count(&srv.stats.open) < 64 && t0.elapsed() < DEADLINE {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let ok = legit_gets([127, 2, 0, 1], srv.addr, 25, Duration::from_millis(100)).await;
    stop.store(true, Ordering::Relaxed);
    for a in attack {
        let _ = a.await;
    }
    eprintln!(
        "E2: {ok}/25 answered; refused per prefix {}, per IP {}, full {}, evicted {}",
        count(&srv.stats.refused_per_prefix),
        count(&srv.stats.refused_per_ip),
        count(&srv.stats.refused_full),
        count(&srv.stats.evicted_idle),
    );
    assert!(ok >= 23, "{ok} of 25 legitimate GETs answered");
}

/// H4: 1,100 idle connections from 1,100 hosts (in 1,100 /24s of 16 /16s) against 512
/// places; a client of another /16 is served, the idle ones making room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_of_1100_hosts_leave_room_for_others() {
    let srv = start_with(Limits::default(), ClientIp::default()).await;
    let stop = Arc::new(AtomicBool::new(false));
    let mut attack = Vec::new();
    for i in 0..1100u32 {
        let b = u8::try_from(16 + i % 16).unwrap();
        let c = u8::try_from(i / 16).unwrap();
        attack.push(tokio::spawn(hold_idle(
            [127, b, c, 1],
            srv.addr,
            Duration::from_millis(500),
            Arc::clone(&stop),
        )));
    }
    let t0 = tokio::time::Instant::now();
    while count(&srv.stats.open) < 512 && t0.elapsed() < DEADLINE {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let full = count(&srv.stats.open);
    let ok = legit_gets([127, 2, 0, 1], srv.addr, 25, Duration::from_millis(100)).await;
    stop.store(true, Ordering::Relaxed);
    for a in attack {
        let _ = a.await;
    }
    eprintln!(
        "1,100 hosts: {full} open, {ok}/25 answered; refused full {}, evicted {}",
        count(&srv.stats.refused_full),
        count(&srv.stats.evicted_idle),
    );
    assert!(full >= 512, "the attack filled the table");
    assert!(ok >= 23, "{ok} of 25 legitimate GETs answered");
}

/// A host flooding requests is answered 429 with Retry-After; a host of another /24 is
/// served meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_flood_is_slowed_and_others_are_served() {
    let srv = start_with(
        Limits {
            request_rate: Rate {
                per_sec: 1,
                burst: 5,
            },
            net_request_rate: Rate {
                per_sec: 2,
                burst: 10,
            },
            ..limits()
        },
        ClientIp::default(),
    )
    .await;
    // One kept-alive connection, many requests.
    let mut s = connect_from([127, 0, 3, 1], srv.addr).await.unwrap();
    let mut limited = None;
    for _ in 0..20 {
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut buf = vec![0u8; 4096];
        let n = tokio::time::timeout(DEADLINE, s.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        let text = String::from_utf8_lossy(&buf[..n]).into_owned();
        if text.starts_with("HTTP/1.1 429") {
            limited = Some(text);
            break;
        }
    }
    let limited = limited.expect("the flood was never slowed");
    assert!(
        limited.to_ascii_lowercase().contains("retry-after: "),
        "{limited}"
    );
    assert!(count(&srv.stats.rate_limited) >= 1);
    assert!(get_from([127, 0, 4, 1], srv.addr, "/", "")
        .await
        .contains("200 OK"));
}
