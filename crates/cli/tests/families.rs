//! The CLI with the Warsow/Nexuiz/Xonotic and Teeworlds/DDNet families, end to end: qstat
//! (a real client) reading our emulated servers and masters, Warsow's short query and
//! protocol numbers, and `fragstat master ddnet URL` against a local HTTP server serving a
//! DDNet `servers.json`, probing the emulated servers it lists.

use std::net::UdpSocket;
use std::time::Duration;

use fragstat_testkit::{qstat_json, spawn_serve};
use serde_json::{json, Value};

mod support;
use support::{bin, json as json_out, run, stderr_of, HttpFile};

/// Our record of `addr` as `fragstat query GAME addr --players --format json` prints it.
fn ours(game: &str, addr: &str) -> Value {
    let v = json_out(&run(&[
        "query",
        game,
        addr,
        "--players",
        "--format",
        "json",
    ]));
    let rec = v[0].clone();
    assert_eq!(rec["status"], "online", "{rec}");
    rec
}

#[test]
fn qstat_reads_our_emulated_warsow_servers_and_master() {
    let served = spawn_serve(
        bin(),
        &[
            "warsow",
            "--listen",
            "127.0.0.1:0",
            "--count",
            "2",
            "--players",
            "5",
            "--name",
            "^1War^7sow",
            "--master",
            "--master-listen",
            "127.0.0.1:0",
        ],
    );
    for s in &served.servers {
        let addr = s.to_string();
        let Some(v) = qstat_json(&["-warsows", &addr, "-P", "-R"]) else {
            return;
        };
        let theirs = &v[0];
        let mine = ours("warsow", &addr);
        assert_eq!(theirs["status"], "online", "{theirs}");
        assert_eq!(theirs["name"], mine["name"], "colours stripped by both");
        assert_eq!(theirs["map"], mine["map"]);
        assert_eq!(theirs["numplayers"], mine["num_players"]);
        assert_eq!(theirs["maxplayers"], mine["max_players"]);
        assert_eq!(theirs["rules"]["gametype"], mine["gametype"]);
        assert_eq!(
            theirs["rules"]["g_match_time"],
            mine["rules"]["g_match_time"]
        );
        let view = |players: &Value, keys: [&str; 4]| -> Vec<Value> {
            players
                .as_array()
                .unwrap()
                .iter()
                .map(|p| json!([p[keys[0]], p[keys[1]], p[keys[2]], p[keys[3]]]))
                .collect()
        };
        assert_eq!(
            view(&theirs["players"], ["name", "score", "ping", "team"]),
            view(&mine["players"], ["name", "score", "ping", "team"])
        );
        assert_eq!(mine["extra"]["match_time"]["state"], "playing");
        assert_eq!(mine["num_spectators"], 1);
    }
    // qstat asks the master for protocol 22 (Warsow 2.1), which the emulator serves.
    let Some(v) = qstat_json(&["-warsowm", &served.master.unwrap().to_string()]) else {
        return;
    };
    assert_eq!(v[0]["status"], "online", "{v}");
    assert_eq!(v[0]["servers"], 2, "{v}");
    let list = json_out(&run(&[
        "master",
        "warsow",
        &served.master.unwrap().to_string(),
        "--format",
        "json",
    ]));
    let mut got: Vec<String> = list["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["address"].as_str().unwrap().to_string())
        .collect();
    got.sort();
    let mut want: Vec<String> = served.servers.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn qstat_reads_our_emulated_nexuiz_server() {
    let served = spawn_serve(
        bin(),
        &[
            "nexuiz",
            "--listen",
            "127.0.0.1:0",
            "--players",
            "4",
            "--map",
            "downer",
        ],
    );
    let addr = served.servers[0].to_string();
    let Some(v) = qstat_json(&["-nexuizs", &addr, "-P", "-R"]) else {
        return;
    };
    let (theirs, mine) = (&v[0], ours("nexuiz", &addr));
    assert_eq!(theirs["status"], "online", "{theirs}");
    assert_eq!(theirs["name"], mine["name"]);
    assert_eq!(theirs["map"], "downer");
    assert_eq!(theirs["numplayers"], mine["num_players"]);
    assert_eq!(theirs["maxplayers"], mine["max_players"]);
    assert_eq!(mine["num_bots"], 2);
    assert_eq!(mine["gametype"], "dm");
}

/// A Nexuiz team game (`serve nexuiz --gametype tdm`): qstat still reads it, and ours shows
/// each player's team (written before the name, as the real server does), the spectator and
/// the bots; `serve xonotic` likewise, read by qstat's `-xonotics`.
#[test]
fn qstat_reads_our_emulated_darkplaces_team_games() {
    for (game, qstat, gametype) in [
        ("nexuiz", "-nexuizs", "tdm"),
        ("nexuiz", "-nexuizs", "ctf"),
        ("xonotic", "-xonotics", "tdm"),
    ] {
        let served = spawn_serve(
            bin(),
            &[
                game,
                "--listen",
                "127.0.0.1:0",
                "--players",
                "6",
                "--gametype",
                gametype,
                "--name",
                "",
            ],
        );
        let addr = served.servers[0].to_string();
        let Some(v) = qstat_json(&[qstat, &addr, "-P", "-R"]) else {
            return;
        };
        let (theirs, mine) = (&v[0], ours(game, &addr));
        assert_eq!(theirs["status"], "online", "{theirs}");
        assert_eq!(theirs["name"], mine["name"], "{game} {gametype}");
        assert_eq!(theirs["numplayers"], mine["num_players"]);
        assert_eq!(theirs["maxplayers"], mine["max_players"]);
        assert_eq!(theirs["rules"]["gamename"], mine["rules"]["gamename"]);
        let version = if game == "nexuiz" { "2.5.2" } else { "0.8.6" };
        assert_eq!(
            mine["name"],
            format!(
                "{} {version} Server",
                &theirs["rules"]["gamename"].as_str().unwrap()
            )
        );
        assert_eq!(mine["gametype"], gametype);
        assert_eq!(mine["version"], version);
        assert_eq!(
            (&mine["num_bots"], &mine["num_spectators"]),
            (&json!(3), &json!(1))
        );
        let teams: Vec<Value> = mine["players"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| json!([p["team"], p["is_bot"], p["is_spectator"]]))
            .collect();
        assert_eq!(
            teams,
            [
                json!([1, false, false]),
                json!([2, true, false]),
                json!([0, false, true]),
                json!([1, true, false]),
                json!([2, false, false]),
                json!([1, true, false]),
            ],
            "{game} {gametype}"
        );
        // qstat reads the line's first number as the score and the name between quotes.
        let names = |players: &Value, score: &str| -> Vec<Value> {
            players
                .as_array()
                .unwrap()
                .iter()
                .map(|p| json!([p["name"], p[score]]))
                .collect()
        };
        assert_eq!(
            names(&theirs["players"], "score"),
            names(&mine["players"], "score")
        );
        assert_eq!(mine["warnings"], json!([]), "{mine}");
    }
}

/// `fragstat games` lists Xonotic with its ports and qstat's name, and qstat's master type
/// `xonoticm` names it for `fragstat master`.
#[test]
fn games_lists_xonotic() {
    let v = json_out(&run(&["games", "--format", "json"]));
    let x = v
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["id"] == "xonotic")
        .expect("xonotic listed");
    assert_eq!(
        (
            &x["title"],
            &x["family"],
            &x["default_port"],
            &x["master_port"]
        ),
        (
            &json!("Xonotic"),
            &json!("warsow"),
            &json!(26000),
            &json!(27950)
        )
    );
    assert_eq!(x["aliases"], json!(["xonotics"]));
    // The qstat master type names the game: its catalogue (printed, nothing sent).
    let out = run(&["master", "xonoticm", "--list-masters"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("master1.xonotic.org:42863"),
        "{}",
        stderr_of(&out)
    );
}

/// Reads one datagram on `socket` (60 s at most) and returns it with its sender.
fn receive(socket: &UdpSocket) -> (Vec<u8>, std::net::SocketAddr) {
    socket
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut buf = [0u8; 2048];
    let (n, from) = socket.recv_from(&mut buf).expect("a request");
    (buf[..n].to_vec(), from)
}

/// `query warsow ADDR --short` asks qfusion's short `info 22 full empty` and shows the reply
/// as a server; `--protocol 9` asks `info 9` (Warsow 0.3, whose reply pads differently);
/// `master warsow --protocol 9` sends `getservers Warsow 9 full empty`; DarkPlaces games have
/// no short query and are refused by name.
#[test]
fn warsow_short_query_and_protocol_numbers() {
    let served = spawn_serve(
        bin(),
        &[
            "warsow",
            "--listen",
            "127.0.0.1:0",
            "--players",
            "3",
            "--name",
            "^1War^7sow",
            "--gametype",
            "ctf",
        ],
    );
    let addr = served.servers[0].to_string();
    let v = json_out(&run(&[
        "query", "warsow", &addr, "--short", "--format", "json",
    ]));
    let rec = &v[0];
    assert_eq!(rec["status"], "online", "{rec}");
    assert_eq!(
        (&rec["name_raw"], &rec["map"], &rec["gametype"]),
        (&json!("^1War^7sow"), &json!("wca1"), &json!("ctf"))
    );
    assert_eq!(
        (&rec["num_players"], &rec["max_players"], &rec["num_bots"]),
        (&json!(3), &json!(8), &json!(1))
    );
    assert_eq!(rec["players"], Value::Null, "the short reply has none");
    assert_eq!(
        rec["unverified"], true,
        "the short reply carries no challenge"
    );
    assert_eq!(rec["rules"]["u"], " 3/ 8");

    // A Warsow 0.3 server: `info 9 full empty`, answered with 0.3's paddings.
    let old = UdpSocket::bind("127.0.0.1:0").unwrap();
    let old_addr = old.local_addr().unwrap().to_string();
    let thread = std::thread::spawn(move || {
        let (request, from) = receive(&old);
        old.send_to(
            b"\xff\xff\xff\xffinfo\n\\\\n\\\\Old\\\\m\\\\wdm2\\\\u\\\\03/16\\\\g\\\\   ca\\\\EOT",
            from,
        )
        .unwrap();
        request
    });
    let v = json_out(&run(&[
        "query",
        "warsow",
        &old_addr,
        "--short",
        "--protocol",
        "9",
        "--format",
        "json",
    ]));
    assert_eq!(
        thread.join().unwrap(),
        b"\xff\xff\xff\xffinfo 9 full empty\n"
    );
    assert_eq!(v[0]["status"], "online", "{v}");
    assert_eq!(
        (&v[0]["name"], &v[0]["map"], &v[0]["gametype"]),
        (&json!("Old"), &json!("wdm2"), &json!("ca"))
    );
    assert_eq!(
        (&v[0]["num_players"], &v[0]["max_players"]),
        (&json!(3), &json!(16))
    );

    // A master asked for Warsow 0.3's list.
    let master = UdpSocket::bind("127.0.0.1:0").unwrap();
    let master_addr = master.local_addr().unwrap().to_string();
    let thread = std::thread::spawn(move || {
        let (request, from) = receive(&master);
        master
            .send_to(
                b"\xff\xff\xff\xffgetserversResponse\\\x7f\x00\x00\x01\xad\x9c\\EOT\0\0\0",
                from,
            )
            .unwrap();
        request
    });
    let v = json_out(&run(&[
        "master",
        "warsow",
        &master_addr,
        "--protocol",
        "9",
        "--format",
        "json",
    ]));
    assert_eq!(
        thread.join().unwrap(),
        b"\xff\xff\xff\xffgetservers Warsow 9 full empty\n"
    );
    assert_eq!(v["servers"][0]["address"], "127.0.0.1:44444", "{v}");

    // No short query for DarkPlaces; `--protocol` on a query only with `--short`.
    let out = run(&["query", "nexuiz", &addr, "--short"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("--short: nexuiz (Nexuiz) has no short query"),
        "{}",
        stderr_of(&out)
    );
    let out = run(&["query", "warsow", &addr, "--protocol", "9"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    let out = run(&["query", "warsow", &addr, "--short", "-P"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
}

/// qstat's Teeworlds player list is known to be wrong (it reads (name, score) pairs from the
/// five-field records), so only the server fields are compared. qstat reports the players
/// that are not spectating and their slots; ours are in `extra`.
#[test]
fn qstat_reads_our_emulated_teeworlds_and_ddnet_servers_and_master() {
    for game in ["teeworlds", "ddnet"] {
        // `serve ddnet --master` serves DDNet's HTTP list (see
        // `serve_ddnet_master_serves_servers_json`); qstat reads the 0.6 UDP master.
        let mut args = vec![
            game,
            "--listen",
            "127.0.0.1:0",
            "--players",
            "6",
            "--max-players",
            "12",
            "--name",
            "Tee ^1world",
        ];
        if game == "teeworlds" {
            args.extend(["--master", "--master-listen", "127.0.0.1:0"]);
        }
        let served = spawn_serve(bin(), &args);
        let addr = served.servers[0].to_string();
        let Some(v) = qstat_json(&["-tees", &addr, "-P"]) else {
            return;
        };
        let (theirs, mine) = (&v[0], ours(game, &addr));
        assert_eq!(theirs["status"], "online", "{theirs}");
        assert_eq!(
            theirs["name"], "Tee ^1world",
            "no colour codes in Teeworlds"
        );
        assert_eq!(theirs["name"], mine["name"]);
        assert_eq!(theirs["map"], mine["map"]);
        assert_eq!(theirs["gametype"], mine["gametype"]);
        assert_eq!(theirs["numplayers"], mine["extra"]["num_players"]);
        assert_eq!(theirs["maxplayers"], mine["extra"]["max_players"]);
        assert_eq!(
            (mine["num_players"].clone(), mine["max_players"].clone()),
            (json!(6), json!(12))
        );
        assert_eq!(mine["num_spectators"], 1);
        // The 0.6 UDP master.
        let Some(master) = served.master else {
            continue;
        };
        let Some(m) = qstat_json(&["-teem", &master.to_string()]) else {
            return;
        };
        assert_eq!(m[0]["status"], "online", "{m}");
        assert_eq!(m[0]["servers"], 1, "{m}");
    }
}

#[test]
fn teeworlds07_master_and_servers_through_the_handshake() {
    let served = spawn_serve(
        bin(),
        &[
            "teeworlds07",
            "--listen",
            "127.0.0.1:0",
            "--count",
            "3",
            "--players",
            "2",
            "--master",
            "--master-listen",
            "127.0.0.1:0",
        ],
    );
    let v = json_out(&run(&[
        "master",
        "teeworlds07",
        &served.master.unwrap().to_string(),
        "--players",
        "--format",
        "json",
    ]));
    // `--probe` in JSON: the masters' reports beside the probed servers.
    assert_eq!(v["masters"][0]["status"], "online", "{v}");
    let records = v["servers"].as_array().expect("probed records");
    assert_eq!(records.len(), 3, "{v}");
    for r in records {
        assert_eq!(r["status"], "online", "{r}");
        assert_eq!(r["num_players"], 2);
        assert_eq!(r["num_bots"], 1, "0.7 says which clients are bots");
        assert_eq!(r["extra"]["protocol"], "0.7");
    }
}

/// A DDNet `servers.json` listing two emulated DDNet servers, one server whose info does not
/// validate, and one with no address fragstat can query.
fn servers_json(servers: &[std::net::SocketAddr]) -> Value {
    let info = |name: &str, clients: Value| {
        json!({"max_clients": 16, "max_players": 12, "passworded": false,
               "game_type": "DDraceNetwork", "name": name,
               "map": {"name": "Tutorial", "sha256": "00", "size": 1082711},
               "version": "0.6.4, 16.4", "client_score_kind": "time", "clients": clients})
    };
    let mut list: Vec<Value> = servers
        .iter()
        .enumerate()
        .map(|(i, s)| {
            json!({"addresses": [format!("tw-0.6+udp://{s}"), format!("tw-0.7+udp://{s}"), format!("ddnet+udp://{s}")],
                   "location": "eu:de",
                   "info": info(&format!("Listed {i}"), json!([
                       {"name": "Ünï ☃", "clan": "fs", "country": 276, "score": -9999, "is_player": true, "afk": false},
                       {"name": "spec", "clan": "", "country": -1, "score": 0, "is_player": false}]))})
        })
        .collect();
    list.push(json!({"addresses": ["tw-0.6+udp://127.0.0.1:9"], "info": {"name": "broken"}}));
    list.push(json!({"addresses": ["ddnet+quic://example#identity"], "info": info("unreachable", json!([]))}));
    json!({"servers": list})
}

#[test]
fn ddnet_http_master_end_to_end() {
    let served = spawn_serve(
        bin(),
        &[
            "ddnet",
            "--listen",
            "127.0.0.1:0",
            "--count",
            "2",
            "--players",
            "3",
        ],
    );
    let body = servers_json(&served.servers).to_string().into_bytes();
    let http_file = HttpFile::serve("/servers.json", "application/json", body);
    let http = http_file.addr;
    let url = format!("http://{http}/servers.json");

    // The list alone: every listed server carries its info and every address.
    let out = run(&["master", "ddnet", &url, "--format", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = json_out(&out);
    assert_eq!(v["masters"][0]["status"], "online", "{v}");
    assert_eq!(v["masters"][0]["servers"], 2, "{v}");
    assert!(
        stderr.contains("server 2 (tw-0.6+udp://127.0.0.1:9) skipped: its info does not validate"),
        "{stderr}"
    );
    assert!(
        stderr.contains("skipped: no address fragstat can query"),
        "{stderr}"
    );
    let servers = v["servers"].as_array().unwrap();
    for (i, (s, addr)) in servers.iter().zip(&served.servers).enumerate() {
        assert_eq!(s["address"], addr.to_string());
        assert_eq!(
            s["addresses"],
            json!([
                format!("tw-0.6+udp://{addr}"),
                format!("tw-0.7+udp://{addr}"),
                format!("ddnet+udp://{addr}")
            ])
        );
        let info = &s["info"];
        assert_eq!(info["name"], format!("Listed {i}"));
        assert_eq!(
            (info["num_players"].clone(), info["max_players"].clone()),
            (json!(2), json!(16))
        );
        assert_eq!(info["num_spectators"], 1);
        assert_eq!(info["players"][0]["name"], "Ünï ☃");
        assert_eq!(
            info["players"][0]["extra"],
            json!({"country": 276, "afk": false})
        );
        assert_eq!(info["location"], "eu:de");
        assert_eq!(info["extra"]["max_players"], 12);
        assert_eq!(info["score_kind"], "time");
    }

    // A table, with no probe needed.
    let out = run(&["master", "ddnet", &url]);
    assert!(out.status.success());
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("Listed 0") && table.contains("Tutorial"),
        "{table}"
    );

    // With a probe, the emulated servers answer over UDP (DDNet's extended query).
    let v = json_out(&run(&[
        "master",
        "ddnet",
        &url,
        "--players",
        "--format",
        "json",
    ]));
    let records = v["servers"].as_array().unwrap();
    assert_eq!(records.len(), 2, "{v}");
    for r in records {
        assert_eq!(r["status"], "online", "{r}");
        assert_eq!(r["num_players"], 3);
        assert_eq!(r["extra"]["protocol"], "0.6 extended");
    }

    // A body that is not a server list fails that master, with the offset.
    let bad_server = HttpFile::serve(
        "/servers.json",
        "application/json",
        b"{\"servers\": 3}".to_vec(),
    );
    let bad = bad_server.addr;
    let out = run(&["master", "ddnet", &format!("http://{bad}/servers.json")]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("servers.json at offset 12"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `serve ddnet --master` serves DDNet's servers.json (each server with the info its emulator
/// answers with) at the public list's path, and prints its URL: `master ddnet URL` reads it
/// and `--probe` then asks every listed server.
#[test]
fn serve_ddnet_master_serves_servers_json() {
    let served = spawn_serve(
        bin(),
        &[
            "ddnet",
            "--listen",
            "127.0.0.1:0",
            "--count",
            "3",
            "--players",
            "2",
            "--name",
            "Tee",
            "--master",
        ],
    );
    let url = served.master_url.clone().expect("the list's URL");
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/ddnet/15/servers.json"),
        "{url}"
    );
    let v = json_out(&run(&["master", "ddnet", &url, "--format", "json"]));
    assert_eq!(v["masters"][0]["status"], "online", "{v}");
    let servers = v["servers"].as_array().unwrap();
    let mut got: Vec<String> = servers
        .iter()
        .map(|s| s["address"].as_str().unwrap().to_string())
        .collect();
    let mut want: Vec<String> = served.servers.iter().map(ToString::to_string).collect();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    for s in servers {
        let info = &s["info"];
        assert!(
            info["name"].as_str().unwrap().starts_with("Tee #"),
            "{info}"
        );
        assert_eq!(info["players"].as_array().unwrap().len(), 2, "{info}");
    }
    // HOST:PORT means the public list's https: a plain-HTTP list says how to ask it.
    let host_port = served.master.unwrap().to_string();
    let out = run(&["master", "ddnet", &host_port]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!("if it serves plain HTTP, give {url}")),
        "{err}"
    );
    // The servers it lists answer.
    let out = run(&["master", "ddnet", &url, "--probe", "--format", "json"]);
    let v = json_out(&out);
    let probed = v["servers"].as_array().unwrap();
    assert_eq!(probed.len(), 3, "{v}");
    assert!(probed.iter().all(|s| s["status"] == "online"), "{v}");
}

/// `serve etqw --master` serves the ETQW feed (IP:port lines); `master etqw HOST:PORT` finds it
/// at the standard path.
#[test]
fn serve_etqw_master_serves_the_feed_at_the_standard_path() {
    let served = spawn_serve(
        bin(),
        &[
            "etqw",
            "--listen",
            "127.0.0.1:0",
            "--count",
            "2",
            "--master",
        ],
    );
    let url = served.master_url.clone().expect("the feed's URL");
    assert!(url.ends_with("/ipgetter/"), "{url}");
    let host_port = served.master.unwrap().to_string();
    let v = json_out(&run(&["master", "etqw", &host_port, "--format", "json"]));
    assert_eq!(v["masters"][0]["status"], "online", "{v}");
    let got: Vec<&str> = v["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["address"].as_str().unwrap())
        .collect();
    let want: Vec<String> = served.servers.iter().map(ToString::to_string).collect();
    assert_eq!(got, want);
}
