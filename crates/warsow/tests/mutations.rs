//! A seeded, deterministic fuzz pass that runs with the normal tests: every fixture and a
//! few emulator replies mutated thousands of times (bit flips, truncation, inserted
//! separators, spliced inputs) through the same oracle as the cargo-fuzz target. Decoders
//! must never panic, and what decodes and re-encodes must decode to the same packet.

use std::path::Path;

use fragstat_warsow::fuzzing::check_decode;
use fragstat_warsow::server::{EmulatedServer, ServerConfig};
use fragstat_warsow::Game;

fn corpus() -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/warsow");
    let mut out = Vec::new();
    for dir in [root.join("ok"), root.join("err")] {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "bin") {
                out.push(std::fs::read(p).unwrap());
            }
        }
    }
    for game in Game::ALL {
        let s = EmulatedServer::new(ServerConfig::sample(game, b"^1Mut^7ant", 5));
        out.push(s.reply(true, Some(b"c1")));
        out.push(s.reply(false, None));
        if let Ok(b) = fragstat_warsow::Packet::InfoReply(s.short_info()).to_bytes() {
            out.push(b);
        }
    }
    out.push(b"\xff\xff\xff\xffinfo 21 full empty\n".to_vec());
    assert!(out.len() >= 12);
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
                const BYTES: [u8; 9] = [b'\\', b'"', b'\n', 0, b':', b' ', b'-', 0xff, b'/'];
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
                const PIECES: [&[u8]; 6] = [
                    b"\\\\EOT",
                    b"\\\\u\\\\ 1/ 8",
                    b" -9999 \"x\" 0\n",
                    b"\\g_match_time\\12:00 / 20:00 overtime (in timeout)",
                    b"\\g_match_score\\ A: 1 B: x",
                    b"info\n",
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
fn mutated_inputs_never_panic_and_round_trip() {
    let corpus = corpus();
    let mut rng = fastrand::Rng::with_seed(0x77a5);
    for input in &corpus {
        check_decode(input);
        for _ in 0..1500 {
            check_decode(&mutate(&mut rng, input, &corpus));
        }
    }
}
