//! Teeworlds 0.6 and 0.7 and DDNet: server info and masters.
//!
//! * 0.6 ([`six`]): `gie3` + a token byte → `inf3`, every number a decimal string; DDNet's
//!   extended request (`xe` header with a 16-bit extra token) → `iext` and as many `iex+` as
//!   the clients need, assembled by packet number ([`assemble`]); DDNet's legacy 64 request
//!   `fstd` → `dtsf` datagrams of 24 clients with a varint offset.
//! * 0.7 ([`seven`]): a token handshake (a control packet padded to 512 data bytes), then
//!   `gie3` with the server's token → a varint-coded `inf3`. DDNet 16 answers it too.
//! * Masters: the 0.6 and 0.7 UDP masters (`req2` → `lis2` with IPv4-mapped and IPv6
//!   entries, `cou2` → `siz2`) and DDNet's HTTP list `servers.json` ([`http`]).
//!
//! Everything is sans-IO: decoders take `&[u8]` and return `Result`, exchanges
//! ([`exchange`]) say what to send and judge replies (tokens checked), emulators (the
//! `emulate` module, with the `emulate` feature) are [`fragstat_core::service::Service`]s.
//! To query real servers, use `fragstat::Client` (the facade crate), or run an exchange on
//! `fragstat_core::Engine` yourself. The codec is [`packet`]: [`decode`] reads any
//! datagram of the family, 0.6 or 0.7. Names are UTF-8 without colour codes
//! ([`fragstat_core::model::Dialect::Plain`]).
//!
//! ```
//! use fragstat_teeworlds::exchange::{Mode, Query6};
//! use fragstat_teeworlds::six;
//! use fragstat_teeworlds::{Exchange, Verdict};
//! let mut q = Query6::with_token(Mode::Extended, 0x12342a);
//! assert_eq!(q.requests(0).unwrap()[0], b"xe\x12\x34\0\0\xff\xff\xff\xffgie3\x2a");
//! // A vanilla 0.6 server answers with its inf3 and the token byte.
//! let reply = b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffinf3\
//!     42\x000.6.4\0My server\0dm1\0DM\x000\x001\x0016\x001\x0016\0tee\0\0-1\x007\x001\0";
//! let Verdict::Done { output: Ok(info), .. } = q.on_datagram(reply) else { panic!() };
//! assert_eq!((info.name.to_string(), info.num_players, info.max_players), ("My server".into(), 1, 16));
//! ```
//!
//! What this crate does not do: connect to a server as a player, or register with masters.
#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

pub mod assemble;
pub mod connless;
#[cfg(feature = "emulate")]
pub mod emulate;
pub mod exchange;
#[doc(hidden)]
pub mod fuzzing;
pub mod game;
pub mod http;
pub mod packet;
pub mod partial;
pub mod registry;
pub mod seven;
pub mod six;
pub mod view;

pub use fragstat_core::wire::{DecodeError, Encode, EncodeError};
/// The sans-IO exchange contract the [`exchange`] types implement (from `fragstat-core`, so
/// that a user of this crate alone can drive them).
pub use fragstat_core::{Exchange, Verdict};
pub use game::TeeworldsGame;
pub use packet::{decode, Packet};
pub use registry::FAMILY;
pub use view::{PlayerExtra, ServerExtra};
