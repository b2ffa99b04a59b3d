//! The one table of defaults: every front end starts from it (`fragstat::Client` and its
//! builder, [`crate::Options::default`], `fragstat query` / `master` / `watch`, the tracker).
//!
//! | setting | default | where it applies |
//! | --- | --- | --- |
//! | [`TIMEOUT`] | 500 ms | one attempt's wait (the adaptive timeout's upper bound) |
//! | [`MIN_TIMEOUT`] | 50 ms | the shortest adaptive timeout |
//! | [`RETRIES`] | 5 | retries after the first attempt |
//! | [`CONCURRENCY`] | 1024 | queries in flight at once |
//! | [`MAX_DATAGRAMS`] | 4096 | datagrams one query accepts |
//! | [`MAX_BYTES`] | 8 MiB | bytes one query accepts |
//! | [`LIFETIME`] | 60 s | one query's total time |
//! | [`MASTER_TIMEOUT`] | 1000 ms | a master list's wait for its first datagram (and between them) |
//! | [`MASTER_QUIET`] | 500 ms | a master list without an end marker is whole after this silence |
//! | [`RESOLVE_TIMEOUT`] | 2 s | one host name lookup |
//! | [`HTTP_TIMEOUT`] | 10 s | one HTTP master list |
//! | [`MAX_HTTP_LIST`] | 16 MiB | bytes of one HTTP master list |
//! | [`MAX_ENTRIES_PER_MASTER`] | 65,536 | entries taken from one master's list |
//! | [`MAX_PORTS_PER_IP`] | 256 | ports of one IPv4 address or IPv6 /64 kept from master lists |
//! | [`MAX_SERVERS_TOTAL`] | 131,072 | servers kept from one poll's masters together |
//!
//! A query that never gets a reply lasts about `TIMEOUT × (RETRIES + 1)` = 3 s per step.

use std::time::Duration;

/// How long one attempt waits for its reply at most (the adaptive timeout's upper bound,
/// and what the last attempt waits).
pub const TIMEOUT: Duration = Duration::from_millis(500);
/// The shortest adaptive timeout. Lower values retry sooner under loss but fire spuriously
/// when replies queue: with 10 ms a lossless scan of 10,000 loopback servers sent 27 % more
/// requests than needed, with 50 ms none (docs/benchmarks.md).
pub const MIN_TIMEOUT: Duration = Duration::from_millis(50);
/// Retries after the first attempt: five, not qstat's three. With adaptive timeouts a retry
/// costs a few round trips, and at 20 % loss three retries leave about 16 servers in 10,000
/// unanswered (0.2^4), five about one (0.2^6).
pub const RETRIES: u32 = 5;
/// Queries in flight at once.
pub const CONCURRENCY: usize = 1024;
/// Datagrams one query accepts from its server (far more than the longest master list).
pub const MAX_DATAGRAMS: usize = 4096;
/// Bytes one query accepts from its server, summed over its datagrams.
pub const MAX_BYTES: usize = 8 << 20;
/// A bound on one query's total time, across retries, steps and multi-datagram replies.
pub const LIFETIME: Duration = Duration::from_secs(60);
/// How long a master's list may keep the query waiting between its datagrams.
pub const MASTER_TIMEOUT: Duration = Duration::from_millis(1000);
/// Once a master has sent a datagram of its list, the list is whole when the master has been
/// quiet this long: the end of a list that has no end-of-list marker (id's, etmaster.net's,
/// Tremulous' and Unvanquished's masters), instead of the whole [`MASTER_TIMEOUT`]. A
/// master sends its datagrams back to back (dpmaster: all in one go), so half a second of
/// silence after one is the end.
pub const MASTER_QUIET: Duration = Duration::from_millis(500);
/// How long a host name may take to resolve.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long an HTTP master list may take.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes of one HTTP master list.
pub const MAX_HTTP_LIST: usize = 16 << 20;
/// Entries taken from one master's list.
pub const MAX_ENTRIES_PER_MASTER: usize = 65_536;
/// Ports of one IPv4 address or IPv6 /64 kept from master lists.
pub const MAX_PORTS_PER_IP: usize = 256;
/// Servers kept from one poll's masters together.
pub const MAX_SERVERS_TOTAL: usize = 131_072;
