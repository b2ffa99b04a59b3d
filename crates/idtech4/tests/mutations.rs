//! A seeded, deterministic fuzz pass that runs with the normal tests: every idTech 4 fixture
//! mutated thousands of times (the testkit's mutations plus terminators, slot markers and
//! changed protocol versions) through the same oracle as the cargo-fuzz target. Decoders
//! must never panic.

use fragstat_idtech4::fuzzing::check_decode;
use fragstat_testkit::mutate::{fixture_corpus, Mutator};

const IDTECH4: Mutator<'static> = Mutator {
    bytes: &[0, 0x20, 0x1f, 0x21, 0xff, b'^'],
    pieces: &[],
    special: Some(|rng, d| {
        // The protocol of an infoResponse (offset 19): another game's major.
        if d.len() > 22 {
            d[21] = rng.u8(0..6);
        }
    }),
};

#[test]
fn mutated_fixtures_never_panic_and_round_trip() {
    let mut corpus = fixture_corpus("idtech4");
    // The requests and list replies no capture has.
    corpus.push(b"\xff\xffgetInfo\0PiNGPoNG\0".to_vec());
    corpus.push(b"\xff\xffgetServers\0\0\0\0\0\0\0\0\0".to_vec());
    corpus.push(b"\xff\xffservers\0\x7f\0\0\x01\x92\x6c\x0a\0\0\x02\x01\0".to_vec());
    corpus.push(b"\xff\xffheartbeat\0".to_vec());
    assert!(corpus.len() >= 15);
    IDTECH4.run(0x001d_7ec4, &corpus, 2000, check_decode);
}
