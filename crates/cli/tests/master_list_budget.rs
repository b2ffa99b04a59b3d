//! `fragstat master-server`'s list budget against the real binary on loopback (issue 30, H1;
//! the security review's E1 at reduced scale): 200 sources in 8 /24s ask at their allowed
//! rate while a client in another /24 keeps getting its lists. Every address is in 127/8,
//! all loopback on Linux, so no namespace is needed.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fragstat_testkit::wait::{self, SETTLE};

mod support;
use support::{bin, Running};

const REQUEST: &[u8] = b"\xff\xff\xff\xffgetservers 68 empty full";

/// Asks `master` for the list from `socket` and reads it until its end marker or `timeout`;
/// the servers it named, or `None` when it did not end.
fn ask(socket: &UdpSocket, master: SocketAddr, timeout: Duration) -> Option<usize> {
    // Whatever is left of an earlier answer is dropped first.
    socket.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 2048];
    while socket.recv(&mut buf).is_ok() {}
    socket.set_nonblocking(false).unwrap();
    socket.send_to(REQUEST, master).unwrap();
    let head = b"\xff\xff\xff\xffgetserversResponse".len();
    let deadline = Instant::now() + timeout;
    let mut servers = 0;
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        socket
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .unwrap();
        let n = socket.recv(&mut buf).ok()?;
        let mut body = buf[..n].get(head..)?;
        while body.len() >= 7 && !body.starts_with(b"\\EOT") {
            servers += 1;
            body = &body[7..];
        }
        if body.starts_with(b"\\EOT") {
            return Some(servers);
        }
    }
}

/// E1: 1,000 servers listed (a 7 KB list); 200 sources in 127.0.11-18.x (25 per /24) ask once
/// a second each, evenly spread, while the client at 127.0.3.1 (another /24 of the same /16)
/// asks every 1.25 s. It gets at least 95 % of its lists (the old 64 KiB/s global budget:
/// 3 of 16).
#[test]
fn a_client_keeps_its_lists_while_200_sources_in_8_24s_ask_at_their_rate() {
    let mut master = Running::start(
        &[
            "master-server",
            "--listen",
            "127.0.0.1:0",
            "--allow-loopback",
            "--max-per-address",
            "4096",
            "--heartbeat-burst",
            "4096",
            "--heartbeat-rate",
            "1000",
            "--net-challenge-rate",
            "100000",
        ],
        &[],
    );
    let addr = master.master_ready();
    let farm = fragstat_testkit::spawn_serve(
        bin(),
        &[
            "q3",
            "--listen",
            "127.0.0.1:0",
            "--count",
            "1000",
            "--heartbeat",
            &addr.to_string(),
        ],
    );
    assert_eq!(farm.servers.len(), 1000);
    // Waited for from another host, so the client's own request rate is whole.
    let watcher = UdpSocket::bind("127.0.4.1:0").expect("bind 127.0.4.1");
    wait::until_true("1,000 servers listed", SETTLE, || {
        ask(&watcher, addr, Duration::from_secs(1)) == Some(1000)
    });
    let client = UdpSocket::bind("127.0.3.1:0").expect("bind 127.0.3.1");

    let attackers: Vec<UdpSocket> = (0..200u8)
        .map(|i| {
            let ip = Ipv4Addr::new(127, 0, 11 + i / 25, 1 + i % 25);
            UdpSocket::bind((ip, 0)).unwrap_or_else(|e| panic!("bind {ip}: {e}"))
        })
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let flood = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let start = Instant::now();
            let mut sent = 0u64;
            // One request every 5 ms, each source once a second; bounded by the stop flag
            // and by 60 s.
            while !stop.load(Ordering::Relaxed) && start.elapsed() < Duration::from_secs(60) {
                let due = start + Duration::from_millis(5 * sent);
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
                let s = &attackers[(sent % 200) as usize];
                let _ = s.send_to(REQUEST, addr);
                sent += 1;
            }
            sent
        })
    };
    // The client asks 20 times, 1.25 s apart, the first after a second of flood.
    let (mut got, asked) = (0, 20);
    let start = Instant::now();
    for i in 0..asked {
        let due = start + Duration::from_millis(1000 + 1250 * i);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        if ask(&client, addr, Duration::from_secs(1)) == Some(1000) {
            got += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let sent = flood.join().unwrap();
    assert!(sent > 200 * 20, "the flood ran: {sent} requests");
    assert!(
        got * 100 >= asked * 95,
        "the client got {got} of {asked} lists"
    );
}
