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

const IW4X_LIST: Mutator<'static> = Mutator {
    bytes: &[b'{', b'}', b'[', b']', b'"', b':', b',', b'-', b'9', 0xff],
    pieces: &[
        b"{\"ip\":\"::1\",\"port\":65535}",
        b"\"port\":-1",
        b"\"ip\":null",
        b"1e400",
    ],
    special: None,
};

/// IW4x's HTTP list through the oracle of its cargo-fuzz target.
#[test]
fn mutated_iw4x_lists_never_panic_and_round_trip() {
    let corpus = vec![
        br#"{"servers":[{"ip":"127.0.0.1","port":28960,"protocol":152,"clients":3},{"ip":"::1","port":28961}]}"#.to_vec(),
        br#"{"servers":[]}"#.to_vec(),
    ];
    IW4X_LIST.run(
        0x1f4,
        &corpus,
        3000,
        fragstat_quake3_oob::fuzzing::check_iw4x_list,
    );
}

const PUSH: Mutator<'static> = Mutator {
    bytes: &[b' ', b'\\', b'-', b'9', 0, b'\n', 0xff],
    pieces: &[
        b"connect ",
        b" unknown ",
        b"\\0\\0\\3\\0\\",
        b"64",
        b"\xff\xff\xff\xff",
    ],
    special: None,
};

/// ET: Legacy's pushed datagrams (one per `sv_tracker.c` format) through the oracle of the
/// `quake3_push` cargo-fuzz target.
#[test]
fn mutated_pushes_never_panic_and_round_trip() {
    let corpus: Vec<Vec<u8>> = [
        &b"start"[..],
        b"stop",
        b"p",
        b"mapend",
        b"maprestart",
        b"map supply",
        b"connect 3 A1B2C3D4E5F60718293A4B5C6D7E8F90 ^1Foo Bar",
        b"name 3 unknown ^2Baz",
        b"disconnect 3",
        b"wsc 2",
        b"ws 1 0 0 0\\0\\0\\3\\0\\^2Spec",
        b"ws 0 1 5 3 7 2 1 0 4 6 10 0 0 0 0 0 0 0 0 12.5 0 1.25 0.10\\48\\12\\1\\2\\^1Foo",
    ]
    .iter()
    .map(|t| [&b"\xff\xff\xff\xff"[..], t].concat())
    .collect();
    PUSH.run(
        0x9054,
        &corpus,
        3000,
        fragstat_quake3_oob::fuzzing::check_push,
    );
}
