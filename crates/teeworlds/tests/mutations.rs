//! A seeded, deterministic fuzz pass that runs with the normal tests: every fixture and the
//! emulators' replies mutated thousands of times (bit flips, truncation, inserted NULs and
//! varint bytes, spliced inputs) through the same oracles as the cargo-fuzz targets.
//! Decoders must never panic, errors must point inside the datagram, and what decodes and
//! re-encodes must decode to the same packet.

use fragstat_teeworlds::Encode;
use std::net::SocketAddr;

use fragstat_teeworlds::emulate::{EmulatedServer, Flavor, ServerConfig};
use fragstat_teeworlds::fuzzing::{check_decode, check_http};
use fragstat_teeworlds::seven;
use fragstat_testkit::mutate::{fixture_corpus, Mutator};

const TEEWORLDS: Mutator<'static> = Mutator {
    bytes: &[0, 0x80, 0xc0, 0xff, b'-', b'9', 0x40, 0x21],
    pieces: &[
        b"\x80\x80\x80\x80\x80\x80",
        b"63\0\0",
        b"\xff\xff\xff\xffiex+",
        b"-2147483648\0",
        b"xe\0\0\0\0",
    ],
    special: None,
};

fn corpus() -> Vec<Vec<u8>> {
    let mut out = fixture_corpus("teeworlds");
    let me: SocketAddr = "127.0.0.1:9".parse().unwrap();
    for flavor in [Flavor::Vanilla06, Flavor::Teeworlds07, Flavor::Ddnet] {
        let s = EmulatedServer::new(ServerConfig::sample(
            flavor,
            "Mütant".as_bytes(),
            70.min(flavor.max_clients()),
        ));
        for p in s.extended_info(0x1234) {
            out.extend(p.to_bytes().ok());
        }
        for i in s.legacy_info(3) {
            out.extend(fragstat_teeworlds::six::Packet::Info64(i).to_bytes().ok());
        }
        out.extend(
            seven::Packet::Connless {
                token: 1,
                response_token: 2,
                body: seven::Body::Info(s.seven_info(-7)),
            }
            .to_bytes()
            .ok(),
        );
        out.extend(s.respond(me, &seven::Packet::token_request(5).to_bytes().unwrap()));
    }
    assert!(out.len() >= 30);
    out
}

#[test]
fn mutated_datagrams_never_panic_and_round_trip() {
    let corpus = corpus();
    TEEWORLDS.run(0x7ee, &corpus, 1500, check_decode);
}

#[test]
fn mutated_server_lists_never_panic() {
    let body = br#"{"servers":[{"addresses":["tw-0.6+udp://1.2.3.4:8303","tw-0.7+udp://[::1]:8303"],"location":"eu:de","info":{"max_clients":64,"max_players":64,"passworded":false,"game_type":"DDraceNetwork","name":"x","map":{"name":"Tutorial","size":5},"version":"0.6.4, 16.4","clients":[{"name":"a","clan":"","country":-1,"score":-9999,"is_player":true,"afk":false}]}}]}"#;
    let corpus = vec![body.to_vec()];
    TEEWORLDS.run(0x4770, &corpus, 5000, check_http);
}
