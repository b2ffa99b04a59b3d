//! Warsow and Warfork (the qfusion engine) and Nexuiz and Xonotic (DarkPlaces): games that speak the
//! Quake III out-of-band protocol with their own twists, on top of
//! [`fragstat_quake3_oob`]'s codec.
//!
//! What is theirs:
//!
//! * qfusion writes the echoed challenge **first** (`infoResponse\n\challenge\ARG…`), adds
//!   `\bots\N` (only when there are bots) and `\clients\N`, and ends every player line with a
//!   team number: `score ping "name" team` (0 spectator, 1 players, 2–5 red, blue, green,
//!   yellow in Warsow 0.x; 2 and 3 alpha and beta in Warsow 2). Connecting players have ping
//!   −9999.
//! * `g_match_time` and `g_match_score` say what the match is doing: [`MatchTime`],
//!   [`TeamScore`], in the record's `extra` ([`ServerExtra`]).
//! * The short `info <protocol> [full] [empty]` query and its `info\n\\n\\NAME\\…\\EOT` reply
//!   with space-padded values ([`ShortInfo`]).
//! * DarkPlaces (Nexuiz, Xonotic) puts the team **before** the name in team games (`score
//!   ping team "name"`), marks spectators with score −666 and sends bots with ping 0,
//!   describes the game in `qcstatus` ([`QcStatus`]), echoes the raw rest of the request as
//!   the challenge, and answers a `getstatus` whose player lines do not fit its buffer with
//!   its infoResponse ([`exchange::DarkPlacesStatus`]).
//!
//! Everything is sans-IO: [`decode`] turns a datagram into a [`Packet`], [`Packet::encode`]
//! writes one; the registry games ([`FAMILY`]) give exchanges and emulators.
//!
//! ```
//! use fragstat_warsow::{decode, Packet};
//! let reply = b"\xff\xff\xff\xffinfo\n\\\\n\\\\My Server\\\\m\\\\    wca1\\\\u\\\\ 3/16\\\\g\\\\    ca\\\\EOT";
//! let Packet::InfoReply(info) = decode(reply)? else { unreachable!() };
//! assert_eq!(info.map(), Some(&b"wca1"[..]));
//! assert_eq!(info.clients(), Some((3, 16)));
//! # Ok::<(), fragstat_warsow::DecodeError>(())
//! ```
//!
//! What this crate does not do: connect to a server, or the matchmaker.
#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

#[cfg(feature = "emulate")]
pub mod emulate;
pub mod exchange;
#[doc(hidden)]
pub mod fuzzing;
pub mod game;
pub mod matchstate;
pub mod packet;
pub mod registry;
pub mod short;
pub mod view;

pub use fragstat_core::wire::{DecodeError, Encode, EncodeError};
pub use game::{GameType, WarsowGame};
pub use matchstate::{MatchTime, TeamScore};
pub use packet::{decode, Packet};
pub use registry::FAMILY;
pub use short::{InfoRequest, ShortInfo};
pub use view::{adapt, PlayerExtra, QcStatus, ServerExtra};
