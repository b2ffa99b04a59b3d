//! Enemy Territory: Quake Wars: the server query protocol (ETQW 1.4 and 1.5, protocols 10.19
//! and 10.21) and the HTTP server-list feed.
//!
//! The codec is sans-IO: [`decode`] turns a datagram into a [`Packet`], [`Packet::encode`]
//! turns one back into bytes. Replies carry an 8-byte opaque challenge echo, a size field,
//! the idTech 4 server-info dictionary (decoded by `fragstat_idtech4::dict`), players with
//! clan tags and a bot flag, a block after the players (OS mask, ranked, time left, game
//! state, server type), and with `getInfoEx` an extended block (xp, team, kills, deaths).
//!
//! ```
//! use fragstat_etqw::{decode, feed, Packet};
//! let reply = fragstat_etqw::emulate::EmulatedServer::new(
//!     fragstat_etqw::emulate::ServerConfig::sample(b"^2My Server", b"valley", 3, 24))?;
//! let bytes = reply.respond(b"\xff\xffgetInfoEx\0\x01\x02\x03\x04\x05\x06\x07\x08").unwrap();
//! let Packet::InfoResponse(r) = decode(&bytes)? else { unreachable!() };
//! let info = fragstat_etqw::server_info(&r, bytes.len());
//! assert_eq!((info.map.display().as_str(), info.num_players, info.num_bots), ("valley", 3, Some(1)));
//! let list = feed::parse(b"127.0.0.1:27733\nnonsense\n")?;
//! assert_eq!((list.servers.len(), list.warnings.len()), (1, 1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Features: none by default (no tokio in the tree); `emulate` adds the emulated servers.
//! Queries go through `fragstat::Client` (the facade crate), which drives [`ServerExchange`]
//! on `fragstat-core`'s engine.
//!
//! What this crate does not do: fetch the feed over HTTP (the caller does: the registry's
//! `MasterQuery::Http`), protocols before 10.19 (they sent a rate; their bodies are left
//! undecoded), or mods' own extended blocks (kept undecoded, with a warning).
#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

#[cfg(feature = "emulate")]
pub mod emulate;
pub mod exchange;
pub mod feed;
#[doc(hidden)]
pub mod fuzzing;
pub mod game;
pub mod packet;
pub mod registry;
pub mod view;

pub use exchange::{Reply, ServerExchange};
pub use fragstat_core::wire::{Encode, EncodeError};
pub use fragstat_core::DecodeError;
pub use fragstat_idtech4::Protocol;
pub use game::EtqwGame;
pub use packet::{
    decode, known_protocol, Body, ExPlayer, Extended, GetInfo, InfoPlayer, InfoResponse, KnownBody,
    Packet, PostPlayers, ServerType, PROTOCOL_1_4, PROTOCOL_1_5,
};
pub use registry::FAMILY;
pub use view::server_info;
