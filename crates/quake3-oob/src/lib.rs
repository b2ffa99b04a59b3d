//! The Quake III out-of-band protocol: Quake III Arena, Wolfenstein: Enemy Territory,
//! OpenArena, Return to Castle Wolfenstein and other engines that speak it.
//!
//! The codec is sans-IO: [`decode`] turns a datagram into a [`Packet`], [`Packet::encode`]
//! turns one back into bytes. Nothing here opens a socket or reads a clock, and with
//! `default-features = false` the crate has no tokio in its dependency tree.
//!
//! To query servers and masters, use `fragstat::Client` (the facade crate): its
//! `quake3()` calls give these typed replies (`client.quake3().status(addr)` is a
//! [`packet::StatusResponse`]), and `Client::exchange` runs [`ServerExchange`] or
//! [`MasterExchange`] on its sockets. Features: none by default; `emulate` adds the emulated
//! servers and masters.
//!
//! Decode a saved reply:
//!
//! ```
//! use fragstat_quake3_oob::{decode, Packet, text};
//! let bytes = b"\xff\xff\xff\xffstatusResponse\n\\sv_hostname\\^1Red\\mapname\\q3dm6\n12 50 \"^4Blue^7Guy\"\n";
//! let Packet::StatusResponse(status) = decode(bytes)? else { unreachable!() };
//! assert_eq!(status.players[0].score, Some(12));
//! assert_eq!(text::display(&status.players[0].name), "BlueGuy");
//! # Ok::<(), fragstat_quake3_oob::DecodeError>(())
//! ```
//!
//! What this crate does not do: rcon, connecting to a server, or any other family's protocol.
#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

pub mod cod4x;
pub mod daemon;
#[cfg(feature = "emulate")]
pub mod emulate;
pub mod exchange;
#[doc(hidden)]
pub mod fuzzing;
pub mod game;
mod info;
pub mod iw4x;
pub mod master;
pub mod packet;
pub mod push;
pub mod registry;
pub mod view;

#[cfg(test)]
mod engine_tests;

pub use exchange::{MasterExchange, Request, ServerExchange, ServerReply};
pub use fragstat_core::text;
pub use fragstat_core::wire::{Encode, EncodeError};
pub use fragstat_core::DecodeError;
pub use game::Quake3Game;
pub use info::InfoString;
pub use master::{encode_server_list, EotStyle, GetServers, ServerList, Terminator};
pub use packet::{
    decode, valid_challenge, ChallengeResponse, Heartbeat, InfoResponse, Packet, SkippedLine,
    StatusPlayer, StatusResponse, OOB_HEADER,
};
pub use registry::FAMILY;
pub use view::server_info;
