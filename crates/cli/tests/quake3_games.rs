//! The Quake III family's named games end to end: qstat (a real client, with its own type
//! for each game) reads our emulated server of every game it knows the same way we do; the
//! games without a Quake III master; IW4x's HTTP list.

use fragstat_testkit::{qstat_json, spawn_serve};
use serde_json::Value;

mod support;
use support::{bin, json, run};

/// (our id, qstat's server type).
const QSTAT_TYPES: &[(&str, &str)] = &[
    ("q3", "q3s"),
    ("et", "woets"),
    ("etl", "woets"),
    ("rtcw", "rws"),
    ("openarena", "openarenas"),
    ("urt", "iourts"),
    ("jk2", "jk2s"),
    ("jka", "jk3s"),
    ("sof2", "sof2s"),
    ("cod", "cods"),
    ("cod2", "cod2s"),
    ("cod4", "cod4s"),
    ("mohaa", "maqs"),
    ("unvanquished", "unvanquisheds"),
    ("tremulous", "tremulouss"),
    ("wop", "wops"),
    ("smokinguns", "smokingunss"),
    ("q3rally", "q3rallys"),
    ("reaction", "reactions"),
];

#[test]
fn qstat_reads_every_emulated_quake3_game_as_we_do() {
    for &(game, qstat_type) in QSTAT_TYPES {
        // Medal of Honor draws no colour codes (its dialect is `plain`), so its names have none.
        let name = if game == "mohaa" {
            "Red Srv"
        } else {
            "^1Red ^7Srv"
        };
        let served = spawn_serve(
            bin(),
            &[
                game,
                "--listen",
                "127.0.0.1:0",
                "--players",
                "4",
                "--name",
                name,
            ],
        );
        let addr = served.servers[0].to_string();
        let Some(v) = qstat_json(&[&format!("-{qstat_type}"), &addr, "-P", "-R"]) else {
            return;
        };
        let theirs = &v[0];
        let ours = json(&run(&[
            "query",
            game,
            &addr,
            "--players",
            "--rules",
            "--format",
            "json",
        ]));
        let ours = &ours[0];
        assert_eq!(theirs["status"], "online", "{game}: {theirs}");
        assert_eq!(ours["status"], "online", "{game}: {ours}");
        assert_eq!(ours["warnings"], Value::Array(Vec::new()), "{game}: {ours}");
        assert_eq!(theirs["name"], "Red Srv", "{game}");
        assert_eq!(ours["name"], "Red Srv", "{game}");
        assert_eq!(theirs["map"], ours["map"], "{game}");
        assert_eq!(theirs["numplayers"], ours["num_players"], "{game}");
        assert_eq!(theirs["maxplayers"], ours["max_players"], "{game}");
        let theirs_players = theirs["players"].as_array().unwrap();
        let ours_players = ours["players"].as_array().unwrap();
        assert_eq!(theirs_players.len(), ours_players.len(), "{game}");
        for (t, o) in theirs_players.iter().zip(ours_players) {
            assert_eq!(t["name"], o["name"], "{game}");
            assert_eq!(t["ping"], o["ping"], "{game}");
            if game == "mohaa" {
                // `ping "name"` lines carry no score; qstat writes 0 for it.
                assert_eq!((&t["score"], &o["score"]), (&Value::from(0), &Value::Null));
            } else {
                assert_eq!(t["score"], o["score"], "{game}");
            }
            if game == "sof2" {
                assert_eq!(t["team"], o["team"], "{game}: the team before the name");
            }
        }
    }
}

/// A game without a Quake III master is in the list, and `master` says where it lists.
#[test]
fn games_without_a_quake3_master_say_where_they_list() {
    let table = String::from_utf8(run(&["games"]).stdout).unwrap();
    assert!(table.contains("Medal of Honor: Allied Assault"), "{table}");
    // A game with no Quake III master says so instead of asking one.
    let out = run(&["master", "mohaa", "127.0.0.1:1"]);
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("GameSpy"), "{err}");
}

/// `serve iw4x --master` serves IW4x's JSON list at the public list's path: `master iw4x URL`
/// reads it and `--probe` asks every listed server over UDP.
#[test]
fn iw4x_http_list_end_to_end() {
    let served = spawn_serve(
        bin(),
        &[
            "iw4x",
            "--listen",
            "127.0.0.1:0",
            "--count",
            "2",
            "--players",
            "4",
            "--master",
        ],
    );
    let url = served.master_url.clone().expect("the list's URL");
    assert!(url.ends_with("/v1/servers/iw4x?protocol=152"), "{url}");
    let v = json(&run(&[
        "master", "iw4x", &url, "--probe", "--format", "json",
    ]));
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
        assert_eq!(s["status"], "online", "{s}");
        // Two of the four are bots, which IW4x leaves off its status.
        assert_eq!(s["num_players"], 2, "{s}");
    }
}
