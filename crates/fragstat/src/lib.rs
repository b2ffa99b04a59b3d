//! fragstat: find and query classic game servers.
//!
//! This facade re-exports the shared engine and model ([`core`]) and each protocol family
//! behind an additive feature, and holds the game registry: [`games`] lists every game of
//! the families compiled in, [`game`] finds one by id (`q3`, `openarena`, `oob:43`…).
//!
//! | feature | module | games |
//! | --- | --- | --- |
//! | `quake3` (default) | [`quake3`] | Quake III Arena, W:ET, OpenArena, RtCW, any Q3-protocol game |
//! | `idtech4` (default) | [`idtech4`] | Doom 3, Quake 4, Prey (servers and masters) |
//! | `etqw` (default) | [`etqw`] | Enemy Territory: Quake Wars (servers and the HTTP list feed) |
//! | `warsow` (default) | [`warsow`] | Warsow, Warfork (qfusion), Nexuiz, Xonotic (DarkPlaces) |
//! | `teeworlds` (default) | [`teeworlds`] | Teeworlds 0.6 and 0.7, DDNet (UDP and HTTP masters) |
//! | `http` (default) | — | HTTP master lists (DDNet's `servers.json`, the ETQW feed) in [`Client::master_list`] |
//!
//! Everything a server browser, a bot or a list site does goes through a [`Client`]: one
//! server ([`Client::query`]), masters' lists merged, filtered and de-duplicated
//! ([`Client::master_list`]), and a stream of results for many servers ([`Client::scan`]).
//! [`Client::watch`] scans every interval and yields what changed as typed [`events`]
//! (`server_up`, `map_changed`, `player_joined`…).
//! Every game is named by its registry id; errors are one [`Error`] enum to match.
//! A family's own typed replies (a Quake III `statusResponse` as the server sent it) come
//! through the same client: [`Client::exchange`] runs any family exchange, and
//! [`Client::quake3`] has the Quake III calls. Every default is in one table, [`defaults`].
//!
//! ```no_run
//! use futures_util::StreamExt;
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = fragstat::Client::new();
//! let q3 = fragstat::try_game("q3")?;
//!
//! // One server, with its players.
//! let r = client.query(&q3, "127.0.0.1:27960").players().await?;
//! println!("{} on {} ({}/{})", r.info.name, r.info.map, r.info.num_players, r.info.max_players);
//!
//! // A master's list, then every server on it.
//! let list = client.master_list(&q3, ["127.0.0.1:27950"]).await?;
//! let mut scan = client.scan(&q3, list.servers()).players();
//! while let Some((addr, result)) = scan.next().await {
//!     match result {
//!         Ok(r) => println!("{addr} {}", r.info.name),
//!         Err(fragstat::Error::Timeout { .. }) => println!("{addr} did not answer"),
//!         Err(e) => println!("{addr} {e}"),
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! docs/library.md is the guide: the API, the errors, the list filters and the defaults.
#![forbid(unsafe_code)]
#![doc(html_root_url = "https://docs.rs/fragstat")]

mod client;
mod error;
pub mod events;
mod filter;
mod flight;
#[cfg(feature = "http")]
mod http;
mod master;
mod record;
mod scan;
mod typed;
mod watch;

pub use client::{defaults, Client, ClientBuilder, Query, Response, Target};
pub use error::{Error, HttpSource, Limit, LimitKind, ResolveError};
pub use filter::{classify, FilterReason, ListFilter, ListLimits};
pub use master::{
    catalogue_at, Listed, MasterList, MasterListRequest, MasterReport, MasterStream, MasterUpdate,
};
pub use record::{no_time, record, resolve_error};
pub use scan::{Indexed, Scan, ScanItem};
#[cfg(feature = "quake3")]
pub use typed::Quake3;
pub use typed::Timed;
pub use watch::{time_text, unix_ms, Polled, PolledMaster, Source, Watch, WATCH_BUFFER};

pub use fragstat_core as core;
pub use fragstat_core::model::{MasterEntry, Player, Rules, ServerInfo, Text};
pub use fragstat_core::record::{Record, Status};
pub use fragstat_core::registry::{
    Ask, AskError, Family, Game, GameRef, MasterOptions, MasterQueryError,
};
pub use fragstat_core::{DecodeError, Engine, Options, QueryError};

/// The Quake III out-of-band family ([`fragstat_quake3_oob`]).
#[cfg(feature = "quake3")]
pub use fragstat_quake3_oob as quake3;

/// The idTech 4 family ([`fragstat_idtech4`]).
#[cfg(feature = "idtech4")]
pub use fragstat_idtech4 as idtech4;

/// Enemy Territory: Quake Wars ([`fragstat_etqw`]).
#[cfg(feature = "etqw")]
pub use fragstat_etqw as etqw;

/// Warsow, Warfork, Nexuiz and Xonotic ([`fragstat_warsow`]).
#[cfg(feature = "warsow")]
pub use fragstat_warsow as warsow;

/// Teeworlds 0.6 and 0.7 and DDNet ([`fragstat_teeworlds`]).
#[cfg(feature = "teeworlds")]
pub use fragstat_teeworlds as teeworlds;

/// Every family compiled in (one line per family, under its feature).
pub fn families() -> Vec<Family> {
    vec![
        #[cfg(feature = "quake3")]
        fragstat_quake3_oob::FAMILY,
        #[cfg(feature = "idtech4")]
        fragstat_idtech4::FAMILY,
        #[cfg(feature = "etqw")]
        fragstat_etqw::FAMILY,
        #[cfg(feature = "warsow")]
        fragstat_warsow::FAMILY,
        #[cfg(feature = "teeworlds")]
        fragstat_teeworlds::FAMILY,
    ]
}

/// Every named game of every family compiled in, family by family.
pub fn games() -> Vec<GameRef> {
    families().iter().flat_map(|f| (f.games)()).collect()
}

/// The game with this id or alias (case-insensitive), including ids a family makes on the
/// fly (`oob:43`); [`try_game`] is the same as a `Result`.
pub fn game(id: &str) -> Option<GameRef> {
    families().iter().find_map(|f| (f.find)(id))
}

/// [`game`] as a `Result`, for `?`: an unknown id is [`Error::InvalidInput`], naming it.
///
/// ```
/// let q3 = fragstat::try_game("q3")?;
/// assert_eq!(q3.id(), "q3");
/// assert!(matches!(fragstat::try_game("nope"), Err(fragstat::Error::InvalidInput(_))));
/// # Ok::<(), fragstat::Error>(())
/// ```
pub fn try_game(id: &str) -> Result<GameRef, Error> {
    game(id).ok_or_else(|| {
        Error::InvalidInput(format!(
            "unknown game {id:?} (fragstat::games() lists the games of this build)"
        ))
    })
}

/// A game as `fragstat games --format json` lists it (without qstat's master types):
/// `id`, `title`, `family`, `default_port`, `master_port`, `aliases` and its master
/// `catalogue`.
pub fn game_json(g: &GameRef) -> serde_json::Value {
    serde_json::json!({
        "id": g.id(),
        "title": g.title(),
        "family": g.family(),
        "default_port": g.default_port(),
        "master_port": g.master_port(),
        "aliases": g.aliases(),
        "catalogue": g.catalogue(),
    })
}

/// The README's examples, compiled and run as doctests so they cannot rot.
#[doc = include_str!("../../../README.md")]
#[cfg(all(doctest, feature = "quake3"))]
pub struct ReadmeDoctests;

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(feature = "quake3")]
    fn registry_finds_every_listed_game() {
        let games = super::games();
        assert!(games.len() >= 4);
        for g in &games {
            assert_eq!(super::game(g.id()).unwrap().id(), g.id());
        }
        assert!(super::game("no-such-game").is_none());
    }

    #[test]
    fn ids_and_aliases_name_one_game_each() {
        let mut seen = std::collections::HashMap::new();
        for g in super::games() {
            for name in std::iter::once(g.id()).chain(g.aliases().iter().copied()) {
                let name = name.to_ascii_lowercase();
                if let Some(other) = seen.insert(name.clone(), g.id().to_string()) {
                    panic!("{name:?} names both {other} and {}", g.id());
                }
                assert_eq!(super::game(&name).unwrap().id(), g.id(), "{name}");
            }
        }
    }
}
