//! fragstat for Node.js: the native part of the `fragstat` npm package.
//!
//! Everything here is a thin layer over [`fragstat::Client`]: results cross to JavaScript
//! as the JSON the CLI prints (docs/json.md), written by the library itself, and
//! `index.js` parses them, raises `FragstatError`s and wraps the handles below in promises
//! and async iterators with `AbortSignal` support. Every call runs on the library's tokio
//! runtime (napi's), so none blocks Node's event loop.

mod client;
mod errors;
mod handles;
mod options;

pub use client::Client;
pub use handles::{Call, Feed};

use napi_derive::napi;

/// Every game of this build as `fragstat games --format json` lists it (without qstat's
/// master types), as JSON text.
#[napi]
pub fn games_json() -> String {
    let games: Vec<serde_json::Value> = fragstat::games().iter().map(fragstat::game_json).collect();
    serde_json::Value::Array(games).to_string()
}

/// The game with this id or alias (`oob:NN` too) as JSON text, or `null` when unknown.
#[napi]
pub fn game_json(id: String) -> Option<String> {
    fragstat::game(&id).map(|g| fragstat::game_json(&g).to_string())
}

/// The version of the fragstat library inside.
#[napi]
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}
