//! Two master wire forms through `Client::master_list` (what `fragstat master` runs), on
//! loopback: the Dæmon `dual` list (Unvanquished) and CoD4X's TCP stream.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fragstat::core::serve::run;
use fragstat::core::{Transport, UdpTransport};
use fragstat::quake3::cod4x::{render, Cod4xEntry};
use fragstat::quake3::daemon::Link;
use fragstat::quake3::emulate::EmulatedMaster;
use fragstat::quake3::EotStyle;
use fragstat::{Client, Error};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::watch;

fn a(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// An emulated Unvanquished master on 127.0.0.1 (until `stop` is dropped).
fn daemon_master(master: EmulatedMaster, stop: &watch::Sender<bool>) -> SocketAddr {
    let socket: Arc<dyn Transport> = Arc::new(UdpTransport::bind(a("127.0.0.1:0")).unwrap());
    let addr = socket.local_addr().unwrap();
    let mut rx = stop.subscribe();
    tokio::spawn(async move {
        let _ = run(socket, Box::new(master), async move {
            let _ = rx.wait_for(|s| *s).await;
        })
        .await;
    });
    addr
}

/// A dual-stack server (linked by the master) is listed once, at its IPv4 address with both
/// addresses; the list ends as soon as every numbered packet has come (there is no end
/// marker), not after the 5 s master timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_linked_pair_is_listed_once_and_the_list_ends_without_a_marker() {
    let (stop, _) = watch::channel(false);
    let v4 = a("127.0.0.1:27960");
    let v6 = a("[::1]:27961");
    let other = a("127.0.0.1:27962");
    let featured = a("127.0.0.1:27963");
    let link = Link {
        v4: "127.0.0.1:27960".parse().unwrap(),
        v6: "[::1]:27961".parse().unwrap(),
    };
    let master = EmulatedMaster::new(
        [v4, v6, other, featured].iter().map(|s| (*s, 86)).collect(),
        EotStyle::None,
    )
    .daemon(true)
    .with_links(vec![link])
    .with_featured(b"Official", vec![featured]);
    let addr = daemon_master(master, &stop);
    let client = Client::builder()
        .master_timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let unv = fragstat::game("unvanquished").unwrap();
    let started = Instant::now();
    let list = client.master_list(&unv, [addr]).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "complete when every packet came: {:?}",
        started.elapsed()
    );
    let r = &list.reports()[0];
    assert!(r.error.is_none(), "{:?}", r.error);
    let entries: Vec<_> = list.entries().iter().map(|l| &l.entry).collect();
    assert_eq!(entries.len(), 3, "{entries:?}");
    let pair = entries.iter().find(|e| e.addr == v4).expect("the pair");
    assert_eq!(pair.addresses, ["127.0.0.1:27960", "[::1]:27961"]);
    assert!(
        entries.iter().all(|e| e.addr != v6),
        "the IPv6 side not again"
    );
    assert!(entries.iter().any(|e| e.addr == featured));
}

/// A one-shot CoD4X master: checks the request, then sends `stream` in two writes (the
/// header only in the first) and closes.
async fn cod4x_master(stream: Vec<u8>) -> (SocketAddr, tokio::task::JoinHandle<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut req = Vec::new();
        let mut buf = [0u8; 64];
        while !req.contains(&0) && req.len() < 1024 {
            let n = s.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            req.extend_from_slice(&buf[..n]);
        }
        let (head, rest) = stream.split_at(30.min(stream.len()));
        // The client may close first (a list over its bounds): no panic here.
        let _ = s.write_all(head).await;
        let _ = s.flush().await;
        let _ = s.write_all(rest).await;
        let _ = s.shutdown().await;
        req
    });
    (addr, task)
}

/// `fragstat master cod4x` over TCP: the CoD4X client's request, an entry with an IPv4 and
/// an IPv6 address listed once with both, an IPv6-only entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cod4x_lists_over_tcp_with_ipv6_and_several_addresses_per_entry() {
    let stream = render(vec![
        Cod4xEntry::new(vec![a("127.0.0.1:28960"), a("[::1]:28960")]),
        Cod4xEntry::new(vec![a("[::1]:28961")]),
        Cod4xEntry::new(vec![a("127.0.0.1:28962")]),
    ]);
    let (addr, master) = cod4x_master(stream).await;
    let client = Client::new();
    let cod4x = fragstat::game("cod4x").unwrap();
    let list = client.master_list(&cod4x, [addr]).await.unwrap();
    let r = &list.reports()[0];
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_eq!(
        master.await.unwrap(),
        b"\xff\xff\xff\xffgetservers 21 full empty \0"
    );
    let entries: Vec<_> = list.entries().iter().map(|l| &l.entry).collect();
    assert_eq!(entries.len(), 3, "{entries:?}");
    assert_eq!(entries[0].addr, a("127.0.0.1:28960"));
    assert_eq!(entries[0].addresses, ["127.0.0.1:28960", "[::1]:28960"]);
    assert_eq!(entries[1].addr, a("[::1]:28961"));
    assert_eq!(entries[2].addr, a("127.0.0.1:28962"));
}

/// A TCP master is bounded: one that sends more than the entry cap allows ends its query
/// with a limit error, one that accepts and says nothing times out, one that refuses is down.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tcp_master_is_bounded_in_bytes_and_time() {
    let big = render(
        (0..2000u16)
            .map(|i| Cod4xEntry::new(vec![SocketAddr::from(([127, 0, 0, 1], 1000 + i))]))
            .collect(),
    );
    let (addr, _master) = cod4x_master(big).await;
    let limits = fragstat::ListLimits {
        max_entries_per_master: 10,
        ..fragstat::ListLimits::default()
    };
    let client = Client::builder().list_limits(limits).build().unwrap();
    let cod4x = fragstat::game("cod4x").unwrap();
    let list = client.master_list(&cod4x, [addr]).await.unwrap();
    assert!(
        matches!(list.reports()[0].error, Some(Error::Exceeded(_))),
        "{:?}",
        list.reports()[0].error
    );
    // Silent: accepted, never answered.
    let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_addr = silent.local_addr().unwrap();
    let client = Client::builder()
        .master_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let started = Instant::now();
    let list = client.master_list(&cod4x, [silent_addr]).await.unwrap();
    assert!(list.reports()[0]
        .error
        .as_ref()
        .is_some_and(Error::is_timeout));
    assert!(started.elapsed() < Duration::from_secs(5));
    drop(silent);
}
