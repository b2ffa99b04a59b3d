//! Fixture tests until the workspace's one data-driven runner (tests/tests/fixtures.rs) reads
//! this family: every `tests/fixtures/warsow/{ok,err}/<case>.bin` is decoded with the
//! registry game its `<case>.json` names, and the JSON's hand-checked `expect` block is
//! matched against the decode's JSON (`decoded` / `partial` for what must decode, `error`
//! with kind, field and offset for what must fail). `<case>.decoded` holds the full decode
//! as `fragstat decode` prints it (rewrite with `UPDATE_EXPECT=1`).

use std::path::{Path, PathBuf};

use fragstat_core::registry::{DecodedJson, Game as _};
use fragstat_warsow::registry::WarsowFamilyGame;
use fragstat_warsow::Game;
use serde_json::{json, Value};

fn dir(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/warsow")
        .join(kind)
}

/// Partial match: every key of an expected object must match; arrays match element by
/// element and in length; `{"$len": N}` checks a length, `{"$each": X}` every element.
fn check(want: &Value, got: &Value, path: &str, errs: &mut Vec<String>) {
    match want {
        Value::Object(o) if o.contains_key("$len") || o.contains_key("$each") => {
            let len = match got {
                Value::Array(a) => Some(a.len()),
                Value::String(s) => Some(s.chars().count()),
                _ => None,
            };
            if let Some(n) = o.get("$len") {
                if len.map(|l| l as u64) != n.as_u64() {
                    errs.push(format!("{path}: length {len:?}, expected {n}"));
                }
            }
            if let Some(each) = o.get("$each") {
                match got {
                    Value::Array(a) => {
                        for (i, g) in a.iter().enumerate() {
                            check(each, g, &format!("{path}[{i}]"), errs);
                        }
                    }
                    other => errs.push(format!("{path}: not an array: {other}")),
                }
            }
        }
        Value::Object(o) => match got {
            Value::Object(g) => {
                for (k, w) in o {
                    match g.get(k) {
                        Some(v) => check(w, v, &format!("{path}.{k}"), errs),
                        None => errs.push(format!("{path}.{k}: missing")),
                    }
                }
            }
            other => errs.push(format!("{path}: expected an object, got {other}")),
        },
        Value::Array(a) => match got {
            Value::Array(g) if g.len() == a.len() => {
                for (i, (w, v)) in a.iter().zip(g).enumerate() {
                    check(w, v, &format!("{path}[{i}]"), errs);
                }
            }
            other => errs.push(format!(
                "{path}: expected {} elements, got {other}",
                a.len()
            )),
        },
        w => {
            if w != got {
                errs.push(format!("{path}: {got}, expected {w}"));
            }
        }
    }
}

fn game(id: &str) -> WarsowFamilyGame {
    let g = Game::ALL
        .into_iter()
        .find(|g| g.id() == id)
        .unwrap_or_else(|| panic!("unknown game {id}"));
    WarsowFamilyGame::new(g)
}

#[test]
fn every_fixture_meets_its_expectation() {
    let mut failures = Vec::new();
    let mut cases = 0;
    for kind in ["ok", "err"] {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir(kind))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "bin"))
            .collect();
        paths.sort();
        for bin in paths {
            cases += 1;
            let name = bin.file_stem().unwrap().to_string_lossy().into_owned();
            let bytes = std::fs::read(&bin).unwrap();
            let meta: Value =
                serde_json::from_slice(&std::fs::read(bin.with_extension("json")).unwrap())
                    .unwrap();
            assert_eq!(
                meta["payload_bytes"].as_u64(),
                Some(bytes.len() as u64),
                "{name}"
            );
            let g = game(meta["game"].as_str().unwrap());
            let expect = meta["expect"].as_object().unwrap();
            let decoded = g.decode(&bytes);
            let (text, actual) = match &decoded {
                Ok(d) => {
                    let text = serde_json::to_string_pretty(&DecodedJson {
                        game: g.id(),
                        decoded: d,
                    })
                    .unwrap();
                    let v: Value = serde_json::from_str(&text).unwrap();
                    (text, Ok(v))
                }
                Err(e) => {
                    let v = json!({"kind": e.kind(), "field": e.field(), "offset": e.offset(),
                        "message": e.to_string()});
                    (
                        serde_json::to_string_pretty(&json!({ "error": v })).unwrap(),
                        Err(v),
                    )
                }
            };
            let snapshot = bin.with_extension("decoded");
            let text = text + "\n";
            if std::env::var_os("UPDATE_EXPECT").is_some() {
                std::fs::write(&snapshot, &text).unwrap();
            } else if std::fs::read_to_string(&snapshot).ok().as_deref() != Some(&text) {
                failures.push(format!(
                    "{name}: {} differs from the decode",
                    snapshot.display()
                ));
            }
            let mut errs = Vec::new();
            match (
                kind,
                expect.get("decoded"),
                expect.get("partial"),
                expect.get("error"),
                &actual,
            ) {
                ("ok", Some(w), None, None, Ok(v)) | ("err", None, Some(w), None, Ok(v)) => {
                    check(w, v, "", &mut errs)
                }
                ("err", None, None, Some(w), Err(v)) => {
                    for k in ["kind", "field", "offset"] {
                        assert!(w.get(k).is_some(), "{name}: expect.error needs {k}");
                    }
                    check(w, v, "error", &mut errs)
                }
                (_, _, _, _, Err(v)) => errs.push(format!("failed to decode: {}", v["message"])),
                _ => errs.push("decoded, but the expectation says otherwise".into()),
            }
            failures.extend(errs.into_iter().map(|e| format!("{name}: {e}")));
        }
    }
    assert!(cases >= 6, "only {cases} fixtures");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
