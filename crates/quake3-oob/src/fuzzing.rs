//! Oracles shared by the cargo-fuzz targets (`fuzz/`) and the seeded mutation test, so both
//! check the same properties. Not part of the stable API.

use crate::{decode, InfoString, Packet};

/// Decoding any bytes must not panic; a packet that decodes and re-encodes must decode to
/// the same value. Status lines that are not players (`skipped`, `truncated`) are reported
/// by the decoder but not re-encoded, so they are left out of the comparison.
pub fn check_decode(data: &[u8]) {
    let Ok(packet) = decode(data) else { return };
    let Ok(bytes) = packet.to_bytes() else { return };
    let again = decode(&bytes)
        .unwrap_or_else(|e| panic!("re-encoded packet does not decode: {e}\n{packet:?}"));
    match (&packet, &again) {
        (Packet::StatusResponse(a), Packet::StatusResponse(b)) => {
            assert_eq!(a.info, b.info, "status infostring changed in a round trip");
            assert_eq!(a.players, b.players, "players changed in a round trip");
        }
        _ => assert_eq!(packet, again, "packet changed in a round trip"),
    }
}

/// Parsing any bytes as an infostring must not panic; what parses and encodes parses back equal.
pub fn check_infostring(data: &[u8]) {
    let Ok(info) = InfoString::parse(data, 0) else {
        return;
    };
    let mut out = Vec::new();
    if info.encode(&mut out).is_ok() {
        assert_eq!(
            InfoString::parse(&out, 0).expect("re-encoded infostring parses"),
            info
        );
    }
    // Every error names an offset inside (or just past) the input.
    if let Err(e) = InfoString::parse(data, 0) {
        assert!(e.offset() <= data.len());
    }
}
