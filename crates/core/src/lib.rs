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
//!     fn requests(&mut self, _attempt: u32) -> Vec<Vec<u8>> {
//!         vec![format!("ping {}", self.0).into_bytes()]
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
//!     Options { timeout: std::time::Duration::from_millis(50), retries: 0, ..Options::default() });
//! while let Some(outcome) = batch.next().await {
//!     println!("{} -> {:?} in {:?}", outcome.addr, outcome.result.is_ok(), outcome.rtt);
//! }
//! # Ok(()) }
//! ```
//!
//! What this crate does not do: parse any game's packets (the family crates do), or serve.
//! Cancel safety: dropping a [`Batch`] stops its driver; replies that arrive later are dropped.
#![forbid(unsafe_code)]

mod engine;
mod error;
mod exchange;
pub mod serve;
pub mod testing;
mod transport;

pub use engine::{Batch, Engine, Options, Outcome, MAX_DATAGRAM};
pub use error::QueryError;
pub use exchange::{BoxError, Exchange, Verdict};
pub use transport::{canonical, Transport, UdpTransport};
