//! Querying servers and masters through `fragstat-core`'s engine (the default `client`
//! feature): thin wrappers over the sans-IO exchanges.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use fragstat_core::{Engine, Options};
//! use fragstat_teeworlds::{client, exchange::Mode};
//! let engine = Engine::bind().await?;
//! let ddnet = client::server6(&engine, "127.0.0.1:8303".parse()?, Mode::Extended, Options::default()).await;
//! let tw7 = client::server7(&engine, "127.0.0.1:8304".parse()?, Options::default()).await;
//! println!("{:?} {:?}", ddnet.result.map(|s| s.num_players), tw7.result.map(|s| s.name));
//! # Ok(()) }
//! ```

use std::net::SocketAddr;

use fragstat_core::model::{MasterEntry, ServerInfo};
use fragstat_core::{Engine, Options, Outcome};

use crate::exchange::{Master6, Master7, Mode, Query6, Query7};

/// A 0.6 server info query (`Mode::Extended` is what DDNet's browser sends).
pub async fn server6(
    engine: &Engine,
    addr: SocketAddr,
    mode: Mode,
    options: Options,
) -> Outcome<ServerInfo> {
    engine.query(addr, Query6::new(mode), options).await
}

/// A 0.7 server info query (token handshake, then `gie3`).
pub async fn server7(engine: &Engine, addr: SocketAddr, options: Options) -> Outcome<ServerInfo> {
    engine.query(addr, Query7::new(), options).await
}

/// A UDP master's list: 0.6 (`seven == false`) or 0.7.
pub async fn master(
    engine: &Engine,
    addr: SocketAddr,
    seven: bool,
    options: Options,
) -> Outcome<Vec<MasterEntry>> {
    if seven {
        engine.query(addr, Master7::new(), options).await
    } else {
        engine.query(addr, Master6::new(), options).await
    }
}
