//! A seeded, deterministic fuzz pass that runs with the normal tests: every fixture mutated
//! thousands of times (the testkit's mutations plus Quake III separators and fragments)
//! through the same oracles as the cargo-fuzz targets. Decoders must never panic.

use fragstat_quake3_oob::fuzzing::{check_decode, check_infostring};
use fragstat_testkit::mutate::{fixture_corpus, Mutator};

const QUAKE3: Mutator<'static> = Mutator {
    bytes: &[b'\\', b'"', b'\n', 0, b'/', b' ', b'-', 0xff],
    pieces: &[
        b"\\EOT\0\0\0",
        b"\\EOF",
        b" 5 -3 \"x\" 2\n",
        b"\xff\xff\xff\xff",
    ],
    special: None,
};

#[test]
fn mutated_fixtures_never_panic_and_round_trip() {
    let corpus = fixture_corpus("quake3");
    assert!(corpus.len() >= 20);
    QUAKE3.run(0x5eed, &corpus, 3000, |m| {
        check_decode(m);
        let body = m.iter().position(|&b| b == b'\\').map_or(m, |i| &m[i..]);
        check_infostring(body);
    });
}
