//! `fragstat track`'s stats pages end to end: the binary polls an emulated Quake III farm, a
//! server whose players leave (it stops, so their sessions end and count) and an OpenArena
//! farm; the API has each game's numbers, rankings and maps; headless Chromium renders
//! `/stats`, `/maps`, `/top` and a server page's chart at 1366×900 and 390×844 (screenshots
//! kept under `target/tracker-e2e/`, `stats-*.png`), the pages' script putting the chart's
//! times in local time.

use fragstat_testkit::browser::Chromium;
use fragstat_testkit::spawn_serve;

mod support;
use support::{artifacts, bin, http_json as get_json, Running};

fn serve(args: &[&str]) -> fragstat_testkit::Served {
    let mut all = vec!["--listen", "127.0.0.1:0"];
    all.extend_from_slice(args);
    spawn_serve(bin(), &all)
}

#[test]
fn stats_pages_render_in_chromium() {
    let chromium = Chromium::find();
    let farm = serve(&[
        "q3",
        "--count",
        "3",
        "--players",
        "4",
        "--master",
        "--master-listen",
        "127.0.0.1:0",
    ]);
    let leavers = serve(&["q3", "--players", "3", "--name", "^3Leavers ^7Arena"]);
    let oa = serve(&[
        "openarena",
        "--count",
        "2",
        "--players",
        "2",
        "--map",
        "oa_dm4",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("track.toml");
    let listed = |s: &fragstat_testkit::Served| {
        s.servers
            .iter()
            .map(|a| format!("\"{a}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    std::fs::write(
        &config,
        format!(
            "database = {:?}\nlisten = \"127.0.0.1:0\"\ninterval_secs = 2.5\ntimeout_ms = 300\nretries = 2\n\n\
             [history]\nsession_gap_secs = 3\n\n\
             [[source]]\ngame = \"q3\"\nmasters = [\"{}\"]\nservers = [{}]\n\n\
             [[source]]\ngame = \"openarena\"\nservers = [{}]\n",
            dir.path().join("track.db"),
            farm.master.unwrap(),
            listed(&leavers),
            listed(&oa),
        ),
    )
    .unwrap();
    let mut tracker = Running::start(&["track", "--config", config.to_str().unwrap()], &[]);
    let url = tracker.tracker_url();
    for _ in 0..4 {
        tracker.wait_line("a round", |l| l.starts_with("round "));
    }
    // The leavers' server stops: its sessions end (after the 3 s gap) and count.
    drop(leavers);
    let top =
        fragstat_testkit::wait::until("the leavers ranked", fragstat_testkit::wait::SETTLE, || {
            tracker.wait_line("a round", |l| l.starts_with("round "));
            let top = get_json(&format!("{url}api/top?game=q3"));
            let n = top["rankings"][0]["players"].as_array().map_or(0, Vec::len);
            (n >= 1).then_some(top)
        });
    let ranked = &top["rankings"][0]["players"];
    assert!(ranked[0]["seconds"].as_i64().unwrap() >= 2, "{top}");

    let stats = get_json(&format!("{url}api/stats"));
    let games = stats["games"].as_array().unwrap();
    assert_eq!(games[0]["game"], "*");
    assert_eq!(games[0]["servers_online"], 5, "{stats}");
    // Every second emulated player is a bot: humans and bots apart, 16 players in all.
    let (humans, bots) = (
        games[0]["humans"].as_i64().unwrap(),
        games[0]["bots"].as_i64().unwrap(),
    );
    assert_eq!(humans + bots, 16, "{stats}");
    assert!(
        games[0]["record"]["humans"].as_i64().unwrap() >= humans,
        "{stats}"
    );
    assert!(!stats["points"].as_array().unwrap().is_empty(), "{stats}");
    let maps = get_json(&format!("{url}api/maps"));
    assert!(
        maps["maps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["map"] == "oa_dm4" && m["servers"] == 2),
        "{maps}"
    );

    let Some(chromium) = chromium else {
        return;
    };
    let server = format!(
        "{url}server/{}",
        farm.servers[0].to_string().replace(':', "%3A")
    );
    let dom = chromium.dump_dom(&format!("{url}stats"), 2000);
    assert!(dom.contains("<svg id=\"chart\""), "{dom}");
    assert!(dom.contains("<polyline class=\"humans\""), "{dom}");
    assert_eq!(dom.matches("<tr class=\"game\"").count(), 3, "{dom}");
    // The script ran: the caption says local time.
    assert!(dom.contains(">local time<"), "{dom}");
    let dom = chromium.dump_dom(&format!("{url}maps"), 2000);
    assert!(dom.contains("<tr class=\"map\""), "{dom}");
    let dom = chromium.dump_dom(&format!("{url}top"), 2000);
    assert!(dom.contains("<tr class=\"ranked\""), "{dom}");
    let dom = chromium.dump_dom(&server, 2000);
    assert!(dom.contains("<g class=\"hit\" tabindex=\"0\">"), "{dom}");
    assert!(dom.contains("aria-current=\"page\">24 h<"), "{dom}");

    let out = artifacts("tracker-e2e");
    for (name, page) in [
        ("stats", format!("{url}stats")),
        ("maps", format!("{url}maps")),
        ("top", format!("{url}top")),
        ("server-chart", server.clone()),
    ] {
        chromium.screenshot(
            &page,
            &out.join(format!("stats-{name}-desktop.png")),
            1366,
            900,
            2000,
        );
        chromium.screenshot(
            &page,
            &out.join(format!("stats-{name}-phone.png")),
            390,
            844,
            2000,
        );
    }
    eprintln!("screenshots in {}", out.display());
    drop(tracker);
}
