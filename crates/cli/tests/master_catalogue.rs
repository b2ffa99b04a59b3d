//! `fragstat master GAME` with no master: the game's catalogue, asked and merged, each server
//! with the masters that listed it (issue 33). The catalogue names real hosts: every entry is
//! moved to an emulated master on loopback with `--master-at` (the entries read from
//! `--list-masters`, so none is left out), and nothing else is asked or resolved.

use std::time::{Duration, Instant};

use fragstat_testkit::{spawn_serve, Served};
use serde_json::Value;

mod support;
use support::{bin, json, run, stderr_of};

/// `fragstat serve GAME` with a master of its own on loopback (and `extra` options).
fn farm(game: &str, count: &str, extra: &[&str]) -> Served {
    let mut args = vec![
        game,
        "--listen",
        "127.0.0.1:0",
        "--count",
        count,
        "--master",
        "--master-listen",
        "127.0.0.1:0",
    ];
    args.extend_from_slice(extra);
    spawn_serve(bin(), &args)
}

/// The catalogue's addresses, as `--list-masters --format json` gives them.
fn catalogue(game: &str) -> Vec<String> {
    let v = json(&run(&[
        "master",
        game,
        "--list-masters",
        "--format",
        "json",
    ]));
    v.as_array()
        .expect("an array")
        .iter()
        .map(|m| m["address"].as_str().unwrap().to_string())
        .collect()
}

/// `--master-at` for every entry, entry `i` at `farms[i]`'s master.
fn master_at(game: &str, farms: &[&Served]) -> Vec<String> {
    let entries = catalogue(game);
    assert_eq!(entries.len(), farms.len(), "{game}: {entries:?}");
    entries
        .iter()
        .zip(farms)
        .flat_map(|(e, f)| {
            [
                "--master-at".to_string(),
                format!("{e}={}", f.master.unwrap()),
            ]
        })
        .collect()
}

/// Warfork's three masters (asked for protocol 27, with its name): merged, each server with
/// the masters that listed it, each master's report with its catalogue entry.
#[test]
fn no_master_given_asks_the_catalogue_with_provenance() {
    let listed = catalogue("warfork");
    let a = farm("warfork", "2", &[]);
    let b = farm("warfork", "1", &[]);
    let c = farm("warfork", "1", &[]);
    let mut args: Vec<String> = ["master", "warfork", "--format", "json"]
        .map(String::from)
        .to_vec();
    args.extend(master_at("warfork", &[&a, &b, &c]));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(&argv);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let masters = v["masters"].as_array().unwrap();
    assert_eq!(masters.len(), 3, "{v:#}");
    for (m, entry) in masters.iter().zip(&listed) {
        assert_eq!(m["status"], "online", "{m}");
        assert_eq!(m["catalogue"]["protocols"], serde_json::json!([27]), "{m}");
        assert_eq!(m["catalogue"]["form"], "named Warfork", "{m}");
        assert!(m["catalogue"]["source"].as_str().unwrap().len() > 10);
        assert_eq!(m["catalogue"]["checked"], "2026-11-28");
        assert!(
            !entry.starts_with("127."),
            "{entry}: the real entry is listed"
        );
    }
    let servers = v["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 4, "{v:#}");
    let by = |addr: &std::net::SocketAddr| {
        servers
            .iter()
            .find(|s| s["address"] == addr.to_string())
            .map(|s| s["listed_by"].clone())
            .unwrap()
    };
    let a_master = masters[0]["address"].clone();
    assert_eq!(by(&a.servers[1]), serde_json::json!([a_master]));
    // NDJSON: the master lines, then servers with `listed_by`.
    let mut nd = argv.clone();
    nd[3] = "ndjson";
    let lines: Vec<Value> = String::from_utf8_lossy(&run(&nd).stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3 + 4);
    assert!(lines[..3]
        .iter()
        .all(|l| l["master"]["catalogue"].is_object()));
    assert!(lines[3..].iter().all(|l| l["listed_by"].is_array()));
}

/// A master without an end marker (`--eot none`, as Tremulous' own): the list ends on the
/// quiet period, not after the 30 s master timeout.
#[test]
fn a_list_without_an_end_marker_ends_on_the_quiet_period() {
    let t = farm("tremulous", "3", &["--eot", "none"]);
    let mut args: Vec<String> = [
        "master",
        "tremulous",
        "--format",
        "json",
        "--master-timeout-ms",
        "30000",
        "--master-quiet-ms",
        "300",
    ]
    .map(String::from)
    .to_vec();
    args.extend(master_at("tremulous", &[&t]));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let started = Instant::now();
    let out = run(&argv);
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["servers"].as_array().unwrap().len(), 3, "{v:#}");
    assert!(took < Duration::from_secs(15), "{took:?}");
}

/// Quake 4's two masters (id's and quakehub's), each an emulated idTech 4 master: asked with
/// the game's own `getServers`, ended on a datagram that is not full (a 20 s quiet period
/// and a 30 s master timeout are never waited), merged with provenance.
#[test]
fn quake4_masters_asked_with_their_own_request() {
    let a = farm("quake4", "2", &[]);
    let b = farm("quake4", "1", &[]);
    let mut args: Vec<String> = [
        "master",
        "quake4",
        "--format",
        "json",
        "--master-timeout-ms",
        "30000",
        "--master-quiet-ms",
        "20000",
    ]
    .map(String::from)
    .to_vec();
    args.extend(master_at("quake4", &[&a, &b]));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let started = Instant::now();
    let out = run(&argv);
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(took < Duration::from_secs(15), "{took:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let masters = v["masters"].as_array().unwrap();
    assert_eq!(masters.len(), 2, "{v:#}");
    for m in masters {
        assert_eq!(m["status"], "online", "{m}");
        assert_eq!(m["catalogue"]["form"], "own", "{m}");
        assert_eq!(m["catalogue"]["end"], "short-datagram", "{m}");
    }
    let servers = v["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 3, "{v:#}");
    let b_only = servers
        .iter()
        .find(|s| s["address"] == b.servers[0].to_string())
        .unwrap();
    assert_eq!(
        b_only["listed_by"],
        serde_json::json!([masters[1]["address"]])
    );
}

/// `--list-masters` sends nothing and names each entry's source and date; `--master-at`
/// refuses an entry the catalogue has not (a typo would otherwise leave the real one asked).
#[test]
fn list_masters_and_master_at_checks() {
    let out = run(&["master", "rtcw", "--list-masters"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("wolfmaster.idsoftware.com:27950"), "{text}");
    assert!(text.contains("short") && text.contains("60,57") && text.contains("2026-11-28"));
    // The transport as the JSON writes it.
    assert!(text.contains("\tudp\t") && !text.contains("Udp"), "{text}");
    let out = run(&[
        "master",
        "rtcw",
        "--master-at",
        "wolfmaster.example:27950=127.0.0.1:9",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("not in rtcw's catalogue"));
    let games = json(&run(&["games", "--format", "json"]));
    let xonotic = games
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["id"] == "xonotic")
        .unwrap();
    assert_eq!(xonotic["catalogue"].as_array().unwrap().len(), 6);
}

/// The emulated master's quirks from the command line: `--master-short-only` answers the
/// short form CoD's masters are asked with, `--eot bare-every` marks every datagram as
/// Activision's do; each of CoD's three entries (five protocols each, asked in turn) lists
/// the farm's servers.
#[test]
fn serve_shows_the_short_form_and_bare_eot_quirks() {
    let f = farm("cod", "3", &["--eot", "bare-every", "--master-short-only"]);
    let mut args: Vec<String> = ["master", "cod", "--format", "json"]
        .map(String::from)
        .to_vec();
    args.extend(master_at("cod", &[&f, &f, &f]));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(&argv);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let masters = v["masters"].as_array().unwrap();
    assert!(
        masters
            .iter()
            .all(|m| m["status"] == "online" && m["servers"] == 3),
        "{v:#}"
    );
    assert!(
        masters.iter().all(|m| m["catalogue"]["form"] == "short"),
        "{v:#}"
    );
    let servers = v["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 3, "{v:#}");
    assert!(servers
        .iter()
        .all(|s| s["listed_by"].as_array().unwrap().len() == 3));
    // A request naming the game gets nothing from it.
    let named = run(&[
        "master",
        "cod",
        &f.master.unwrap().to_string(),
        "--ext",
        "--gamename",
        "CoD",
        "--master-timeout-ms",
        "300",
        "--format",
        "json",
    ]);
    assert_eq!(named.status.code(), Some(3), "{}", stderr_of(&named));
}
