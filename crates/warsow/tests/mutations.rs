//! A seeded, deterministic fuzz pass that runs with the normal tests: every fixture and a
//! few emulator replies mutated thousands of times (the testkit's mutations plus Warsow
//! separators and fragments) through the same oracle as the cargo-fuzz target. Decoders
//! must never panic, and what decodes and re-encodes must decode to the same packet.

use fragstat_testkit::mutate::{fixture_corpus, Mutator};
use fragstat_warsow::emulate::{EmulatedServer, ServerConfig};
use fragstat_warsow::fuzzing::check_decode;
use fragstat_warsow::Encode;
use fragstat_warsow::WarsowGame;

const WARSOW: Mutator<'static> = Mutator {
    bytes: &[b'\\', b'"', b'\n', 0, b':', b' ', b'-', 0xff, b'/'],
    pieces: &[
        b"\\\\EOT",
        b"\\\\u\\\\ 1/ 8",
        b" -9999 \"x\" 0\n",
        b"\\g_match_time\\12:00 / 20:00 overtime (in timeout)",
        b"\\g_match_score\\ A: 1 B: x",
        b"info\n",
    ],
    special: None,
};

fn corpus() -> Vec<Vec<u8>> {
    let mut out = fixture_corpus("warsow");
    for game in WarsowGame::ALL {
        let s = EmulatedServer::new(ServerConfig::sample(game, b"^1Mut^7ant", 5));
        out.extend(s.reply(true, Some(b"c1")));
        out.extend(s.reply(false, None));
        if let Ok(b) = fragstat_warsow::Packet::InfoReply(s.short_info()).to_bytes() {
            out.push(b);
        }
    }
    // A DarkPlaces status too long for its buffer, sent as an infoResponse.
    let mut big = ServerConfig::sample(WarsowGame::Nexuiz, b"Big", 0);
    big.max_clients = 64;
    big.set_players(64, 3);
    out.extend(EmulatedServer::new(big).reply(true, Some(b"c2")));
    out.push(b"\xff\xff\xff\xffinfo 21 full empty\n".to_vec());
    assert!(out.len() >= 12);
    out
}

#[test]
fn mutated_inputs_never_panic_and_round_trip() {
    let corpus = corpus();
    WARSOW.run(0x77a5, &corpus, 1500, check_decode);
}
