//! Quake III specifics over every fixture of the family (`tests/fixtures/quake3/{ok,err}`);
//! the per-case expectations are data, checked by the one runner in `tests/tests/fixtures.rs`.
//!
//! - Every `ok` datagram decodes, re-encodes and decodes to the same packet.
//! - Every `err` datagram that decodes passes the fuzzing round-trip oracle (which leaves out
//!   the skipped lines and the truncation flag the encoder does not write back).
//! - The echoed challenge is our own nonce, so the shared model leaves it out of `rules`
//!   (`view.rs`): where a case's hand-checked `expected.info` has a `challenge`, it is checked
//!   here, on the packet.

use fragstat_quake3_oob::Encode;
use std::path::PathBuf;

use fragstat_quake3_oob::fuzzing::check_decode;
use fragstat_quake3_oob::{decode, Heartbeat, InfoResponse, Packet};
use serde_json::Value;

/// Every `.bin` of `tests/fixtures/quake3/<kind>`, sorted, with its `.json`.
fn cases(kind: &str) -> Vec<(PathBuf, Vec<u8>, Value)> {
    fragstat_testkit::fixtures::datagrams("quake3", kind)
        .into_iter()
        .map(|(p, bytes)| {
            let meta = fragstat_testkit::fixtures::metadata(&p);
            (p, bytes, meta)
        })
        .collect()
}

#[test]
fn ok_fixtures_round_trip_through_the_encoder() {
    for (path, bytes, _) in cases("ok") {
        let name = path.display();
        let packet = decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let encoded = packet.to_bytes().unwrap_or_else(|e| panic!("{name}: {e}"));
        let again = decode(&encoded).unwrap_or_else(|e| panic!("{name}: re-encoded: {e}"));
        assert_eq!(again, packet, "{name}");
    }
}

#[test]
fn err_fixtures_that_decode_round_trip_what_the_encoder_writes() {
    let mut decoded = 0;
    for (_, bytes, _) in cases("err") {
        decoded += usize::from(decode(&bytes).is_ok());
        check_decode(&bytes);
    }
    assert!(decoded > 0, "some err cases are accepted with flags");
}

#[test]
fn echoed_challenges_are_on_the_packet() {
    let mut checked = 0;
    for (path, bytes, meta) in cases("ok") {
        let Some(want) = meta["expected"]["info"].get("challenge") else {
            continue;
        };
        let want = want.as_str().expect("a string").as_bytes();
        let info = match decode(&bytes) {
            Ok(Packet::InfoResponse(i)) => i.info,
            Ok(Packet::StatusResponse(s)) => s.info,
            other => panic!("{}: {other:?}", path.display()),
        };
        assert_eq!(info.get("challenge"), Some(want), "{}", path.display());
        checked += 1;
    }
    assert!(checked >= 5, "{checked} cases echo a challenge");
}

/// The packet types are `#[non_exhaustive]`: the ones without a `Default` are built outside
/// the crate with their constructors.
#[test]
fn packets_built_with_the_constructors_round_trip() {
    let mut infos = 0;
    for (path, bytes, _) in cases("ok") {
        if let Ok(Packet::InfoResponse(i)) = decode(&bytes) {
            let built = Packet::InfoResponse(InfoResponse::new(i.info.clone()));
            assert_eq!(built, Packet::InfoResponse(i), "{}", path.display());
            assert_eq!(built.to_bytes().unwrap(), bytes, "{}", path.display());
            infos += 1;
        }
    }
    assert!(infos > 0);
    for name in ["QuakeArena-1", "ETFlatline-1"] {
        let h = Heartbeat::new(name);
        assert_eq!(h.is_flatline(), name == "ETFlatline-1");
        let p = Packet::Heartbeat(h);
        assert_eq!(decode(&p.to_bytes().unwrap()).unwrap(), p);
    }
}
