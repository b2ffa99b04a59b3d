//! The one fixture runner, for every family: each `tests/fixtures/<family>/{ok,err}/<case>.bin`
//! is decoded with the registry game its `<case>.json` names (`"game"`), through
//! `fragstat::game(id).decode(bytes)`, and compared with the JSON's `expect` block
//! (tests/fixtures/README.md); `<case>.decoded` is the full decode, pretty JSON, compared
//! byte for byte (rewrite with `UPDATE_EXPECT=1`). Every server decode must validate against
//! docs/server.schema.json.

use std::path::Path;

use fragstat::core::model::{Player, ServerInfo, Text};
use fragstat::core::record::{Record, Status};
use fragstat::core::registry::{Decoded, DecodedJson};
use fragstat::core::DecodeError;
use fragstat_testkit::fixtures::{self, Case, Kind};
use fragstat_testkit::{expect, server_schema, validate_server};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The JSON of a decode error, as `expect.error` matches it.
fn error_json(e: &DecodeError) -> Value {
    json!({
        "kind": e.kind(),
        "field": e.field(),
        "offset": e.offset(),
        "message": e.to_string(),
    })
}

/// Leaf checks in an expectation: scalars and matcher operators.
fn checks(expected: &Value) -> usize {
    match expected {
        Value::Object(o) if o.keys().all(|k| k.starts_with('$')) && !o.is_empty() => o
            .iter()
            .map(|(k, v)| match k.as_str() {
                "$each" | "$contains" => 1 + checks(v),
                _ => 1,
            })
            .sum(),
        Value::Object(o) => o.values().map(checks).sum(),
        Value::Array(a) => 1 + a.iter().map(checks).sum::<usize>(),
        _ => 1,
    }
}

/// Runs one case; the number of checks made, or every failure.
fn run_case(case: &Case) -> Result<usize, Vec<String>> {
    let fail = |m: String| vec![m];
    let meta: Value = std::fs::read(&case.json)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
        .map_err(|e| fail(format!("{}: {e}", case.json.display())))?;
    let bytes = std::fs::read(&case.bin).map_err(|e| fail(format!("{e}")))?;
    if let Some(n) = meta.get("payload_bytes") {
        if n.as_u64() != Some(bytes.len() as u64) {
            return Err(fail(format!(
                "payload_bytes is {n}, the .bin has {} bytes",
                bytes.len()
            )));
        }
    }
    if let Some(want) = meta.get("payload_sha256") {
        let got: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if want.as_str() != Some(got.as_str()) {
            return Err(fail(format!(
                "payload_sha256 is {want}, the .bin's is {got}"
            )));
        }
    }
    let id = meta["game"]
        .as_str()
        .ok_or_else(|| fail("no \"game\": \"<registry id>\" in its .json".into()))?;
    let game = fragstat::game(id).ok_or_else(|| fail(format!("unknown game {id:?}")))?;
    if game.id() != id {
        return Err(fail(format!(
            "game {id:?} is an alias: write its id {:?}",
            game.id()
        )));
    }
    if game.family() != case.family {
        return Err(fail(format!(
            "game {id:?} is of family {:?}, not {:?}",
            game.family(),
            case.family
        )));
    }
    let Some(expectation) = meta.get("expect").and_then(Value::as_object) else {
        return Err(fail("no \"expect\" block in its .json".into()));
    };
    if let Some(why) = expectation.get("unchecked") {
        return Err(fail(format!(
            "its expect block is marked unchecked ({why}): check it against the bytes, then remove \"unchecked\""
        )));
    }
    let keys: Vec<&str> = expectation.keys().map(String::as_str).collect();
    let (key, want) = match (case.kind, keys.as_slice()) {
        (Kind::Ok, ["decoded"]) | (Kind::Err, ["error" | "partial"]) => {
            (keys[0], &expectation[keys[0]])
        }
        (Kind::Ok, _) => {
            return Err(fail(format!(
                "an ok case's expect has exactly \"decoded\", not {keys:?}"
            )))
        }
        (Kind::Err, _) => {
            return Err(fail(format!(
                "an err case's expect has exactly one of \"error\" or \"partial\", not {keys:?}"
            )))
        }
    };
    match want {
        Value::Object(o) if !o.is_empty() => {}
        _ => return Err(fail(format!("expect.{key} is empty or not an object"))),
    }
    if key == "error" {
        let missing: Vec<&str> = ["kind", "field", "offset"]
            .into_iter()
            .filter(|k| want.get(k).is_none())
            .collect();
        if !missing.is_empty() {
            return Err(fail(format!("expect.error needs {missing:?}")));
        }
    }

    let decoded = game.decode(&bytes);
    // The snapshot is what `fragstat decode` prints; the matcher reads it back (a key the
    // server repeated is written twice there and read back with its last value).
    let (snapshot, actual) = match &decoded {
        Ok(d) => {
            let text = serde_json::to_string_pretty(&DecodedJson {
                game: game.id(),
                decoded: d,
            })
            .map_err(|e| fail(format!("serializing the decode: {e}")))?;
            let v: Value = serde_json::from_str(&text)
                .map_err(|e| fail(format!("reading the decode back: {e}")))?;
            (text, Ok(v))
        }
        Err(e) => {
            let v = error_json(e);
            let text = serde_json::to_string_pretty(&json!({ "error": v })).unwrap_or_default();
            (text, Err(v))
        }
    };
    let mut failures = Vec::new();
    let text = snapshot + "\n";
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        if let Err(e) = std::fs::write(&case.decoded, &text) {
            failures.push(format!("{}: {e}", case.decoded.display()));
        }
    } else {
        match std::fs::read_to_string(&case.decoded) {
            Ok(old) if old == text => {}
            Ok(old) => failures.push(format!(
                "{} differs from the decode (UPDATE_EXPECT=1 rewrites it):\n{}",
                case.decoded.display(),
                first_difference(&old, &text)
            )),
            Err(e) => failures.push(format!(
                "{}: {e} (UPDATE_EXPECT=1 writes it)",
                case.decoded.display()
            )),
        }
    }

    match (key, &actual) {
        ("decoded" | "partial", Ok(v)) => {
            if let Err(errs) = expect::check(want, v) {
                failures.extend(errs);
            }
        }
        ("error", Err(v)) => {
            if let Err(errs) = expect::check(want, v) {
                failures.extend(errs.into_iter().map(|e| format!("error {e}")));
            }
        }
        ("error", Ok(_)) => failures.push("decoded, but expect.error says it must fail".into()),
        (_, Err(v)) => failures.push(format!("failed to decode: {}", v["message"])),
        _ => failures.push(format!("expect.{key} is not an expectation")),
    }
    if let (Ok(Decoded::Server(info)), Ok(v)) = (&decoded, &actual) {
        if let Err(e) = validate_server(v) {
            failures.push(format!(
                "does not validate against docs/server.schema.json:\n{e}"
            ));
        }
        // The NDJSON writer of a scan writes what serialization writes, byte for byte.
        let record = Record::online(
            Some("192.0.2.7:27960".into()),
            game.id(),
            (**info).clone(),
            Some(std::time::Duration::from_micros(12_345)),
        );
        let mut line = Vec::new();
        record.write_json(&mut line);
        match serde_json::to_vec(&record) {
            Ok(serde) if serde == line => {}
            Ok(serde) => failures.push(format!(
                "Record::write_json differs from serde_json:\n{}",
                first_difference(
                    &String::from_utf8_lossy(&serde).replace(",\"", ",\n\""),
                    &String::from_utf8_lossy(&line).replace(",\"", ",\n\"")
                )
            )),
            Err(e) => failures.push(format!("serializing the record: {e}")),
        }
        // What is written reads back (a cache, a database) and writes the same JSON; the
        // name is lossless.
        match serde_json::from_slice::<Record>(&line) {
            Ok(back) => {
                let again = serde_json::to_vec(&back).unwrap_or_default();
                if again != line {
                    failures.push(format!(
                        "the record read back writes different JSON:\n{}",
                        first_difference(
                            &String::from_utf8_lossy(&line).replace(",\"", ",\n\""),
                            &String::from_utf8_lossy(&again).replace(",\"", ",\n\"")
                        )
                    ));
                }
                if back.info.as_ref().map(|i| i.name.as_bytes()) != Some(info.name.as_bytes()) {
                    failures.push("the name read back is not the same bytes".into());
                }
            }
            Err(e) => failures.push(format!("reading the record back: {e}")),
        }
    }
    if failures.is_empty() {
        Ok(checks(want))
    } else {
        Err(failures)
    }
}

fn first_difference(old: &str, new: &str) -> String {
    for (i, (a, b)) in old.lines().zip(new.lines()).enumerate() {
        if a != b {
            return format!("  line {}:\n  - {a}\n  + {b}", i + 1);
        }
    }
    format!(
        "  lengths differ: {} lines, now {}",
        old.lines().count(),
        new.lines().count()
    )
}

/// Runs every case under `root`; `(ok cases, err cases, checks)` or every failure.
fn run_tree(root: &Path) -> Result<(usize, usize, usize), Vec<String>> {
    let cases = fixtures::cases(root)?;
    let mut failures = Vec::new();
    let (mut ok, mut err, mut total) = (0, 0, 0);
    for case in &cases {
        match run_case(case) {
            Ok(n) => {
                total += n;
                match case.kind {
                    Kind::Ok => ok += 1,
                    Kind::Err => err += 1,
                }
            }
            Err(errs) => {
                failures.extend(errs.into_iter().map(|e| format!("{}: {e}", case.label())))
            }
        }
    }
    if failures.is_empty() {
        Ok((ok, err, total))
    } else {
        Err(failures)
    }
}

#[test]
fn every_fixture_meets_its_expectation() {
    let root = fixtures::root();
    let mut failures = Vec::new();
    let folders = fixtures::families(&root).unwrap_or_default();
    for family in fragstat::families() {
        if !folders.iter().any(|f| f == family.id) {
            failures.push(format!(
                "family {:?} has no folder tests/fixtures/{}/",
                family.id, family.id
            ));
        }
    }
    match run_tree(&root) {
        Ok((ok, err, checks)) => {
            eprintln!("fixtures: {ok} ok and {err} err cases, {checks} checks, all met")
        }
        Err(e) => failures.extend(e),
    }
    assert!(
        failures.is_empty(),
        "{} fixture failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A one-family tree in a temporary folder, holding one real ok case whose .json is `meta`
/// and one real err case, with their snapshots.
fn tree_with(meta: Value, kind: Kind) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let src = fixtures::root().join("quake3");
    for (k, name) in [
        ("ok", "q3-status-q3-gamesonnet-2bots"),
        ("err", "q3-status-header-only"),
    ] {
        let to = dir.path().join("quake3").join(k);
        std::fs::create_dir_all(&to).unwrap();
        for ext in ["bin", "json", "decoded"] {
            let file = format!("{name}.{ext}");
            std::fs::copy(src.join(k).join(&file), to.join(&file)).unwrap();
        }
    }
    let (k, name) = match kind {
        Kind::Ok => ("ok", "q3-status-q3-gamesonnet-2bots"),
        Kind::Err => ("err", "q3-status-header-only"),
    };
    let path = dir
        .path()
        .join("quake3")
        .join(k)
        .join(format!("{name}.json"));
    std::fs::write(path, serde_json::to_vec(&meta).unwrap()).unwrap();
    dir
}

fn meta_of(kind: Kind) -> Value {
    let path = match kind {
        Kind::Ok => "quake3/ok/q3-status-q3-gamesonnet-2bots.json",
        Kind::Err => "quake3/err/q3-status-header-only.json",
    };
    serde_json::from_slice(&std::fs::read(fixtures::root().join(path)).unwrap()).unwrap()
}

/// The runner's own checks can fail: each broken expectation below is refused.
#[test]
fn the_runner_refuses_broken_or_missing_expectations() {
    let ok = meta_of(Kind::Ok);
    let err = meta_of(Kind::Err);
    let unchanged = tree_with(ok.clone(), Kind::Ok);
    assert!(run_tree(unchanged.path()).is_ok(), "the copied cases pass");

    let mut cases: Vec<(&str, Value, Kind, &str)> = Vec::new();
    let mut m = ok.clone();
    m.as_object_mut().unwrap().remove("expect");
    cases.push(("no expect", m, Kind::Ok, "no \"expect\" block"));
    let mut m = ok.clone();
    m["expect"] = json!({});
    cases.push(("empty expect", m, Kind::Ok, "exactly \"decoded\""));
    let mut m = ok.clone();
    m["expect"]["decoded"] = json!({});
    cases.push(("empty decoded", m, Kind::Ok, "empty or not an object"));
    let mut m = ok.clone();
    m["expect"]["decoded"]["players"][1]["score"] = json!(8);
    cases.push((
        "wrong score",
        m,
        Kind::Ok,
        "$.players[1].score: expected 8, found -8",
    ));
    let mut m = ok.clone();
    m["expect"]["unchecked"] = json!("from a capture");
    cases.push(("unchecked", m, Kind::Ok, "marked unchecked"));
    let mut m = ok.clone();
    m["game"] = json!("q3a");
    cases.push(("alias", m, Kind::Ok, "is an alias"));
    let mut m = ok.clone();
    m.as_object_mut().unwrap().remove("game");
    cases.push(("no game", m, Kind::Ok, "no \"game\""));
    let mut m = err.clone();
    m["expect"] = json!({"partial": {"truncated": true}});
    cases.push(("err decodes", m, Kind::Err, "failed to decode"));
    let mut m = err.clone();
    m["expect"]["error"]["offset"] = json!(17);
    cases.push((
        "wrong offset",
        m,
        Kind::Err,
        "error $.offset: expected 17, found 18",
    ));
    let mut m = err.clone();
    m["expect"]["error"]
        .as_object_mut()
        .unwrap()
        .remove("field");
    cases.push(("no field", m, Kind::Err, "expect.error needs [\"field\"]"));
    let mut m = err;
    m["expect"] = json!({"error": {"kind": "missing", "field": "infostring", "offset": 18}, "partial": {"truncated": true}});
    cases.push(("both", m, Kind::Err, "exactly one of"));

    for (what, meta, kind, needle) in cases {
        let tree = tree_with(meta, kind);
        let errors = run_tree(tree.path()).expect_err(what);
        assert!(
            errors.iter().any(|e| e.contains(needle)),
            "{what}: {errors:?} should mention {needle:?}"
        );
    }

    // A .bin that is not the one its .json describes.
    let tree = tree_with(ok.clone(), Kind::Ok);
    let bin = tree
        .path()
        .join("quake3/ok/q3-status-q3-gamesonnet-2bots.bin");
    let mut bytes = std::fs::read(&bin).unwrap();
    bytes.push(b'\n');
    std::fs::write(&bin, bytes).unwrap();
    let errors = run_tree(tree.path()).expect_err("changed .bin");
    assert!(
        errors.iter().any(|e| e.contains("payload_bytes")),
        "{errors:?}"
    );

    // An ok case that fails to decode is a failure.
    let tree = tree_with(ok, Kind::Ok);
    let bin = tree
        .path()
        .join("quake3/ok/q3-status-q3-gamesonnet-2bots.bin");
    std::fs::write(&bin, b"\xff\xff\xffstatusResponse\n").unwrap();
    let json = bin.with_extension("json");
    let mut meta: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let m = meta.as_object_mut().unwrap();
    m.remove("payload_bytes");
    m.remove("payload_sha256");
    std::fs::write(&json, serde_json::to_vec(&meta).unwrap()).unwrap();
    let errors = run_tree(tree.path()).expect_err("undecodable ok case");
    assert!(
        errors.iter().any(|e| e.contains("failed to decode")),
        "{errors:?}"
    );
}

/// The schema lists exactly the keys the model writes, in the model's order.
#[test]
fn schema_keys_follow_the_model() {
    let schema: Value =
        serde_json::from_slice(&std::fs::read(fragstat_testkit::server_schema_path()).unwrap())
            .unwrap();
    let mut want = vec!["address", "game", "status", "error", "rtt_ms"];
    want.extend(ServerInfo::JSON_FIELDS);
    assert_eq!(schema["required"], json!(want));
    let props: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(props, want, "properties in record order");
    let record = serde_json::to_value(Record::online(
        Some("127.0.0.1:27960".into()),
        "q3",
        ServerInfo::default(),
        None,
    ))
    .unwrap();
    let keys: Vec<&String> = record.as_object().unwrap().keys().collect();
    assert_eq!(keys, want, "what Record writes");

    let player = serde_json::to_value(Player::new(Text::default())).unwrap();
    let keys: Vec<&String> = player.as_object().unwrap().keys().collect();
    assert_eq!(schema["$defs"]["player"]["required"], json!(keys));
}

/// The schema accepts what the model writes and rejects what it must not.
#[test]
fn schema_accepts_records_and_rejects_broken_ones() {
    let _ = server_schema();
    let mut info = ServerInfo::default();
    info.name = Text::new(b"^1caf\xe9".to_vec(), Default::default());
    info.players = Some(vec![Player::new(Text::new(
        b"\xff\x01".to_vec(),
        Default::default(),
    ))]);
    info.rules.push("sv_hostname", "x");
    let online = serde_json::to_value(Record::online(
        None,
        "q3",
        info,
        Some(std::time::Duration::from_micros(1500)),
    ))
    .unwrap();
    validate_server(&online).unwrap();
    let timeout = serde_json::to_value(Record::failed(
        Some("127.0.0.1:1".into()),
        "et",
        Status::Timeout,
        "timeout".into(),
    ))
    .unwrap();
    validate_server(&timeout).unwrap();

    type Edit = fn(&mut Value);
    let broken: [(&str, &Value, Edit, &str); 9] = [
        (
            "missing key",
            &online,
            |v| {
                v.as_object_mut().unwrap().remove("dialect");
            },
            "dialect",
        ),
        (
            "unknown key",
            &online,
            |v| v["players_count"] = json!(1),
            "players_count",
        ),
        (
            "online with an error",
            &online,
            |v| v["error"] = json!("x"),
            "/error",
        ),
        (
            "online without a name",
            &online,
            |v| v["name"] = Value::Null,
            "/name",
        ),
        (
            "quake name_raw above U+00FF",
            &online,
            |v| v["name_raw"] = json!("caf\u{0101}"),
            "/name_raw",
        ),
        (
            "player score as text",
            &online,
            |v| v["players"][0]["score"] = json!("3"),
            "/players/0/score",
        ),
        (
            "negative count",
            &online,
            |v| v["num_players"] = json!(-1),
            "/num_players",
        ),
        (
            "rule value not a string",
            &online,
            |v| v["rules"]["sv_hostname"] = json!(1),
            "/rules/sv_hostname",
        ),
        (
            "timeout with a map",
            &timeout,
            |v| v["map"] = json!("q3dm17"),
            "/map",
        ),
    ];
    for (what, base, edit, pointer) in broken {
        let mut v = base.clone();
        edit(&mut v);
        let e = validate_server(&v).expect_err(what);
        assert!(
            e.contains(pointer) || e.contains(&format!("\"{}\"", pointer.trim_start_matches('/'))),
            "{what}: {e}"
        );
    }
}
