//! A seeded, deterministic fuzz pass that runs with the normal tests: every ETQW fixture
//! mutated thousands of times (the testkit's mutations plus terminators, slot markers and a
//! changed server type near the end) through the same oracle as the cargo-fuzz target.
//! Decoders must never panic.

use fragstat_etqw::fuzzing::check_decode;
use fragstat_testkit::mutate::{fixture_corpus, Mutator};

const ETQW: Mutator<'static> = Mutator {
    bytes: &[0, 0x20, 0x1f, 0x01, 0xff, b'\n'],
    pieces: &[],
    special: Some(|rng, d| {
        // Near the end: the server type and its fields.
        if d.len() > 30 {
            let i = d.len() - rng.usize(1..30);
            d[i] = rng.u8(0..3);
        }
    }),
};

#[test]
fn mutated_fixtures_never_panic_and_round_trip() {
    let mut corpus = fixture_corpus("etqw");
    corpus.push(b"\xff\xffgetInfoEx\0\0\0\0\0".to_vec());
    corpus.push(b"127.0.0.1:27733\n10.0.0.1:1\r\n".to_vec());
    assert!(corpus.len() >= 15);
    ETQW.run(0xe79a, &corpus, 2000, check_decode);
}
