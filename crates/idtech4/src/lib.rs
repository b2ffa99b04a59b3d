//! The idTech 4 server query protocol: Doom 3, Quake 4 and Prey servers and their masters.
//!
//! The codec is sans-IO: [`decode`] turns a datagram into a [`Packet`], [`Packet::encode`]
//! turns one back into bytes. The reply does not describe its own player layout; its
//! protocol major names the game ([`Idtech4Game::of_protocol`]), whose layout [`decode`]
//! uses. [`decode_as`] reads a datagram as one game's own client does: the layout is chosen
//! by game and protocol version ([`Idtech4Game::layout`]), and an unknown pair leaves the
//! player block undecoded (the shared record says so in its warnings) rather than guessing.
//!
//! ```
//! use fragstat_idtech4::{decode_as, Body, Idtech4Game, Packet};
//! let mut d = b"\xff\xffinfoResponse\0\x01\0\0\0\x29\0\x01\0".to_vec(); // challenge 1, 1.41
//! d.extend_from_slice(b"si_name\0^1Red\0si_map\0game/mp/d3dm1\0\0\0");
//! d.extend_from_slice(b"\x03\x2a\x00\x00\x64\x00\x00Player\0\x20\x07\0\0\0");
//! let Packet::InfoResponse(r) = decode_as(Idtech4Game::Doom3, &d)? else { unreachable!() };
//! let Body::Players { players, os_mask, .. } = &r.state.body else { unreachable!() };
//! assert_eq!((players[0].slot, players[0].ping, players[0].rate), (3, 42, 25600));
//! assert_eq!(*os_mask, 7);
//! let info = fragstat_idtech4::server_info(Idtech4Game::Doom3, &r);
//! assert_eq!(info.name.display(), "Red");
//! # Ok::<(), fragstat_idtech4::DecodeError>(())
//! ```
//!
//! Also here: the sans-IO [`ServerExchange`] and [`MasterExchange`], emulated servers and
//! masters (the `emulate` module, with the `emulate` feature; off by default) as
//! `fragstat_core::service::Service`s, and the registry games ([`FAMILY`]). The crate has no
//! tokio in its tree: queries go through `fragstat::Client` (the facade crate), which drives
//! the exchanges on `fragstat-core`'s engine.
//!
//! What this crate does not do: connect to a server, rcon, Wolfenstein (2009)'s bit-packed
//! player list, or Enemy Territory: Quake Wars (see `fragstat-etqw`, which reuses [`dict`]).
#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

pub mod dict;
#[cfg(feature = "emulate")]
pub mod emulate;
pub mod exchange;
#[doc(hidden)]
pub mod fuzzing;
pub mod game;
pub mod master;
pub mod packet;
pub mod registry;
pub mod view;

pub use dict::Dict;
pub use exchange::{MasterExchange, ServerExchange, DEFAULT_SETTLE};
pub use fragstat_core::wire::{Encode, EncodeError};
pub use fragstat_core::DecodeError;
pub use game::{Idtech4Game, Layout, Protocol};
pub use master::{encode_server_list, GetServers, ServerList};
pub use packet::{
    decode, decode_as, Body, GetInfo, Heartbeat, InfoPlayer, InfoResponse, Packet, ServerState,
    END_OF_PLAYERS, HEADER,
};
pub use registry::FAMILY;
pub use view::server_info;
