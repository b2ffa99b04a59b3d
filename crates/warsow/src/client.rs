//! Querying servers and masters through `fragstat-core`'s engine (the default `client`
//! feature): thin wrappers over the sans-IO exchanges.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use fragstat_core::{Engine, Options};
//! use fragstat_warsow::{client, WarsowGame};
//! let engine = Engine::bind().await?;
//! let full = client::server(&engine, "127.0.0.1:44400".parse()?, WarsowGame::Warsow, true, Options::default()).await;
//! let short = client::short_info(&engine, "127.0.0.1:44400".parse()?, WarsowGame::Warsow, Options::default()).await;
//! println!("{:?} {:?}", full.result.map(|s| s.num_players), short.result.map(|i| i.clients()));
//! # Ok(()) }
//! ```

use std::net::SocketAddr;

use fragstat_core::model::{MasterEntry, ServerInfo};
use fragstat_core::{Engine, Options, Outcome, QueryError};

use crate::exchange::{master_query, server_query, ShortInfoExchange};
use crate::short::ShortInfo;
use crate::WarsowGame;

/// One server: `getstatus` with `players` (players and every variable), else `getinfo`.
pub async fn server(
    engine: &Engine,
    addr: SocketAddr,
    game: WarsowGame,
    players: bool,
    options: Options,
) -> Outcome<ServerInfo> {
    engine
        .query(addr, server_query(game, players), options)
        .await
}

/// The short `info <protocol> full empty` query with the game's protocol (qfusion only;
/// DarkPlaces does not answer). Another protocol: [`crate::exchange::ShortInfoExchange`].
pub async fn short_info(
    engine: &Engine,
    addr: SocketAddr,
    game: WarsowGame,
    options: Options,
) -> Outcome<ShortInfo> {
    engine
        .query(addr, ShortInfoExchange::new(game.protocol()), options)
        .await
}

/// A master's list (`getservers`, or `getserversExt` with `ext`).
pub async fn master(
    engine: &Engine,
    addr: SocketAddr,
    game: WarsowGame,
    ext: bool,
    options: Options,
) -> Result<Outcome<Vec<MasterEntry>>, QueryError> {
    let master_options = fragstat_core::registry::MasterOptions::default().with_ext(ext);
    let ex = master_query(game, &master_options).map_err(QueryError::Encode)?;
    Ok(engine.query(addr, ex, options).await)
}
