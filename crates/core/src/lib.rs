//! The fragstat query engine: transport over tokio UDP with one shared socket per address
//! family, thousands of queries in flight, reply matching by source address and then by the
//! protocol's own challenge or token, per-attempt timeouts, retries, RTT, a concurrency
//! window, send pacing and a deadline for a whole batch.
//!
//! Protocols describe a query without doing any I/O by implementing [`Exchange`]; the engine
//! does the rest. Results stream out of a [`Batch`] as each query finishes.
//!
//! ```
//! use fragstat_core::{Engine, Exchange, Options, Verdict};
//!
//! /// A toy protocol: send "ping <challenge>", expect "pong <challenge>".
//! struct Ping(String);
//! impl Exchange for Ping {
//!     type Output = ();
//!     fn requests(&mut self, _attempt: u32) -> Result<Vec<Vec<u8>>, fragstat_core::EncodeError> {
//!         Ok(vec![format!("ping {}", self.0).into_bytes()])
//!     }
//!     fn on_datagram(&mut self, d: &[u8]) -> Verdict<()> {
//!         if d == format!("pong {}", self.0).as_bytes() {
//!             Verdict::Done { output: Ok(()), attempt: None }
//!         } else {
//!             Verdict::Ignore("wrong challenge")
//!         }
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! let engine = Engine::bind().await?;
//! let mut batch = engine.run([("127.0.0.1:9".parse().unwrap(), Ping("42".into()))],
//!     Options::default().with_timeout(std::time::Duration::from_millis(50)).with_retries(0));
//! while let Some(outcome) = batch.next().await {
//!     println!("{} -> {:?} in {:?}", outcome.addr, outcome.result.is_ok(), outcome.rtt);
//! }
//! # Ok(()) }
//! ```
//!
//! What this crate does not do: parse any game's packets (the family crates do), or serve.
//! Cancel safety: dropping a [`Batch`] stops its driver and removes its routes; replies that
//! arrive later are dropped.
//!
//! # Features
//! - `runtime` (default): the tokio [`Engine`], [`UdpTransport`], [`serve::run`] and the
//!   resolver. Without it this crate is sans-IO and has no tokio in its dependency tree: the
//!   checked byte reader ([`wire`]), the shared model ([`model`]), the game registry traits
//!   ([`registry`]), [`Exchange`] and [`service::Service`]. Family codecs depend on that.
//! - `testing`: `testing::SimNet`, a simulated network with loss, duplication, reordering
//!   and forgery, for tests of exchanges and of the engine.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod addr;
pub mod collect;
pub mod defaults;
mod encode;
#[cfg(feature = "runtime")]
mod engine;
mod error;
mod exchange;
pub mod fair;
mod json;
#[cfg(test)]
mod json_shapes;
pub mod manners;
pub mod model;
pub mod nonce;
pub mod record;
pub mod registry;
#[cfg(feature = "runtime")]
pub mod resolve;
pub mod rto;
pub mod scheduler;
#[cfg(feature = "runtime")]
pub mod serve;
pub mod service;
mod shape;
#[cfg(feature = "testing")]
pub mod testing;
pub mod text;
#[cfg(feature = "runtime")]
mod transport;
pub mod wire;

#[cfg(feature = "runtime")]
pub use engine::{Batch, Engine, DATAGRAM_QUEUE, OUTCOME_QUEUE};
pub use error::{Limit, LimitKind, QueryError};
pub use exchange::{BoxError, Exchange, ExchangeExt, MapOutput, Verdict};
pub use scheduler::{Options, Outcome};
#[cfg(feature = "runtime")]
pub use transport::{udp_socket, RecvBatch, Transport, UdpTransport};
pub use wire::{DecodeError, Encode, EncodeError};

/// Largest datagram the engine receives (UDP's maximum payload).
pub const MAX_DATAGRAM: usize = 65_535;

/// The canonical form of an address: IPv4-mapped IPv6 addresses become IPv4, so replies match
/// the query whichever way the address was written.
pub fn canonical(addr: std::net::SocketAddr) -> std::net::SocketAddr {
    match addr {
        std::net::SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => std::net::SocketAddr::new(v4.into(), v6.port()),
            None => addr,
        },
        v4 => v4,
    }
}
