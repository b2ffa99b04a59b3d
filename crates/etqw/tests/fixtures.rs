//! ETQW specifics over every fixture of the family (`tests/fixtures/etqw/{ok,err}`); the
//! per-case expectations are data, checked by the one runner in `tests/tests/fixtures.rs`.
//!
//! - Every `ok` datagram decodes, re-encodes to the same bytes and decodes to the same packet.
//! - Cut anywhere before the extended block, every `ok` datagram fails with a `truncated` or
//!   `missing` error at or before the cut; cut inside the extended block (mod-defined, so
//!   decoded leniently), the reply keeps every player and is flagged `truncated`.
//! - The size field equals the bytes after it in every real reply.
//! - Every `err` datagram passes the fuzzing oracle.

use fragstat_etqw::Encode;
use std::path::PathBuf;

use fragstat_etqw::fuzzing::check_decode;
use fragstat_etqw::{
    decode, server_info, Body, Extended, InfoResponse, KnownBody, Packet, PostPlayers,
};
use fragstat_idtech4::Dict;

fn cases(kind: &str) -> Vec<(PathBuf, Vec<u8>)> {
    fragstat_testkit::fixtures::datagrams("etqw", kind)
}

#[test]
fn ok_fixtures_round_trip_byte_for_byte_and_sizes_match() {
    for (path, bytes) in cases("ok") {
        let packet = decode(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let again = packet.to_bytes().unwrap();
        assert_eq!(again, bytes, "{}", path.display());
        assert_eq!(decode(&again).unwrap(), packet);
        let Packet::InfoResponse(r) = &packet else {
            panic!()
        };
        assert_eq!(
            r.size.map(|s| s as usize),
            Some(r.actual_size(bytes.len())),
            "{}",
            path.display()
        );
        // Re-encoding with the size computed gives the same bytes.
        let mut computed = r.clone();
        computed.size = None;
        assert_eq!(Packet::InfoResponse(computed).to_bytes().unwrap(), bytes);
        check_decode(&bytes);
    }
}

/// The packet types are `#[non_exhaustive]`: a reply is built outside the crate with their
/// constructors, and writes every real reply back byte for byte.
#[test]
fn replies_built_with_the_constructors_encode_like_the_fixtures() {
    for (path, bytes) in cases("ok") {
        let Packet::InfoResponse(r) = decode(&bytes).unwrap() else {
            panic!()
        };
        let Body::Known(d) = &r.body else { panic!() };
        let p = &d.post;
        let post = PostPlayers::new(
            p.os_mask,
            p.ranked,
            p.time_left,
            p.game_state,
            p.server_type,
        );
        let mut body = KnownBody::new(d.players.clone(), post);
        body.extended = d.extended.clone();
        body.trailing = d.trailing.clone();
        let mut dict = Dict::new(r.dict.pairs.clone());
        dict.deleted = r.dict.deleted.clone();
        let built = InfoResponse::new(r.ex, r.challenge, r.protocol, dict, Body::Known(body));
        assert_eq!(
            Packet::InfoResponse(built).to_bytes().unwrap(),
            bytes,
            "{}",
            path.display()
        );
    }
}

#[test]
fn cuts_error_before_the_extended_block_and_flag_inside_it() {
    for (path, bytes) in cases("ok") {
        let Packet::InfoResponse(r) = decode(&bytes).unwrap() else {
            panic!()
        };
        let Body::Known(d) = &r.body else { panic!() };
        let ex_len = match &d.extended {
            Some(Extended::Players(list)) => {
                1 + list
                    .iter()
                    .map(|p| 1 + 4 + p.team.len() + 1 + 8)
                    .sum::<usize>()
            }
            _ => 0,
        };
        let ex_start = bytes.len() - ex_len;
        for cut in 0..ex_start {
            let e = decode(&bytes[..cut]).expect_err(&format!("{} cut at {cut}", path.display()));
            assert!(
                matches!(e.kind(), "truncated" | "missing" | "bad_header"),
                "{} cut at {cut}: {e}",
                path.display()
            );
            assert!(e.offset() <= cut);
        }
        for cut in ex_start..bytes.len() {
            let Packet::InfoResponse(r) = decode(&bytes[..cut]).unwrap() else {
                panic!()
            };
            let info = server_info(&r, cut);
            assert!(info.truncated, "{} cut at {cut}", path.display());
            assert_eq!(info.players.map(|p| p.len()), Some(d.players.len()));
        }
    }
}

#[test]
fn err_fixtures_pass_the_oracle() {
    for (_, bytes) in cases("err") {
        check_decode(&bytes);
    }
}
