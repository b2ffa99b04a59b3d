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

const LISTS: Mutator<'static> = Mutator {
    bytes: &[b'\\', b'/', 0, b'1', b'9', 4, 5, 0xff],
    pieces: &[
        b"\\EOT",
        b"\\EOF",
        b"\x001\x002\x00",
        b"\x05\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01\x6d\x38",
        b"\x04\x7f\0\0\x01\x6d\x38",
    ],
    special: None,
};

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

/// The Dæmon `dual` packets and CoD4X's TCP stream through their cargo-fuzz oracles
/// (`quake3_daemon_list`, `quake3_cod4x_stream`).
#[test]
fn mutated_daemon_lists_and_cod4x_streams_never_panic_and_round_trip() {
    let corpus = fixture_corpus("quake3");
    let daemon: Vec<Vec<u8>> = corpus
        .iter()
        .filter(|b| b.windows(21).any(|w| w == b"getserversExtResponse"))
        .cloned()
        .collect();
    assert!(daemon.len() >= 3);
    LISTS.run(
        0xdae,
        &daemon,
        3000,
        fragstat_quake3_oob::fuzzing::check_daemon_list,
    );
    let streams: Vec<Vec<u8>> = corpus
        .iter()
        .filter(|b| b.windows(18).any(|w| w == b"getserversResponse"))
        .cloned()
        .collect();
    assert!(!streams.is_empty());
    LISTS.run(
        0xc0d4,
        &streams,
        3000,
        fragstat_quake3_oob::fuzzing::check_cod4x_stream,
    );
}

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
