//! Masters and saved replies (trial findings 16, 17, 19, 21): the same master named twice is
//! asked once, an empty list of an IPv6 master without --ext gets a hint, DDNet's "no time"
//! is no score, `query --save-dir` saves what servers send and `decode` takes several
//! replies at once.

use std::time::{Duration, Instant};

use fragstat_testkit::spawn_serve;

mod support;
use support::{bin, json, run, stderr_of};

/// `master q3 M M` (and `M` under another name) asks M once: the second is not left to wait
/// out the master timeout.
#[test]
fn the_same_master_twice_is_asked_once() {
    let farm = spawn_serve(
        bin(),
        &[
            "q3",
            "--listen",
            "127.0.0.1:0",
            "--count",
            "3",
            "--master",
            "--master-listen",
            "127.0.0.1:0",
        ],
    );
    let m = farm.master.unwrap();
    let by_name = format!("localhost:{}", m.port());
    let m = m.to_string();
    for other in [m.as_str(), by_name.as_str()] {
        let started = Instant::now();
        let out = run(&[
            "master",
            "q3",
            &m,
            other,
            "--master-timeout-ms",
            "4000",
            "--format",
            "json",
        ]);
        let took = started.elapsed();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(0), "{err}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["servers"].as_array().unwrap().len(), 3, "{v:#}");
        assert_eq!(v["masters"].as_array().unwrap().len(), 1, "{v:#}");
        assert!(err.contains("asked once"), "{err}");
        assert!(
            took < Duration::from_millis(3000),
            "{other}: {took:?} (the master timeout is 4 s)"
        );
    }
}

/// An IPv6 master whose `getservers` list is empty: a hint names --ext.
#[test]
fn an_empty_ipv6_list_without_ext_hints_at_ext() {
    if !fragstat_testkit::require_ipv6() {
        return;
    }
    let farm = spawn_serve(
        bin(),
        &[
            "openarena",
            "--listen",
            "[::1]:0",
            "--count",
            "2",
            "--master",
            "--master-listen",
            "[::1]:0",
        ],
    );
    let m = farm.master.unwrap().to_string();
    let out = run(&["master", "openarena", &m]);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("0 servers from 1 master"), "{err}");
    assert!(err.contains("--ext"), "{err}");
    // With --ext the list has them, and no hint.
    let out = run(&["master", "openarena", &m, "--ext"]);
    let err = stderr_of(&out);
    assert!(err.contains("2 servers from 1 master"), "{err}");
    assert!(!err.contains("hint"), "{err}");
}

/// DDNet's "no time" (-9999 on the 0.6 side, -1 on the 0.7 side under the time-score flag)
/// is no score: null in JSON, empty in CSV, `-` in the table.
#[test]
fn ddnet_no_time_is_no_score() {
    let ddnet = spawn_serve(
        bin(),
        &["ddnet", "--listen", "127.0.0.1:0", "--players", "4"],
    );
    let addr = ddnet.servers[0].to_string();
    for game in ["ddnet", "teeworlds07"] {
        let v = json(&run(&["query", game, &addr, "-P", "--format", "json"]));
        let scores: Vec<&serde_json::Value> = v[0]["players"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| &p["score"])
            .collect();
        assert!(
            scores.iter().all(|s| *s != -9999 && *s != -1),
            "{game}: {scores:?}"
        );
        assert!(scores.iter().any(|s| s.is_null()), "{game}: {scores:?}");
        let csv = support::stdout(&run(&["query", game, &addr, "-P", "--format", "csv"]));
        assert!(
            !csv.contains("-9999") && !csv.contains(",-1,"),
            "{game}: {csv}"
        );
    }
}

/// `query -R --save-dir DIR` writes the getinfo and getstatus replies, and `decode` takes
/// both at once (a JSON array, one object per file).
#[test]
fn saved_replies_decode_together() {
    let q3 = spawn_serve(bin(), &["q3", "--listen", "127.0.0.1:0", "--players", "2"]);
    let addr = q3.servers[0].to_string();
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("saved");
    let out = run(&[
        "query",
        "q3",
        &addr,
        "-R",
        "--save-dir",
        saved.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("2 datagrams saved"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["status"], "online", "{v:#}");
    assert_eq!(v[0]["players"].as_array().unwrap().len(), 2);
    let mut files: Vec<String> = std::fs::read_dir(&saved)
        .unwrap()
        .map(|e| e.unwrap().path().to_str().unwrap().to_string())
        .collect();
    files.sort();
    assert_eq!(files.len(), 2, "{files:?}");
    let mut args = vec!["decode", "q3"];
    args.extend(files.iter().map(String::as_str));
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let docs = v.as_array().expect("an array");
    assert_eq!(docs.len(), 2, "{v:#}");
    for (d, f) in docs.iter().zip(&files) {
        assert_eq!(d["file"], f.as_str());
        assert_eq!(d["game"], "q3");
    }
}
