//! The exchanges fed with real datagrams from tests/fixtures/teeworlds: multi-datagram
//! replies assembled in any order with duplicates dropped, the 0.7 handshake, and the
//! token mismatches of the `err/` cases (each names, in its `exchange` block, the query that
//! must ignore it).

use fragstat_teeworlds::Encode;
use std::path::{Path, PathBuf};

use fragstat_core::{Exchange, Verdict};
use fragstat_teeworlds::exchange::{Mode, Query6, Query7};
use serde_json::Value;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/teeworlds")
}

fn bin(kind: &str, name: &str) -> Vec<u8> {
    std::fs::read(dir().join(kind).join(format!("{name}.bin"))).unwrap()
}

fn kind<O>(v: &Verdict<O>) -> &'static str {
    match v {
        Verdict::Ignore(_) => "ignore",
        Verdict::Invalid(_) => "invalid",
        Verdict::Progress { .. } => "progress",
        Verdict::Advance => "advance",
        Verdict::Done { .. } => "done",
        _ => "other",
    }
}

fn done<O>(v: Verdict<O>) -> O {
    match v {
        Verdict::Done { output, .. } => output.unwrap_or_else(|e| panic!("{e}")),
        other => panic!("not done: {}", kind(&other)),
    }
}

#[test]
fn extended_reply_assembles_in_any_order() {
    let main = bin("ok", "ddnet-164-iext-60clients-main");
    let more = bin("ok", "ddnet-164-iexplus-60clients-more");
    for order in [[&main, &more], [&more, &main]] {
        let mut q = Query6::with_token(Mode::Extended, 0x12342a);
        assert_eq!(kind(&q.on_datagram(order[0])), "progress");
        assert_eq!(kind(&q.on_datagram(order[0])), "progress", "a duplicate");
        let info = done(q.on_datagram(order[1]));
        assert_eq!((info.num_players, info.max_players), (60, 64));
        let players = info.players.unwrap();
        assert_eq!(players.len(), 60);
        assert_eq!(players[0].name.display(), "Ünï ☃ 0");
        assert_eq!(players[59].name.display(), "Tee 59");
        assert!(
            !info.truncated && info.warnings.is_empty(),
            "{:?}",
            info.warnings
        );
    }
    // A query with another token ignores the same datagrams.
    let mut q = Query6::with_token(Mode::Extended, 0x12342b);
    assert_eq!(kind(&q.on_datagram(&main)), "ignore");
}

#[test]
fn legacy_reply_assembles_by_offset() {
    let parts: Vec<Vec<u8>> = (1..=3)
        .map(|i| bin("ok", &format!("ddnet-164-dtsf-60clients-part{i}")))
        .collect();
    let mut q = Query6::with_token(Mode::Legacy64, 0x2a);
    assert_eq!(kind(&q.on_datagram(&parts[2])), "progress");
    assert_eq!(kind(&q.on_datagram(&parts[0])), "progress");
    assert_eq!(kind(&q.on_datagram(&parts[2])), "progress", "a duplicate");
    let info = done(q.on_datagram(&parts[1]));
    let names: Vec<String> = info
        .players
        .unwrap()
        .iter()
        .map(|p| p.name.display())
        .collect();
    assert_eq!(names.len(), 60);
    assert_eq!(names[24], "Tee 24");
    assert_eq!(names[49], "Ünï ☃ 49");
}

#[test]
fn seven_handshake_with_real_replies() {
    let mut q = Query7::with_tokens(0x0badbeef, 0x0badbeef);
    assert_eq!(
        kind(&q.on_datagram(&bin("ok", "teeworlds-075-token-reply"))),
        "advance"
    );
    let info = done(q.on_datagram(&bin("ok", "teeworlds-075-inf3-empty")));
    assert_eq!(info.name.display(), "My TW7 Server");
}

#[test]
fn token_mismatches_are_ignored() {
    let mut checked = 0;
    for e in std::fs::read_dir(dir().join("err")).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let meta: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let Some(ex) = meta.get("exchange") else {
            continue;
        };
        let bytes = std::fs::read(path.with_extension("bin")).unwrap();
        let int = |k: &str| ex[k].as_u64().unwrap_or_else(|| panic!("{path:?}: {k}"));
        let verdict = match ex["query"].as_str().unwrap() {
            "extended" => {
                let mut q = Query6::with_token(Mode::Extended, int("token") as u32);
                kind(&q.on_datagram(&bytes))
            }
            "seven" => {
                let mut q =
                    Query7::with_tokens(int("client_token") as u32, int("browse_token") as i32);
                let token = fragstat_teeworlds::seven::Packet::Token {
                    to: int("client_token") as u32,
                    token: int("server_token") as u32,
                }
                .to_bytes()
                .unwrap();
                assert_eq!(kind(&q.on_datagram(&token)), "advance");
                kind(&q.on_datagram(&bytes))
            }
            other => panic!("{path:?}: unknown query {other}"),
        };
        assert_eq!(verdict, ex["verdict"].as_str().unwrap(), "{path:?}");
        checked += 1;
    }
    assert!(checked >= 3, "only {checked} exchange cases");
}
