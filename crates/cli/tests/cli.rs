//! The `fragstat` binary: decode on every fixture, exit codes, demo, and the real clients and
//! servers: qstat reading our emulated servers and master, and our CLI against a real
//! OpenArena server compared with what qstat reports for it.

use std::path::PathBuf;
use std::process::Command;

use fragstat_testkit::{qstat_json, repo_root, spawn_serve, OpenArena, OpenArenaConfig, SilentUdp};
use serde_json::Value;

mod support;
use support::{bin, json, ndjson, run, run_stdin, stderr_of, stdout, Running};

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

/// Whether `name_raw` is the name a fixture's notes give: written as the bytes' UTF-8 text
/// (Xonotic's names) or as one character per byte (ISO-8859-1 names, Jedi Academy's).
fn same_name(name_raw: &str, noted: &str) -> bool {
    name_raw == latin1(noted) || name_raw == noted
}

#[test]
fn decode_prints_every_real_capture() {
    for (path, meta) in fixtures("ok") {
        let e = &meta["expected"];
        let game = meta["game"].as_str().unwrap();
        let v = json(&run(&["decode", game, path.to_str().unwrap()]));
        // Master lists: getserversResponse, getserversExtResponse and Dæmon's links packet.
        if e["command"]
            .as_str()
            .is_some_and(|c| c.starts_with("getserversResponse") || c.starts_with("getserversExt"))
        {
            let got: Vec<Value> = v["servers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["address"].clone())
                .collect();
            assert_eq!(Value::from(got), e["servers"], "{}", path.display());
            assert_eq!(v["packet"], "servers");
            continue;
        }
        let name = path.display();
        assert_eq!(v["status"], "online");
        assert_eq!(v["address"], Value::Null);
        assert!(
            same_name(
                v["name_raw"].as_str().unwrap(),
                e["server_name"].as_str().unwrap()
            ),
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
                assert!(
                    same_name(p["name_raw"].as_str().unwrap(), w["name"].as_str().unwrap()),
                    "{name}: {} vs {}",
                    p["name_raw"],
                    w["name"]
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
                assert_eq!(v["warnings"].as_array().unwrap().len(), 1, "{v}");
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
        &["master", "mohaa"],
        &["master", "oob:71"],
        &["nonsense"],
        &["decode", "nogame", "x"],
        &["serve", "q3", "--drop", "2"],
    ] {
        assert_eq!(run(args).status.code(), Some(2), "{args:?}");
    }
    // No master given and none catalogued (a game with a catalogue asks its public masters:
    // never in a test, see master_catalogue.rs).
    let out = run(&["master", "mohaa"]);
    assert!(
        stderr_of(&out).contains("no master given, and mohaa has no master in the catalogue"),
        "{}",
        stderr_of(&out)
    );
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
        .map(|s| s["address"].as_str().unwrap().to_string())
        .collect();
    let mut want: Vec<String> = served.servers.iter().map(ToString::to_string).collect();
    got.sort();
    want.sort();
    assert_eq!(got, want, "two masters merged, duplicates removed");
    // The same master named twice is asked once (trial finding 17).
    assert_eq!(list["masters"].as_array().unwrap().len(), 1);

    // --players implies --probe. It sends getstatus alone, which has no bot count; --rules
    // adds getinfo, which has.
    let lines = ndjson(&run(&[
        "master",
        "q3",
        &master,
        "--players",
        "--format",
        "ndjson",
    ]));
    // NDJSON starts with a line per master, then the servers.
    assert_eq!(lines.len(), 6);
    assert_eq!(lines[0]["master"]["status"], "online", "{:?}", lines[0]);
    assert_eq!(lines[0]["master"]["servers"], 5);
    let lines = &lines[1..];
    for l in lines {
        assert_eq!(l["num_bots"], Value::Null);
    }
    let lines = ndjson(&run(&[
        "master",
        "q3",
        &master,
        "--players",
        "--rules",
        "--format",
        "ndjson",
    ]));
    let lines: Vec<Value> = lines
        .into_iter()
        .filter(|l| l.get("master").is_none())
        .collect();
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
    let silent = SilentUdp::v4();
    let dead = silent.addr.to_string();
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
    fragstat_testkit::wait::until_true(
        "the real server listed by our master",
        fragstat_testkit::wait::SETTLE,
        || {
            let v = json(&run(&["master", "openarena", &m, "--format", "json"]));
            let listed: Vec<Value> = v["servers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["address"].clone())
                .collect();
            Value::from(listed) == want
        },
    );
    // The dpmaster dialect lists it too; another protocol number does not.
    let ext = json(&run(&[
        "master",
        "openarena",
        &m,
        "--ext",
        "--format",
        "json",
    ]));
    assert_eq!(ext["servers"][0]["address"], want[0]);
    assert_eq!(ext["servers"].as_array().unwrap().len(), 1);
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
    assert_eq!(lines.len(), 2, "a line for the master, one for the server");
    let lines = &lines[1..];
    assert_eq!(lines[0]["name"], "Public OA");
    assert_eq!(lines[0]["players"][0]["name"], "Sarge");
}

/// IPv6 end to end through the CLI: an emulated server and master on [::1].
#[test]
fn ipv6_servers_and_masters() {
    if !fragstat_testkit::require_ipv6() {
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

#[test]
fn options_are_refused_not_silently_changed() {
    let tmp = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tmp.path(), "# only a comment\n\n").unwrap();
    let empty = tmp.path().to_str().unwrap();
    for (args, needle) in [
        (
            &["query", "q3", "127.0.0.1", "--timeout-ms", "0"][..],
            "timeout-ms",
        ),
        (
            &["query", "q3", "127.0.0.1", "--concurrency", "0"],
            "concurrency",
        ),
        (&["query", "q3", "-f", empty], "lists no servers"),
        (
            &["master", "q3", "127.0.0.1", "--master-timeout-ms", "0"],
            "master-timeout-ms",
        ),
        (&["serve", "q3", "--map", "a\\b"], "map name"),
        (&["serve", "q3", "--name", "x\"y"], "server name"),
        (&["serve", "q3", "--count", "0"], "--count 0"),
        (
            &["serve", "q3", "--listen", "127.0.0.1:65535", "--count", "3"],
            "65535",
        ),
        (
            &["serve", "q3", "--listen", "no-such-host.invalid:5"],
            "--listen",
        ),
        (
            &["serve", "q3", "--players", "10", "--max-players", "4"],
            "slots",
        ),
        (&["demo", "--count", "0"], "count"),
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr_of(&out));
        assert!(
            stderr_of(&out).contains(needle),
            "{args:?}: {}",
            stderr_of(&out)
        );
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("ready"),
            "{args:?}"
        );
    }
}

#[test]
fn serve_takes_host_names_and_answers() {
    let served = spawn_serve(bin(), &["q3", "--listen", "localhost:0", "--count", "2"]);
    assert_eq!(served.servers.len(), 2);
    let addr = served.servers[1].to_string();
    let v = json(&run(&["query", "q3", &addr, "--format", "json"]));
    assert_eq!(v[0]["status"], "online");
    assert_eq!(v[0]["name"], "fragstat emulated server #2");
}

#[test]
fn exit_3_when_nothing_answers_and_grammar_of_one_attempt() {
    let silent = SilentUdp::v4();
    let dead = silent.addr.to_string();
    let out = run(&[
        "query",
        "q3",
        &dead,
        "--timeout-ms",
        "50",
        "--retries",
        "0",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["error"], "timed out after 1 attempt");
    let out = run(&[
        "master",
        "q3",
        &dead,
        "--master-timeout-ms",
        "50",
        "--retries",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("no master gave a list"));
}

#[test]
fn broken_pipe_ends_quietly_in_every_format() {
    let served = spawn_serve(
        bin(),
        &[
            "q3",
            "--listen",
            "127.0.0.1:0",
            "--count",
            "40",
            "--players",
            "30",
        ],
    );
    let addrs: Vec<String> = served.servers.iter().map(ToString::to_string).collect();
    for format in ["table", "json", "ndjson"] {
        let mut args = vec!["query", "q3", "--players", "--format", format];
        args.extend(addrs.iter().map(String::as_str));
        let mut child = Command::new(bin())
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Read one byte, then hang up (as `| head -c1` does).
        use std::io::Read;
        let mut one = [0u8; 1];
        let mut stdout = child.stdout.take().unwrap();
        stdout.read_exact(&mut one).unwrap();
        drop(stdout);
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{format}: {}", stderr_of(&out));
        assert!(
            !stderr_of(&out).contains("panicked"),
            "{format}: {}",
            stderr_of(&out)
        );
    }
}

#[test]
fn rules_fill_players_and_show_in_the_table() {
    let served = spawn_serve(bin(), &["q3", "--listen", "127.0.0.1:0", "--players", "2"]);
    let addr = served.servers[0].to_string();
    let v = json(&run(&["query", "q3", &addr, "--rules", "--format", "json"]));
    assert_eq!(v[0]["players"].as_array().unwrap().len(), 2);
    assert_eq!(v[0]["rules"]["mapname"], "q3dm17");
    assert_eq!(v[0]["gametype"], "ffa");
    assert_eq!(v[0]["rules"]["g_gametype"], "0", "raw value kept in rules");
    let table = stdout(&run(&["query", "q3", &addr, "--rules"]));
    assert!(table.contains("    mapname = q3dm17"), "{table}");
    assert!(
        table.contains("SCORE"),
        "player rows have a header: {table}"
    );
}

#[test]
fn interrupt_prints_what_answered() {
    let served = spawn_serve(bin(), &["q3", "--listen", "127.0.0.1:0"]);
    let live = served.servers[0].to_string();
    let silent = SilentUdp::v4();
    let dead = silent.addr.to_string();
    let mut child = Running::start(
        &[
            "query",
            "q3",
            &live,
            &dead,
            "--timeout-ms",
            "600000",
            "--format",
            "json",
        ],
        &[("RUST_LOG", "fragstat_core::engine=debug")],
    );
    // Interrupted once the live server's answer is in (the engine says so at debug level),
    // while the dead one is still being waited for.
    let needle = format!("query answered from={live}");
    child.wait_stderr("the live server answered", |l| l.contains(&needle));
    child.signal("-INT");
    let status = child.wait_exit();
    assert_eq!(status.code(), Some(130), "{}", child.process.log_tail());
    let mut out = String::new();
    while let Some(l) = child.lines.next(fragstat_testkit::wait::SETTLE) {
        out.push_str(&l);
    }
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v.as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v[0]["address"], live);
    assert_eq!(v[0]["status"], "online");
}

/// NDJSON is a stream: a server's line comes out while the scan still waits on another, not
/// when the scan ends (lines wait at most `FLUSH_AFTER` for the writer thread).
#[test]
fn ndjson_lines_come_out_while_the_scan_still_waits() {
    let served = spawn_serve(bin(), &["q3", "--listen", "127.0.0.1:0"]);
    let live = served.servers[0].to_string();
    let silent = SilentUdp::v4();
    let dead = silent.addr.to_string();
    let mut child = Command::new(bin())
        .args([
            "query",
            "q3",
            &live,
            &dead,
            "--timeout-ms",
            "600000",
            "--format",
            "ndjson",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        let mut line = String::new();
        let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(fragstat_testkit::wait::SETTLE);
    let _ = child.kill();
    let _ = child.wait();
    let line = line.expect("the answered server's line, long before the scan ends");
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(
        (&v["address"], &v["status"]),
        (&Value::from(live), &Value::from("online"))
    );
}

#[test]
fn games_lists_the_registry() {
    let v = json(&run(&["games", "--format", "json"]));
    let ids: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["id"].as_str().unwrap())
        .collect();
    // Every Quake III game (crates/cli/tests/quake3_games.rs cross-checks their servers).
    for id in [
        "q3",
        "et",
        "openarena",
        "rtcw",
        "etl",
        "urt",
        "jk2",
        "jka",
        "sof2",
        "cod",
        "coduo",
        "cod2",
        "cod4",
        "cod4x",
        "iw4x",
        "mohaa",
        "unvanquished",
        "tremulous",
        "wop",
        "smokinguns",
        "q3rally",
        "reaction",
    ] {
        assert!(ids.contains(&id), "{id} in {ids:?}");
    }
    assert_eq!(v[0]["default_port"], 27960);
    assert_eq!(v[0]["master_port"], 27950);
    assert_eq!(v[0]["family"], "quake3");
    let table = stdout(&run(&["games"]));
    assert!(table.starts_with("ID"), "{table}");
    assert!(table.contains("Wolfenstein: Enemy Territory"), "{table}");
}

#[test]
fn decode_reads_stdin_and_prints_requests_as_json() {
    let out = run_stdin(&["decode", "q3", "-"], b"\xff\xff\xff\xffgetstatus abc");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["packet"], "getstatus");
    assert_eq!(v["fields"]["challenge"], "abc");
    let out = run_stdin(
        &["decode", "q3", "-"],
        b"\xff\xff\xff\xffgetserversExt Quake3Arena 68 empty full ipv6",
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["packet"], "getserversExt");
    assert_eq!(v["fields"]["protocol"], 68);
    assert_eq!(v["fields"]["options"][2], "ipv6");
    let out = run_stdin(
        &["decode", "q3", "-"],
        b"\xff\xff\xff\xffchallengeResponse 123 456 71",
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["packet"], "challengeResponse");
    assert_eq!(v["fields"]["protocol"], 71);
}

#[test]
fn help_shows_the_timeouts_used() {
    let help = stdout(&run(&["master", "--help"]));
    assert!(help.contains("--master-timeout-ms"), "{help}");
    assert!(help.contains("[default: 1000]"), "{help}");
    assert!(help.contains("[default: 500]"), "{help}");
}

/// Live `fragstat query --format json` output of every family, online and timed out, is what
/// docs/server.schema.json describes.
#[test]
fn live_query_output_matches_the_schema() {
    for game in [
        "q3",
        "openarena",
        "doom3",
        "quake4",
        "prey",
        "etqw",
        "warsow",
        "teeworlds",
        "teeworlds07",
        "ddnet",
    ] {
        let served = spawn_serve(bin(), &[game, "--listen", "127.0.0.1:0", "--players", "3"]);
        let addr = served.servers[0].to_string();
        let v = json(&run(&[
            "query",
            game,
            &addr,
            "--players",
            "--rules",
            "--format",
            "json",
        ]));
        assert_eq!(v[0]["status"], "online", "{game}: {v}");
        assert_eq!(
            v[0]["players"].as_array().map(Vec::len),
            Some(3),
            "{game}: {v}"
        );
        fragstat_testkit::validate_server(&v[0]).unwrap_or_else(|e| panic!("{game}: {e}\n{v}"));
    }
    // A server that never answers: a timeout record, same schema.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap().to_string();
    let out = run(&[
        "query",
        "q3",
        &addr,
        "--timeout-ms",
        "50",
        "--retries",
        "0",
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["status"], "timeout", "{v}");
    fragstat_testkit::validate_server(&v[0]).unwrap_or_else(|e| panic!("timeout: {e}\n{v}"));
}
