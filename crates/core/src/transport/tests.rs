//! Tests of the UDP transport over real loopback sockets.

use super::*;
use std::time::Duration;
use tokio::time::Instant;

#[test]
fn a_socket_gets_the_buffers_it_asks_for_as_far_as_the_system_allows() {
    let rmem_max: usize = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0);
    let asked = 1 << 20;
    let socket = udp_socket("127.0.0.1:0".parse().unwrap(), asked).unwrap();
    let got = socket2::SockRef::from(&socket).recv_buffer_size().unwrap();
    // Linux reports twice what it grants; the grant is capped at rmem_max.
    assert!(
        got >= asked.min(rmem_max),
        "{got} of {asked} (rmem_max {rmem_max})"
    );
    assert!(socket.local_addr().unwrap().port() != 0);
}

/// A batch of real datagrams through recvmmsg: every datagram whole, in order, with its
/// sender, the empty one and one of the largest size included; then a single receive.
#[tokio::test]
async fn recv_batch_takes_every_waiting_datagram_whole() {
    let rx = UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let to = rx.local_addr().unwrap();
    let a = UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let b = UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let big = vec![7u8; 60_000];
    let mut sent: Vec<(SocketAddr, Vec<u8>)> = Vec::new();
    for i in 0..40u8 {
        let (t, data) = match i {
            3 => (&a, Vec::new()),
            5 => (&b, big.clone()),
            _ if i % 2 == 0 => (&a, vec![i; usize::from(i) + 1]),
            _ => (&b, vec![i; 3]),
        };
        t.send_to(&data, to).await.unwrap();
        sent.push((t.local_addr().unwrap(), data));
    }
    let mut got: Vec<(SocketAddr, Vec<u8>)> = Vec::new();
    let mut batch = RecvBatch::new();
    let mut calls = 0;
    while got.len() < sent.len() {
        tokio::time::timeout(Duration::from_secs(5), rx.recv_batch(&mut batch))
            .await
            .expect("datagrams arrive")
            .unwrap();
        calls += 1;
        got.extend(batch.datagrams().map(|(f, d)| (f, d.to_vec())));
    }
    assert_eq!(got, sent);
    assert!(
        calls < sent.len(),
        "{calls} receives for {} datagrams: not batched",
        sent.len()
    );
}

/// A batch of datagrams to several receivers in one call: each arrives whole, in order,
/// from the sender; a datagram the socket refuses ends the batch there (`Ok` of those
/// before it, `Err` when it is the first).
#[tokio::test]
async fn send_batch_delivers_every_datagram_and_stops_at_a_refused_one() {
    let tx = UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let from = tx.local_addr().unwrap();
    let rx: Vec<UdpTransport> = (0..4)
        .map(|_| UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap())
        .collect();
    let data: Vec<(SocketAddr, Vec<u8>)> = (0..40u8)
        .map(|i| {
            let to = rx[usize::from(i) % 4].local_addr().unwrap();
            (to, vec![i; usize::from(i) * 37 % 1400])
        })
        .collect();
    let pairs: Vec<(SocketAddr, &[u8])> = data.iter().map(|(a, d)| (*a, &d[..])).collect();
    tx.socket.writable().await.unwrap();
    assert_eq!(tx.try_send_batch(&pairs).unwrap(), 40);
    for (r, receiver) in rx.iter().enumerate() {
        for (to, want) in data.iter().skip(r).step_by(4) {
            assert_eq!(*to, receiver.local_addr().unwrap());
            let mut buf = vec![0u8; 2048];
            let (n, who) =
                tokio::time::timeout(Duration::from_secs(5), receiver.recv_from(&mut buf))
                    .await
                    .expect("datagram arrives")
                    .unwrap();
            assert_eq!((who, &buf[..n]), (from, &want[..]));
        }
    }
    // An IPv6 destination on an IPv4 socket is refused.
    let v6: SocketAddr = "[::1]:9".parse().unwrap();
    let ok = rx[0].local_addr().unwrap();
    assert_eq!(
        tx.try_send_batch(&[(ok, &b"a"[..]), (v6, b"b"), (ok, b"c")])
            .unwrap(),
        1
    );
    assert!(tx.try_send_batch(&[(v6, &b"b"[..]), (ok, b"c")]).is_err());
}

/// A port no socket will take a datagram on, held so nobody can bind it while the test
/// runs: bound on the wildcard address (no reuse) and connected elsewhere, so the kernel
/// answers a datagram from anyone else with ICMP port unreachable.
#[cfg(target_os = "linux")]
fn refusing_port(v6: bool) -> (std::net::UdpSocket, SocketAddr) {
    let (any, peer, lo): (SocketAddr, SocketAddr, std::net::IpAddr) = if v6 {
        (
            "[::]:0".parse().unwrap(),
            "[::1]:1".parse().unwrap(),
            "::1".parse().unwrap(),
        )
    } else {
        (
            "0.0.0.0:0".parse().unwrap(),
            "127.0.0.1:1".parse().unwrap(),
            "127.0.0.1".parse().unwrap(),
        )
    };
    let hold = std::net::UdpSocket::bind(any).unwrap();
    hold.connect(peer).unwrap();
    let port = hold.local_addr().unwrap().port();
    (hold, SocketAddr::new(lo, port))
}

/// ICMP port unreachable (IPv4 and IPv6): the receive says so, the error queue names the
/// destination, and afterwards the socket waits for datagrams again (no error readiness
/// left behind) and takes the next one.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn unreachable_destinations_are_reported_then_receiving_goes_on() {
    for v6 in [false, true] {
        let local: SocketAddr = if v6 { "[::1]:0" } else { "127.0.0.1:0" }.parse().unwrap();
        let t = UdpTransport::bind(local)
            .unwrap()
            .report_unreachable()
            .unwrap();
        let (_hold, closed) = refusing_port(v6);
        t.send_to(b"\xff\xff\xff\xffgetinfo", closed).await.unwrap();
        let mut batch = RecvBatch::new();
        let deadline = Duration::from_secs(20);
        let err = tokio::time::timeout(deadline, t.recv_batch(&mut batch))
            .await
            .expect("the ICMP error is signalled")
            .expect_err("no datagram came");
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused, "{v6}");
        let mut out = Vec::new();
        t.take_unreachable(&mut out).unwrap();
        assert_eq!(out, vec![canonical(closed)], "{v6}");
        // Nothing is left queued: a second drain finds nothing.
        out.clear();
        t.take_unreachable(&mut out).unwrap();
        assert!(out.is_empty());
        // The next receive waits for, and takes, a real datagram.
        let peer = UdpTransport::bind(local).unwrap();
        let to = t.local_addr().unwrap();
        let recv = tokio::spawn(async move {
            let mut batch = RecvBatch::new();
            let r = t.recv_batch(&mut batch).await.map(|()| {
                batch
                    .datagrams()
                    .map(|(_, d)| d.to_vec())
                    .collect::<Vec<_>>()
            });
            (t, r)
        });
        peer.send_to(b"hello", to).await.unwrap();
        let (_t, r) = tokio::time::timeout(deadline, recv).await.unwrap().unwrap();
        assert_eq!(r.unwrap(), vec![b"hello".to_vec()], "{v6}");
    }
}

#[tokio::test(start_paused = true)]
async fn backoff_doubles_to_its_cap_and_resets_on_success() {
    let persistent = io::Error::other("persistent");
    let mut b = Backoff::default();
    let mut waits = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        b.wait(&persistent).await;
        waits.push(t.elapsed().as_millis());
    }
    assert_eq!(waits, [1, 2, 4, 8, 16, 32, 64, 128, 128, 128]);
    b.reset();
    let t = Instant::now();
    b.wait(&persistent).await;
    assert_eq!(t.elapsed(), Backoff::FIRST);
    // A bounced datagram reported by ICMP neither waits nor grows the backoff.
    let t = Instant::now();
    b.wait(&io::Error::from(io::ErrorKind::ConnectionRefused))
        .await;
    b.wait(&io::Error::from(io::ErrorKind::ConnectionReset))
        .await;
    assert_eq!(t.elapsed(), Duration::ZERO);
    let t = Instant::now();
    b.wait(&persistent).await;
    assert_eq!(t.elapsed(), Duration::from_millis(2));
}

/// Two datagrams sent ~20 ms apart, then received together in one batch, keep their own
/// arrival times (the kernel's): as far apart as they were sent, not one time for the batch.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn datagrams_received_together_keep_their_own_arrival_times() {
    let rx = UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let to = rx.local_addr().unwrap();
    let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut batch = RecvBatch::new();
    let deadline = Duration::from_secs(20);
    stamps_on_arrival(&rx, &tx, &mut batch).await;
    // The sender notes when it sent each (between which instants); the receiver reads only
    // once both are waiting.
    let (sent_tx, sent_rx) = tokio::sync::oneshot::channel();
    let sender = std::thread::spawn(move || {
        let t0 = std::time::Instant::now();
        tx.send_to(b"a", to).unwrap();
        let t1 = std::time::Instant::now();
        std::thread::sleep(Duration::from_millis(20));
        let t2 = std::time::Instant::now();
        tx.send_to(b"b", to).unwrap();
        let t3 = std::time::Instant::now();
        let _ = sent_tx.send((t0, t1, t2, t3));
    });
    let (t0, t1, t2, t3) = tokio::time::timeout(deadline, sent_rx)
        .await
        .expect("the sender finishes")
        .unwrap();
    sender.join().unwrap();
    tokio::time::timeout(deadline, rx.recv_batch(&mut batch))
        .await
        .expect("the datagrams arrive")
        .unwrap();
    let now = std::time::Instant::now();
    let got: Vec<(Vec<u8>, std::time::Instant)> = batch
        .datagrams_at(now)
        .map(|(_, d, at)| (d.to_vec(), at))
        .collect();
    let [(a, at_a), (b, at_b)] = &got[..] else {
        panic!("both datagrams in one batch: {got:?}");
    };
    assert_eq!((&a[..], &b[..]), (&b"a"[..], &b"b"[..]));
    // The wall clock and the monotonic one agree to well under a millisecond over this.
    let slack = Duration::from_millis(1);
    let apart = at_b.duration_since(*at_a);
    assert!(
        apart + slack >= t2 - t1 && apart <= t3 - t0 + slack,
        "received {apart:?} apart, sent between {:?} and {:?} apart",
        t2 - t1,
        t3 - t0
    );
    assert!(
        *at_a >= t0 - slack && *at_b <= now,
        "{t0:?} {at_a:?} {at_b:?} {now:?}"
    );
}

/// Receives through `rx` (its first batched receive turns its receive times on) until the
/// kernel stamps datagrams as they arrive, not as they are read: the first socket on the host
/// to ask for stamps has the kernel turn them on in a deferred work item (`netstamp_work`),
/// and until that has run, a datagram is stamped when read. Bounded: it gives up after 500
/// tries (a transport without stamps then fails the test that follows).
#[cfg(target_os = "linux")]
async fn stamps_on_arrival(rx: &UdpTransport, tx: &std::net::UdpSocket, batch: &mut RecvBatch) {
    let to = rx.local_addr().unwrap();
    for _ in 0..500 {
        tx.send_to(b"probe", to).unwrap();
        // Aged 2 ms before it is read, so a stamp taken on arrival shows.
        tokio::time::sleep(Duration::from_millis(2)).await;
        tokio::time::timeout(Duration::from_secs(20), rx.recv_batch(batch))
            .await
            .expect("the probe arrives")
            .unwrap();
        let now = std::time::Instant::now();
        let aged = batch
            .datagrams_at(now)
            .all(|(_, _, at)| now - at >= Duration::from_millis(1));
        if aged {
            return;
        }
    }
}

/// A kernel stamp becomes a time on the caller's clock by its age on the wall clock; a
/// datagram without one, or stamped after the wall clock was read (the clock set back), is
/// timed `now`.
#[test]
fn arrival_times_count_back_from_now_by_the_stamps_age() {
    let now = std::time::Instant::now();
    let wall = Duration::from_secs(1_800_000_000);
    let ms = Duration::from_millis;
    assert_eq!(arrival(Some(wall - ms(30)), Some(wall), now), now - ms(30));
    assert_eq!(arrival(Some(wall), Some(wall), now), now);
    assert_eq!(arrival(Some(wall + ms(5)), Some(wall), now), now);
    assert_eq!(arrival(None, Some(wall), now), now);
    assert_eq!(arrival(Some(wall), None, now), now);
    // Older than the monotonic clock can express: `now`, not a panic.
    assert_eq!(arrival(Some(Duration::ZERO), Some(Duration::MAX), now), now);
}
