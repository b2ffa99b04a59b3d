//! idTech 4 specifics over every fixture of the family (`tests/fixtures/idtech4/{ok,err}`);
//! the per-case expectations are data, checked by the one runner in `tests/tests/fixtures.rs`.
//!
//! - Every `ok` datagram decodes, re-encodes to the same bytes and decodes to the same packet.
//! - Cut anywhere before its trailing bytes, every `ok` datagram fails with a `truncated` or
//!   `missing` error at or before the cut — never a shorter player list.
//! - Every `err` datagram passes the fuzzing oracle.

use fragstat_idtech4::Encode;
use std::path::PathBuf;

use fragstat_idtech4::fuzzing::check_decode;
use fragstat_idtech4::{decode, decode_as, Body, Idtech4Game, Packet};

fn cases(kind: &str) -> Vec<(PathBuf, Vec<u8>, Idtech4Game)> {
    fragstat_testkit::fixtures::datagrams("idtech4", kind)
        .into_iter()
        .map(|(p, bytes)| {
            let game = match fragstat_testkit::fixtures::metadata(&p)["game"].as_str() {
                Some("doom3") => Idtech4Game::Doom3,
                Some("quake4") => Idtech4Game::Quake4,
                Some("prey") => Idtech4Game::Prey,
                other => panic!("{}: game {other:?}", p.display()),
            };
            (p, bytes, game)
        })
        .collect()
}

#[test]
fn ok_fixtures_round_trip_byte_for_byte() {
    for (path, bytes, game) in cases("ok") {
        let packet = decode_as(game, &bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let again = packet.to_bytes().unwrap();
        assert_eq!(again, bytes, "{}", path.display());
        assert_eq!(decode_as(game, &again).unwrap(), packet);
        // Every real reply carries its game's protocol major, so the game-free decode agrees.
        assert_eq!(decode(&bytes).unwrap(), packet, "{}", path.display());
        check_decode(&bytes);
    }
}

#[test]
fn every_cut_before_the_trailing_bytes_is_an_error() {
    for (path, bytes, game) in cases("ok") {
        let Packet::InfoResponse(r) = decode_as(game, &bytes).unwrap() else {
            panic!("{}", path.display())
        };
        let Body::Players {
            trailing, players, ..
        } = &r.state.body
        else {
            panic!("{}", path.display())
        };
        let end = bytes.len() - trailing.len();
        for cut in 0..end {
            let e = decode_as(game, &bytes[..cut])
                .expect_err(&format!("{} cut at {cut}", path.display()));
            assert!(
                matches!(e.kind(), "truncated" | "missing" | "bad_header"),
                "{} cut at {cut}: {e}",
                path.display()
            );
            assert!(e.offset() <= cut, "{} cut at {cut}: {e}", path.display());
        }
        for cut in end..=bytes.len() {
            let Packet::InfoResponse(r) = decode_as(game, &bytes[..cut]).unwrap() else {
                panic!()
            };
            let Body::Players { players: p, .. } = &r.state.body else {
                panic!()
            };
            assert_eq!(
                p, players,
                "the player list does not depend on the trailing bytes"
            );
        }
    }
}

#[test]
fn err_fixtures_pass_the_oracle() {
    for (_, bytes, _) in cases("err") {
        check_decode(&bytes);
    }
}
