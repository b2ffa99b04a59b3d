//! Oracles shared by the cargo-fuzz targets (`fuzz/`) and the seeded mutation test. Not part
//! of the stable API.

use crate::game::Idtech4Game;
use crate::packet::decode_as;
use crate::Encode;

/// For every game: decoding any bytes must not panic; an error names an offset inside (or
/// just past) the input; a packet that decodes and re-encodes decodes to the same value, and
/// re-encodes to the same bytes; the shared model of an `infoResponse` can be built.
pub fn check_decode(data: &[u8]) {
    for game in Idtech4Game::ALL {
        let packet = match decode_as(game, data) {
            Ok(p) => p,
            Err(e) => {
                assert!(e.offset() <= data.len(), "{game}: {e} past the end");
                continue;
            }
        };
        if let crate::packet::Packet::InfoResponse(r) = &packet {
            let _ = crate::view::server_info(game, r);
        }
        let Ok(bytes) = packet.to_bytes() else {
            continue;
        };
        let again = decode_as(game, &bytes).unwrap_or_else(|e| {
            panic!("{game}: re-encoded packet does not decode: {e}\n{packet:?}")
        });
        assert_eq!(packet, again, "{game}: packet changed in a round trip");
        assert_eq!(
            again.to_bytes().ok(),
            Some(bytes),
            "{game}: encoding not stable"
        );
    }
}
