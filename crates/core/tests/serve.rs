//! The serve loop, in paused time.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fragstat_core::service::{Outbox, Service};
use fragstat_core::testing::{Faults, SimNet};
use fragstat_core::{serve, Transport};

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// A socket whose every receive fails at once (a persistent error), counting the calls. After
/// 10,000 calls it stops answering, so a receive loop that spins shows up as a count rather
/// than a hung test.
#[derive(Default)]
struct BrokenRecv {
    calls: AtomicUsize,
}

#[async_trait::async_trait]
impl Transport for BrokenRecv {
    async fn send_to(&self, _: &[u8], _: SocketAddr) -> std::io::Result<()> {
        Ok(())
    }
    async fn recv_from(&self, _: &mut [u8]) -> std::io::Result<(usize, SocketAddr)> {
        if self.calls.fetch_add(1, Ordering::SeqCst) >= 10_000 {
            std::future::pending::<()>().await;
        }
        Err(std::io::Error::other("persistent failure"))
    }
    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(addr(27960))
    }
}

#[tokio::test(start_paused = true)]
async fn a_persistent_receive_error_is_backed_off() {
    let socket = Arc::new(BrokenRecv::default());
    serve::run(
        Arc::clone(&socket) as Arc<dyn Transport>,
        serve::from_fn(|_from: SocketAddr, _datagram: &[u8]| Vec::new()),
        tokio::time::sleep(Duration::from_secs(1)),
    )
    .await
    .unwrap();
    let calls = socket.calls.load(Ordering::SeqCst);
    assert!(calls < 50, "{calls} receive calls in 1 s");
}

/// Sends "tick" to `peer` every 100 ms and answers "ping" with "pong"; records the time it is
/// given at each tick.
struct Ticker {
    next: std::time::Instant,
    peer: SocketAddr,
    ticks: Arc<Mutex<Vec<std::time::Instant>>>,
}

impl Service for Ticker {
    fn handle(&mut self, _: std::time::Instant, from: SocketAddr, d: &[u8], out: &mut Outbox) {
        if d == b"ping" {
            out.push((from, b"pong".to_vec()));
        }
    }
    fn poll_timeout(&self) -> Option<std::time::Instant> {
        Some(self.next)
    }
    fn handle_timeout(&mut self, now: std::time::Instant, out: &mut Outbox) {
        self.ticks.lock().unwrap().push(now);
        if now >= self.next {
            self.next += Duration::from_millis(100);
            out.push((self.peer, b"tick".to_vec()));
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_service_gets_its_timeouts_and_its_datagrams() {
    // The simulated network plays the service's socket: `inject` is a client sending to it.
    let net = SimNet::new(Faults::default(), 1);
    let start = tokio::time::Instant::now();
    let ticks = Arc::new(Mutex::new(Vec::new()));
    let ticker = Ticker {
        next: start.into_std() + Duration::from_millis(100),
        peer: addr(1),
        ticks: Arc::clone(&ticks),
    };
    net.inject(addr(2), b"ping".to_vec(), Duration::from_millis(250));
    serve::run(
        Arc::clone(&net) as Arc<dyn Transport>,
        ticker,
        tokio::time::sleep(Duration::from_millis(1050)),
    )
    .await
    .unwrap();
    let ticks: Vec<Duration> = ticks
        .lock()
        .unwrap()
        .iter()
        .map(|t| t.saturating_duration_since(start.into_std()))
        .collect();
    assert_eq!(ticks.len(), 10, "one call per due time");
    assert_eq!(
        ticks,
        (1..=10)
            .map(|k| Duration::from_millis(100 * k))
            .collect::<Vec<_>>(),
        "each call given the time it was due"
    );
    let sent = net.sent();
    let tick_times: Vec<Duration> = sent
        .iter()
        .filter(|s| s.to == addr(1) && s.data == b"tick")
        .map(|s| s.at - start)
        .collect();
    assert_eq!(
        tick_times,
        (1..=10)
            .map(|k| Duration::from_millis(100 * k))
            .collect::<Vec<_>>()
    );
    let pongs: Vec<_> = sent.iter().filter(|s| s.data == b"pong").collect();
    assert_eq!(pongs.len(), 1);
    assert_eq!(pongs[0].to, addr(2));
    assert_eq!(pongs[0].at - start, Duration::from_millis(250));
}

#[tokio::test(start_paused = true)]
async fn from_fn_serves_a_closure() {
    let net = SimNet::new(Faults::default(), 1);
    net.inject(addr(3), b"hello".to_vec(), Duration::from_millis(10));
    net.inject(addr(4), b"world".to_vec(), Duration::from_millis(20));
    let mut seen = Vec::new();
    serve::run(
        Arc::clone(&net) as Arc<dyn Transport>,
        serve::from_fn(move |from: SocketAddr, d: &[u8]| {
            seen.push(from);
            let mut r = d.to_vec();
            r.reverse();
            vec![(from, r)]
        }),
        tokio::time::sleep(Duration::from_millis(100)),
    )
    .await
    .unwrap();
    let sent: Vec<(SocketAddr, Vec<u8>)> = net.sent().into_iter().map(|s| (s.to, s.data)).collect();
    assert_eq!(
        sent,
        [(addr(3), b"olleh".to_vec()), (addr(4), b"dlrow".to_vec())]
    );
}

/// Wants a timeout at a fixed time it never moves past (it forgets to expire what is due).
/// After 10,000 calls it gives up, so a loop that spins shows up as a count rather than a hung
/// test.
struct Stuck {
    at: Option<std::time::Instant>,
    calls: Arc<AtomicUsize>,
}

impl Service for Stuck {
    fn handle(&mut self, _: std::time::Instant, _: SocketAddr, _: &[u8], _: &mut Outbox) {}
    fn poll_timeout(&self) -> Option<std::time::Instant> {
        self.at
    }
    fn handle_timeout(&mut self, _: std::time::Instant, _: &mut Outbox) {
        if self.calls.fetch_add(1, Ordering::SeqCst) >= 10_000 {
            self.at = None;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_service_stuck_in_the_past_does_not_spin_the_loop() {
    let net = SimNet::new(Faults::default(), 1);
    let calls = Arc::new(AtomicUsize::new(0));
    let stuck = Stuck {
        at: Some(tokio::time::Instant::now().into_std()),
        calls: Arc::clone(&calls),
    };
    serve::run(
        Arc::clone(&net) as Arc<dyn Transport>,
        stuck,
        tokio::time::sleep(Duration::from_millis(100)),
    )
    .await
    .unwrap();
    let calls = calls.load(Ordering::SeqCst);
    assert!(calls <= 101, "{calls} timeout calls in 100 ms");
}
