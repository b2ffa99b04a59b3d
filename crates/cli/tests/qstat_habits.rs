//! What a qstat user brings along: server files with types (several games, duplicates, junk),
//! `-P`, `--sort`, the online/non-empty filters, CSV, `down` for a closed port, replies that
//! are not the game's, masters that are down in JSON and NDJSON, qstat's single-dash options,
//! and `decode` of multi-datagram replies and saved HTTP lists.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use fragstat_testkit::netns::{private_netns, Netns};
use fragstat_testkit::{repo_root, spawn_serve, SilentUdp};
use serde_json::Value;

mod support;
use support::{bin, json, ndjson, run, stderr_of, stdout, temp_file};

#[test]
fn a_qstat_server_file_with_three_games_a_duplicate_and_a_junk_line() {
    let q3 = spawn_serve(
        bin(),
        &[
            "q3",
            "--listen",
            "127.0.0.1:0",
            "--count",
            "2",
            "--players",
            "2",
        ],
    );
    let et = spawn_serve(bin(), &["et", "--listen", "127.0.0.1:0", "--players", "1"]);
    let doom = spawn_serve(
        bin(),
        &["doom3", "--listen", "127.0.0.1:0", "--players", "3"],
    );
    let (a, b) = (q3.servers[0], q3.servers[1]);
    let mut text = format!(
        "# qstat -f servers.txt\nq3s {a}\nQ3S {b}   woets {}\n\ndm3s\n{}\nq3s {a}  # the same server again\njunk!\nq3s not:an:address\n",
        et.servers[0], doom.servers[0]
    )
    .into_bytes();
    // A line that is not UTF-8 at all.
    text.extend_from_slice(b"\xfe\xfe not text\n");
    let file = temp_file(&text);
    let out = run(&[
        "query",
        "-f",
        file.path().to_str().unwrap(),
        "-P",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v.as_array().unwrap();
    let online: Vec<(&str, &str)> = rows
        .iter()
        .filter(|r| r["status"] == "online")
        .map(|r| (r["game"].as_str().unwrap(), r["address"].as_str().unwrap()))
        .collect();
    let (a, b, e, d) = (
        a.to_string(),
        b.to_string(),
        et.servers[0].to_string(),
        doom.servers[0].to_string(),
    );
    assert_eq!(
        online,
        [
            ("q3", a.as_str()),
            ("q3", b.as_str()),
            ("et", e.as_str()),
            ("doom3", d.as_str())
        ],
        "the duplicate is asked and counted once: {v:#}"
    );
    let errors: Vec<&str> = rows
        .iter()
        .filter(|r| r["status"] == "error")
        .map(|r| r["error"].as_str().unwrap())
        .collect();
    assert_eq!(errors.len(), 3, "{v:#}");
    for says in ["not UTF-8", "not an address"] {
        assert!(
            errors.iter().any(|e| e.contains(says)),
            "{says}: {errors:?}"
        );
    }
    assert_eq!(rows[0]["players"].as_array().unwrap().len(), 2, "-P");
    // The table's total counts each server once.
    let table = stdout(&run(&["query", "-f", file.path().to_str().unwrap()]));
    assert!(
        table.contains("4 of 7 servers online, 8 players"),
        "{table}"
    );
    // A GAME for the untyped addresses of a plain list.
    let plain = temp_file(format!("{a}\n{b}\n").as_bytes());
    let v = json(&run(&[
        "query",
        "q3",
        "-f",
        plain.path().to_str().unwrap(),
        "--format",
        "json",
    ]));
    assert_eq!(v.as_array().unwrap().len(), 2);
}

#[test]
fn players_sorted_by_ping_as_csv_and_the_filters() {
    let full = spawn_serve(
        bin(),
        &[
            "q3",
            "--listen",
            "127.0.0.1:0",
            "--players",
            "4",
            "--max-players",
            "4",
        ],
    );
    let empty = spawn_serve(bin(), &["q3", "--listen", "127.0.0.1:0", "--players", "0"]);
    let some = spawn_serve(
        bin(),
        &[
            "q3",
            "--listen",
            "127.0.0.1:0",
            "--players",
            "2",
            "--name",
            "a, comma name",
        ],
    );
    let silent = SilentUdp::v4();
    let addrs = [
        full.servers[0].to_string(),
        empty.servers[0].to_string(),
        some.servers[0].to_string(),
        silent.addr.to_string(),
    ];
    let mut args = vec![
        "query",
        "q3",
        "-P",
        "--sort",
        "ping",
        "--format",
        "csv",
        "--timeout-ms",
        "200",
        "--retries",
        "0",
    ];
    args.extend(addrs.iter().map(String::as_str));
    let out = stdout(&run(&args));
    let mut rdr = csv_rows(&out);
    let head = rdr.remove(0);
    assert_eq!(&head[..4], ["kind", "address", "game", "status"]);
    let servers: Vec<&Vec<String>> = rdr.iter().filter(|r| r[0] == "server").collect();
    assert_eq!(servers.len(), 4);
    // By ping: the three that answered (ascending), the silent one last.
    let pings: Vec<f64> = servers[..3].iter().map(|r| r[4].parse().unwrap()).collect();
    assert!(pings.windows(2).all(|w| w[0] <= w[1]), "{pings:?}");
    assert_eq!(servers[3][1], addrs[3]);
    assert_eq!(servers[3][3], "timeout");
    // Players follow their server; a name with a comma survives the quoting.
    let players = rdr.iter().filter(|r| r[0] == "player").count();
    assert_eq!(players, 6);
    assert!(servers.iter().any(|r| r[5] == "a, comma name"), "{out}");
    // qstat's letters, tsv without a header, the filters.
    let mut args = vec![
        "query",
        "q3",
        "--sort",
        "n",
        "--format",
        "tsv",
        "--no-header",
        "--online",
        "--not-empty",
        "--not-full",
        "--timeout-ms",
        "200",
        "--retries",
        "0",
    ];
    args.extend(addrs.iter().map(String::as_str));
    let out = stdout(&run(&args));
    let rows: Vec<&str> = out.lines().collect();
    assert_eq!(
        rows.len(),
        1,
        "only the server neither empty, full nor silent: {out}"
    );
    assert!(
        rows[0].starts_with(&format!("server\t{}\tq3\tonline", addrs[2])),
        "{out}"
    );
}

fn csv_rows(text: &str) -> Vec<Vec<String>> {
    // A small reader for the test (the CLI's own writer is what is under test).
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    rows
}

/// A closed port answers ICMP port unreachable: `down` at once, not a 3-second timeout. In a
/// network namespace of its own, where nothing listens but what the test starts (so the
/// closed port is certainly closed).
#[test]
fn a_closed_port_is_down_within_a_second() {
    match private_netns("a_closed_port_is_down_within_a_second") {
        Netns::Inside => {}
        Netns::Ran(text) => {
            assert!(text.contains("closed port: down"), "{text}");
            return;
        }
        Netns::Skipped => return,
    }
    let started = Instant::now();
    let out = run(&["query", "q3", "127.0.0.1:27960", "--format", "json"]);
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["status"], "down", "{v}");
    assert!(
        v[0]["error"].as_str().unwrap().contains("unreachable"),
        "{v}"
    );
    // Nothing else runs in this namespace: the only wait is the process's own start.
    assert!(took < Duration::from_secs(1), "took {took:?}");
    println!("closed port: down in {took:?}");
}

/// A UDP echo service answers every query with the query itself: replies came, none a Quake
/// III answer — said so, not "timed out".
#[test]
fn replies_that_are_not_the_games_are_said_so() {
    let echo = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = echo.local_addr().unwrap();
    let thread = std::thread::spawn(move || {
        echo.set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut buf = [0u8; 2048];
        while let Ok((n, from)) = echo.recv_from(&mut buf) {
            if buf[..n] == *b"stop" {
                break;
            }
            let _ = echo.send_to(&buf[..n], from);
        }
    });
    let v = json(
        &run(&[
            "query",
            "q3",
            &addr.to_string(),
            "--retries",
            "2",
            "--timeout-ms",
            "100",
            "--format",
            "json",
        ])
        .with_success_anyway(),
    );
    let e = v[0]["error"].as_str().unwrap();
    assert_eq!(v[0]["status"], "error");
    assert!(
        e.contains("3 replies from the server in 3 attempts, none an answer to this query"),
        "{e}"
    );
    // A Teeworlds 0.6 query that goes unanswered hints at 0.7.
    let silent = SilentUdp::v4();
    let v = json(
        &run(&[
            "query",
            "teeworlds",
            &silent.addr.to_string(),
            "--retries",
            "0",
            "--timeout-ms",
            "50",
            "--format",
            "json",
        ])
        .with_success_anyway(),
    );
    assert!(
        v[0]["error"].as_str().unwrap().contains("teeworlds07"),
        "{v}"
    );
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .send_to(b"stop", addr)
        .unwrap();
    thread.join().unwrap();
}

/// Exit 3 is expected when nothing answered; the JSON is still read.
trait SuccessAnyway {
    fn with_success_anyway(self) -> std::process::Output;
}

impl SuccessAnyway for std::process::Output {
    fn with_success_anyway(mut self) -> std::process::Output {
        if self.status.code() == Some(3) {
            self.status = std::process::Command::new("true").status().unwrap();
        }
        self
    }
}

#[test]
fn a_master_that_is_down_in_json_and_ndjson() {
    let down = SilentUdp::v4();
    let args = |format: &'static str| {
        vec![
            "master".to_string(),
            "q3".into(),
            down.addr.to_string(),
            "--master-timeout-ms".into(),
            "100".into(),
            "--retries".into(),
            "0".into(),
            "--format".into(),
            format.into(),
        ]
    };
    let a = args("json");
    let out = run(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.status.code(), Some(3));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["servers"], serde_json::json!([]));
    assert_eq!(v["masters"][0]["address"], down.addr.to_string());
    assert_eq!(v["masters"][0]["status"], "timeout");
    assert_eq!(v["masters"][0]["error"], "timed out after 1 attempt");
    // No "timeout timed out": the status is not repeated in the message.
    assert!(
        !stderr_of(&out).contains("timeout timed out"),
        "{}",
        stderr_of(&out)
    );
    let a = args("ndjson");
    let out = run(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.status.code(), Some(3));
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["master"]["status"], "timeout");
}

#[test]
fn qstat_spellings_point_to_fragstats_options() {
    for (arg, says) in [
        ("-json", "--format json"),
        ("-sort", "--sort"),
        ("-nh", "--no-header"),
        ("-raw", "--format csv"),
        ("-q3s", "fragstat query q3"),
    ] {
        let out = run(&["query", "q3", "127.0.0.1:27960", arg]);
        assert_eq!(out.status.code(), Some(2), "{arg}");
        assert!(stderr_of(&out).contains(says), "{arg}: {}", stderr_of(&out));
    }
    // Completions and the man page come from the same definitions.
    let bash = stdout(&run(&["generate", "bash"]));
    assert!(
        bash.contains("fragstat") && bash.contains("--not-empty"),
        "{bash}"
    );
    let man = stdout(&run(&["generate", "man"]));
    assert!(man.contains(".TH fragstat"), "{man}");
}

#[test]
fn decode_takes_a_reply_in_parts_and_a_saved_http_list() {
    let dir = repo_root().join("tests/fixtures/teeworlds/ok");
    let parts: Vec<String> = (1..=3)
        .map(|i| {
            dir.join(format!("ddnet-164-dtsf-60clients-part{i}.bin"))
                .display()
                .to_string()
        })
        .collect();
    let mut args = vec!["decode", "ddnet"];
    args.extend(parts.iter().map(String::as_str));
    let v = json(&run(&args));
    assert_eq!(v["num_players"], 60);
    assert_eq!(v["players"].as_array().unwrap().len(), 60);
    assert_eq!(v["truncated"], false);
    // In any order.
    let mut args = vec!["decode", "ddnet"];
    args.extend(parts.iter().rev().map(String::as_str));
    assert_eq!(json(&run(&args))["players"].as_array().unwrap().len(), 60);
    // A saved servers.json.
    let s: SocketAddr = "1.2.3.4:8303".parse().unwrap();
    let body = serde_json::json!({"servers": [{
        "addresses": [format!("tw-0.6+udp://{s}")],
        "info": {"max_clients": 16, "max_players": 16, "passworded": false, "game_type": "DM",
                 "name": "saved", "map": {"name": "dm1"}, "version": "0.6.4", "clients": []}}]});
    let f = temp_file(body.to_string().as_bytes());
    let v = json(&run(&["decode", "ddnet", f.path().to_str().unwrap()]));
    assert_eq!(v["packet"], "servers");
    assert_eq!(v["servers"][0]["address"], s.to_string());
    assert_eq!(v["servers"][0]["info"]["name"], "saved");
    // Replies that are not parts of one are decoded each on its own (trial finding 21);
    // a file that is neither is refused with a reason.
    let q3 = repo_root().join("tests/fixtures/quake3/ok/openarena-088-status-2bots.bin");
    let q3 = q3.to_str().unwrap();
    let v = json(&run(&["decode", "q3", q3, q3]));
    assert_eq!(v.as_array().map(Vec::len), Some(2), "{v:#}");
    let junk = temp_file(b"not a reply");
    let out = run(&["decode", "q3", q3, junk.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr_of(&out).contains("parts of one reply"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn ndjson_is_still_a_stream() {
    let served = spawn_serve(bin(), &["q3", "--listen", "127.0.0.1:0", "--count", "3"]);
    let addrs: Vec<String> = served.servers.iter().map(ToString::to_string).collect();
    let mut args = vec!["query", "q3", "--format", "ndjson"];
    args.extend(addrs.iter().map(String::as_str));
    assert_eq!(ndjson(&run(&args)).len(), 3);
}

/// qstat's master types: `master q3m ADDR` (and `openarenam`, `rwm`, `teem`…) name the game's
/// master; `query q3m` says to use `master`; a `q3m ADDR` line of a server file is reported
/// and its address not asked as a server.
#[test]
fn qstat_master_types() {
    let served = spawn_serve(
        bin(),
        &["q3", "--listen", "127.0.0.1:0", "--count", "2", "--master"],
    );
    let master = served.master.unwrap().to_string();
    for ty in ["q3m", "Q3M"] {
        let v = json(&run(&["master", ty, &master, "--format", "json"]));
        assert_eq!(v["masters"][0]["status"], "online", "{ty}: {v}");
        assert_eq!(v["servers"].as_array().unwrap().len(), 2, "{ty}: {v}");
    }
    for (ty, id) in [
        ("openarenam", "openarena"),
        ("rwm", "rtcw"),
        ("woetm", "et"),
        ("dm3m", "doom3"),
        ("teem", "teeworlds"),
    ] {
        // The game's catalogue, printed (nothing sent): the type was understood.
        let out = run(&["master", ty, "--list-masters"]);
        assert_eq!(out.status.code(), Some(0), "{ty}");
        assert!(
            !stderr_of(&out).contains("unknown game"),
            "{ty}: {}",
            stderr_of(&out)
        );
        let out = run(&["games", "--format", "json"]);
        assert!(stdout(&out).contains(id));
    }
    let out = run(&["query", "q3m", &master]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("q3m is qstat's master type: fragstat master q3"),
        "{}",
        stderr_of(&out)
    );
    let file = temp_file(format!("q3m {master}\nq3s {}\n", served.servers[0]).as_bytes());
    let v = json(&run(&[
        "query",
        "-f",
        file.path().to_str().unwrap(),
        "--format",
        "json",
    ]));
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{v:#}");
    // In the file's order: the master line, then the server.
    assert_eq!(rows[1]["status"], "online", "{v:#}");
    assert_eq!(rows[1]["address"], served.servers[0].to_string());
    assert_eq!(rows[0]["status"], "error", "{v:#}");
    assert!(
        rows[0]["error"]
            .as_str()
            .unwrap()
            .contains(&format!("fragstat master q3 {master}")),
        "{v:#}"
    );
}
