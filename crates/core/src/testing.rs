//! A simulated network for tests: a [`Transport`] whose "servers" are closures, with loss,
//! duplication, reordering (random latency), and forged replies. Works under
//! `tokio::time::pause()`, so timing tests are exact and instant.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::transport::Transport;

/// A simulated server: given the request, returns the reply datagrams.
pub type Responder = Arc<dyn Fn(&[u8]) -> Vec<Vec<u8>> + Send + Sync>;

/// Turns a genuine reply into a forged one (for example with a wrong challenge).
pub type Forger = Arc<dyn Fn(&[u8]) -> Vec<u8> + Send + Sync>;

/// What goes wrong on the simulated network. Probabilities are in `0.0..=1.0`.
#[derive(Clone, Default)]
pub struct Faults {
    /// A request is lost before it reaches the server.
    pub request_loss: f64,
    /// A reply datagram is lost.
    pub reply_loss: f64,
    /// A reply datagram is delivered twice.
    pub duplicate: f64,
    /// Base one-way latency of a reply (applied once, request and reply together).
    pub latency: Duration,
    /// Extra random latency in `0..jitter` per datagram: reorders multi-datagram replies.
    pub jitter: Duration,
    /// A copy of the reply also arrives from another address (the server's port + 1000).
    pub forge_other_addr: f64,
    /// A forged variant (made by `forger`) also arrives from the server's own address, first.
    pub forge_same_addr: f64,
    /// Makes the forged variants.
    pub forger: Option<Forger>,
    /// A send fails with an I/O error (as `sendto` does for an unreachable network).
    pub send_error: f64,
}

/// A sent datagram, as the network saw it.
#[derive(Debug, Clone)]
pub struct Sent {
    /// When it was sent.
    pub at: Instant,
    /// Where to.
    pub to: SocketAddr,
    /// The bytes.
    pub data: Vec<u8>,
}

/// The simulated network (one side: the client's socket).
pub struct SimNet {
    local: SocketAddr,
    tx: mpsc::UnboundedSender<(Vec<u8>, SocketAddr)>,
    rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<(Vec<u8>, SocketAddr)>>,
    servers: Mutex<HashMap<SocketAddr, Responder>>,
    faults: Faults,
    rng: Mutex<fastrand::Rng>,
    sent: Mutex<Vec<Sent>>,
}

impl SimNet {
    /// A network with the given faults and random seed.
    pub fn new(faults: Faults, seed: u64) -> Arc<SimNet> {
        let (tx, rx) = mpsc::unbounded_channel();
        Arc::new(SimNet {
            local: SocketAddr::from(([127, 0, 0, 1], 40000)),
            tx,
            rx: tokio::sync::Mutex::new(rx),
            servers: Mutex::new(HashMap::new()),
            faults,
            rng: Mutex::new(fastrand::Rng::with_seed(seed)),
            sent: Mutex::new(Vec::new()),
        })
    }

    /// Adds a server at `addr`.
    pub fn add_server(&self, addr: SocketAddr, responder: Responder) {
        lock(&self.servers).insert(addr, responder);
    }

    /// Delivers a datagram to the client as if `from` had sent it, after `delay`.
    pub fn inject(&self, from: SocketAddr, data: Vec<u8>, delay: Duration) {
        let tx = self.tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = tx.send((data, from));
        });
    }

    /// Every datagram sent so far.
    pub fn sent(&self) -> Vec<Sent> {
        lock(&self.sent).clone()
    }

    fn chance(&self, p: f64) -> bool {
        p > 0.0 && lock(&self.rng).f64() < p
    }

    fn jitter(&self) -> Duration {
        let j = self.faults.jitter;
        if j.is_zero() {
            return Duration::ZERO;
        }
        let nanos = u64::try_from(j.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(lock(&self.rng).u64(0..nanos))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[async_trait]
impl Transport for SimNet {
    async fn send_to(&self, buf: &[u8], to: SocketAddr) -> io::Result<()> {
        lock(&self.sent).push(Sent {
            at: Instant::now(),
            to,
            data: buf.to_vec(),
        });
        if self.chance(self.faults.send_error) {
            return Err(io::Error::new(
                io::ErrorKind::NetworkUnreachable,
                "simulated send failure",
            ));
        }
        if self.chance(self.faults.request_loss) {
            return Ok(());
        }
        let responder = lock(&self.servers).get(&to).cloned();
        let Some(responder) = responder else {
            return Ok(());
        };
        for reply in responder(buf) {
            let f = &self.faults;
            if let (true, Some(forger)) = (self.chance(f.forge_same_addr), &f.forger) {
                self.inject(to, forger(&reply), f.latency / 2);
            }
            if self.chance(f.forge_other_addr) {
                let other = SocketAddr::new(to.ip(), to.port().wrapping_add(1000));
                self.inject(other, reply.clone(), f.latency / 2);
            }
            if self.chance(f.reply_loss) {
                continue;
            }
            let copies = if self.chance(f.duplicate) { 2 } else { 1 };
            for _ in 0..copies {
                self.inject(to, reply.clone(), f.latency + self.jitter());
            }
        }
        Ok(())
    }

    async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        let mut rx = self.rx.lock().await;
        let Some((data, from)) = rx.recv().await else {
            return std::future::pending().await;
        };
        let n = data.len().min(buf.len());
        if let (Some(dst), Some(src)) = (buf.get_mut(..n), data.get(..n)) {
            dst.copy_from_slice(src);
        }
        Ok((n, from))
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local)
    }
}
