//! Doom 3, Quake 4, Prey and ETQW through the `fragstat` binary, read by qstat (a real
//! client) and by our own CLI: both must report exactly what the emulators were told to
//! serve, and agree with each other field by field. The ETQW server-list feed is served over
//! HTTP by a local axum server and read with `fragstat master etqw URL` (and `--probe`).
//! Under CI a missing qstat fails these tests (fragstat_testkit::qstat_json).

use std::collections::BTreeMap;
use std::net::SocketAddr;

use fragstat_testkit::wait::{self, SETTLE};
use fragstat_testkit::{qstat_json, spawn_serve};
use serde_json::Value;

mod support;
use support::{bin, json, run, HttpFile};

/// Quake colour codes removed, as qstat shows names (`TF_QUAKE3_NAMES`).
fn strip(s: &str) -> String {
    let mut out = String::new();
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c == '^' {
            if it.next().is_none() {
                out.push(c);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Our record of `addr` through `fragstat query GAME ADDR --players --rules --format json`.
fn ours(game: &str, addr: &SocketAddr) -> Value {
    let v = json(&run(&[
        "query",
        game,
        &addr.to_string(),
        "--players",
        "--rules",
        "--format",
        "json",
    ]));
    let r = v[0].clone();
    assert_eq!(r["status"], "online", "{r}");
    r
}

/// qstat's rules as a map, without the keys qstat adds itself.
fn qstat_rules(q: &Value, added: &[&str]) -> BTreeMap<String, String> {
    q["rules"]
        .as_object()
        .expect("qstat rules")
        .iter()
        .filter(|(k, _)| !added.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect()
}

fn our_rules(r: &Value, skip: &[&str]) -> BTreeMap<String, String> {
    r["rules"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| !skip.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect()
}

/// qstat's players sorted by slot (it lists them in reverse).
fn qstat_players(q: &Value) -> Vec<Value> {
    let mut p = q["players"].as_array().expect("qstat players").clone();
    p.sort_by_key(|p| p["number"].as_i64());
    p
}

#[test]
fn qstat_and_fragstat_read_emulated_idtech4_servers_and_masters() {
    for (game, server_type, master_type, map) in [
        ("doom3", "-dm3s", "-dm3m", "game/mp/d3dm5"),
        ("quake4", "-q4s", "-q4m", "mp/q4dm7"),
        ("prey", "-preys", "-preym", "game/dmmp/feedingtowers"),
    ] {
        let served = spawn_serve(
            bin(),
            &[
                game,
                "--listen",
                "127.0.0.1:0",
                "--count",
                "2",
                "--players",
                "5",
                "--name",
                "^2Green ^7Room",
                "--map",
                map,
                "--max-players",
                "12",
                "--password",
                "--master",
                "--master-listen",
                "127.0.0.1:0",
            ],
        );
        for (i, s) in served.servers.iter().enumerate() {
            let Some(v) = qstat_json(&[server_type, &s.to_string(), "-P", "-R"]) else {
                return;
            };
            let q = &v[0];
            let r = ours(game, s);
            assert_eq!(q["status"], "online", "{game}: {q}");
            // What the emulator was told to serve.
            let name = format!("Green Room #{}", i + 1);
            assert_eq!(q["name"], name, "{game}");
            assert_eq!(r["name"], name, "{game}");
            assert_eq!(r["name_raw"], format!("^2Green ^7Room #{}", i + 1));
            for v in [&q["map"], &r["map"]] {
                assert_eq!(v, map, "{game}");
            }
            assert_eq!(
                (&q["maxplayers"], &r["max_players"]),
                (&12.into(), &12.into())
            );
            assert_eq!(
                (&q["numplayers"], &r["num_players"]),
                (&5.into(), &5.into())
            );
            assert_eq!(r["password"], true, "{game}");
            // Both clients agree on every rule, and qstat's own additions match our extra.
            let qr = qstat_rules(q, &["protocol", "osmask"]);
            assert_eq!(qr, our_rules(&r, &[]), "{game}: rules");
            assert_eq!(qr["si_usepass"], "1");
            assert_eq!(q["rules"]["protocol"], r["extra"]["protocol"], "{game}");
            let qmask = q["rules"]["osmask"].as_str().unwrap();
            let omask = r["extra"]["os_mask"].as_str().unwrap();
            assert_eq!(
                u32::from_str_radix(qmask.trim_start_matches("0x"), 16).unwrap(),
                u32::from_str_radix(omask.trim_start_matches("0x"), 16).unwrap()
            );
            // Players: slot, name, ping, rate (and Quake 4's clan), one by one.
            let qp = qstat_players(q);
            let op = r["players"].as_array().unwrap();
            assert_eq!(qp.len(), 5);
            assert_eq!(op.len(), 5);
            let slots: Vec<i64> = qp.iter().map(|p| p["number"].as_i64().unwrap()).collect();
            assert_eq!(slots, [0, 2, 3, 4, 5], "{game}: slot 1 is left free");
            for (j, (a, b)) in qp.iter().zip(op).enumerate() {
                assert_eq!(a["number"], b["extra"]["slot"], "{game} player {j}");
                assert_eq!(a["name"], format!("Player{}", j + 1));
                assert_eq!(a["name"], b["name"]);
                assert_eq!(
                    strip(b["name_raw"].as_str().unwrap()),
                    format!("Player{}", j + 1)
                );
                assert_eq!(a["ping"], b["ping"], "{game} player {j}");
                assert_eq!(
                    a["rate"],
                    b["extra"]["rate"].to_string(),
                    "{game} player {j}"
                );
                if game == "quake4" {
                    assert_eq!(a["clan"], b["clan"], "{game} player {j}");
                    let want = if j % 3 == 0 { "" } else { "fs" };
                    assert_eq!(a["clan"], want, "{game} player {j}");
                } else {
                    assert!(a.get("clan").is_none() && b["clan"].is_null(), "{game}");
                }
            }
        }
        // The master lists both servers, to qstat and to us.
        let master = served.master.expect("master").to_string();
        let Some(v) = qstat_json(&[master_type, &master]) else {
            return;
        };
        let arr = v.as_array().unwrap();
        assert_eq!(arr[0]["status"], "online", "{game}: {}", arr[0]);
        assert_eq!(arr[0]["servers"], 2, "{game}");
        let mut listed: Vec<String> = arr[1..]
            .iter()
            .map(|s| s["address"].as_str().unwrap().to_string())
            .collect();
        listed.sort();
        let mut want: Vec<String> = served.servers.iter().map(ToString::to_string).collect();
        want.sort();
        assert_eq!(listed, want, "{game}: qstat's list");
        assert!(arr[1..].iter().all(|s| s["numplayers"] == 5));
        let m = json(&run(&["master", game, &master, "--format", "json"]));
        let mut mine: Vec<String> = m["servers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["address"].as_str().unwrap().to_string())
            .collect();
        mine.sort();
        assert_eq!(mine, want, "{game}: our list");
    }
}

/// A server started with `--heartbeat` registers with an emulated master (heartbeat, the
/// master's getInfo challenge, the server's answer) and is then listed to qstat.
#[test]
fn heartbeating_servers_are_listed_after_the_challenge() {
    for (game, master_type) in [("doom3", "-dm3m"), ("quake4", "-q4m")] {
        let master = spawn_serve(
            bin(),
            &[
                game,
                "--count",
                "0",
                "--master",
                "--master-listen",
                "127.0.0.1:0",
            ],
        );
        let m = master.master.unwrap().to_string();
        let server = spawn_serve(
            bin(),
            &[
                game,
                "--listen",
                "127.0.0.1:0",
                "--players",
                "2",
                "--heartbeat",
                &m,
            ],
        );
        let want = server.servers[0].to_string();
        let mut v = Value::Null;
        wait::until_true(format!("{game}: the server listed"), SETTLE, || {
            let Some(q) = qstat_json(&[master_type, &m]) else {
                return true;
            };
            v = q;
            let arr = v.as_array().unwrap();
            arr[0]["status"] == "online" && arr.len() == 2
        });
        if v.is_null() {
            return;
        }
        let arr = v.as_array().unwrap();
        assert_eq!(arr[1]["address"], want.as_str(), "{game}");
        assert_eq!(arr[1]["numplayers"], 2, "{game}");
    }
}

#[test]
fn qstat_and_fragstat_read_emulated_etqw_servers() {
    let served = spawn_serve(
        bin(),
        &[
            "etqw",
            "--listen",
            "127.0.0.1:0",
            "--count",
            "2",
            "--players",
            "6",
            "--name",
            "^3Strogg ^7Base",
            "--map",
            "volcano",
            "--max-players",
            "24",
        ],
    );
    for (i, s) in served.servers.iter().enumerate() {
        let Some(v) = qstat_json(&["-etqws", &s.to_string(), "-P", "-R"]) else {
            return;
        };
        let q = &v[0];
        let r = ours("etqw", s);
        assert_eq!(q["status"], "online", "{q}");
        let name = format!("Strogg Base #{}", i + 1);
        assert_eq!(
            (q["name"].as_str(), r["name"].as_str()),
            (Some(&*name), Some(&*name))
        );
        assert_eq!(
            (&q["map"], &r["map"]),
            (&"volcano".into(), &"volcano".into())
        );
        assert_eq!(
            r["rules"]["si_map"], "maps/volcano.entities",
            "raw value kept"
        );
        assert_eq!(
            (&q["maxplayers"], &r["max_players"]),
            (&24.into(), &24.into())
        );
        assert_eq!(
            (&q["numplayers"], &r["num_players"]),
            (&6.into(), &6.into())
        );
        assert_eq!((&r["num_bots"], &r["password"]), (&3.into(), &false.into()));
        assert_eq!(r["gametype"], "campaign");
        // qstat strips si_map in its rules too; it adds the post-player block as rules.
        let added = [
            "protocol",
            "osmask",
            "ranked",
            "timeleft",
            "gamestate",
            "servertype",
            "interested_clients",
            "si_map",
        ];
        assert_eq!(qstat_rules(q, &added), our_rules(&r, &["si_map"]));
        let x = &r["extra"];
        assert_eq!(q["rules"]["protocol"], x["protocol"]);
        assert_eq!(x["protocol"], "10.21");
        assert_eq!(q["rules"]["osmask"], "0x7");
        assert_eq!(x["os_mask"], "0x00000007");
        assert_eq!(q["rules"]["ranked"], "0");
        assert_eq!(x["ranked"], false);
        assert_eq!(q["rules"]["timeleft"], x["time_left_ms"].to_string());
        assert_eq!(q["rules"]["gamestate"], x["game_state"]["raw"].to_string());
        assert_eq!(q["rules"]["servertype"], "0");
        assert_eq!(x["server_type"], "regular");
        assert_eq!(
            q["rules"]["interested_clients"],
            x["interested_clients"].to_string()
        );
        let qp = qstat_players(q);
        let op = r["players"].as_array().unwrap();
        assert_eq!((qp.len(), op.len()), (6, 6));
        for (j, (a, b)) in qp.iter().zip(op).enumerate() {
            assert_eq!(a["number"], b["extra"]["slot"], "player {j}");
            assert_eq!(a["name"], format!("Player{}", j + 1));
            assert_eq!(a["name"], b["name"]);
            assert_eq!(a["ping"], b["ping"], "player {j}");
            assert_eq!(a["clan"], b["clan"], "player {j}");
            let bot = j % 2 == 1;
            assert_eq!(a["type"], if bot { "bot" } else { "player" });
            assert_eq!(b["is_bot"], bot);
            if bot {
                assert_eq!(b["ping"], 0);
            }
            // Only we ask getInfoEx: xp, team, kills and deaths as served.
            let e = &b["extra"];
            assert_eq!(e["team"], if j % 2 == 0 { "gdf" } else { "strogg" });
            assert_eq!(e["xp"], 12.5 * (j as f64 + 1.0));
            assert_eq!(e["kills"], 3 * j as i64);
            assert_eq!(b["is_spectator"], false);
        }
    }
}

#[test]
fn etqw_feed_over_http_lists_and_probes() {
    let served = spawn_serve(
        bin(),
        &[
            "etqw",
            "--listen",
            "127.0.0.1:0",
            "--count",
            "3",
            "--players",
            "2",
        ],
    );
    let mut body = String::new();
    for s in &served.servers {
        body.push_str(&format!("{s}\r\n"));
    }
    body.push_str("\nthis is not an address\n");
    body.push_str(&format!("{}\n", served.servers[0]));
    let feed = HttpFile::serve("/ipgetter/", "text/plain", body.into_bytes());
    let feed_url = feed.url("/ipgetter/");

    let out = run(&["master", "etqw", &feed_url, "--format", "json"]);
    let v = json(&out);
    let mut listed: Vec<String> = v["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["address"].as_str().unwrap().to_string())
        .collect();
    listed.sort();
    let mut want: Vec<String> = served.servers.iter().map(ToString::to_string).collect();
    want.sort();
    assert_eq!(
        listed, want,
        "the bad line and the repeated one are skipped"
    );
    assert_eq!(v["masters"][0]["status"], "online");
    assert_eq!(v["masters"][0]["servers"], 3);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 5 (offset"), "{err}");
    assert!(
        err.contains("not IP:port: \"this is not an address\""),
        "{err}"
    );
    assert!(err.contains("listed again"), "{err}");

    let v = json(&run(&[
        "master", "etqw", &feed_url, "--probe", "--format", "json",
    ]));
    let records = v["servers"].as_array().expect("records");
    assert_eq!(records.len(), 3);
    for r in records {
        assert_eq!(r["status"], "online", "{r}");
        assert_eq!(r["game"], "etqw");
        assert_eq!(r["num_players"], 2);
        assert_eq!(r["map"], "valley");
    }

    // A feed that is not there: no list, a non-zero exit and the HTTP status said.
    let missing = feed_url.replace("/ipgetter/", "/nothing/");
    let out = run(&["master", "etqw", &missing, "--format", "json"]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("404"), "{err}");
    // The JSON is still the object, with the master's report (a cron job can tell which
    // master failed).
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["servers"], serde_json::json!([]));
    assert_eq!(v["masters"][0]["status"], "error");
    assert!(
        v["masters"][0]["error"].as_str().unwrap().contains("404"),
        "{v}"
    );
}

/// `fragstat decode GAME FILE` prints exactly the fixture's `.decoded` snapshot for every
/// idtech4 and etqw case that decodes, and one line naming the field and offset (exit 1) for
/// every case that must fail.
#[test]
fn decode_prints_every_capture_and_names_failures() {
    let root = fragstat_testkit::repo_root().join("tests/fixtures");
    let mut seen = 0;
    for family in ["idtech4", "etqw"] {
        for kind in ["ok", "err"] {
            let dir = root.join(family).join(kind);
            let mut bins: Vec<_> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "bin"))
                .collect();
            bins.sort();
            for bin in bins {
                let meta: Value =
                    serde_json::from_slice(&std::fs::read(bin.with_extension("json")).unwrap())
                        .unwrap();
                let game = meta["game"].as_str().unwrap();
                let snapshot: Value =
                    serde_json::from_slice(&std::fs::read(bin.with_extension("decoded")).unwrap())
                        .unwrap();
                let out = run(&["decode", game, bin.to_str().unwrap()]);
                let name = bin.display();
                if let Some(err) = snapshot.get("error").filter(|e| e.is_object()) {
                    assert_eq!(out.status.code(), Some(1), "{name}");
                    let stderr = String::from_utf8_lossy(&out.stderr);
                    assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
                    assert!(
                        stderr.contains(&format!("offset {}", err["offset"])),
                        "{name}: {stderr}"
                    );
                    assert!(out.stdout.is_empty());
                } else {
                    assert_eq!(json(&out), snapshot, "{name}");
                }
                seen += 1;
            }
        }
    }
    assert!(seen >= 30, "{seen} cases");
}

/// A list longer than one `servers` datagram (231 entries) reaches both clients whole.
#[test]
fn master_lists_spanning_several_datagrams() {
    let served = spawn_serve(
        bin(),
        &[
            "quake4",
            "--listen",
            "127.0.0.1:0",
            "--count",
            "250",
            "--master",
            "--master-listen",
            "127.0.0.1:0",
        ],
    );
    let master = served.master.unwrap().to_string();
    let mut want: Vec<String> = served.servers.iter().map(ToString::to_string).collect();
    want.sort();
    let m = json(&run(&["master", "quake4", &master, "--format", "json"]));
    let mut mine: Vec<String> = m["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["address"].as_str().unwrap().to_string())
        .collect();
    mine.sort();
    assert_eq!(mine, want);
    let Some(v) = qstat_json(&["-q4m", &master]) else {
        return;
    };
    let arr = v.as_array().unwrap();
    assert_eq!(arr[0]["servers"], 250);
    let mut listed: Vec<String> = arr[1..]
        .iter()
        .map(|s| s["address"].as_str().unwrap().to_string())
        .collect();
    listed.sort();
    assert_eq!(listed, want);
    assert!(arr[1..].iter().all(|s| s["status"] == "online"));
}
