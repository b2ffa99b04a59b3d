//! A hostile master list (security review C2, the scenario): 60,000 ports of
//! 127.0.0.1 plus private, link-local, CGNAT, multicast, broadcast, unspecified and reserved
//! addresses (IPv4 and IPv6). Run inside a network namespace of its own (`unshare -n`,
//! loopback only), so that nothing could leave this machine even if the filter failed:
//! every datagram the client sends is recorded, and none goes to a filtered address or to
//! more than 256 ports of 127.0.0.1.

mod support;

use std::collections::HashSet;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fragstat::core::{RecvBatch, Transport, UdpTransport};
use fragstat::{Client, FilterReason};
use fragstat_testkit::netns::{private_netns, Netns};
use futures_util::StreamExt;

/// Records every destination it is asked to send to, then sends.
struct Recording {
    inner: UdpTransport,
    sent: Arc<Mutex<Vec<SocketAddr>>>,
}

impl Recording {
    fn note(&self, to: SocketAddr) {
        self.sent.lock().unwrap().push(to);
    }
}

#[async_trait::async_trait]
impl Transport for Recording {
    async fn send_to(&self, buf: &[u8], to: SocketAddr) -> io::Result<()> {
        self.note(to);
        self.inner.send_to(buf, to).await
    }
    fn try_send_to(&self, buf: &[u8], to: SocketAddr) -> io::Result<()> {
        self.note(to);
        self.inner.try_send_to(buf, to)
    }
    fn try_send_batch(&self, datagrams: &[(SocketAddr, &[u8])]) -> io::Result<usize> {
        for (to, _) in datagrams {
            self.note(*to);
        }
        self.inner.try_send_batch(datagrams)
    }
    async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.inner.recv_from(buf).await
    }
    async fn recv_batch(&self, batch: &mut RecvBatch) -> io::Result<()> {
        self.inner.recv_batch(batch).await
    }
    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

#[test]
fn a_hostile_list_sends_nothing_to_filtered_addresses() {
    // This same test, in a network namespace with nothing but its own loopback.
    match private_netns("a_hostile_list_sends_nothing_to_filtered_addresses") {
        Netns::Inside => inner(),
        Netns::Ran(text) => assert!(
            text.contains("inside a private network namespace"),
            "{text}"
        ),
        Netns::Skipped => {}
    }
}

/// The hostile addresses, each with the reason it must be left out.
fn hostile() -> Vec<(SocketAddr, FilterReason)> {
    [
        ("10.0.0.1:27960", FilterReason::Private),
        ("10.255.255.254:27960", FilterReason::Private),
        ("192.168.1.1:27960", FilterReason::Private),
        ("172.16.0.1:27960", FilterReason::Private),
        ("169.254.1.1:27960", FilterReason::LinkLocal),
        ("100.64.0.1:27960", FilterReason::SharedCgnat),
        ("224.0.0.1:27960", FilterReason::Multicast),
        ("239.255.255.250:1900", FilterReason::Multicast),
        ("255.255.255.255:27960", FilterReason::Broadcast),
        ("0.0.0.0:27960", FilterReason::Unspecified),
        ("240.0.0.1:27960", FilterReason::Reserved),
        ("[fe80::1]:27960", FilterReason::LinkLocal),
        ("[fd00::1]:27960", FilterReason::UniqueLocal),
        ("[ff02::1]:27960", FilterReason::Multicast),
        ("[::]:27960", FilterReason::Unspecified),
    ]
    .into_iter()
    .map(|(a, r)| (a.parse().unwrap(), r))
    .collect()
}

fn inner() {
    println!("inside a private network namespace (loopback only)");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(scenario());
}

async fn scenario() {
    let q3 = fragstat::game("q3").unwrap();
    let hostile = hostile();
    let mut listed: Vec<SocketAddr> = (1..=60_000u16)
        .map(|p| SocketAddr::from(([127, 0, 0, 1], p)))
        .collect();
    listed.extend(hostile.iter().map(|(a, _)| *a));
    let master = support::master(&q3, listed.clone());
    let master_addr = master.master.unwrap();
    let sent = Arc::new(Mutex::new(Vec::new()));
    let v4 = Recording {
        inner: UdpTransport::bind("0.0.0.0:0".parse().unwrap()).unwrap(),
        sent: sent.clone(),
    };
    let v6 = Recording {
        inner: UdpTransport::bind("[::]:0".parse().unwrap()).unwrap(),
        sent: sent.clone(),
    };
    let client = Client::builder()
        .transports(Some(Arc::new(v4)), Some(Arc::new(v6)))
        .timeout(Duration::from_millis(100))
        .retries(0)
        .master_timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    // getserversExt: IPv4 and IPv6 entries.
    let list = client
        .master_list(&q3, [master_addr.to_string()])
        .ext(true)
        .await
        .unwrap();
    let report = &list.reports()[0];
    assert!(report.is_online(), "{report:?}");
    assert_eq!(report.listed, listed.len(), "{report:?}");
    assert_eq!(
        report.kept, 256,
        "256 ports of 127.0.0.1 (a loopback master may list loopback)"
    );
    assert_eq!(report.over_ip_cap, 60_000 - 256);
    let mut want: std::collections::BTreeMap<FilterReason, usize> = Default::default();
    for (_, r) in &hostile {
        *want.entry(*r).or_default() += 1;
    }
    assert_eq!(report.filtered, want);
    let kept: HashSet<SocketAddr> = list.servers().collect();
    assert_eq!(kept.len(), 256);
    assert!(kept.iter().all(|a| a.ip().is_loopback()));

    // Probe what was kept: 256 queries, no more.
    let results = client.scan(&q3, list.servers()).count().await;
    assert_eq!(results, 256);

    let sent = sent.lock().unwrap().clone();
    let bad: Vec<&SocketAddr> = sent
        .iter()
        .filter(|to| **to != master_addr && !kept.contains(to))
        .collect();
    assert!(
        bad.is_empty(),
        "sent to addresses that were filtered: {bad:?}"
    );
    let to_servers = sent.iter().filter(|to| kept.contains(to)).count();
    assert_eq!(to_servers, 256, "one query each (no retry asked)");
    let ports: HashSet<u16> = sent
        .iter()
        .filter(|a| a.ip().is_loopback() && **a != master_addr)
        .map(SocketAddr::port)
        .collect();
    assert_eq!(ports.len(), 256, "no more than 256 ports of one address");
    println!(
        "hostile list: {} listed, {} kept, {} filtered, {} over the per-address cap; {} datagrams sent",
        report.listed,
        report.kept,
        report.dropped() - report.over_ip_cap,
        report.over_ip_cap,
        sent.len()
    );
}
