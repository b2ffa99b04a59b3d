//! Typos are usage errors (exit 2) said once, before anything is sent (trial findings 8, 9,
//! 10), and the help and `games` say what works (14).

use std::net::UdpSocket;

use fragstat_testkit::spawn_serve;

mod support;
use support::{bin, json, run, stderr_of, stdout, temp_file, Running};

/// A socket that records whether anything was sent to it: after the command has exited,
/// whatever it sent over loopback is already queued here.
fn witness() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_nonblocking(true).unwrap();
    s
}

fn got_nothing(s: &UdpSocket) -> bool {
    let mut buf = [0u8; 2048];
    matches!(s.recv_from(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

/// `127.0.0.1:0`, `:99999`, `:-5`, `[::1`, `::1:27960` and `''` are usage errors, each said in
/// one line that names the address once, and the good address beside them is not asked.
#[test]
fn bad_addresses_are_usage_errors_before_any_query() {
    let w = witness();
    let good = w.local_addr().unwrap().to_string();
    for (bad, says) in [
        ("127.0.0.1:0", "port 0"),
        ("127.0.0.1:99999", "out of range"),
        ("127.0.0.1:-5", "not a port"),
        ("[::1", "not closed"),
        ("::1:27960", "[::1]:27960"),
        ("", "empty address"),
    ] {
        let out = run(&["query", "q3", &good, bad, "--timeout-ms", "100"]);
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {err}");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{bad:?}: one line: {err}");
        assert!(lines[0].starts_with("error: bad address"), "{err}");
        assert!(lines[0].contains(says), "{bad:?}: {err}");
        if !bad.is_empty() {
            assert_eq!(lines[0].matches(bad).count(), 1, "named once: {err}");
        }
        assert!(out.stdout.is_empty(), "no rows: {bad:?}");
    }
    assert!(got_nothing(&w), "nothing was sent");
}

/// Negative numbers reach the option's check (not clap's "unexpected argument" with a tip that
/// would make them an address), and 0 says why it is refused.
#[test]
fn negative_and_zero_numbers_say_what_is_wanted() {
    for (args, says) in [
        (&["--timeout-ms", "-1"][..], "must be 1 or more"),
        (&["--retries", "-1"][..], "must be 0 or more"),
        (&["--concurrency", "-3"][..], "must be 1 or more"),
        (&["--timeout-ms", "0"][..], "0 ms"),
        (&["--concurrency", "0"][..], "nothing is sent"),
    ] {
        let mut full = vec!["query", "q3", "127.0.0.1:27960"];
        full.extend_from_slice(args);
        let out = run(&full);
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(
            !err.contains("-- -1"),
            "no tip that makes it an address: {err}"
        );
    }
    let out = run(&["master", "q3", "127.0.0.1", "--max-per-ip", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("every server"),
        "{}",
        stderr_of(&out)
    );
}

/// A qstat file with a type fragstat does not know: one row for the line, and its address is
/// not asked as another game's server (with GAME or without).
#[test]
fn unknown_qstat_types_are_one_row_and_not_asked() {
    let q3 = spawn_serve(bin(), &["q3", "--listen", "127.0.0.1:0"]);
    let steam = witness();
    let file = temp_file(
        format!(
            "a2s {}\nq3s {}\n",
            steam.local_addr().unwrap(),
            q3.servers[0]
        )
        .as_bytes(),
    );
    let path = file.path().to_str().unwrap();
    for args in [
        vec!["query", "-f", path, "--format", "json"],
        vec!["query", "q3", "-f", path, "--format", "json"],
    ] {
        let v = json(&run(&args));
        let rows = v.as_array().unwrap();
        assert_eq!(rows.len(), 2, "{args:?}: {v:#}");
        let err = rows[0]["error"].as_str().unwrap();
        assert!(
            err.contains("\"a2s\" is a server type fragstat does not know"),
            "{err}"
        );
        assert!(!err.contains("e.g."), "no advice to write `q3s a2s`: {err}");
        assert_eq!(rows[1]["status"], "online");
    }
    assert!(got_nothing(&steam), "the a2s server was not asked as q3");
}

/// `-f DIR`, a missing file and a binary file are usage errors.
#[test]
fn directories_missing_and_binary_files_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&["query", "q3", "-f", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("is a directory"));
    let missing = dir.path().join("nope.txt");
    let out = run(&["query", "q3", "-f", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    let bin_file = temp_file(b"\x7fELF\x02\x01\x01\x00\x00\x00\xff\xfe\n\x00\x01");
    let out = run(&["query", "-f", bin_file.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("not a text file"),
        "{}",
        stderr_of(&out)
    );
    assert!(out.stdout.is_empty());
}

/// `watch -f FILE` without GAME takes the file's types, as `query -f` does.
#[test]
fn watch_takes_a_typed_file_without_game() {
    let q3 = spawn_serve(bin(), &["q3", "--listen", "127.0.0.1:0", "--players", "1"]);
    let file = temp_file(format!("q3s {}\n", q3.servers[0]).as_bytes());
    let out = run(&[
        "watch",
        "-f",
        file.path().to_str().unwrap(),
        "--rounds",
        "1",
        "--initial",
        "--interval-secs",
        "0.05",
    ]);
    let text = stdout(&out);
    assert!(text.contains("server_up"), "{text}");
}

/// `watch` ends with 130 on Ctrl-C, as the README's exit statuses say.
#[test]
fn watch_exits_130_on_ctrl_c() {
    let q3 = spawn_serve(bin(), &["q3", "--listen", "127.0.0.1:0"]);
    let addr = q3.servers[0].to_string();
    let mut w = Running::start(
        &["watch", "q3", &addr, "--initial", "--interval-secs", "0.2"],
        &[],
    );
    w.wait_line("the first event", |l| l.contains("server_up"));
    w.signal("-INT");
    assert_eq!(w.wait_exit().code(), Some(130));
}

/// `games` names qstat's master types and `oob:NN`; `games --help` describes its own formats;
/// `query --help` has no master-list options; `--interval-secs` everywhere, `--interval-s`
/// still taken.
#[test]
fn games_and_help_say_what_works() {
    let table = stdout(&run(&["games"]));
    assert!(table.contains("oob:NN"), "{table}");
    let q3 = table.lines().find(|l| l.starts_with("q3 ")).unwrap();
    assert!(q3.contains("q3m"), "{q3}");
    let v = json(&run(&["games", "--format", "json"]));
    let oa = v
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["id"] == "openarena")
        .unwrap();
    assert!(
        oa["master_types"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "openarenam"),
        "{oa}"
    );
    let help = stdout(&run(&["games", "--help"]));
    for wrong in [
        "browser table",
        "as each server answers",
        "one server per line",
    ] {
        assert!(!help.contains(wrong), "{wrong}: {help}");
    }
    let query = stdout(&run(&["query", "--help"]));
    assert!(!query.contains("--max-per-ip") && !query.contains("--keep-private"));
    let master = stdout(&run(&["master", "--help"]));
    assert!(master.contains("--max-per-ip") && master.contains("--keep-private"));
    let watch = stdout(&run(&["watch", "--help"]));
    assert!(watch.contains("--interval-secs"), "{watch}");
    assert!(!watch.contains("--interval-s "), "{watch}");
    let q3 = spawn_serve(bin(), &["q3", "--listen", "127.0.0.1:0"]);
    let addr = q3.servers[0].to_string();
    for flag in ["--interval-s", "--interval-secs"] {
        let out = run(&["watch", "q3", &addr, "--rounds", "1", flag, "0.05"]);
        assert_eq!(out.status.code(), Some(0), "{flag}: {}", stderr_of(&out));
    }
}
