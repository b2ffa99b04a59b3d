//! Oracles shared by the cargo-fuzz target (`fuzz/fuzz_targets/warsow_decode.rs`) and the
//! seeded mutation test. Not part of the stable API.

use crate::Encode;

use fragstat_core::registry::Game as _;

use crate::{decode, Packet, WarsowGame};

/// Decoding any bytes must not panic; a packet that decodes and re-encodes must decode to
/// the same value (status lines that are not players are reported, not re-encoded); every
/// registry game must turn what decodes into a record without panicking.
pub fn check_decode(data: &[u8]) {
    for g in WarsowGame::ALL {
        let _ = fragstat_core::registry::Entry::new(g).decode(data);
    }
    let Ok(packet) = decode(data) else {
        if let Err(e) = decode(data) {
            assert!(e.offset() <= data.len(), "offset past the end: {e}");
        }
        return;
    };
    let Ok(bytes) = packet.to_bytes() else { return };
    let again = decode(&bytes)
        .unwrap_or_else(|e| panic!("re-encoded packet does not decode: {e}\n{packet:?}"));
    match (&packet, &again) {
        (
            Packet::Oob(fragstat_quake3_oob::Packet::StatusResponse(a)),
            Packet::Oob(fragstat_quake3_oob::Packet::StatusResponse(b)),
        ) => {
            assert_eq!(a.info, b.info, "status infostring changed in a round trip");
            assert_eq!(a.players, b.players, "players changed in a round trip");
        }
        _ => assert_eq!(packet, again, "packet changed in a round trip"),
    }
}
