//! `fragstat track` and its people, end to end (issue 34): the binary polls an emulated q3
//! farm (`fragstat serve q3 --players 4`: every second player a bot with ping 0, which
//! getstatus does not mark), and headless Chromium renders the server page with the bots
//! marked, the player search with its window control and `/about` with the operator's text
//! and the retention (screenshots at 1366×900 and 390×844 under
//! `target/tracker-e2e/people/`). `fragstat track forget NAME --config FILE` then forgets a
//! human the running tracker keeps: gone from the search and the server's players.

use fragstat_testkit::browser::Chromium;
use fragstat_testkit::spawn_serve;

mod support;
use support::{artifacts, bin, http_get as get, http_json as get_json, run, stdout, Running};

const ABOUT: &str = "Frag Central is run by the Example LAN club.\n\nTo be forgotten, mail mailto:privacy@example.org or see https://example.org/privacy.";

#[test]
fn bots_search_window_and_about_in_chromium_and_forget() {
    let chromium = Chromium::find();
    let farm = spawn_serve(
        bin(),
        &[
            "q3",
            "--listen",
            "127.0.0.1:0",
            "--count",
            "1",
            "--players",
            "4",
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("track.db");
    let config = dir.path().join("track.toml");
    std::fs::write(
        &config,
        format!(
            "database = {db:?}\nlisten = \"127.0.0.1:0\"\ninterval_secs = 1.5\ntimeout_ms = 300\nretries = 2\n\n\
             [web]\ntitle = \"Frag Central\"\n\n\
             [privacy]\nabout = {ABOUT:?}\n\n\
             [[source]]\ngame = \"q3\"\nservers = [\"{}\"]\n",
            farm.servers[0],
        ),
    )
    .unwrap();
    let config_arg = config.to_str().unwrap();
    let mut tracker = Running::start(&["track", "--config", config_arg], &[]);
    let url = tracker.tracker_url();
    tracker.rounds(2);

    // The API: two bots (ping 0) and two humans, each marked.
    let seg = farm.servers[0].to_string().replace(':', "%3A");
    let detail = get_json(&format!("{url}api/servers/{seg}"));
    let players = detail["players"].as_array().unwrap();
    assert_eq!(players.len(), 4, "{detail}");
    for p in players {
        assert_eq!(p["is_bot"], p["ping"] == 0, "{p}");
    }
    let human = players
        .iter()
        .find(|p| p["is_bot"] == false)
        .expect("a human");
    let human_name = human["name"].as_str().unwrap().to_string();
    // The search: "player" finds the humans only (the bots have their games' bot names).
    let found = get_json(&format!("{url}api/players?q=player"));
    assert_eq!(found["players"].as_array().unwrap().len(), 2, "{found}");
    let bot_name = players
        .iter()
        .find(|p| p["is_bot"] == true)
        .and_then(|p| p["name"].as_str())
        .unwrap()
        .to_lowercase();
    let bots = get_json(&format!("{url}api/players?q={bot_name}"));
    assert_eq!(bots["players"], serde_json::json!([]), "{bots}");
    let bots = get_json(&format!("{url}api/players?q={bot_name}&bots=1"));
    assert_eq!(bots["players"][0]["is_bot"], true, "{bots}");

    let server_page = format!("{url}server/{seg}");
    let search_page = format!("{url}players?q=player&hours=24");
    let bots_page = format!("{url}players?q=player&bots=1");
    let about_page = format!("{url}about");
    if let Some(chromium) = &chromium {
        let dom = chromium.dump_dom(&server_page, 1000);
        assert_eq!(dom.matches("<tr class=\"player bot\"").count(), 2, "{dom}");
        assert_eq!(dom.matches("<span class=\"badge bot\"").count(), 2, "{dom}");
        let dom = chromium.dump_dom(&search_page, 1000);
        assert!(dom.contains("<select name=\"hours\">"), "{dom}");
        assert!(
            dom.contains("the players seen in the last 24 hours"),
            "{dom}"
        );
        assert_eq!(dom.matches("<tr class=\"hit\"").count(), 2, "{dom}");
        // Asked for, the bots are in the search, marked; the window is everything kept.
        let dom = chromium.dump_dom(&bots_page, 1000);
        assert_eq!(dom.matches("<tr class=\"hit bot\"").count(), 2, "{dom}");
        assert!(dom.contains("Searching all the players kept"), "{dom}");
        let dom = chromium.dump_dom(&about_page, 1000);
        assert!(dom.contains("Example LAN club"), "{dom}");
        assert!(dom.contains("href=\"mailto:privacy@example.org\""), "{dom}");
        assert!(dom.contains("7 days after last seen"), "{dom}");
        let out = artifacts("tracker-e2e/people");
        for (name, page) in [
            ("server-bots", &server_page),
            ("search", &search_page),
            ("search-bots", &bots_page),
            ("about", &about_page),
        ] {
            chromium.screenshot(page, &out.join(format!("{name}.png")), 1366, 900, 1000);
            chromium.screenshot(page, &out.join(format!("{name}-phone.png")), 390, 844, 1000);
        }
        // The players' table is below the fold of both: the whole page too.
        chromium.screenshot(
            &server_page,
            &out.join("server-bots-full.png"),
            1366,
            1500,
            1000,
        );
        chromium.screenshot(
            &server_page,
            &out.join("server-bots-phone-full.png"),
            390,
            1900,
            1000,
        );
        eprintln!("screenshots in {}", out.display());
    }

    // Forget a human while the tracker runs: gone from the search at once, from the server's
    // players at the next round, and never stored again.
    let out = run(&[
        "track",
        "forget",
        &human_name.to_uppercase(),
        "--config",
        config_arg,
    ]);
    let said = stdout(&out);
    assert!(said.contains("1 players and 1 sessions deleted"), "{said}");
    let lower = human_name.to_lowercase();
    let found = get_json(&format!("{url}api/players?q={lower}&bots=1"));
    assert_eq!(found["players"], serde_json::json!([]), "{found}");
    // (Round lines printed meanwhile are already read: ask the API until a later round ran.)
    let detail = fragstat_testkit::wait::until(
        "a round without the forgotten player",
        fragstat_testkit::wait::SETTLE,
        || {
            let d = get_json(&format!("{url}api/servers/{seg}"));
            (d["players"].as_array().map(Vec::len) == Some(3)).then_some(d)
        },
    );
    assert_eq!(
        detail["server"]["num_players"], 4,
        "still counted: {detail}"
    );
    let found = get_json(&format!("{url}api/players?q={lower}&bots=1"));
    assert_eq!(found["players"], serde_json::json!([]), "{found}");
    let (status, page) = get(&server_page);
    assert_eq!(status, 200);
    assert!(!page.to_lowercase().contains(&lower), "{page}");
    // A usage error: no name.
    let out = run(&["track", "forget", " ", "--config", config_arg]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    drop(tracker);
}
