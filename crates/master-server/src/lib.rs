//! A master server for the DarkPlaces / Quake III master protocol (Quake III Arena, W:ET,
//! OpenArena, RtCW, Warsow, Nexuiz, Xonotic…), compatible with dpmaster's clients and
//! servers, that:
//!
//! - lists a server only after it echoed a `getinfo` challenge — a keyed hash of its address,
//!   checked without anything stored (spoofed heartbeats list nothing and fill nothing) — and
//!   removes one only after it stopped answering repeated challenges that were sent (spoofed
//!   flatlines remove nothing);
//! - bounds memory (servers in all and per address prefix, from a host to an IPv6 /32, a full
//!   list displacing the newest server of the network holding the most; the retry table in
//!   all and per network, tracked sources, names);
//! - refuses private and special-purpose sources unless allowed;
//! - limits requests per source host, heartbeats per listed address, new servers per host and
//!   per /24 or /48 (charged when they answer their challenge), and the bytes and challenges sent per destination network (/24, /64) and in all,
//!   so a spoofed flood from any number of victims amplifies at most a bounded factor;
//! - saves its list and serves it at once after a restart, re-verifying every server.
//!
//! The core ([`Master`]) is sans-IO: a [`fragstat_core::service::Service`] that takes the time
//! as an argument. With the `runtime` feature (default), [`run::run`] drives it on UDP sockets
//! with periodic snapshots and Prometheus metrics.
//!
//! ```
//! use std::time::Instant;
//! use fragstat_core::service::{Outbox, Service};
//! use fragstat_master_server::{Config, Master};
//!
//! // 203.0.113.0/24 is documentation space, refused unless `allow_private`.
//! let config = Config { allow_private: true, ..Config::default() };
//! let mut master = Master::with_seed(config, 1);
//! let server = "203.0.113.7:27960".parse().unwrap();
//! let mut out = Outbox::new();
//! master.handle(Instant::now(), server, b"\xff\xff\xff\xffheartbeat QuakeArena-1\n", &mut out);
//! // The master answers with a challenge, and lists nothing until it is echoed.
//! assert!(out[0].1.starts_with(b"\xff\xff\xff\xffgetinfo "));
//! assert!(master.is_empty());
//! ```
#![forbid(unsafe_code)]

pub mod budget;
pub mod ddnet;
pub mod limits;
mod master;
pub mod stats;

#[cfg(feature = "runtime")]
mod batch;
#[cfg(feature = "runtime")]
pub mod http;
#[cfg(feature = "runtime")]
pub mod run;

pub use budget::{ListBudget, ShareFractions};
/// Caps per address prefix ([`Config::per_network`]).
pub use fragstat_core::fair::Caps;
pub use limits::{LimitConfig, Rate};
pub use master::{
    longest_list, Config, Listed, Master, Restored, Snapshot, MAX_PACKET, SNAPSHOT_VERSION,
};
pub use stats::{Drop, Stats};
