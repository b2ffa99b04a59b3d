//! Oracles shared by the cargo-fuzz targets (`fuzz/fuzz_targets/teeworlds_*.rs`) and the
//! seeded mutation test. Not part of the stable API.

use crate::Encode;
use crate::{http, registry, seven, six};

/// Decoding any bytes as 0.6, 0.7 or through the registry must not panic; errors must name
/// an offset inside the datagram; a packet that decodes and re-encodes must decode to the
/// same packet.
pub fn check_decode(data: &[u8]) {
    // A reply's record writes as JSON exactly as serde_json writes it (the scan's NDJSON).
    if let Ok(fragstat_core::registry::Decoded::Server(info)) = registry::decoded(data) {
        fragstat_core::record::Record::online(None, "ddnet", *info, None).check_write_json();
    }
    match six::decode(data) {
        Ok(p) => {
            if let Ok(bytes) = p.to_bytes() {
                let again = six::decode(&bytes).unwrap_or_else(|e| {
                    panic!("re-encoded 0.6 packet does not decode: {e}\n{p:?}")
                });
                assert_eq!(p, again, "0.6 packet changed in a round trip");
            }
        }
        Err(e) => assert!(e.offset() <= data.len(), "offset past the end: {e}"),
    }
    match seven::decode(data) {
        Ok(p) => {
            if let Ok(bytes) = p.to_bytes() {
                let again = seven::decode(&bytes).unwrap_or_else(|e| {
                    panic!("re-encoded 0.7 packet does not decode: {e}\n{p:?}")
                });
                assert_eq!(p, again, "0.7 packet changed in a round trip");
            }
        }
        Err(e) => assert!(e.offset() <= data.len(), "offset past the end: {e}"),
    }
}

/// Parsing any bytes as a DDNet `servers.json` must not panic; a list that parses, written
/// back, parses to the same servers.
pub fn check_http(data: &[u8]) {
    match http::parse(data) {
        Ok(list) => {
            for s in &list.servers {
                assert!(!s.addresses.is_empty());
            }
        }
        Err(e) => assert!(e.offset() <= data.len(), "offset past the end: {e}"),
    }
    if let Ok(list) = serde_json::from_slice::<http::List>(data) {
        let again: http::List =
            serde_json::from_slice(&http::render(&list)).expect("a rendered list parses");
        assert_eq!(again, list);
    }
}
