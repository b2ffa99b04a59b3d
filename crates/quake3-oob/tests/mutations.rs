//! A seeded, deterministic fuzz pass that runs with the normal tests: every fixture mutated
//! thousands of times (bit flips, truncation, inserted separators, spliced fixtures) through
//! the same oracles as the cargo-fuzz targets. Decoders must never panic.

use std::path::Path;

use fragstat_quake3_oob::fuzzing::{check_decode, check_infostring};

fn corpus() -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/quake3");
    let mut out = Vec::new();
    for dir in [root.join("ok"), root.join("err")] {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "bin") {
                out.push(std::fs::read(p).unwrap());
            }
        }
    }
    assert!(out.len() >= 20);
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
                const BYTES: [u8; 8] = [b'\\', b'"', b'\n', 0, b'/', b' ', b'-', 0xff];
                let b = BYTES[rng.usize(0..BYTES.len())];
                d.insert(i, b);
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
                const PIECES: [&[u8]; 4] = [
                    b"\\EOT\0\0\0",
                    b"\\EOF",
                    b" 5 -3 \"x\" 2\n",
                    b"\xff\xff\xff\xff",
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
fn mutated_fixtures_never_panic_and_round_trip() {
    let corpus = corpus();
    let mut rng = fastrand::Rng::with_seed(0x5eed);
    for input in &corpus {
        check_decode(input);
        for _ in 0..3000 {
            let m = mutate(&mut rng, input, &corpus);
            check_decode(&m);
            let body = m
                .iter()
                .position(|&b| b == b'\\')
                .map_or(&m[..], |i| &m[i..]);
            check_infostring(body);
        }
    }
}
