//! Pings over real loopback sockets: each reply is timed when it arrived, even when the
//! runtime was too busy to take it off the socket then (trial finding 18: every reply of one
//! receive got the same ping).

#![cfg(target_os = "linux")]

use std::net::{SocketAddr, UdpSocket};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use fragstat_core::{Engine, Exchange, Options, RecvBatch, Transport, UdpTransport, Verdict};

/// Asks "ping", done at "pong".
struct Ping;

impl Exchange for Ping {
    type Output = ();
    fn requests(&mut self, _: u32) -> Result<Vec<Vec<u8>>, fragstat_core::EncodeError> {
        Ok(vec![b"ping".to_vec()])
    }
    fn on_datagram(&mut self, d: &[u8]) -> Verdict<()> {
        if d == b"pong" {
            Verdict::Done {
                output: Ok(()),
                attempt: None,
            }
        } else {
            Verdict::Ignore("not a pong")
        }
    }
}

/// A responder on its own thread: on a request it says so (`got`), waits for `go`, then
/// `delay`, and answers; it reports between which instants it answered (`replied`).
fn responder(
    delay: Duration,
    got: tokio::sync::mpsc::UnboundedSender<()>,
    go: mpsc::Receiver<()>,
    replied: mpsc::Sender<(Duration, Instant, Instant)>,
) -> SocketAddr {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let addr = socket.local_addr().unwrap();
    thread::spawn(move || {
        let mut buf = [0u8; 64];
        let Ok((_, from)) = socket.recv_from(&mut buf) else {
            return;
        };
        let _ = got.send(());
        if go.recv_timeout(Duration::from_secs(20)).is_err() {
            return;
        }
        thread::sleep(delay);
        let before = Instant::now();
        let _ = socket.send_to(b"pong", from);
        let _ = replied.send((delay, before, Instant::now()));
    });
    addr
}

/// Returns once the kernel stamps datagrams as they arrive, not as they are read, with the
/// socket that keeps stamps on: the first socket on the host to ask for them has the kernel turn
/// them on in a deferred work item (`netstamp_work`), and until that has run, a datagram is
/// stamped when read. Bounded: it gives up after 500 tries (a transport without stamps then
/// fails the test).
async fn stamps_on_arrival() -> UdpTransport {
    let rx = UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let to = rx.local_addr().unwrap();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut batch = RecvBatch::new();
    for _ in 0..500 {
        tx.send_to(b"probe", to).unwrap();
        // Aged 2 ms before it is read, so a stamp taken on arrival shows.
        tokio::time::sleep(Duration::from_millis(2)).await;
        tokio::time::timeout(Duration::from_secs(20), rx.recv_batch(&mut batch))
            .await
            .expect("the probe arrives")
            .unwrap();
        let now = Instant::now();
        if batch
            .datagrams_at(now)
            .all(|(_, _, at)| now - at >= Duration::from_millis(1))
        {
            break;
        }
    }
    rx
}

/// Three servers answer 0, 10 and 30 ms apart while the runtime is held up (a task blocking
/// its only thread, as a busy scan's sending does), so the three replies wait in the socket
/// and are received together: their pings still differ as their answers did.
#[tokio::test]
async fn replies_received_together_keep_their_own_pings() {
    let _stamping = stamps_on_arrival().await;
    let transport = UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let engine = Engine::with_transports(Some(Arc::new(transport) as Arc<dyn Transport>), None);
    let (got_tx, mut got_rx) = tokio::sync::mpsc::unbounded_channel();
    let (replied_tx, replied_rx) = mpsc::channel();
    let delays = [0u64, 10, 30].map(Duration::from_millis);
    let mut gos = Vec::new();
    let servers: Vec<SocketAddr> = delays
        .iter()
        .map(|&d| {
            let (go_tx, go_rx) = mpsc::channel();
            gos.push(go_tx);
            responder(d, got_tx.clone(), go_rx, replied_tx.clone())
        })
        .collect();
    let options = Options::default()
        .with_timeout(Duration::from_secs(10))
        .with_retries(0)
        .with_concurrency(16);
    let batch = engine.run(servers.iter().map(|&a| (a, Ping)), options);
    // Once every request is in, hold the runtime's thread until every reply has been sent:
    // the receive task can take none of them meanwhile.
    let hog = tokio::spawn(async move {
        for _ in 0..3 {
            got_rx.recv().await.expect("every server is asked");
        }
        for go in gos {
            go.send(()).unwrap();
        }
        (0..3)
            .map(|_| replied_rx.recv_timeout(Duration::from_secs(20)).unwrap())
            .collect::<Vec<_>>()
    });
    let outcomes = tokio::time::timeout(Duration::from_secs(30), batch.collect_sorted())
        .await
        .expect("the scan ends");
    let mut replied = hog.await.unwrap();
    replied.sort();
    let pings: Vec<Duration> = outcomes
        .iter()
        .map(|o| {
            assert!(o.result.is_ok(), "{o:?}");
            o.rtt.expect("a ping")
        })
        .collect();
    // The requests went in one send, so pings differ as the answers' times do (each
    // answer left between the instants its server noted; the wall clock and the monotonic
    // one agree to well under a millisecond over this).
    let slack = Duration::from_millis(1);
    for i in 1..3 {
        let pinged = pings[i].saturating_sub(pings[0]);
        let (least, most) = (replied[i].1 - replied[0].2, replied[i].2 - replied[0].1);
        assert!(
            pinged + slack >= least && pinged <= most + slack,
            "pings {pings:?}: server {i} answered {least:?} to {most:?} after server 0, pinged {pinged:?} later"
        );
    }
}
