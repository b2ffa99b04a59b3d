//! Data-driven fixture tests: every `tests/fixtures/quake3/{ok,err}/<case>.bin` is decoded.
//!
//! `ok` cases are real replies from public sources, and the folder root holds replies recorded
//! from real servers with `cargo xtask capture`; their `<case>.json` holds hand-checked
//! `expected` fields, each of which is compared here. Every case also has a `<case>.decoded` snapshot of the full
//! decode (regenerate with `UPDATE_EXPECT=1`). `err` cases are malformed variants whose
//! required outcome is asserted per case below.

use std::path::{Path, PathBuf};

use fragstat_quake3_oob::{decode, game::keys, text, Packet, StatusResponse, Terminator};
use serde_json::Value;

fn dir(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/quake3")
        .join(kind)
}

/// Real replies: public captures (`ok/`) and our own recordings (the folder root).
fn real_cases() -> Vec<(String, PathBuf, Vec<u8>, Value)> {
    let mut all = Vec::new();
    for kind in ["ok", ""] {
        for (name, bytes, meta) in cases(kind) {
            all.push((name, dir(kind), bytes, meta));
        }
    }
    all
}

fn cases(kind: &str) -> Vec<(String, Vec<u8>, Value)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir(kind)).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "bin") {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let bytes = std::fs::read(&path).unwrap();
            let meta: Value =
                serde_json::from_slice(&std::fs::read(path.with_extension("json")).unwrap())
                    .unwrap();
            out.push((name, bytes, meta));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(!out.is_empty(), "no fixtures in {kind}");
    out
}

/// Expected strings are JSON strings, or `{"latin1": …, "hex": …}` for bytes that are not UTF-8.
fn expected_bytes(v: &Value) -> Vec<u8> {
    match v {
        Value::String(s) => s.as_bytes().to_vec(),
        Value::Object(o) => {
            let hex = o["hex"].as_str().unwrap();
            (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect()
        }
        other => panic!("not a string: {other}"),
    }
}

fn esc(b: &[u8]) -> String {
    b.escape_ascii().to_string()
}

fn dump(p: &Packet) -> String {
    let mut s = String::new();
    match p {
        Packet::InfoResponse(i) => {
            s.push_str("infoResponse\n");
            for (k, v) in i.info.pairs() {
                s.push_str(&format!("  {} = {}\n", esc(k), esc(v)));
            }
        }
        Packet::StatusResponse(st) => {
            s.push_str("statusResponse\n");
            for (k, v) in st.info.pairs() {
                s.push_str(&format!("  {} = {}\n", esc(k), esc(v)));
            }
            for pl in &st.players {
                s.push_str(&format!(
                    "  player score={:?} ping={} team={:?} name={} display={:?}\n",
                    pl.score,
                    pl.ping,
                    pl.team,
                    esc(&pl.name),
                    text::display(&pl.name)
                ));
            }
            for sk in &st.skipped {
                s.push_str(&format!("  skipped @{}: {}\n", sk.offset, esc(&sk.line)));
            }
            s.push_str(&format!("  truncated={}\n", st.truncated));
        }
        Packet::ServersResponse(l) => {
            s.push_str(&format!("serversResponse ext={}\n", l.ext));
            for a in &l.servers {
                s.push_str(&format!("  {a}\n"));
            }
            s.push_str(&format!(
                "  terminator={:?} trailing={}\n",
                l.terminator,
                esc(&l.trailing)
            ));
        }
        other => s.push_str(&format!("{other:?}\n")),
    }
    s
}

fn check_players(name: &str, st: &StatusResponse, expected: &[Value]) {
    assert_eq!(st.players.len(), expected.len(), "{name}: player count");
    for (i, (got, want)) in st.players.iter().zip(expected).enumerate() {
        assert_eq!(
            got.name,
            expected_bytes(&want["name"]),
            "{name}: player {i} name"
        );
        assert_eq!(
            got.ping,
            want["ping"].as_i64().unwrap() as i32,
            "{name}: player {i} ping"
        );
        if let Some(score) = want.get("score") {
            assert_eq!(
                got.score,
                Some(score.as_i64().unwrap() as i32),
                "{name}: player {i} score"
            );
        }
        if let Some(team) = want.get("team") {
            assert_eq!(
                got.team,
                Some(team.as_i64().unwrap() as i32),
                "{name}: player {i} team"
            );
        }
    }
}

#[test]
fn ok_fixtures_match_hand_checked_fields() {
    for (name, folder, bytes, meta) in real_cases() {
        let e = &meta["expected"];
        assert!(
            e.is_object(),
            "{name}: no hand-checked `expected` in its .json"
        );
        let packet = decode(&bytes).unwrap_or_else(|err| panic!("{name}: {err}"));
        expect_test::expect_file![folder.join(format!("{name}.decoded"))].assert_eq(&dump(&packet));
        let info = match (&packet, e["command"].as_str().unwrap()) {
            (Packet::StatusResponse(st), "statusResponse") => {
                check_players(&name, st, e["players"].as_array().unwrap());
                assert!(st.skipped.is_empty(), "{name}: skipped {:?}", st.skipped);
                assert!(!st.truncated, "{name}");
                st.info.clone()
            }
            (Packet::InfoResponse(i), "infoResponse") => i.info.clone(),
            (Packet::ServersResponse(l), "getserversResponse") => {
                let want: Vec<String> = e["servers"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap().to_string())
                    .collect();
                let got: Vec<String> = l.servers.iter().map(|a| a.to_string()).collect();
                assert_eq!(got, want, "{name}");
                assert_eq!(got.len() as u64, e["server_count"].as_u64().unwrap());
                assert_eq!(e["terminator"], "EOT");
                assert!(
                    matches!(l.terminator, Some(Terminator::Eot | Terminator::EotBare)),
                    "{name}"
                );
                assert_eq!(
                    esc(&l.trailing),
                    e["trailing_after_terminator_hex"].as_str().unwrap()
                );
                continue;
            }
            (p, cmd) => panic!("{name}: decoded {p:?}, expected {cmd}"),
        };
        let manifest = name.contains("fsmanifest");
        for (k, v) in e["info"].as_object().unwrap() {
            let got = info
                .get(k)
                .unwrap_or_else(|| panic!("{name}: missing key {k:?}"));
            if manifest && k == "fs_manifest" {
                // The hand-checked value is the naive first line; we keep the whole multi-line value.
                assert!(got.starts_with(&expected_bytes(v)), "{name}: fs_manifest");
                assert!(
                    got.windows(2).any(|w| w == b"\n "),
                    "{name}: fs_manifest keeps its lines"
                );
            } else {
                assert_eq!(got, expected_bytes(v).as_slice(), "{name}: key {k:?}");
            }
        }
        if let Some(after) = e.get("expected_by_pyq3serverlist_info_keys_after_manifest") {
            for (k, v) in after.as_object().unwrap() {
                assert_eq!(
                    info.get(k),
                    Some(expected_bytes(v).as_slice()),
                    "{name}: key {k:?} after fs_manifest"
                );
            }
        }
        assert_eq!(
            info.get_any(keys::NAME),
            Some(expected_bytes(&e["server_name"]).as_slice()),
            "{name}: server name"
        );
        assert_eq!(
            info.get_any(keys::MAP),
            Some(expected_bytes(&e["map"]).as_slice()),
            "{name}: map"
        );
        assert_eq!(
            info.get_int(keys::MAX_PLAYERS),
            e["max_players"].as_i64(),
            "{name}: max players"
        );
        if let Packet::InfoResponse(_) = packet {
            assert_eq!(
                info.get_int(keys::CLIENTS),
                e["player_count"].as_i64(),
                "{name}: clients"
            );
        }
    }
}

#[test]
fn ok_fixtures_round_trip_through_the_encoder() {
    for (name, _, bytes, _) in real_cases() {
        let packet = decode(&bytes).unwrap();
        let again = decode(&packet.to_bytes().unwrap_or_else(|e| panic!("{name}: {e}"))).unwrap();
        assert_eq!(again, packet, "{name}");
    }
}

#[test]
fn err_fixtures_fail_or_flag_as_documented() {
    for (name, bytes, _) in cases("err") {
        let result = decode(&bytes);
        let shown = match &result {
            Ok(p) => dump(p),
            Err(e) => format!("error: {e}\n"),
        };
        expect_test::expect_file![dir("err").join(format!("{name}.decoded"))].assert_eq(&shown);
        match name.as_str() {
            "q3-foreign-variant-mohaa-status" => {
                let Ok(Packet::StatusResponse(st)) = result else {
                    panic!("{name}: {result:?}")
                };
                assert_eq!(st.players.len(), 24, "{name}");
                assert!(
                    st.players.iter().all(|p| p.score.is_none()),
                    "{name}: ping must not become score"
                );
            }
            "q3-status-bad-score" => {
                let Ok(Packet::StatusResponse(st)) = result else {
                    panic!("{name}: {result:?}")
                };
                assert_eq!(st.players.len(), 9, "{name}");
                assert_eq!(st.skipped.len(), 1, "{name}");
                assert!(st.skipped[0].line.starts_with(b"abc "), "{name}");
                assert_eq!(
                    st.info.get("Score_Time"),
                    Some(&b"Starting"[..]),
                    "{name}: infostring intact"
                );
                assert!(!st.truncated);
            }
            "q3-status-truncated-mid-playername" => {
                let Ok(Packet::StatusResponse(st)) = result else {
                    panic!("{name}: {result:?}")
                };
                assert_eq!(st.players.len(), 9, "{name}");
                assert!(st.truncated, "{name}: must be flagged");
            }
            "q3-status-header-only" => {
                let err = result.unwrap_err();
                assert!(err.to_string().contains("missing infostring"), "{err}");
                assert_eq!(err.offset(), 18);
            }
            "q3-status-odd-infostring" => {
                let err = result.unwrap_err();
                assert!(err.to_string().contains("odd number of fields"), "{err}");
            }
            "q3-status-wrong-header-3ff" => {
                let err = result.unwrap_err();
                assert!(err.to_string().starts_with("bad header"), "{err}");
            }
            other => panic!("no expectation written for err case {other}"),
        }
    }
}
