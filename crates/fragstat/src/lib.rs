//! fragstat: find and query classic game servers.
//!
//! This facade only re-exports. Each protocol family is its own crate behind an additive
//! feature; [`core`] is the query engine they share.
//!
//! | feature | module | games |
//! | --- | --- | --- |
//! | `quake3` (default) | [`quake3`] | Quake III Arena, W:ET, OpenArena, RtCW, any Q3-protocol game |
//!
//! ```no_run
//! # #[cfg(feature = "quake3")]
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use fragstat::quake3::{client::Client, text};
//! let client = Client::new().await?;
//! let server = client.server("127.0.0.1:27960".parse()?).await?;
//! println!("{}", text::display(&server.reply.summary().name));
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

pub use fragstat_core as core;
pub use fragstat_core::{Engine, Options, QueryError};

/// The Quake III out-of-band family ([`fragstat_quake3_oob`]).
#[cfg(feature = "quake3")]
pub use fragstat_quake3_oob as quake3;
