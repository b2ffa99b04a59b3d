//! Oracles shared by the cargo-fuzz targets (`fuzz/`) and the seeded mutation test. Not part
//! of the stable API.

use crate::packet::{decode, Packet};
use crate::Encode;

/// Decoding any bytes must not panic; an error names an offset inside (or just past) the
/// input; a packet that decodes and re-encodes decodes to the same packet (compared through
/// `Debug`, so a NaN xp compares equal to itself) and re-encodes to the same bytes; the
/// shared record of a reply can be built; and any body parses as a feed without panicking.
pub fn check_decode(data: &[u8]) {
    let _ = crate::feed::parse(data);
    let packet = match decode(data) {
        Ok(p) => p,
        Err(e) => {
            assert!(
                e.offset() <= data.len(),
                "{e} past the end of {} bytes",
                data.len()
            );
            return;
        }
    };
    if let Packet::InfoResponse(r) = &packet {
        let _ = crate::view::server_info(r, data.len());
    }
    let Ok(bytes) = packet.to_bytes() else {
        return;
    };
    let again = decode(&bytes)
        .unwrap_or_else(|e| panic!("re-encoded packet does not decode: {e}\n{packet:?}"));
    assert_eq!(
        format!("{packet:?}"),
        format!("{again:?}"),
        "packet changed in a round trip"
    );
    assert_eq!(again.to_bytes().ok(), Some(bytes), "encoding not stable");
}
