//! `fragstat master cod4x` against `fragstat serve cod4x --master` (CoD4X's list over TCP),
//! and that emulated master under a connection flood: each address (and in all) holds a
//! bounded number of connections, and a legitimate client is still served.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use fragstat_testkit::spawn_serve;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

mod support;
use support::{bin, run, stderr_of};

fn serve_cod4x() -> (fragstat_testkit::Served, SocketAddr) {
    let farm = spawn_serve(
        bin(),
        &[
            "cod4x",
            "--listen",
            "127.0.0.1:0",
            "--count",
            "3",
            "--master",
            "--master-listen",
            "127.0.0.1:0",
        ],
    );
    let m = farm.master.expect("a master line");
    (farm, m)
}

/// `fragstat master cod4x ADDR --format json`: the servers' addresses.
fn list(master: SocketAddr) -> Vec<String> {
    let out = run(&[
        "master",
        "cod4x",
        &master.to_string(),
        "--master-timeout-ms",
        "5000",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["masters"][0]["status"], "online", "{v:#}");
    v["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["address"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn master_cod4x_lists_the_emulated_tcp_master() {
    let (farm, master) = serve_cod4x();
    let mut got = list(master);
    got.sort();
    let mut want: Vec<String> = farm.servers.iter().map(ToString::to_string).collect();
    want.sort();
    assert_eq!(got, want);
}

/// Connects from `from` (a loopback address of its own).
async fn connect_from(from: Ipv4Addr, to: SocketAddr) -> TcpStream {
    let s = TcpSocket::new_v4().unwrap();
    s.bind(SocketAddr::new(IpAddr::V4(from), 0)).unwrap();
    tokio::time::timeout(Duration::from_secs(10), s.connect(to))
        .await
        .expect("connect in time")
        .expect("connect")
}

/// Sends the CoD4X client's request on `s` and reads until the master closes: the bytes
/// of the list (none when the master refused the connection).
async fn ask(mut s: TcpStream) -> usize {
    let _ = s
        .write_all(b"\xff\xff\xff\xffgetservers 21 full empty \0")
        .await;
    let mut body = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut body)).await;
    assert!(read.is_ok(), "the master answers or closes in time");
    body.len()
}

/// True when the master has closed `s` (without waiting).
fn is_closed(s: &TcpStream) -> bool {
    let mut b = [0u8; 1];
    match s.try_read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    }
}

/// The listener's bounds (crates/cli/src/serve_tcp.rs `Limits::default`).
const PER_ADDRESS: usize = 8;
const IN_ALL: usize = 256;

/// The address whose connection `i` of the full table comes from: 32 addresses of 8
/// connections, 8 addresses in each /24 (its 64) and 16 in each /16 (its 128), two /16s.
fn spread(i: usize) -> Ipv4Addr {
    let h = u8::try_from(i / PER_ADDRESS).unwrap();
    Ipv4Addr::new(127, 1 + h / 16, h % 16 / 8, 1 + h % 8)
}

/// One address holds 8 idle connections: its next ones are closed unanswered (the
/// per-address cap); the 8 are answered when they ask. Then 32 more addresses, spread over
/// /24s and /16s within their shares, hold 8 idle connections each, 256 in all (the cap):
/// one of them asking again is refused, and a legitimate client (127.0.0.1, holding none)
/// is served all the same — it displaces a connection of the network holding most. (The
/// idle ones would be closed after 5 s without a request; all this takes milliseconds.)
#[test]
fn a_connection_flood_leaves_a_legitimate_client_served() {
    let (_farm, master) = serve_cod4x();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let flooder = Ipv4Addr::new(127, 0, 0, 2);
        let mut idle = Vec::new();
        for _ in 0..PER_ADDRESS {
            idle.push(connect_from(flooder, master).await);
        }
        for _ in 0..24 {
            let extra = connect_from(flooder, master).await;
            assert_eq!(ask(extra).await, 0, "over the per-address cap: refused");
        }
        for s in idle {
            assert!(ask(s).await > 22, "the admitted connections are answered");
        }
        let mut held = Vec::new();
        for i in 0..IN_ALL {
            held.push(connect_from(spread(i), master).await);
        }
        let again = connect_from(spread(0), master).await;
        assert_eq!(ask(again).await, 0, "a full address is refused");
        let legit = connect_from(Ipv4Addr::LOCALHOST, master).await;
        assert!(
            ask(legit).await > 22,
            "a legitimate client is served while full"
        );
        // It took one flooding connection's place: exactly one of them is closed.
        let mut evicted = 0;
        for _ in 0..500 {
            evicted = held.iter().filter(|s| is_closed(s)).count();
            if evicted > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(evicted, 1, "one connection evicted to stay at {IN_ALL}");
        drop(held);
    });
    // And the command itself, after the flood.
    assert_eq!(list(master).len(), 3);
}

/// Sixteen addresses of one /24 each try 8 connections: the /24 holds its 64 (and no more,
/// though every address is under its own 8), and a client of another /24 is served.
#[test]
fn a_network_is_held_to_its_24s_share() {
    let (_farm, master) = serve_cod4x();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut held = Vec::new();
        for host in 1..=16u8 {
            for _ in 0..PER_ADDRESS {
                held.push(connect_from(Ipv4Addr::new(127, 9, 9, host), master).await);
            }
        }
        let more = connect_from(Ipv4Addr::new(127, 9, 9, 200), master).await;
        assert_eq!(ask(more).await, 0, "the /24 holds its share: refused");
        let other = connect_from(Ipv4Addr::new(127, 9, 10, 1), master).await;
        assert!(ask(other).await > 22, "another /24 is served");
        drop(held);
    });
}
