//! What the output shows (trial findings 11, 12, 15, 20, 22): the table's footer, reverse
//! sorting, hints that do not mislead, no terminal control bytes in CSV and TSV, and a
//! progress line for a short probe.

use std::net::{SocketAddr, UdpSocket};

use fragstat_testkit::{spawn_serve, SilentUdp};

mod support;
use support::{bin, json, run, stderr_of, stdout};

/// A Quake III server on 127.0.0.1 that answers getinfo and getstatus with `name` (echoing the
/// challenge), or, with `wrong`, answers getstatus with an infoResponse; runs until the test
/// ends (a thread with a bounded read timeout loop).
fn responder(name: &'static [u8], wrong: bool) -> SocketAddr {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = s.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        while let Ok((n, from)) = s.recv_from(&mut buf) {
            let req = &buf[..n];
            let text = String::from_utf8_lossy(req.get(4..).unwrap_or_default()).into_owned();
            let mut words = text.split_whitespace();
            let cmd = words.next().unwrap_or_default().to_string();
            let challenge = words.next().unwrap_or_default().to_string();
            let mut reply = b"\xff\xff\xff\xff".to_vec();
            let vars = |out: &mut Vec<u8>| {
                out.extend_from_slice(b"\\challenge\\");
                out.extend_from_slice(challenge.as_bytes());
                out.extend_from_slice(
                    b"\\protocol\\68\\mapname\\q3dm1\\sv_maxclients\\8\\clients\\0\\sv_hostname\\",
                );
                out.extend_from_slice(name);
                out.extend_from_slice(b"\\hostname\\");
                out.extend_from_slice(name);
            };
            match cmd.as_str() {
                "getinfo" => {
                    reply.extend_from_slice(b"infoResponse\n");
                    vars(&mut reply);
                }
                "getstatus" if wrong => {
                    reply.extend_from_slice(b"infoResponse\n");
                    vars(&mut reply);
                }
                "getstatus" => {
                    reply.extend_from_slice(b"statusResponse\n");
                    vars(&mut reply);
                    reply.push(b'\n');
                }
                _ => continue,
            }
            let _ = s.send_to(&reply, from);
        }
    });
    addr
}

/// The escape-sending server's name: a title change, a bell, clear screen, colours, a
/// carriage return and backspaces.
const EVIL: &[u8] = b"Evil\x1b]0;PWNED\x07\x1b[2J\x1b[31mRED\rOVER\x08\x08X";

#[test]
fn csv_and_tsv_carry_no_terminal_control_bytes() {
    let addr = responder(EVIL, false).to_string();
    for format in ["csv", "tsv"] {
        let out = run(&["query", "q3", &addr, "-P", "--format", format]);
        let text = stdout(&out);
        assert!(
            !text
                .bytes()
                .any(|b| b < 0x20 && b != b'\n' && b != b'\t' || b == 0x7f),
            "{format}: {text:?}"
        );
        assert!(
            text.contains("Evil]0;PWNED[2J[31mREDOVERX"),
            "{format}: {text:?}"
        );
    }
    // JSON keeps the bytes, escaped.
    let v = json(&run(&["query", "q3", &addr, "--format", "json"]));
    assert!(
        v[0]["name_raw"].as_str().unwrap().contains('\u{1b}'),
        "{v:#}"
    );
}

/// With --no-header the table has no footer (qstat -nh); under filters the footer counts
/// every server asked and says how many are shown.
#[test]
fn the_footer_counts_every_server_and_goes_with_the_header() {
    let full = spawn_serve(bin(), &["q3", "--listen", "127.0.0.1:0", "--players", "3"]);
    let empty = spawn_serve(bin(), &["q3", "--listen", "127.0.0.1:0", "--players", "0"]);
    let silent = SilentUdp::v4();
    let (a, b, c) = (
        full.servers[0].to_string(),
        empty.servers[0].to_string(),
        silent.to_addr_string(),
    );
    let args = [
        "query",
        "q3",
        &a,
        &b,
        &c,
        "--timeout-ms",
        "200",
        "--retries",
        "0",
    ];
    let table = stdout(&run(&args));
    assert!(
        table.contains("2 of 3 servers online, 3 players\n"),
        "{table}"
    );
    let mut filtered = args.to_vec();
    filtered.extend(["--online", "--not-empty"]);
    let table = stdout(&run(&filtered));
    assert!(
        table.contains("2 of 3 servers online, 3 players (1 shown)"),
        "{table}"
    );
    let mut bare = args.to_vec();
    bare.push("--no-header");
    let table = stdout(&run(&bare));
    assert_eq!(table.lines().count(), 3, "rows only: {table}");
    assert!(
        table.lines().all(|l| l.starts_with("127.0.0.1:")),
        "{table}"
    );
}

/// `--sort=-players`, `--sort -players` and qstat's capital `N` sort the other way round;
/// servers that did not answer stay last.
#[test]
fn sorting_the_other_way_round() {
    let few = spawn_serve(bin(), &["q3", "--listen", "127.0.0.1:0", "--players", "1"]);
    let many = spawn_serve(bin(), &["q3", "--listen", "127.0.0.1:0", "--players", "4"]);
    let silent = SilentUdp::v4();
    let (f, m, s) = (
        few.servers[0].to_string(),
        many.servers[0].to_string(),
        silent.to_addr_string(),
    );
    let order = |sort: &[&str]| -> Vec<String> {
        let mut args = vec![
            "query",
            "q3",
            &s,
            &m,
            &f,
            "--format",
            "json",
            "--timeout-ms",
            "200",
            "--retries",
            "0",
        ];
        args.extend_from_slice(sort);
        json(&run(&args))
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["address"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        order(&["--sort", "players"]),
        [m.clone(), f.clone(), s.clone()]
    );
    for sort in [
        &["--sort=-players"][..],
        &["--sort", "-players"],
        &["--sort", "N"],
    ] {
        assert_eq!(order(sort), [f.clone(), m.clone(), s.clone()], "{sort:?}");
    }
}

/// The JSON of a run where no server answered (exit 3).
fn unanswered(out: &std::process::Output) -> serde_json::Value {
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A Teeworlds query of a server that is no Teeworlds server does not call it a Teeworlds 0.7
/// server; an infoResponse to getstatus is said to answer another request.
#[test]
fn hints_say_only_what_is_known() {
    let q3 = spawn_serve(bin(), &["q3", "--listen", "127.0.0.1:0"]);
    let addr = q3.servers[0].to_string();
    let v = unanswered(&run(&[
        "query",
        "teeworlds",
        &addr,
        "--format",
        "json",
        "--timeout-ms",
        "100",
        "--retries",
        "0",
    ]));
    let err = v[0]["error"].as_str().unwrap();
    assert!(!err.contains("a Teeworlds 0.7 server?"), "{err}");
    assert!(err.contains("if it is a Teeworlds 0.7 server"), "{err}");
    let wrong = responder(b"Wrong", true).to_string();
    let v = unanswered(&run(&[
        "query",
        "q3",
        &wrong,
        "-P",
        "--format",
        "json",
        "--timeout-ms",
        "100",
        "--retries",
        "1",
    ]));
    let err = v[0]["error"].as_str().unwrap_or_default();
    // The library takes a reply to a sibling request (an infoResponse to getstatus) as the
    // game's own, not foreign: the query times out, blaming no other game (issue 32 item 2).
    assert!(!err.contains("none a Quake III Arena answer"), "{v:#}");
    assert_eq!(v[0]["status"], "timeout", "{v:#}");
}

/// `master --probe --progress always` prints a progress line even when the probe takes less
/// than a second.
#[test]
fn a_short_master_probe_prints_its_progress() {
    let farm = spawn_serve(
        bin(),
        &[
            "q3",
            "--listen",
            "127.0.0.1:0",
            "--count",
            "5",
            "--master",
            "--master-listen",
            "127.0.0.1:0",
        ],
    );
    let master = farm.master.unwrap().to_string();
    let out = run(&[
        "master",
        "q3",
        &master,
        "--probe",
        "--progress",
        "always",
        "--format",
        "csv",
    ]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let err = stderr_of(&out);
    assert!(err.lines().any(|l| l.starts_with("5/5 servers")), "{err}");
}
