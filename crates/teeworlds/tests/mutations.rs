//! A seeded, deterministic fuzz pass that runs with the normal tests: every fixture and the
//! emulators' replies mutated thousands of times (bit flips, truncation, inserted NULs and
//! varint bytes, spliced inputs) through the same oracles as the cargo-fuzz targets.
//! Decoders must never panic, errors must point inside the datagram, and what decodes and
//! re-encodes must decode to the same packet.

use std::net::SocketAddr;
use std::path::Path;

use fragstat_teeworlds::fuzzing::{check_decode, check_http};
use fragstat_teeworlds::server::{EmulatedServer, Flavor, ServerConfig};
use fragstat_teeworlds::seven;

fn corpus() -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/teeworlds");
    let mut out = Vec::new();
    for dir in [root.join("ok"), root.join("err")] {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "bin") {
                out.push(std::fs::read(p).unwrap());
            }
        }
    }
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

fn mutate(rng: &mut fastrand::Rng, input: &[u8], corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut d = input.to_vec();
    for _ in 0..rng.usize(1..5) {
        let len = d.len().max(1);
        match rng.u8(0..7) {
            0 => d.truncate(rng.usize(0..len)),
            1 if !d.is_empty() => {
                let i = rng.usize(0..d.len());
                d[i] ^= 1 << rng.u8(0..8);
            }
            2 => {
                let i = rng.usize(0..=d.len());
                const BYTES: [u8; 8] = [0, 0x80, 0xc0, 0xff, b'-', b'9', 0x40, 0x21];
                d.insert(i, BYTES[rng.usize(0..BYTES.len())]);
            }
            3 if !d.is_empty() => {
                let i = rng.usize(0..d.len());
                d.remove(i);
            }
            4 => {
                let other = &corpus[rng.usize(0..corpus.len())];
                let cut = rng.usize(0..=d.len());
                let from = rng.usize(0..=other.len());
                d.truncate(cut);
                d.extend_from_slice(&other[from..]);
            }
            5 => {
                let i = rng.usize(0..=d.len());
                const PIECES: [&[u8]; 5] = [
                    b"\x80\x80\x80\x80\x80\x80",
                    b"63\0\0",
                    b"\xff\xff\xff\xffiex+",
                    b"-2147483648\0",
                    b"xe\0\0\0\0",
                ];
                d.splice(i..i, PIECES[rng.usize(0..PIECES.len())].iter().copied());
            }
            _ => {
                if let Some(b) = d.last().copied() {
                    d.push(b);
                }
            }
        }
    }
    d
}

#[test]
fn mutated_datagrams_never_panic_and_round_trip() {
    let corpus = corpus();
    let mut rng = fastrand::Rng::with_seed(0x7ee);
    for input in &corpus {
        check_decode(input);
        for _ in 0..1500 {
            check_decode(&mutate(&mut rng, input, &corpus));
        }
    }
}

#[test]
fn mutated_server_lists_never_panic() {
    let body = br#"{"servers":[{"addresses":["tw-0.6+udp://1.2.3.4:8303","tw-0.7+udp://[::1]:8303"],"location":"eu:de","info":{"max_clients":64,"max_players":64,"passworded":false,"game_type":"DDraceNetwork","name":"x","map":{"name":"Tutorial","size":5},"version":"0.6.4, 16.4","clients":[{"name":"a","clan":"","country":-1,"score":-9999,"is_player":true,"afk":false}]}}]}"#;
    let corpus = vec![body.to_vec()];
    let mut rng = fastrand::Rng::with_seed(0x4770);
    check_http(body);
    for _ in 0..5000 {
        check_http(&mutate(&mut rng, body, &corpus));
    }
}
