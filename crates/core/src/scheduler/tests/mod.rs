//! The scheduler on its own: plain `Instant`s, no runtime, no sockets. A [`Net`] plays the
//! driver (routes from the events, every transmit reported sent at once) and the tests play
//! the servers.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::*;
use crate::EncodeError;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn opts(timeout_ms: u64, retries: u32) -> Options {
    Options::default()
        .with_timeout(ms(timeout_ms))
        .with_retries(retries)
        .with_adaptive(false)
}

/// A scripted exchange: what a datagram means is its text.
/// `done`, `done@N` (answers attempt N), `part`, `more`, `more:W` (wait W ms), `step`,
/// `bad`; anything else is foreign.
#[derive(Default)]
struct Script {
    /// The handshake step.
    step: u32,
    /// `more` datagrams taken.
    parts: usize,
    /// On the timer after `more` parts, finish with them.
    salvage: bool,
    /// `requests` fails.
    unencodable: bool,
}

impl Exchange for Script {
    type Output = String;
    fn requests(&mut self, attempt: u32) -> Result<Vec<Vec<u8>>, EncodeError> {
        if self.unencodable {
            return Err(EncodeError::Invalid("no such request"));
        }
        Ok(vec![
            format!("step{} attempt{attempt}", self.step).into_bytes()
        ])
    }
    fn on_datagram(&mut self, d: &[u8]) -> Verdict<String> {
        let text = std::str::from_utf8(d).unwrap_or("");
        match text.split_once(['@', ':']).unwrap_or((text, "")) {
            ("done", n) => Verdict::Done {
                output: Ok(format!("step{} done", self.step)),
                attempt: n.parse().ok(),
            },
            ("part", _) => Verdict::Partial { attempt: None },
            ("more", w) => {
                self.parts += 1;
                Verdict::Progress {
                    attempt: None,
                    wait: w.parse().ok().map(ms),
                }
            }
            ("step", _) => {
                self.step += 1;
                Verdict::Advance
            }
            ("bad", _) => Verdict::Invalid(crate::DecodeError::Invalid {
                field: "reply",
                offset: 0,
                reason: "undecodable",
            }),
            _ => Verdict::Ignore("foreign"),
        }
    }
    fn on_timeout(&mut self, _exhausted: bool) -> Option<Result<String, crate::DecodeError>> {
        (self.salvage && self.parts > 0).then(|| Ok(format!("{} parts", self.parts)))
    }
}

/// One datagram as sent.
#[derive(Debug, Clone, PartialEq)]
struct Sent {
    at: Duration,
    to: SocketAddr,
    data: String,
}

/// The scheduler and a driver that does what the engine's does, sans sockets.
struct Net<E: Exchange> {
    s: Scheduler<E>,
    t0: Instant,
    routes: HashMap<SocketAddr, Vec<QueryId>>,
    sent: Vec<Sent>,
    outcomes: Vec<Outcome<E::Output>>,
    /// Sends fail with this error kind.
    send_error: Option<std::io::ErrorKind>,
    /// The time of the last step, from `t0`.
    now: Duration,
}

impl<E: Exchange> Net<E> {
    fn new(options: Options, jobs: Jobs<E>) -> Self {
        let t0 = Instant::now();
        Net {
            s: Scheduler::new(t0, options, jobs),
            t0,
            routes: HashMap::new(),
            sent: Vec::new(),
            outcomes: Vec::new(),
            send_error: None,
            now: Duration::ZERO,
        }
    }

    fn of(options: Options, jobs: Vec<(SocketAddr, E)>) -> Self {
        Self::new(options, Jobs::exact(jobs.into_iter()))
    }

    fn at(&self, t: Duration) -> Instant {
        self.t0 + t
    }

    fn events(&mut self) {
        while let Some(e) = self.s.poll_event() {
            match e {
                Event::Watch { addr, id } => self.routes.entry(addr).or_default().push(id),
                Event::Unwatch { addr, id } => {
                    let ids = self.routes.entry(addr).or_default();
                    ids.retain(|i| *i != id);
                    if ids.is_empty() {
                        self.routes.remove(&addr);
                    }
                }
            }
        }
    }

    /// What the driver does after anything happened, at `t`: outcomes out, routes set up,
    /// every ready transmit sent.
    fn pump(&mut self, t: Duration) {
        self.now = t;
        let now = self.at(t);
        loop {
            while let Some(o) = self.s.poll_outcome() {
                self.outcomes.push(o);
            }
            let Some(tx) = self.s.poll_transmit(now) else {
                self.events();
                if self.s.has_outcome() {
                    continue;
                }
                return;
            };
            self.events();
            assert!(
                self.routes
                    .get(&tx.destination)
                    .is_some_and(|ids| ids.contains(&tx.id)),
                "routed before it is sent"
            );
            for d in &tx.datagrams {
                self.sent.push(Sent {
                    at: t,
                    to: tx.destination,
                    data: String::from_utf8_lossy(d).into_owned(),
                });
            }
            let error = self.send_error.map(std::io::Error::from);
            self.s.on_sent(tx.id, tx.attempt, now, error);
        }
    }

    /// A datagram from `from` arriving at `t` (routed by the events so far).
    fn reply(&mut self, t: Duration, from: SocketAddr, data: &str) {
        let ids = self.routes.get(&from).cloned().unwrap_or_default();
        let now = self.at(t);
        self.s
            .handle_datagram(now, from, data.as_bytes(), now, &ids);
        self.pump(t);
    }

    /// Fires every timeout due up to `t`, at the instant it is due.
    fn advance(&mut self, t: Duration) {
        self.pump(self.now);
        while let Some(w) = self.s.poll_timeout() {
            if w > self.at(t) {
                break;
            }
            self.s.handle_timeout(w);
            self.pump(w - self.t0);
        }
        self.now = t;
    }

    fn sent_at(&self, to: SocketAddr) -> Vec<Duration> {
        self.sent
            .iter()
            .filter(|s| s.to == to)
            .map(|s| s.at)
            .collect()
    }

    fn outcome(&self, a: SocketAddr) -> &Outcome<E::Output> {
        self.outcomes
            .iter()
            .find(|o| o.addr == a)
            .unwrap_or_else(|| panic!("no outcome for {a}"))
    }
}

fn script() -> Script {
    Script::default()
}

mod flow;
mod spacing;
mod timing;
