//! Engine tests with toy protocols over the simulated network, in paused time.
//! Each toy protocol has the shape of a real family: text challenges (Quake III), binary
//! challenges of 4 and 8 bytes (idTech 4, ETQW), tokens (Teeworlds), multi-datagram replies
//! with and without an end marker (master lists, DDNet iex+), and a two-step handshake
//! (Teeworlds 0.7).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fragstat_core::rto::RttEstimator;
use fragstat_core::testing::{Faults, SimNet};
use fragstat_core::{
    DecodeError, Engine, Exchange, LimitKind, Options, Outcome, QueryError, Transport, Verdict,
};
use tokio::time::Instant;

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn engine(net: &Arc<SimNet>) -> Engine {
    Engine::with_transports(Some(Arc::clone(net) as Arc<dyn Transport>), None)
}

fn opts(timeout_ms: u64, retries: u32) -> Options {
    Options::default()
        .with_timeout(Duration::from_millis(timeout_ms))
        .with_retries(retries)
}

fn err(msg: &'static str) -> DecodeError {
    DecodeError::Invalid {
        field: "reply",
        offset: 0,
        reason: msg,
    }
}

// ---- text challenge (Quake III shape): "q <challenge>-<attempt>" -> "r <challenge>-<attempt> <payload>"

struct Text {
    challenge: u64,
}

impl Exchange for Text {
    type Output = String;
    fn requests(&mut self, attempt: u32) -> Result<Vec<Vec<u8>>, fragstat_core::EncodeError> {
        Ok(vec![format!("q {}-{attempt}", self.challenge).into_bytes()])
    }
    fn on_datagram(&mut self, d: &[u8]) -> Verdict<String> {
        let s = String::from_utf8_lossy(d);
        let mut it = s.splitn(3, ' ');
        if it.next() != Some("r") {
            return Verdict::Invalid(err("not a reply"));
        }
        let Some((c, a)) = it.next().and_then(|t| t.split_once('-')) else {
            return Verdict::Invalid(err("no challenge"));
        };
        if c != self.challenge.to_string() {
            return Verdict::Ignore("wrong challenge");
        }
        Verdict::Done {
            output: Ok(it.next().unwrap_or_default().to_string()),
            attempt: a.parse().ok(),
        }
    }
}

fn text_server(payload: String) -> fragstat_core::testing::Responder {
    Arc::new(move |req: &[u8]| {
        let s = String::from_utf8_lossy(req);
        let c = s.strip_prefix("q ").unwrap_or_default().to_string();
        vec![format!("r {c} {payload}").into_bytes()]
    })
}

fn forge_challenge() -> fragstat_core::testing::Forger {
    Arc::new(|reply: &[u8]| {
        let s = String::from_utf8_lossy(reply);
        let parts: Vec<&str> = s.splitn(3, ' ').collect();
        format!("r 999999-0 FORGED-{}", parts.get(2).unwrap_or(&"")).into_bytes()
    })
}

#[tokio::test(start_paused = true)]
async fn text_challenge_survives_loss_duplication_reordering_and_forgery() {
    let net = SimNet::new(
        Faults {
            request_loss: 0.2,
            reply_loss: 0.2,
            duplicate: 0.3,
            latency: Duration::from_millis(20),
            jitter: Duration::from_millis(30),
            forge_other_addr: 0.5,
            forge_same_addr: 0.5,
            forger: Some(forge_challenge()),
            ..Faults::default()
        },
        7,
    );
    // Two blocks of servers 1000 ports apart: a reply forged "from port + 1000" lands on an
    // address that has its own query in flight, and must be refused by its challenge.
    for p in (20000..20200).chain(21000..21200) {
        net.add_server(addr(p), text_server(format!("server-{p}")));
    }
    let jobs: Vec<_> = (20000..20200)
        .chain(21000..21200)
        .enumerate()
        .map(|(i, p)| {
            (
                addr(p),
                Text {
                    challenge: 1000 + i as u64,
                },
            )
        })
        .collect();
    let all = engine(&net).run(jobs, opts(100, 8)).collect_sorted().await;
    assert_eq!(all.len(), 400);
    for o in &all {
        let got = o
            .result
            .as_ref()
            .unwrap_or_else(|e| panic!("{}: {e}", o.addr));
        assert_eq!(
            *got,
            format!("server-{}", o.addr.port()),
            "reply attributed to the wrong server"
        );
    }
    assert!(
        all.iter().any(|o| o.attempts > 1),
        "loss must have caused retries"
    );
}

/// An exchange that cannot encode its retry: the first attempt goes out, the second is an
/// encode error.
struct FailsOnRetry;

impl Exchange for FailsOnRetry {
    type Output = String;
    fn requests(&mut self, attempt: u32) -> Result<Vec<Vec<u8>>, fragstat_core::EncodeError> {
        if attempt == 0 {
            Ok(vec![b"q first".to_vec()])
        } else {
            Err(fragstat_core::EncodeError::forbidden("retry challenge"))
        }
    }
    fn on_datagram(&mut self, _: &[u8]) -> Verdict<String> {
        Verdict::Ignore("never answers")
    }
}

#[tokio::test(start_paused = true)]
async fn an_encode_failure_ends_the_query_with_nothing_sent() {
    let net = SimNet::new(Faults::default(), 1);
    let o = engine(&net)
        .query(addr(9), FailsOnRetry, opts(100, 3))
        .await;
    let Err(QueryError::Encode(e)) = &o.result else {
        panic!("{:?}", o.result);
    };
    assert_eq!(e.kind(), "forbidden");
    assert!(o
        .result
        .unwrap_err()
        .to_string()
        .contains("retry challenge"));
    let sent = net.sent();
    assert_eq!(sent.len(), 1, "only the first attempt was sent");
    assert_eq!(sent[0].data, b"q first");
}

#[tokio::test(start_paused = true)]
async fn timeout_after_every_retry_and_per_attempt_timing() {
    let net = SimNet::new(Faults::default(), 1);
    let start = Instant::now();
    let o = engine(&net)
        .query(addr(9), Text { challenge: 1 }, opts(100, 3))
        .await;
    assert!(
        matches!(o.result, Err(QueryError::Timeout { attempts: 4 })),
        "{:?}",
        o.result
    );
    assert_eq!(start.elapsed(), Duration::from_millis(400));
    let sent = net.sent();
    assert_eq!(sent.len(), 4);
    for (i, s) in sent.iter().enumerate() {
        assert_eq!(s.at - start, Duration::from_millis(100 * i as u64));
        assert_eq!(s.data, format!("q 1-{i}").into_bytes());
    }
}

#[tokio::test(start_paused = true)]
async fn rtt_is_measured_on_the_attempt_that_was_answered() {
    // The server ignores the first request: the reply answers attempt 1, sent at 100 ms.
    let net = SimNet::new(
        Faults {
            latency: Duration::from_millis(30),
            ..Faults::default()
        },
        1,
    );
    let seen = Arc::new(AtomicU32::new(0));
    let inner = text_server("x".into());
    let s2 = Arc::clone(&seen);
    net.add_server(
        addr(1),
        Arc::new(move |req: &[u8]| {
            if s2.fetch_add(1, Ordering::SeqCst) == 0 {
                vec![]
            } else {
                inner(req)
            }
        }),
    );
    let o = engine(&net)
        .query(addr(1), Text { challenge: 5 }, opts(100, 3))
        .await;
    assert_eq!(o.rtt, Some(Duration::from_millis(30)));
    assert_eq!(o.attempts, 2);

    // A late reply to attempt 0 arriving after the retry went out: RTT counts from attempt 0.
    let net = SimNet::new(
        Faults {
            latency: Duration::from_millis(150),
            ..Faults::default()
        },
        1,
    );
    net.add_server(addr(2), text_server("y".into()));
    let o = engine(&net)
        .query(addr(2), Text { challenge: 6 }, opts(100, 3))
        .await;
    assert_eq!(o.result.unwrap(), "y");
    assert_eq!(o.rtt, Some(Duration::from_millis(150)));
}

#[tokio::test(start_paused = true)]
async fn results_stream_in_completion_order() {
    let net = SimNet::new(Faults::default(), 1);
    // Latency by port: the later servers in job order answer first.
    for (i, p) in (100..105).enumerate() {
        let delay = Duration::from_millis(50 * (5 - i as u64));
        let inner = text_server(format!("{p}"));
        let net2 = Arc::downgrade(&net);
        net.add_server(
            addr(p),
            Arc::new(move |req: &[u8]| {
                let Some(net2) = net2.upgrade() else {
                    return vec![];
                };
                for r in inner(req) {
                    net2.inject(addr(p), r, delay);
                }
                vec![]
            }),
        );
    }
    let mut batch = engine(&net).run(
        (100..105).map(|p| {
            (
                addr(p),
                Text {
                    challenge: u64::from(p),
                },
            )
        }),
        opts(1000, 0),
    );
    let mut order = Vec::new();
    while let Some(o) = batch.next().await {
        assert!(o.result.is_ok());
        order.push(o.index);
    }
    assert_eq!(order, vec![4, 3, 2, 1, 0]);
}

#[tokio::test(start_paused = true)]
async fn concurrency_window_and_pacing() {
    let net = SimNet::new(
        Faults {
            latency: Duration::from_millis(40),
            ..Faults::default()
        },
        1,
    );
    for p in 0..50 {
        net.add_server(addr(1000 + p), text_server("ok".into()));
    }
    let start = Instant::now();
    let mut batch = engine(&net).run(
        (0..50).map(|p| {
            (
                addr(1000 + p),
                Text {
                    challenge: u64::from(p),
                },
            )
        }),
        opts(1000, 0).with_concurrency(5),
    );
    let mut done_at = HashMap::new();
    while let Some(o) = batch.next().await {
        assert!(o.result.is_ok());
        done_at.insert(o.addr, Instant::now());
    }
    let sent = net.sent();
    let max_overlap = sent
        .iter()
        .map(|s| {
            sent.iter()
                .filter(|t| t.at <= s.at && done_at[&t.to] > s.at)
                .count()
        })
        .max()
        .unwrap();
    assert_eq!(
        max_overlap, 5,
        "window of 5 must be used and never exceeded"
    );
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(400),
        "10 rounds of 40 ms"
    );

    // Pacing: 100 datagrams/s means 10 ms between sends.
    let net = SimNet::new(Faults::default(), 1);
    for p in 0..20 {
        net.add_server(addr(2000 + p), text_server("ok".into()));
    }
    let all = engine(&net)
        .run(
            (0..20).map(|p| {
                (
                    addr(2000 + p),
                    Text {
                        challenge: u64::from(p),
                    },
                )
            }),
            opts(1000, 0).with_rate(Some(100)),
        )
        .collect_sorted()
        .await;
    assert!(all.iter().all(|o| o.result.is_ok()));
    let sent = net.sent();
    for w in sent.windows(2) {
        assert!(
            w[1].at - w[0].at >= Duration::from_millis(10),
            "{:?}",
            w[1].at - w[0].at
        );
    }
    assert_eq!(
        sent.last().unwrap().at - sent[0].at,
        Duration::from_millis(190)
    );
}

/// A [`Text`] query that counts the exchanges alive.
struct Counted {
    inner: Text,
    alive: Arc<AtomicUsize>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.alive.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Exchange for Counted {
    type Output = String;
    fn requests(&mut self, attempt: u32) -> Result<Vec<Vec<u8>>, fragstat_core::EncodeError> {
        self.inner.requests(attempt)
    }
    fn on_datagram(&mut self, d: &[u8]) -> Verdict<String> {
        self.inner.on_datagram(d)
    }
}

/// `run_lazy` makes each exchange when its query starts: never more alive than the window,
/// every job run once, in index order of the iterator, and none left over at the end.
#[tokio::test(start_paused = true)]
async fn lazy_jobs_are_made_as_the_window_frees() {
    let net = SimNet::new(
        Faults {
            latency: Duration::from_millis(10),
            jitter: Duration::from_millis(10),
            ..Faults::default()
        },
        3,
    );
    for p in 0..200 {
        net.add_server(addr(3000 + p), text_server(format!("s{p}")));
    }
    let made = Arc::new(AtomicUsize::new(0));
    let alive = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (m, a, peak) = (Arc::clone(&made), Arc::clone(&alive), Arc::clone(&most));
    let jobs = (0..200u16).map(move |p| {
        m.fetch_add(1, Ordering::SeqCst);
        let now = a.fetch_add(1, Ordering::SeqCst) + 1;
        peak.fetch_max(now, Ordering::SeqCst);
        let ex = Counted {
            inner: Text {
                challenge: u64::from(p),
            },
            alive: Arc::clone(&a),
        };
        (addr(3000 + p), ex)
    });
    let mut batch = engine(&net).run_lazy(jobs, opts(1000, 0).with_concurrency(16));
    assert_eq!(batch.remaining(), Some(200));
    let mut seen = Vec::new();
    while let Some(o) = batch.next().await {
        assert_eq!(
            o.result.as_deref().ok(),
            Some(format!("s{}", o.index).as_str())
        );
        assert_eq!(o.addr, addr(3000 + o.index as u16));
        seen.push(o.index);
    }
    seen.sort_unstable();
    assert_eq!(seen, (0..200).collect::<Vec<_>>());
    assert_eq!(made.load(Ordering::SeqCst), 200);
    assert!(most.load(Ordering::SeqCst) <= 16, "{:?}", most);
    assert_eq!(alive.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn batch_deadline_bounds_everything() {
    let net = SimNet::new(Faults::default(), 1);
    let start = Instant::now();
    let all = engine(&net)
        .run(
            (0..10).map(|p| (addr(3000 + p), Text { challenge: 1 })),
            opts(100, 10)
                .with_deadline(Some(Duration::from_millis(250)))
                .with_concurrency(4),
        )
        .collect_sorted()
        .await;
    assert_eq!(all.len(), 10);
    assert!(all
        .iter()
        .all(|o| matches!(o.result, Err(QueryError::Deadline))));
    assert_eq!(start.elapsed(), Duration::from_millis(250));
}

#[tokio::test(start_paused = true)]
async fn invalid_datagrams_from_the_server_are_reported_not_attributed() {
    let net = SimNet::new(Faults::default(), 1);
    // Garbage from the queried address: remembered, reported instead of a bare timeout.
    net.add_server(addr(5), Arc::new(|_req: &[u8]| vec![b"garbage".to_vec()]));
    let bad = engine(&net)
        .query(addr(5), Text { challenge: 41 }, opts(100, 1))
        .await;
    assert!(
        matches!(&bad.result, Err(QueryError::Decode(m)) if m.to_string() == "bad reply at offset 0: not a reply"),
        "{:?}",
        bad.result
    );
}

#[tokio::test(start_paused = true)]
async fn a_datagram_with_no_query_in_flight_is_dropped_and_later_queries_work() {
    let net = SimNet::new(Faults::default(), 1);
    net.add_server(addr(6), text_server("real".into()));
    let e = engine(&net);
    // Before any query: a well-formed reply with the very challenge the next query will use.
    net.inject(addr(6), b"r 42-0 early".to_vec(), Duration::ZERO);
    net.inject(addr(8), b"r 42-0 stranger".to_vec(), Duration::ZERO);
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(e.routed_addresses(), 0);
    // Neither buffered for later nor fatal to the receive task.
    let o = e.query(addr(6), Text { challenge: 42 }, opts(100, 0)).await;
    assert_eq!(o.result.unwrap(), "real");
    assert_eq!(o.attempts, 1);
}

#[tokio::test(start_paused = true)]
async fn a_reply_from_another_address_never_completes_a_query() {
    // Two silent servers queried in one batch. A reply query A would accept arrives from B's
    // address (in flight, in the same batch) and from a stranger's: A must still time out.
    let net = SimNet::new(Faults::default(), 1);
    let (a, b, stranger) = (addr(5), addr(6), addr(7));
    net.inject(b, b"r 42-0 from-b".to_vec(), Duration::from_millis(10));
    net.inject(
        stranger,
        b"r 42-0 from-stranger".to_vec(),
        Duration::from_millis(20),
    );
    let all = engine(&net)
        .run(
            [(a, Text { challenge: 42 }), (b, Text { challenge: 43 })],
            opts(100, 1),
        )
        .collect_sorted()
        .await;
    // A timed out; B did get a datagram from its own address, one that answers no query of
    // it: "a reply, none an answer" rather than silence.
    let expected = |o: &Outcome<String>| {
        if o.addr == b {
            matches!(
                o.result,
                Err(QueryError::Foreign {
                    attempts: 2,
                    replies: 1
                })
            )
        } else {
            matches!(o.result, Err(QueryError::Timeout { attempts: 2 }))
        }
    };
    for o in &all {
        assert!(expected(o), "{}: {:?}", o.addr, o.result);
    }

    // The same across batches: A and B in two batches of one engine.
    let net = SimNet::new(Faults::default(), 1);
    net.inject(b, b"r 42-0 from-b".to_vec(), Duration::from_millis(10));
    net.inject(
        stranger,
        b"r 42-0 from-stranger".to_vec(),
        Duration::from_millis(20),
    );
    let e = engine(&net);
    let qa = e.run([(a, Text { challenge: 42 })], opts(100, 1));
    let qb = e.run([(b, Text { challenge: 43 })], opts(100, 1));
    let (ra, rb) = tokio::join!(qa.collect_sorted(), qb.collect_sorted());
    for o in ra.iter().chain(&rb) {
        assert!(expected(o), "{}: {:?}", o.addr, o.result);
    }
}

// ---- binary challenges (idTech 4: 4 bytes, ETQW: 8 bytes) and tokens (Teeworlds)

struct Binary<const N: usize> {
    challenge: [u8; N],
}

impl<const N: usize> Exchange for Binary<N> {
    type Output = Vec<u8>;
    fn requests(&mut self, _: u32) -> Result<Vec<Vec<u8>>, fragstat_core::EncodeError> {
        let mut r = b"\xff\xffgetInfo\0".to_vec();
        r.extend_from_slice(&self.challenge);
        Ok(vec![r])
    }
    fn on_datagram(&mut self, d: &[u8]) -> Verdict<Vec<u8>> {
        match d
            .strip_prefix(b"\xff\xffinfoResponse\0".as_slice())
            .and_then(|r| r.split_at_checked(N))
        {
            Some((c, rest)) if c == self.challenge => Verdict::Done {
                output: Ok(rest.to_vec()),
                attempt: None,
            },
            Some(_) => Verdict::Ignore("wrong challenge"),
            None => Verdict::Invalid(err("short")),
        }
    }
}

fn binary_server<const N: usize>() -> fragstat_core::testing::Responder {
    Arc::new(|req: &[u8]| {
        let c = req.get(req.len() - N..).unwrap_or_default();
        let mut r = b"\xff\xffinfoResponse\0".to_vec();
        r.extend_from_slice(c);
        r.extend_from_slice(b"payload");
        vec![r]
    })
}

fn forge_binary<const N: usize>() -> fragstat_core::testing::Forger {
    Arc::new(|reply: &[u8]| {
        let mut f = reply.to_vec();
        let i = b"\xff\xffinfoResponse\0".len();
        f[i] ^= 0xFF; // a different challenge
        f.truncate(i + N);
        f.extend_from_slice(b"FORGED");
        f
    })
}

async fn binary_case<const N: usize>() {
    let net = SimNet::new(
        Faults {
            reply_loss: 0.3,
            forge_same_addr: 1.0,
            forger: Some(forge_binary::<N>()),
            ..Faults::default()
        },
        3,
    );
    for p in 0..30 {
        net.add_server(addr(4000 + p), binary_server::<N>());
    }
    let all = engine(&net)
        .run(
            (0..30u8).map(|p| {
                (
                    addr(4000 + u16::from(p)),
                    Binary {
                        challenge: [p.wrapping_mul(7) | 1; N],
                    },
                )
            }),
            opts(100, 8),
        )
        .collect_sorted()
        .await;
    for o in all {
        assert_eq!(o.result.unwrap(), b"payload", "width {N}");
    }
}

#[tokio::test(start_paused = true)]
async fn binary_challenges_of_four_and_eight_bytes() {
    binary_case::<4>().await;
    binary_case::<8>().await;
}

/// DDNet-style token: 1 byte in the payload, 2 more in the header; echoed as a decimal string.
struct Token {
    basic: u8,
    extra: u16,
}

impl Exchange for Token {
    type Output = String;
    fn requests(&mut self, _: u32) -> Result<Vec<Vec<u8>>, fragstat_core::EncodeError> {
        let mut r = b"xe".to_vec();
        r.extend_from_slice(&self.extra.to_be_bytes());
        r.extend_from_slice(b"\0\0\xff\xff\xff\xffgie3");
        r.push(self.basic);
        Ok(vec![r])
    }
    fn on_datagram(&mut self, d: &[u8]) -> Verdict<String> {
        let Some(rest) = d.strip_prefix(b"iext".as_slice()) else {
            return Verdict::Ignore("not iext");
        };
        let mut parts = rest.split(|&b| b == 0);
        let token = parts
            .next()
            .and_then(|t| std::str::from_utf8(t).ok()?.parse::<u32>().ok());
        if token != Some(u32::from(self.extra) << 8 | u32::from(self.basic)) {
            return Verdict::Ignore("wrong token");
        }
        let name = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
        Verdict::Done {
            output: Ok(name),
            attempt: None,
        }
    }
}

#[tokio::test(start_paused = true)]
async fn tokens_in_header_and_payload() {
    let net = SimNet::new(
        Faults {
            forge_same_addr: 1.0,
            forger: Some(Arc::new(|r: &[u8]| {
                let mut f = b"iext1\0".to_vec();
                f.extend_from_slice(r.split(|&b| b == 0).nth(1).unwrap_or_default());
                f
            })),
            ..Faults::default()
        },
        4,
    );
    net.add_server(
        addr(8303),
        Arc::new(|req: &[u8]| {
            let extra = u16::from_be_bytes([req[2], req[3]]);
            let basic = *req.last().unwrap();
            vec![format!(
                "iext{}\0My DDNet\0",
                u32::from(extra) << 8 | u32::from(basic)
            )
            .into_bytes()]
        }),
    );
    let o = engine(&net)
        .query(
            addr(8303),
            Token {
                basic: 0x2a,
                extra: 0x1234,
            },
            opts(100, 2),
        )
        .await;
    assert_eq!(o.result.unwrap(), "My DDNet");
}

// ---- multi-datagram replies

/// Parts "p <i>/<n> <data>"; `marker`: the last part ends in " END" (Q3 master \EOT);
/// `counted`: complete when n parts arrived (DDNet iex+); neither: finish on a quiet timeout.
struct Multi {
    marker: bool,
    counted: bool,
    parts: HashMap<u32, String>,
    ended: bool,
}

impl Multi {
    fn new(marker: bool, counted: bool) -> Self {
        Multi {
            marker,
            counted,
            parts: HashMap::new(),
            ended: false,
        }
    }
    fn assembled(&self) -> Vec<String> {
        let mut keys: Vec<_> = self.parts.keys().copied().collect();
        keys.sort();
        keys.iter().map(|k| self.parts[k].clone()).collect()
    }
}

impl Exchange for Multi {
    type Output = Vec<String>;
    fn requests(&mut self, _: u32) -> Result<Vec<Vec<u8>>, fragstat_core::EncodeError> {
        Ok(vec![b"list".to_vec()])
    }
    fn on_datagram(&mut self, d: &[u8]) -> Verdict<Vec<String>> {
        let s = String::from_utf8_lossy(d).into_owned();
        let Some((idx, rest)) = s.strip_prefix("p ").and_then(|r| r.split_once(' ')) else {
            return Verdict::Ignore("not a part");
        };
        let Some((i, n)) = idx
            .split_once('/')
            .and_then(|(i, n)| Some((i.parse().ok()?, n.parse::<u32>().ok()?)))
        else {
            return Verdict::Invalid(err("bad index"));
        };
        let (data, end) = match rest.strip_suffix(" END") {
            Some(d) => (d.to_string(), true),
            None => (rest.to_string(), false),
        };
        self.parts.insert(i, data); // duplicates overwrite themselves
        self.ended |= end;
        let complete = (self.marker && self.ended && self.parts.len() as u32 == n)
            || (self.counted && self.parts.len() as u32 == n);
        if complete {
            Verdict::Done {
                output: Ok(self.assembled()),
                attempt: None,
            }
        } else {
            Verdict::Progress {
                attempt: None,
                wait: None,
            }
        }
    }
    fn on_timeout(&mut self, _exhausted: bool) -> Option<Result<Vec<String>, DecodeError>> {
        (!self.parts.is_empty()).then(|| Ok(self.assembled()))
    }
}

fn multi_server(n: u32, marker: bool) -> fragstat_core::testing::Responder {
    Arc::new(move |_req: &[u8]| {
        (0..n)
            .map(|i| {
                let end = if marker && i == n - 1 { " END" } else { "" };
                format!("p {i}/{n} item{i}{end}").into_bytes()
            })
            .collect()
    })
}

#[tokio::test(start_paused = true)]
async fn multi_datagram_with_end_marker_under_reordering_and_duplication() {
    let net = SimNet::new(
        Faults {
            duplicate: 0.5,
            latency: Duration::from_millis(5),
            jitter: Duration::from_millis(40),
            ..Faults::default()
        },
        9,
    );
    net.add_server(addr(27950), multi_server(12, true));
    let start = Instant::now();
    let o = engine(&net)
        .query(addr(27950), Multi::new(true, false), opts(500, 0))
        .await;
    let want: Vec<String> = (0..12).map(|i| format!("item{i}")).collect();
    assert_eq!(o.result.unwrap(), want);
    assert!(
        start.elapsed() < Duration::from_millis(100),
        "finished on the marker, not a timeout"
    );
}

#[tokio::test(start_paused = true)]
async fn multi_datagram_without_marker_by_count_and_by_timeout() {
    let net = SimNet::new(
        Faults {
            jitter: Duration::from_millis(20),
            ..Faults::default()
        },
        2,
    );
    net.add_server(addr(8303), multi_server(3, false));
    let start = Instant::now();
    let o = engine(&net)
        .query(addr(8303), Multi::new(false, true), opts(500, 0))
        .await;
    assert_eq!(o.result.unwrap().len(), 3);
    assert!(
        start.elapsed() < Duration::from_millis(100),
        "finished on the count"
    );

    // No marker, no count: the list is complete when the server goes quiet for one timeout.
    let net = SimNet::new(
        Faults {
            latency: Duration::from_millis(10),
            ..Faults::default()
        },
        2,
    );
    net.add_server(addr(27950), multi_server(4, false));
    let start = Instant::now();
    let o = engine(&net)
        .query(addr(27950), Multi::new(false, false), opts(200, 3))
        .await;
    assert_eq!(o.result.unwrap().len(), 4);
    assert_eq!(start.elapsed(), Duration::from_millis(210));
    assert_eq!(net.sent().len(), 1, "a partial reply is not re-requested");
}

// ---- two-step handshake (Teeworlds 0.7: fetch a token, then ask for info with it)

struct Handshake {
    token: Option<u32>,
}

impl Exchange for Handshake {
    type Output = String;
    fn requests(&mut self, _: u32) -> Result<Vec<Vec<u8>>, fragstat_core::EncodeError> {
        match self.token {
            None => Ok(vec![b"token?".to_vec()]),
            Some(t) => Ok(vec![format!("info {t}").into_bytes()]),
        }
    }
    fn on_datagram(&mut self, d: &[u8]) -> Verdict<String> {
        let s = String::from_utf8_lossy(d).into_owned();
        match (self.token, s.split_once(' ')) {
            (None, Some(("token", t))) => {
                self.token = t.parse().ok();
                Verdict::Advance
            }
            (Some(t), Some(("info", rest))) => match rest.split_once(' ') {
                Some((tok, name)) if tok == t.to_string() => Verdict::Done {
                    output: Ok(name.to_string()),
                    attempt: None,
                },
                _ => Verdict::Ignore("wrong token"),
            },
            _ => Verdict::Ignore("not for this step"),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn two_step_handshake_with_loss_at_each_step() {
    let net = SimNet::new(
        Faults {
            request_loss: 0.4,
            latency: Duration::from_millis(10),
            ..Faults::default()
        },
        11,
    );
    for p in 0..20u16 {
        net.add_server(
            addr(8304 + p),
            Arc::new(move |req: &[u8]| {
                let s = String::from_utf8_lossy(req);
                if s == "token?" {
                    vec![format!("token {}", 7000 + p).into_bytes()]
                } else if s == format!("info {}", 7000 + p) {
                    vec![format!("info {} tw7-{p}", 7000 + p).into_bytes()]
                } else {
                    vec![] // a real 0.7 server ignores info requests without its token
                }
            }),
        );
    }
    let all: Vec<Outcome<String>> = engine(&net)
        .run(
            (0..20u16).map(|p| (addr(8304 + p), Handshake { token: None })),
            opts(100, 8),
        )
        .collect_sorted()
        .await;
    for (p, o) in all.into_iter().enumerate() {
        assert_eq!(o.result.unwrap(), format!("tw7-{p}"));
        assert_eq!(o.rtt, Some(Duration::from_millis(10)));
    }
}

#[tokio::test(start_paused = true)]
async fn a_batch_is_a_stream() {
    use futures_util::StreamExt;
    let net = SimNet::new(Faults::default(), 1);
    for p in 0..10 {
        net.add_server(addr(6000 + p), text_server(format!("s{p}")));
    }
    let batch = engine(&net).run(
        (0..10).map(|p| {
            (
                addr(6000 + p),
                Text {
                    challenge: u64::from(p),
                },
            )
        }),
        opts(100, 0),
    );
    assert_eq!(futures_core::Stream::size_hint(&batch), (0, Some(10)));
    let mut names: Vec<String> = batch
        .filter_map(|o| async move { o.result.ok() })
        .collect()
        .await;
    names.sort();
    assert_eq!(names, (0..10).map(|p| format!("s{p}")).collect::<Vec<_>>());
}

#[tokio::test(start_paused = true)]
async fn a_failed_send_is_reported_as_io_not_timeout() {
    let net = SimNet::new(
        Faults {
            send_error: 1.0,
            ..Faults::default()
        },
        1,
    );
    net.add_server(addr(7000), text_server("x".into()));
    let o = engine(&net)
        .query(addr(7000), Text { challenge: 1 }, opts(100, 1))
        .await;
    assert!(
        matches!(&o.result, Err(QueryError::Io(e)) if e.kind() == std::io::ErrorKind::NetworkUnreachable),
        "{:?}",
        o.result
    );
    assert_eq!(net.sent().len(), 2, "the send was retried");
}

#[test]
fn options_are_built_with_methods() {
    let o = Options::default()
        .with_timeout(Duration::from_millis(7))
        .with_retries(9)
        .with_concurrency(3)
        .with_rate(Some(50))
        .with_deadline(Some(Duration::from_secs(2)));
    assert_eq!(o.timeout, Duration::from_millis(7));
    assert_eq!(o.retries, 9);
    assert_eq!(o.concurrency, 3);
    assert_eq!(o.rate, Some(50));
    assert_eq!(o.deadline, Some(Duration::from_secs(2)));
}

#[tokio::test(start_paused = true)]
async fn dropped_batches_leave_no_routes() {
    // One long-lived engine, 10,000 queries. Half the servers answer after 300 ms, half never;
    // every batch (or lone query) is given up 50 ms in, mid-flight.
    let net = SimNet::new(
        Faults {
            latency: Duration::from_millis(300),
            ..Faults::default()
        },
        1,
    );
    for p in 10_000..15_000 {
        net.add_server(addr(p), text_server("slow".into()));
    }
    let e = engine(&net);
    for round in 0..50u16 {
        let first = 10_000 + round * 200;
        let mut batch = e.run(
            (first..first + 199).map(|p| {
                (
                    addr(p),
                    Text {
                        challenge: u64::from(p),
                    },
                )
            }),
            opts(1000, 2),
        );
        let lone = e.query(
            addr(first + 199),
            Text {
                challenge: u64::from(first + 199),
            },
            opts(1000, 2),
        );
        let timed_out = tokio::time::timeout(Duration::from_millis(50), lone).await;
        assert!(timed_out.is_err(), "the lone query must still be in flight");
        assert!(batch.try_next().is_none(), "nothing has finished yet");
        assert!(
            e.routed_addresses() >= 199,
            "the batch's queries are in flight"
        );
        drop(batch);
    }
    // Let aborted drivers be dropped and late replies arrive (to no one).
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(e.routed_addresses(), 0, "routes leaked by dropped batches");
    assert!(net.sent().len() >= 10_000);

    // The engine still works, and a finished batch leaves no route either.
    let o = e
        .query(addr(10_000), Text { challenge: 77 }, opts(1000, 0))
        .await;
    assert_eq!(o.result.unwrap(), "slow");
    assert_eq!(e.routed_addresses(), 0);
}

/// A congested socket: sends to `slow` take `delay`, and the driver waits on them.
struct SlowSends {
    net: Arc<SimNet>,
    slow: SocketAddr,
    delay: Duration,
}

#[async_trait::async_trait]
impl Transport for SlowSends {
    async fn send_to(&self, buf: &[u8], to: SocketAddr) -> std::io::Result<()> {
        if to == self.slow {
            tokio::time::sleep(self.delay).await;
        }
        self.net.send_to(buf, to).await
    }
    async fn recv_from(&self, buf: &mut [u8]) -> std::io::Result<(usize, SocketAddr)> {
        self.net.recv_from(buf).await
    }
    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.net.local_addr()
    }
}

#[tokio::test(start_paused = true)]
async fn rtt_is_stamped_at_receive_time_even_when_the_driver_is_busy() {
    let net = SimNet::new(
        Faults {
            latency: Duration::from_millis(30),
            ..Faults::default()
        },
        1,
    );
    net.add_server(addr(1), text_server("fast".into()));
    net.add_server(addr(2), text_server("slow".into()));
    let socket = SlowSends {
        net: Arc::clone(&net),
        slow: addr(2),
        delay: Duration::from_millis(100),
    };
    let e = Engine::with_transports(Some(Arc::new(socket)), None);
    let start = Instant::now();
    // The request to 1 goes out at 0 and is answered at 30 ms, while the driver is stuck
    // sending to 2 until 100 ms.
    let mut batch = e.run(
        [
            (addr(1), Text { challenge: 1 }),
            (addr(2), Text { challenge: 2 }),
        ],
        opts(1000, 0),
    );
    let first = batch.next().await.unwrap();
    assert_eq!(first.result.unwrap(), "fast");
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(100),
        "the driver saw the reply only after its slow send"
    );
    assert_eq!(first.rtt, Some(Duration::from_millis(30)));
    let second = batch.next().await.unwrap();
    assert_eq!(second.result.unwrap(), "slow");
    assert_eq!(second.rtt, Some(Duration::from_millis(30)));
}

// ---- per-query caps

/// An endless reply: every datagram is taken as one more part (`Progress`), or with `ignore_odd`
/// every other one is ignored. Counts the datagrams it is handed.
struct Endless {
    seen: Arc<AtomicUsize>,
    ignore_odd: bool,
}

impl Exchange for Endless {
    type Output = usize;
    fn requests(&mut self, _: u32) -> Result<Vec<Vec<u8>>, fragstat_core::EncodeError> {
        Ok(vec![b"list".to_vec()])
    }
    fn on_datagram(&mut self, _: &[u8]) -> Verdict<usize> {
        let n = self.seen.fetch_add(1, Ordering::SeqCst);
        if self.ignore_odd && n % 2 == 1 {
            Verdict::Ignore("every other one")
        } else {
            Verdict::Progress {
                attempt: None,
                wait: None,
            }
        }
    }
}

/// A server that answers its first request with a stream that never ends: `burst` datagrams
/// of `size` bytes every `every`, from `server`'s address.
fn endless_stream(
    net: &Arc<SimNet>,
    server: SocketAddr,
    size: usize,
    burst: usize,
    every: Duration,
) -> fragstat_core::testing::Responder {
    let net = Arc::downgrade(net);
    let started = AtomicBool::new(false);
    Arc::new(move |_req: &[u8]| {
        if !started.swap(true, Ordering::SeqCst) {
            let net = net.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(every).await;
                    let Some(net) = net.upgrade() else { return };
                    for _ in 0..burst {
                        net.inject(server, vec![b'x'; size], Duration::ZERO);
                    }
                }
            });
        }
        vec![]
    })
}

#[tokio::test(start_paused = true)]
async fn a_flooding_server_ends_its_query_at_the_datagram_cap() {
    let net = SimNet::new(Faults::default(), 1);
    let (master, fine) = (addr(27950), addr(27960));
    net.add_server(
        master,
        endless_stream(&net, master, 20, 8, Duration::from_millis(1)),
    );
    net.add_server(fine, text_server("fine".into()));
    let seen = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut batch = engine(&net).run(
        [(
            master,
            Endless {
                seen: Arc::clone(&seen),
                ignore_odd: true,
            },
        )],
        opts(1000, 2),
    );
    let o = tokio::time::timeout(Duration::from_secs(30), batch.next())
        .await
        .expect("the flood kept the query alive")
        .unwrap();
    let e = o.result.unwrap_err();
    assert!(
        matches!(
            e,
            QueryError::Exceeded {
                limit: LimitKind::Datagrams,
                max: 4096
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "exceeded the per-query datagrams limit (4096 datagrams)"
    );
    assert_eq!(
        seen.load(Ordering::SeqCst),
        4096,
        "ignored datagrams count too"
    );
    assert!(batch.next().await.is_none(), "the batch is finished");
    assert!(start.elapsed() < Duration::from_secs(1));

    // The flood goes on; the engine still answers other queries.
    let o = engine(&net)
        .query(fine, Text { challenge: 3 }, opts(1000, 0))
        .await;
    assert_eq!(o.result.unwrap(), "fine");
}

#[tokio::test(start_paused = true)]
async fn a_flooding_server_ends_its_query_at_the_byte_cap() {
    // 60,000-byte datagrams: the default 8 MiB holds 139 of them.
    let net = SimNet::new(Faults::default(), 1);
    let master = addr(27950);
    net.add_server(
        master,
        endless_stream(&net, master, 60_000, 4, Duration::from_millis(1)),
    );
    let seen = Arc::new(AtomicUsize::new(0));
    let ex = Endless {
        seen: Arc::clone(&seen),
        ignore_odd: false,
    };
    let o = tokio::time::timeout(
        Duration::from_secs(30),
        engine(&net).query(master, ex, opts(1000, 2)),
    )
    .await
    .expect("the flood kept the query alive");
    let e = o.result.unwrap_err();
    assert!(
        matches!(
            e,
            QueryError::Exceeded {
                limit: LimitKind::Bytes,
                max: 8_388_608
            }
        ),
        "{e:?}"
    );
    assert_eq!(seen.load(Ordering::SeqCst), 139);

    // A cap set by the caller: 1000 bytes are ten datagrams of 100.
    let net = SimNet::new(Faults::default(), 1);
    net.add_server(
        master,
        endless_stream(&net, master, 100, 1, Duration::from_millis(5)),
    );
    let seen = Arc::new(AtomicUsize::new(0));
    let ex = Endless {
        seen: Arc::clone(&seen),
        ignore_odd: false,
    };
    let o = tokio::time::timeout(
        Duration::from_secs(30),
        engine(&net).query(master, ex, opts(1000, 2).with_max_bytes(1000)),
    )
    .await
    .expect("the flood kept the query alive");
    assert!(
        matches!(
            o.result,
            Err(QueryError::Exceeded {
                limit: LimitKind::Bytes,
                max: 1000
            })
        ),
        "{:?}",
        o.result
    );
    assert_eq!(seen.load(Ordering::SeqCst), 10);
}

#[tokio::test(start_paused = true)]
async fn a_trickle_that_keeps_resetting_the_timer_ends_at_the_lifetime() {
    // One datagram every 700 ms, forever: each restarts the 1 s attempt timer.
    let net = SimNet::new(Faults::default(), 1);
    let master = addr(27950);
    net.add_server(
        master,
        endless_stream(&net, master, 20, 1, Duration::from_millis(700)),
    );
    let seen = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut batch = engine(&net).run(
        [(
            master,
            Endless {
                seen: Arc::clone(&seen),
                ignore_odd: false,
            },
        )],
        opts(1000, 2),
    );
    let o = tokio::time::timeout(Duration::from_secs(600), batch.next())
        .await
        .expect("the trickle kept the query alive")
        .unwrap();
    let e = o.result.unwrap_err();
    assert!(
        matches!(
            e,
            QueryError::Exceeded {
                limit: LimitKind::Lifetime,
                max: 60_000
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "exceeded the per-query lifetime limit (60000 ms)"
    );
    assert_eq!(start.elapsed(), Duration::from_secs(60), "default lifetime");
    assert_eq!(seen.load(Ordering::SeqCst), 85, "one every 700 ms");
    assert!(batch.next().await.is_none(), "the batch is finished");
    assert_eq!(net.sent().len(), 1, "never retried");

    // A lifetime shorter than timeout * (retries + 1) ends a silent query first.
    let net = SimNet::new(Faults::default(), 1);
    let start = Instant::now();
    let o = engine(&net)
        .query(
            addr(9),
            Text { challenge: 1 },
            opts(1000, 5).with_lifetime(Duration::from_millis(2500)),
        )
        .await;
    assert!(
        matches!(
            o.result,
            Err(QueryError::Exceeded {
                limit: LimitKind::Lifetime,
                max: 2500
            })
        ),
        "{:?}",
        o.result
    );
    assert_eq!(start.elapsed(), Duration::from_millis(2500));
    assert_eq!(net.sent().len(), 3);
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
        Ok(addr(40000))
    }
}

#[tokio::test(start_paused = true)]
async fn a_persistent_receive_error_is_backed_off() {
    let socket = Arc::new(BrokenRecv::default());
    let e = Engine::with_transports(Some(Arc::clone(&socket) as Arc<dyn Transport>), None);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let calls = socket.calls.load(Ordering::SeqCst);
    assert!(calls < 50, "{calls} receive calls in 1 s");
    // Sending still works: a query times out as usual.
    let o = e.query(addr(9), Text { challenge: 1 }, opts(100, 0)).await;
    assert!(matches!(o.result, Err(QueryError::Timeout { attempts: 1 })));
}

// ---- adaptive retransmission timeout

/// A text server that ignores the first `skip` requests it is sent.
fn flaky_text_server(skip: usize, payload: &str) -> fragstat_core::testing::Responder {
    let seen = AtomicUsize::new(0);
    let inner = text_server(payload.to_string());
    Arc::new(move |req: &[u8]| {
        if seen.fetch_add(1, Ordering::SeqCst) < skip {
            Vec::new()
        } else {
            inner(req)
        }
    })
}

/// A wait as tokio's timer wheel serves it: rounded up to the millisecond.
fn timer(d: Duration) -> Duration {
    Duration::from_millis(u64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap())
}

/// What the engine's estimator holds after `n` replies of `rtt` each.
fn estimator_after(options: &Options, n: usize, rtt: Duration) -> RttEstimator {
    let mut e = RttEstimator::new(options.min_timeout, options.timeout);
    for _ in 0..n {
        e.sample(rtt);
    }
    e
}

/// A network of ten text servers on ports 1-10 (`latency` per round trip): answered first,
/// they give a batch's RTT estimator its samples before the server under test.
fn ten_fast_servers(latency: Duration) -> Arc<SimNet> {
    let net = SimNet::new(
        Faults {
            latency,
            ..Faults::default()
        },
        1,
    );
    for p in 1..=10 {
        net.add_server(addr(p), text_server(format!("s{p}")));
    }
    net
}

/// Jobs for the ten servers of [`ten_fast_servers`], then for `last`.
fn ten_then(last: u16) -> impl Iterator<Item = (SocketAddr, Text)> {
    (1..=10u16).chain([last]).map(|p| {
        (
            addr(p),
            Text {
                challenge: p.into(),
            },
        )
    })
}

/// Ten servers answer in 20 ms, then the eleventh loses its first request: the retry goes
/// out one adaptive RTO (SRTT + 4·RTTVAR from those ten replies) after the first attempt,
/// not one fixed timeout (1 s) later; with `adaptive` off, one fixed timeout later.
#[tokio::test(start_paused = true)]
async fn a_lost_request_is_retried_after_the_adaptive_timeout() {
    for adaptive in [true, false] {
        let net = ten_fast_servers(Duration::from_millis(20));
        net.add_server(addr(99), flaky_text_server(1, "late"));
        let jobs = ten_then(99);
        let options = opts(1000, 3)
            .with_concurrency(1)
            .with_min_timeout(Duration::from_millis(1))
            .with_adaptive(adaptive);
        let all = engine(&net)
            .run(jobs, options.clone())
            .collect_sorted()
            .await;
        assert!(all.iter().all(|o| o.result.is_ok()));
        let late = all.last().unwrap();
        assert_eq!(
            (late.attempts, late.rtt),
            (2, Some(Duration::from_millis(20)))
        );
        let to_late: Vec<_> = net
            .sent()
            .into_iter()
            .filter(|s| s.to == addr(99))
            .collect();
        assert_eq!(to_late.len(), 2);
        let gap = to_late[1].at - to_late[0].at;
        if adaptive {
            let rto = estimator_after(&options, 10, Duration::from_millis(20))
                .rto()
                .unwrap();
            assert_eq!(gap, timer(rto));
            assert!(gap < Duration::from_millis(100), "{gap:?}");
        } else {
            assert_eq!(gap, Duration::from_secs(1));
        }
    }
}

/// After the estimator has samples, a server that never answers is retried after the RTO,
/// doubled per retry, and its last attempt still waits the whole timeout.
#[tokio::test(start_paused = true)]
async fn retries_back_off_and_the_last_attempt_waits_the_whole_timeout() {
    let net = ten_fast_servers(Duration::from_millis(20));
    let jobs = ten_then(98);
    let options = opts(1000, 3)
        .with_concurrency(1)
        .with_min_timeout(Duration::from_millis(1));
    let all = engine(&net)
        .run(jobs, options.clone())
        .collect_sorted()
        .await;
    assert!(matches!(
        all.last().unwrap().result,
        Err(QueryError::Timeout { attempts: 4 })
    ));
    let e = estimator_after(&options, 10, Duration::from_millis(20));
    let sent: Vec<Instant> = net
        .sent()
        .into_iter()
        .filter(|s| s.to == addr(98))
        .map(|s| s.at)
        .collect();
    let gaps: Vec<Duration> = sent.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(
        gaps,
        [
            timer(e.backoff(0).unwrap()),
            timer(e.backoff(1).unwrap()),
            timer(e.backoff(2).unwrap())
        ]
    );
    assert_eq!(e.backoff(1).unwrap(), e.backoff(0).unwrap() * 2);
    // No timer of the batch outlives the last attempt's full timeout.
    let end = Instant::now();
    assert_eq!(end - sent[3], Duration::from_secs(1));
}

/// A server slower than the batch's estimate but within the timeout is still answered: the
/// reply to an early attempt counts, and the last attempt waits the whole timeout.
#[tokio::test(start_paused = true)]
async fn a_slow_server_among_fast_ones_is_still_answered() {
    let net = ten_fast_servers(Duration::ZERO);
    let weak = Arc::downgrade(&net);
    net.add_server(
        addr(77),
        Arc::new(move |req: &[u8]| {
            let s = String::from_utf8_lossy(req);
            let c = s.strip_prefix("q ").unwrap_or_default().to_string();
            if let Some(net) = weak.upgrade() {
                net.inject(
                    addr(77),
                    format!("r {c} slow").into_bytes(),
                    Duration::from_millis(400),
                );
            }
            Vec::new()
        }),
    );
    let all = engine(&net)
        .run(ten_then(77), opts(500, 2).with_concurrency(1))
        .collect_sorted()
        .await;
    let slow = all.last().unwrap();
    assert_eq!(slow.result.as_deref().ok(), Some("slow"));
    assert!(
        slow.attempts > 1,
        "the estimate (the 50 ms floor) retried it early"
    );
}

// ---- batched sends: a transport that takes part of a batch, refuses one address and is
// sometimes full (SimNet itself has no batched send, so the engine's batch path needs this)

/// Sends at most `per_call` datagrams per [`Transport::try_send_batch`], answers
/// `WouldBlock` on every `block_every`th call (0: never) and refuses datagrams to `bad`.
struct Batchy {
    net: Arc<SimNet>,
    bad: SocketAddr,
    per_call: usize,
    block_every: usize,
    calls: AtomicUsize,
}

#[async_trait::async_trait]
impl Transport for Batchy {
    async fn send_to(&self, buf: &[u8], to: SocketAddr) -> std::io::Result<()> {
        if to == self.bad {
            return Err(std::io::ErrorKind::NetworkUnreachable.into());
        }
        self.net.send_to(buf, to).await
    }
    fn try_send_batch(&self, datagrams: &[(SocketAddr, &[u8])]) -> std::io::Result<usize> {
        use futures_util::FutureExt;
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        if self.block_every > 0 && call % self.block_every == self.block_every - 1 {
            return Err(std::io::ErrorKind::WouldBlock.into());
        }
        let mut n = 0;
        for &(to, buf) in datagrams.iter().take(self.per_call) {
            if to == self.bad {
                return if n == 0 {
                    Err(std::io::ErrorKind::NetworkUnreachable.into())
                } else {
                    Ok(n)
                };
            }
            self.net
                .send_to(buf, to)
                .now_or_never()
                .expect("SimNet sends at once")?;
            n += 1;
        }
        Ok(n)
    }
    async fn recv_from(&self, buf: &mut [u8]) -> std::io::Result<(usize, SocketAddr)> {
        self.net.recv_from(buf).await
    }
    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.net.local_addr()
    }
}

/// Two datagrams per attempt; done at the reply to the first.
struct Two {
    tag: u16,
}

impl Exchange for Two {
    type Output = String;
    fn requests(&mut self, attempt: u32) -> Result<Vec<Vec<u8>>, fragstat_core::EncodeError> {
        Ok(vec![
            format!("a {} {attempt}", self.tag).into_bytes(),
            format!("b {} {attempt}", self.tag).into_bytes(),
        ])
    }
    fn on_datagram(&mut self, d: &[u8]) -> Verdict<String> {
        let s = String::from_utf8_lossy(d).into_owned();
        if s.starts_with(&format!("re a {} ", self.tag)) {
            let attempt = s.rsplit(' ').next().and_then(|a| a.parse().ok());
            Verdict::Done {
                output: Ok(s),
                attempt,
            }
        } else {
            Verdict::Ignore("not ours")
        }
    }
}

async fn batched_sends(
    per_call: usize,
    block_every: usize,
    rate: Option<u32>,
    concurrency: usize,
    loss: f64,
) {
    let net = SimNet::new(
        Faults {
            latency: Duration::from_millis(30),
            request_loss: loss,
            duplicate: 0.3,
            ..Faults::default()
        },
        9,
    );
    let echo: fragstat_core::testing::Responder =
        Arc::new(|req: &[u8]| vec![[&b"re "[..], req].concat()]);
    for p in 0..300u16 {
        net.add_server(addr(4000 + p), Arc::clone(&echo));
    }
    let bad = addr(4007);
    let transport = Arc::new(Batchy {
        net: Arc::clone(&net),
        bad,
        per_call,
        block_every,
        calls: AtomicUsize::new(0),
    });
    let e = Engine::with_transports(Some(transport), None);
    let options = opts(200, if loss > 0.0 { 6 } else { 0 })
        .with_adaptive(false)
        .with_concurrency(concurrency)
        .with_rate(rate);
    let case = format!("per_call={per_call} block_every={block_every} rate={rate:?} concurrency={concurrency} loss={loss}");
    let mut batch = e.run(
        (0..300u16).map(|p| (addr(4000 + p), Two { tag: p })),
        options,
    );
    let mut n = 0;
    while let Some(o) = batch.next().await {
        n += 1;
        let p = u16::try_from(o.index).unwrap();
        assert_eq!(o.addr, addr(4000 + p), "{case}");
        if o.addr == bad {
            assert!(
                matches!(o.result, Err(QueryError::Io(_))),
                "{case}: {:?}",
                o.result
            );
            continue;
        }
        let reply = o
            .result
            .as_ref()
            .unwrap_or_else(|e| panic!("{case}: {p}: {e}"));
        assert!(reply.starts_with(&format!("re a {p} ")), "{case}: {reply}");
        if loss == 0.0 {
            // Each attempt is stamped when its own datagrams left, however the batch went.
            assert_eq!(o.rtt, Some(Duration::from_millis(30)), "{case}: {p}");
        }
    }
    assert_eq!(n, 300, "{case}");
    tokio::task::yield_now().await;
    assert_eq!(e.routed_addresses(), 0, "{case}");
    if loss == 0.0 {
        assert_eq!(net.sent().len(), 299 * 2, "{case}: every datagram once");
    }
}

/// Batches the socket takes in part, refuses in part or cannot take at all: every query gets
/// its own reply with its true RTT, the refused address reports the I/O error, every
/// datagram goes out once, paced or not, at any window, with loss and duplicates.
#[tokio::test(start_paused = true)]
async fn batched_sends_survive_partial_full_and_refused_batches() {
    for (per_call, block_every) in [(100, 0), (5, 0), (5, 3), (1, 2), (3, 1), (16, 4)] {
        for concurrency in [1, 7, 300] {
            batched_sends(per_call, block_every, None, concurrency, 0.0).await;
            batched_sends(per_call, block_every, Some(1000), concurrency, 0.0).await;
            batched_sends(per_call, block_every, None, concurrency, 0.3).await;
        }
    }
}

/// `--rate` is kept when the rate is above what one send per timer tick gives (a timer has
/// millisecond resolution): 3,000 queries at 5,000 datagrams/s take 0.6 s, not 3 s (one
/// query per wake-up), and no second-long window carries more than the rate plus the
/// small burst a late wake-up may save up.
#[tokio::test(start_paused = true)]
async fn a_high_rate_is_kept_within_ten_percent() {
    for (rate, n) in [(5_000u32, 3_000u16), (1_000, 1_500), (20_000, 10_000)] {
        let net = SimNet::new(Faults::default(), 1);
        for p in 0..n {
            net.add_server(addr(10_000 + p), text_server("ok".into()));
        }
        let all = engine(&net)
            .run(
                (0..n).map(|p| {
                    (
                        addr(10_000 + p),
                        Text {
                            challenge: u64::from(p),
                        },
                    )
                }),
                opts(1000, 0).with_rate(Some(rate)),
            )
            .collect_sorted()
            .await;
        assert!(all.iter().all(|o| o.result.is_ok()));
        let sent = net.sent();
        assert_eq!(sent.len(), usize::from(n));
        let span = (sent.last().unwrap().at - sent[0].at).as_secs_f64();
        let ideal = f64::from(n - 1) / f64::from(rate);
        assert!(
            (span - ideal).abs() <= ideal * 0.1,
            "{rate}/s: {n} sends took {span:.3} s, ideal {ideal:.3} s"
        );
        // Never more than the rate in any one-second window (plus the saved-up burst).
        let burst = (f64::from(rate) * 0.004).max(4.0) as usize + 1;
        for (i, s) in sent.iter().enumerate() {
            let within = sent[i..]
                .iter()
                .take_while(|t| t.at - s.at < Duration::from_secs(1))
                .count();
            assert!(
                within <= rate as usize + burst,
                "{rate}/s: {within} sends within one second"
            );
        }
    }
}

/// A reader that stops reading stops the batch: once the outcome queue and the window are
/// full no query starts, however many jobs wait; when the reader reads again, the rest run.
#[tokio::test(start_paused = true)]
async fn a_reader_that_stops_holds_the_batch_still() {
    let net = SimNet::new(Faults::default(), 1);
    let n: u16 = 20_000;
    for p in 0..n {
        net.add_server(addr(p.wrapping_add(1)), text_server("ok".into()));
    }
    let concurrency = 64;
    let mut batch = engine(&net).run_lazy(
        (0..n).map(|p| {
            (
                addr(p.wrapping_add(1)),
                Text {
                    challenge: u64::from(p),
                },
            )
        }),
        opts(1000, 0).with_concurrency(concurrency),
    );
    // Nobody reads for a (virtual) minute.
    tokio::time::sleep(Duration::from_secs(60)).await;
    let started = net.sent().len();
    let bound = fragstat_core::OUTCOME_QUEUE + 2 * concurrency;
    assert!(
        started <= bound,
        "{started} queries started while nobody read (bound {bound})"
    );
    assert!(started >= fragstat_core::OUTCOME_QUEUE);
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(
        net.sent().len(),
        started,
        "nothing more starts while unread"
    );
    // Reading resumes the batch to its end.
    let mut got = 0;
    while let Some(o) = batch.next().await {
        assert!(o.result.is_ok());
        got += 1;
    }
    assert_eq!(got, usize::from(n));
}

/// A batch fed by a channel starts queries as jobs arrive (while more are still to come)
/// and ends when the senders are gone and every query has finished.
#[tokio::test(start_paused = true)]
async fn a_channel_fed_batch_runs_jobs_as_they_arrive() {
    let net = SimNet::new(
        Faults {
            latency: Duration::from_millis(10),
            ..Faults::default()
        },
        1,
    );
    for p in 0..30 {
        net.add_server(addr(3000 + p), text_server(format!("s{p}")));
    }
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let mut batch = engine(&net).run_receiver(rx, opts(1000, 0));
    assert_eq!(batch.remaining(), None);
    let feeder = tokio::spawn(async move {
        for p in 0..30u16 {
            let job = (
                addr(3000 + p),
                Text {
                    challenge: u64::from(p),
                },
            );
            tx.send(job).await.unwrap();
            if p == 9 {
                // A pause: the first ten are answered before the rest arrive.
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
        }
    });
    let start = Instant::now();
    let mut seen = Vec::new();
    while let Some(o) = batch.next().await {
        seen.push((o.index, o.result.unwrap(), start.elapsed()));
    }
    feeder.await.unwrap();
    assert_eq!(seen.len(), 30);
    let first_ten = seen.iter().filter(|s| s.0 < 10).map(|s| s.2).max().unwrap();
    assert!(first_ten < Duration::from_secs(1), "{first_ten:?}");
    for (index, payload, _) in &seen {
        assert_eq!(
            payload,
            &format!("s{index}"),
            "indexes follow arrival order"
        );
    }
}
