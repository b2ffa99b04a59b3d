//! The `fragstat` binary: decode on every fixture, exit codes, demo, and the real clients and
//! servers: qstat reading our emulated servers and master, and our CLI against a real
//! OpenArena server compared with what qstat reports for it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use fragstat_testkit::{qstat_json, repo_root, spawn_serve, OpenArena, OpenArenaConfig};
use serde_json::Value;

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_fragstat"))
}

fn run(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .output()
        .expect("run fragstat")
}

/// Standard output of a successful run.
fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn json(out: &Output) -> Value {
    let text = stdout(out);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn ndjson(out: &Output) -> Vec<Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn fixtures(kind: &str) -> Vec<(PathBuf, Value)> {
    let dir = repo_root().join("tests/fixtures/quake3").join(kind);
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "bin"))
        .map(|p| {
            let meta =
                serde_json::from_slice(&std::fs::read(p.with_extension("json")).unwrap()).unwrap();
            (p, meta)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The lossless `name_raw` encoding: every byte as the code point of the same value.
fn latin1(s: &str) -> String {
    s.as_bytes().iter().map(|&b| char::from(b)).collect()
}

#[test]
fn decode_prints_every_real_capture() {
    for (path, meta) in fixtures("ok") {
        let e = &meta["expected"];
        let v = json(&run(&["decode", "q3", path.to_str().unwrap()]));
        if e["command"] == "getserversResponse" {
            assert_eq!(v["servers"], e["servers"], "{}", path.display());
            continue;
        }
        let name = path.display();
        assert_eq!(v["status"], "online");
        assert_eq!(v["address"], Value::Null);
        assert_eq!(
            v["name_raw"].as_str().unwrap(),
            latin1(e["server_name"].as_str().unwrap()),
            "{name}"
        );
        assert_eq!(v["map"], e["map"], "{name}");
        assert_eq!(v["max_players"], e["max_players"], "{name}");
        assert_eq!(v["num_players"], e["player_count"], "{name}");
        if e["command"] == "statusResponse" {
            let players = v["players"].as_array().unwrap();
            let want = e["players"].as_array().unwrap();
            assert_eq!(players.len(), want.len(), "{name}");
            for (p, w) in players.iter().zip(want) {
                assert_eq!(
                    p["name_raw"].as_str().unwrap(),
                    latin1(w["name"].as_str().unwrap()),
                    "{name}"
                );
                assert_eq!(
                    (&p["score"], &p["ping"]),
                    (&w["score"], &w["ping"]),
                    "{name}"
                );
                if let Some(team) = w.get("team") {
                    assert_eq!(&p["team"], team, "{name}");
                }
            }
        }
    }
}

#[test]
fn decode_fails_with_one_line_naming_field_and_offset() {
    for (path, _) in fixtures("err") {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let out = run(&["decode", "q3", path.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        match stem.as_str() {
            "q3-status-header-only" | "q3-status-odd-infostring" | "q3-status-wrong-header-3ff" => {
                assert_eq!(out.status.code(), Some(1), "{stem}");
                assert_eq!(stderr.lines().count(), 1, "{stem}: {stderr}");
                assert!(stderr.contains("offset"), "{stem}: {stderr}");
                assert!(out.stdout.is_empty());
            }
            "q3-status-truncated-mid-playername" => {
                let v = json(&out);
                assert_eq!(v["truncated"], true);
                assert_eq!(v["players"].as_array().unwrap().len(), 9);
            }
            "q3-status-bad-score" => {
                let v = json(&out);
                assert_eq!(v["skipped_lines"].as_array().unwrap().len(), 1);
                assert_eq!(v["players"].as_array().unwrap().len(), 9);
            }
            "q3-foreign-variant-mohaa-status" => {
                let v = json(&out);
                let players = v["players"].as_array().unwrap();
                assert_eq!(players.len(), 24);
                assert!(players.iter().all(|p| p["score"].is_null()));
            }
            other => panic!("no expectation for {other}"),
        }
    }
    // Random bytes: an error, never a panic.
    let tmp = std::env::temp_dir().join(format!("fragstat-junk-{}", std::process::id()));
    std::fs::write(&tmp, b"\xff\xff\xff\xffstatusResponse").unwrap();
    let out = run(&["decode", "q3", tmp.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    std::fs::remove_file(tmp).unwrap();
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["query", "doom9", "127.0.0.1"][..],
        &["query", "q3"],
        &["query", "q3", "127.0.0.1", "--format", "xml"],
        &["master", "q3"],
        &["nonsense"],
        &["decode", "nogame", "x"],
        &["serve", "q3", "--drop", "2"],
    ] {
        assert_eq!(run(args).status.code(), Some(2), "{args:?}");
    }
    assert_eq!(
        run(&["decode", "q3", "/nonexistent/file"]).status.code(),
        Some(1)
    );
}

#[test]
fn demo_discovers_and_probes() {
    let out = run(&["demo"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("6 of 7 servers online, 18 players"),
        "{stdout}"
    );
    assert!(stdout.lines().any(|l| l.contains("timeout")), "{stdout}");
}

#[test]
fn master_probe_of_emulated_servers_and_unanswered_addresses() {
    let served = spawn_serve(
        bin(),
        &[
            "q3",
            "--listen",
            "127.0.0.1:0",
            "--count",
            "5",
            "--players",
            "3",
            "--master",
            "--master-listen",
            "127.0.0.1:0",
            "--eot",
            "every",
        ],
    );
    let master = served.master.unwrap().to_string();
    let list = json(&run(&[
        "master", "q3", &master, &master, "--format", "json",
    ]));
    let mut got: Vec<String> = list["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    let mut want: Vec<String> = served.servers.iter().map(ToString::to_string).collect();
    got.sort();
    want.sort();
    assert_eq!(got, want, "two masters merged, duplicates removed");
    assert_eq!(list["masters"].as_array().unwrap().len(), 2);

    let lines = ndjson(&run(&[
        "master",
        "q3",
        &master,
        "--probe",
        "--players",
        "--format",
        "ndjson",
    ]));
    assert_eq!(lines.len(), 5);
    for l in &lines {
        assert_eq!(l["status"], "online");
        assert_eq!(l["num_players"], 3);
        assert_eq!(l["num_bots"], 1);
        assert_eq!(l["players"].as_array().unwrap().len(), 3);
        assert!(l["name"]
            .as_str()
            .unwrap()
            .starts_with("fragstat emulated server #"));
    }

    // A dead address next to live ones: reported as a timeout, the scan still exits 0.
    let dead = format!("127.0.0.1:{}", fragstat_testkit::free_udp_port());
    let first = served.servers[0].to_string();
    let v = json(&run(&[
        "query",
        "q3",
        &first,
        &dead,
        "--timeout-ms",
        "100",
        "--retries",
        "1",
        "--format",
        "json",
    ]));
    assert_eq!(v[0]["status"], "online");
    assert_eq!(v[1]["status"], "timeout");
    assert_eq!(v[1]["address"], dead);
}

/// qstat, a real client, must report exactly what the emulator was told to serve.
#[test]
fn qstat_reads_our_emulated_servers_and_master() {
    let served = spawn_serve(
        bin(),
        &[
            "q3",
            "--listen",
            "127.0.0.1:0",
            "--count",
            "3",
            "--players",
            "4",
            "--name",
            "^2Green ^7Room",
            "--map",
            "q3tourney2",
            "--max-players",
            "12",
            "--master",
            "--master-listen",
            "127.0.0.1:0",
        ],
    );
    for (i, s) in served.servers.iter().enumerate() {
        let Some(v) = qstat_json(&["-q3s", &s.to_string(), "-P", "-R"]) else {
            return;
        };
        let q = &v[0];
        assert_eq!(q["status"], "online");
        assert_eq!(q["name"], format!("Green Room #{}", i + 1));
        assert_eq!(q["map"], "q3tourney2");
        assert_eq!(q["maxplayers"], 12);
        assert_eq!(q["numplayers"], 4);
        let players = q["players"].as_array().unwrap();
        // ServerConfig::sample: Player1.. with scores 30, 27, 24.. and bots (every second) at ping 0.
        for (j, p) in players.iter().enumerate() {
            assert_eq!(p["name"], format!("Player{}", j + 1));
            assert_eq!(p["score"], 30 - 3 * j as i64);
            assert_eq!(p["ping"], if j % 2 == 1 { 0 } else { 20 + j as i64 });
        }
    }
    let Some(v) = qstat_json(&["-q3m", &served.master.unwrap().to_string()]) else {
        return;
    };
    let arr = v.as_array().unwrap();
    assert_eq!(arr[0]["protocol"], "q3m");
    assert_eq!(arr[0]["servers"], 3);
    let mut listed: Vec<String> = arr[1..]
        .iter()
        .map(|s| s["address"].as_str().unwrap().to_string())
        .collect();
    listed.sort();
    let mut want: Vec<String> = served.servers.iter().map(ToString::to_string).collect();
    want.sort();
    assert_eq!(listed, want);
    assert!(arr[1..]
        .iter()
        .all(|s| s["status"] == "online" && s["numplayers"] == 4));
}

/// Our CLI and qstat on the same real OpenArena server agree on every field both report.
#[test]
fn cli_agrees_with_qstat_on_a_real_openarena_server() {
    let Some(oa) = OpenArena::start(OpenArenaConfig {
        bots: vec!["sarge".into(), "grism".into(), "major".into()],
        ..OpenArenaConfig::default()
    }) else {
        return;
    };
    let addr = oa.addr.to_string();
    // Bots fight, so scores can change between the two queries: compare a pair taken close together.
    let mut last = String::new();
    for _ in 0..5 {
        let ours = json(&run(&[
            "query",
            "openarena",
            &addr,
            "--players",
            "--rules",
            "--format",
            "json",
        ]));
        let Some(theirs) = qstat_json(&["-q3s", &addr, "-P", "-R"]) else {
            return;
        };
        let (o, t) = (&ours[0], &theirs[0]);
        assert_eq!(o["status"], "online");
        assert_eq!(o["name"], t["name"]);
        assert_eq!(o["name_raw"], "My ^1OA^7 Server");
        assert_eq!(o["map"], t["map"]);
        assert_eq!(o["num_players"], t["numplayers"]);
        assert_eq!(o["max_players"], t["maxplayers"]);
        assert_eq!(o["num_bots"], 3);
        assert_eq!(o["rules"]["sv_hostname"], t["rules"]["sv_hostname"]);
        let view = |players: &Value| -> Vec<(String, i64, i64)> {
            let mut v: Vec<_> = players
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    (
                        p["name"].as_str().unwrap().to_string(),
                        p["score"].as_i64().unwrap(),
                        p["ping"].as_i64().unwrap(),
                    )
                })
                .collect();
            v.sort();
            v
        };
        let (mine, qstat) = (view(&o["players"]), view(&t["players"]));
        assert_eq!(mine.len(), 3);
        if mine == qstat {
            return;
        }
        last = format!("ours {mine:?} qstat {qstat:?}");
    }
    panic!("player lists never agreed: {last}");
}

/// A real OpenArena server in public mode heartbeats to our emulated master, answers its
/// getinfo challenge, gets listed, and is found and probed through `fragstat master`.
#[test]
fn a_real_server_registers_with_our_master() {
    let served = spawn_serve(
        bin(),
        &[
            "openarena",
            "--count",
            "0",
            "--master",
            "--master-listen",
            "127.0.0.1:0",
        ],
    );
    let master = served.master.unwrap();
    let Some(oa) = OpenArena::start(OpenArenaConfig {
        hostname: "Public ^2OA".into(),
        bots: vec!["sarge".into()],
        master: Some(master),
        ..OpenArenaConfig::default()
    }) else {
        return;
    };
    let m = master.to_string();
    let want = serde_json::json!([oa.addr.to_string()]);
    let start = std::time::Instant::now();
    loop {
        let v = json(&run(&["master", "openarena", &m, "--format", "json"]));
        if v["servers"] == want {
            break;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(15),
            "never listed: {v}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // The dpmaster dialect lists it too; another protocol number does not.
    assert_eq!(
        json(&run(&[
            "master",
            "openarena",
            &m,
            "--ext",
            "--format",
            "json"
        ]))["servers"],
        want
    );
    assert_eq!(
        json(&run(&["master", "q3", &m, "--format", "json"]))["servers"],
        serde_json::json!([])
    );
    let lines = ndjson(&run(&[
        "master",
        "openarena",
        &m,
        "--probe",
        "--players",
        "--format",
        "ndjson",
    ]));
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["name"], "Public OA");
    assert_eq!(lines[0]["players"][0]["name"], "Sarge");
}

/// IPv6 end to end through the CLI: an emulated server and master on [::1].
#[test]
fn ipv6_servers_and_masters() {
    if fragstat_testkit::free_udp_port6().is_none() {
        eprintln!("SKIPPED: no IPv6 loopback on this machine");
        return;
    }
    let served = spawn_serve(
        bin(),
        &[
            "et",
            "--listen",
            "[::1]:0",
            "--count",
            "2",
            "--players",
            "2",
            "--master",
            "--master-listen",
            "[::1]:0",
        ],
    );
    assert!(served.servers.iter().all(|s| s.is_ipv6()));
    let first = served.servers[0].to_string();
    let v = json(&run(&[
        "query",
        "et",
        &first,
        "--players",
        "--format",
        "json",
    ]));
    assert_eq!(v[0]["status"], "online", "{v}");
    assert_eq!(v[0]["address"], first);
    assert_eq!(v[0]["players"].as_array().unwrap().len(), 2);
    // IPv6 servers are only in getserversExt replies.
    let m = served.master.unwrap().to_string();
    let ext = json(&run(&["master", "et", &m, "--ext", "--format", "json"]));
    assert_eq!(ext["servers"].as_array().unwrap().len(), 2, "{ext}");
    let plain = json(&run(&["master", "et", &m, "--format", "json"]));
    assert_eq!(plain["servers"], serde_json::json!([]));
}
