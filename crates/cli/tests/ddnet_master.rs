//! `fragstat master-server --ddnet-listen` under the floods of the security review
//! (2026-11-b): H3 (34 hosts filling the info store, E7) and H4 (connection slots held), over
//! loopback (127.0.0.0/8: every address is the machine's own).

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use fragstat_testkit::flood::{hold, Flood};
use fragstat_testkit::wait::{self, SETTLE};

mod support;
use support::{http_get, Running};

/// A running master with its DDNet listeners.
struct Master {
    _running: Running,
    /// Where DDNet servers register.
    register: SocketAddr,
    /// Where servers.json is served.
    list: SocketAddr,
    metrics: String,
}

/// `http://ADDR/…` → ADDR.
fn addr_of(url: &str) -> SocketAddr {
    url.trim_start_matches("http://")
        .split('/')
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {url}"))
}

fn start(extra: &[&str]) -> Master {
    let mut args = vec![
        "master-server",
        "--listen",
        "127.0.0.1:0",
        "--allow-loopback",
        "--metrics",
        "127.0.0.1:0",
        "--ddnet-listen",
        "127.0.0.1:0",
    ];
    args.extend_from_slice(extra);
    let mut running = Running::start(&args, &[]);
    let (mut register, mut list, mut metrics) = (None, None, None);
    loop {
        let line = running.wait_line("master-server ready", |_| true);
        if let Some(u) = line.strip_prefix("ddnet-register ") {
            register = Some(addr_of(u));
        } else if let Some(u) = line.strip_prefix("ddnet ") {
            list = Some(addr_of(u));
        } else if let Some(u) = line.strip_prefix("metrics ") {
            metrics = Some(u.to_string());
        } else if line == "ready" {
            break;
        }
    }
    Master {
        _running: running,
        register: register.expect("register URL"),
        list: list.expect("list URL"),
        metrics: metrics.expect("metrics URL"),
    }
}

/// Sends `request` from a TCP socket bound to `from` and returns the answer ("" when the
/// connection was closed or nothing came within `patience`).
async fn http_from(from: IpAddr, to: SocketAddr, request: &[u8], patience: Duration) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = tokio::net::TcpSocket::new_v4().expect("socket");
    s.bind(SocketAddr::new(from, 0)).expect("bind");
    let Ok(mut c) = s.connect(to).await else {
        return String::new();
    };
    if c.write_all(request).await.is_err() {
        return String::new();
    }
    let mut out = Vec::new();
    let _ = tokio::time::timeout(patience, c.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

/// A register request for a server on `port` with `secret`, a token and a body when given.
fn register_request(port: u16, secret: &str, token: Option<&str>, body: &str) -> Vec<u8> {
    let token = token.map_or(String::new(), |t| format!("Challenge-Token: {t}\r\n"));
    format!(
        "POST /ddnet/15/register HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAddress: tw-0.6+udp://connecting-address.invalid:{port}\r\nSecret: {secret}\r\nChallenge-Secret: c:ipv4\r\nInfo-Serial: 1\r\n{token}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Registers a server from `from` the way DDNet does: a request, the challenge token over
/// UDP (to a socket of its own on `from`), the request again with the token and the info.
/// The second answer.
async fn register(from: IpAddr, master: SocketAddr, secret: &str, info: &str) -> String {
    let udp = tokio::net::UdpSocket::bind(SocketAddr::new(from, 0))
        .await
        .expect("UDP socket");
    let port = udp.local_addr().expect("port").port();
    let first = http_from(
        from,
        master,
        &register_request(port, secret, None, ""),
        SETTLE,
    )
    .await;
    assert!(first.contains("need_challenge"), "{first}");
    let mut buf = [0u8; 512];
    let n = tokio::time::timeout(SETTLE, udp.recv(&mut buf))
        .await
        .expect("the challenge arrives")
        .expect("recv");
    let d = &buf[..n];
    let at = d
        .windows(4)
        .position(|w| w == b"chal")
        .expect("a chal datagram")
        + 4;
    let fields: Vec<&[u8]> = d[at..].split(|&b| b == 0).collect();
    let token = String::from_utf8_lossy(fields[1]).into_owned();
    http_from(
        from,
        master,
        &register_request(port, secret, Some(&token), info),
        SETTLE,
    )
    .await
}

/// An info of about `size` bytes.
fn info_of(size: usize, name: &str) -> String {
    let head = format!("{{\"name\":\"{name}\",\"pad\":\"");
    let pad = "a".repeat(size.saturating_sub(head.len() + 2));
    format!("{head}{pad}\"}}")
}

fn metric(m: &Master, name: &str) -> f64 {
    http_get(&m.metrics)
        .1
        .lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// E7 (H3) against the binary with its default shares: 34 hosts each register 64 servers with
/// 32 KiB infos, answering every challenge; then 10 real servers from new /24s with 2.3 KB
/// infos all register and are listed, and servers.json stays within its 16 MiB. (Before: the
/// 64 MiB store was full, 8 of the 10 were refused, servers.json was 67 MB.)
#[test]
fn e7_ten_real_servers_register_after_34_hosts_fill_their_shares() {
    let master = start(&[]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let to = master.register;
    let started = std::time::Instant::now();
    let floods: Vec<_> = (0..34u8)
        .map(|h| {
            rt.spawn(async move {
                let info = info_of(32 * 1024, "flood");
                let from = IpAddr::from([127, 64 + h, 0, 1]);
                let mut ok = 0;
                for i in 0..64 {
                    let a = register(from, to, &format!("flood-{h}-{i}"), &info).await;
                    ok += usize::from(a.contains("\"status\":\"success\""));
                }
                ok
            })
        })
        .collect();
    let with_info: usize = floods.into_iter().map(|f| rt.block_on(f).unwrap()).sum();
    eprintln!(
        "E7: 2,176 registrations in {:?}, {with_info} with their info",
        started.elapsed()
    );
    let real: Vec<String> = (0..10u8)
        .map(|i| {
            let from = IpAddr::from([127, 200, i, 7]);
            rt.block_on(register(
                from,
                to,
                &format!("real-{i}"),
                &info_of(2300, &format!("real {i}")),
            ))
        })
        .collect();
    for (i, a) in real.iter().enumerate() {
        assert!(a.contains("\"status\":\"success\""), "real server {i}: {a}");
    }
    let list = rt.block_on(http_from(
        "127.0.0.1".parse().unwrap(),
        master.list,
        b"GET /ddnet/15/servers.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        SETTLE,
    ));
    let body = list.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    assert!(
        body.len() <= 16 << 20,
        "servers.json is {} bytes",
        body.len()
    );
    for i in 0..10u8 {
        assert!(
            body.contains(&format!("\"tw-0.6+udp://127.200.{i}.7:")),
            "real server {i} listed"
        );
    }
    let info_bytes = metric(&master, "fragstat_ddnet_info_bytes ");
    let left_out = metric(&master, "fragstat_ddnet_list_left_out ");
    eprintln!(
        "E7: servers.json {} bytes, {info_bytes} bytes of info stored, {left_out} servers left out of the list",
        body.len()
    );
    assert!(info_bytes <= 34.0 * 1024.0 * 1024.0 + 10.0 * 2300.0);
    assert!(left_out > 0.0);
    rt.shutdown_background();
}

/// `count` GETs of servers.json from `from` (one at a time): how many were answered 200.
async fn lists_answered(from: IpAddr, list: SocketAddr, count: usize) -> usize {
    let mut ok = 0;
    for _ in 0..count {
        let a = http_from(
            from,
            list,
            b"GET /ddnet/15/servers.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            Duration::from_secs(10),
        )
        .await;
        ok += usize::from(a.starts_with("HTTP/1.1 200"));
    }
    ok
}

/// H4: with `--ddnet-list-listen`, register and servers.json have connection pools of their
/// own: while 20 hosts hold every slot of one, the other serves every request.
#[test]
fn register_and_servers_json_are_served_from_separate_pools() {
    let master = start(&[
        "--ddnet-list-listen",
        "127.0.0.1:0",
        "--http-max-connections",
        "64",
        "--http-max-per-ip",
        "4",
    ]);
    assert_ne!(master.register, master.list);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // 20 hosts × 5 idle connections (more than the 64 slots) on the register listener.
    let flood = Arc::new(Flood::default());
    for h in 0..20u8 {
        for _ in 0..5 {
            let ip = IpAddr::from([127, 0, 10, h + 1]);
            rt.spawn(hold(Arc::clone(&flood), ip, master.register, None));
        }
    }
    wait::until_true("the register flood holds every slot", SETTLE, || {
        flood.opened.load(Relaxed) >= 80 && metric(&master, "fragstat_ddnet_http_open ") >= 64.0
    });
    let ok = rt.block_on(lists_answered(
        "127.0.20.1".parse().unwrap(),
        master.list,
        20,
    ));
    eprintln!("servers.json while register is flooded: {ok}/20");
    assert!(ok >= 18, "{ok}/20 lists answered");
    flood.stop.store(true, Relaxed);
    // And the other way: the list's slots all held, a server still registers.
    let flood = Arc::new(Flood::default());
    for h in 0..20u8 {
        for _ in 0..5 {
            let ip = IpAddr::from([127, 0, 11, h + 1]);
            rt.spawn(hold(Arc::clone(&flood), ip, master.list, None));
        }
    }
    wait::until_true("the list flood holds every slot", SETTLE, || {
        flood.opened.load(Relaxed) >= 80
            && metric(&master, "fragstat_ddnet_list_http_open ") >= 64.0
    });
    for i in 0..5u8 {
        let a = rt.block_on(register(
            IpAddr::from([127, 0, 21, i + 1]),
            master.register,
            &format!("real-{i}"),
            &info_of(2300, "real"),
        ));
        assert!(a.contains("\"status\":\"success\""), "{a}");
    }
    flood.stop.store(true, Relaxed);
    rt.shutdown_background();
}

/// Shares that cannot work are usage errors (exit 2), before anything is bound.
#[test]
fn bad_ddnet_shares_are_usage_errors() {
    for (extra, needle) in [
        (&["--ddnet-max-list-kib", "1"][..], "servers.json"),
        (
            &[
                "--ddnet-servers-per-host",
                "100",
                "--ddnet-max-servers",
                "10",
            ],
            "total",
        ),
        (
            &["--ddnet-info-per-host-kib", "0"],
            "ddnet-info-per-host-kib",
        ),
        (&["--ddnet-list-listen", "x"], "--ddnet-list-listen"),
    ] {
        let mut args = vec![
            "master-server",
            "--listen",
            "127.0.0.1:0",
            "--ddnet-listen",
            "127.0.0.1:0",
        ];
        args.extend_from_slice(extra);
        let out = support::run(&args);
        let err = support::stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    let out = support::run(&["master-server", "--ddnet-list-listen", "127.0.0.1:0"]);
    assert_eq!(out.status.code(), Some(2), "needs --ddnet-listen");
}
