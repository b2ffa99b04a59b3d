use super::*;
use fragstat_core::model::Dialect;

const A: &str = "127.0.0.1:27960";

fn player(name: &[u8], bot: Option<bool>) -> Player {
    let mut p = Player::new(Text::new(name.to_vec(), Dialect::Ioq3));
    p.is_bot = bot;
    p
}

fn online(addr: &str, map: &str, players: Vec<Player>) -> Record {
    let mut info = ServerInfo::default();
    info.name = Text::new(b"^1Red".to_vec(), Dialect::Ioq3);
    info.map = Text::new(map, Dialect::Ioq3);
    info.gametype = Some("ffa".into());
    info.max_players = 16;
    info.num_players = u32::try_from(players.len()).unwrap();
    info.players = Some(players);
    Record::online(Some(addr.into()), "openarena", info, None)
}

fn kinds(events: &[Event]) -> Vec<&'static str> {
    events.iter().map(|e| e.kind.name()).collect()
}

#[test]
fn first_scan_is_a_baseline_unless_initial() {
    let r = online(A, "dm6", vec![player(b"Sarge", Some(true))]);
    let mut d = Differ::new();
    assert!(d.update(1, [&r]).is_empty());
    assert!(d.update(2, [&r]).is_empty(), "nothing changed");
    let mut d = Differ::new().initial(true);
    let e = d.update(1, [&r]);
    assert_eq!(kinds(&e), ["server_up", "player_joined"]);
    assert_eq!(e[0].server, A);
    assert_eq!(e[0].game, "openarena");
    assert_eq!(e[0].at, 1);
}

#[test]
fn down_then_up_with_another_map_and_a_player_more() {
    let mut d = Differ::new();
    d.update(1, [&online(A, "dm6", vec![player(b"Sarge", None)])]);
    let down = Record::failed(
        Some(A.into()),
        "openarena",
        Status::Timeout,
        "no reply".into(),
    );
    let e = d.update(2, [&down]);
    assert_eq!(kinds(&e), ["server_down"]);
    assert_eq!(
        e[0].kind,
        EventKind::ServerDown {
            status: Status::Timeout,
            reason: Some("no reply".into())
        }
    );
    assert!(d.update(3, [&down]).is_empty(), "down once");
    let up = online(
        A,
        "dm17",
        vec![player(b"Sarge", None), player(b"^4Doom", Some(false))],
    );
    let e = d.update(4, [&up]);
    assert_eq!(kinds(&e), ["server_up", "map_changed", "player_joined"]);
    let EventKind::PlayerJoined(p) = &e[2].kind else {
        panic!()
    };
    assert_eq!(p.name.as_bytes(), b"^4Doom");
    let json = serde_json::to_value(&e[2]).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"event": "player_joined", "server": A, "game": "openarena",
            "at": 4, "name": "Doom", "name_raw": "^4Doom", "dialect": "ioq3",
            "clan": null, "is_bot": false, "score": null, "team": null})
    );
    let json = serde_json::to_value(&e[1]).unwrap();
    assert_eq!(json["from"], "dm6");
    assert_eq!(json["to"], "dm17");
}

#[test]
fn players_are_a_multiset_of_names() {
    let p = |n: &[u8]| player(n, None);
    let mut d = Differ::new();
    d.update(
        1,
        [&online(A, "m", vec![p(b"Player"), p(b"Player"), p(b"x")])],
    );
    // One "Player" leaves, x stays, a third "Player" comes and goes in the same scan: one
    // left.
    let e = d.update(2, [&online(A, "m", vec![p(b"x"), p(b"Player")])]);
    assert_eq!(kinds(&e), ["player_left"]);
    let e = d.update(
        3,
        [&online(
            A,
            "m",
            vec![p(b"Player"), p(b"x"), p(b"Player"), p(b"Player")],
        )],
    );
    assert_eq!(kinds(&e), ["player_joined", "player_joined"]);
    // Bytes, not display: the same display name in another colour is another name.
    let e = d.update(
        4,
        [&online(
            A,
            "m",
            vec![p(b"Player"), p(b"x"), p(b"Player"), p(b"^1Player")],
        )],
    );
    assert_eq!(kinds(&e), ["player_left", "player_joined"]);
}

#[test]
fn name_gametype_slots_and_a_new_server() {
    let mut d = Differ::new();
    d.update(1, [&online(A, "m", vec![])]);
    let mut r = online(A, "m", vec![]);
    let info = r.info.as_mut().unwrap();
    info.name = Text::new(b"^2Green".to_vec(), Dialect::Ioq3);
    info.gametype = Some("ctf".into());
    info.max_players = 20;
    let b = online("127.0.0.1:27961", "m2", vec![player(b"bot", Some(true))]);
    let e = d.update(2, [&r, &b]);
    assert_eq!(
        kinds(&e),
        [
            "name_changed",
            "gametype_changed",
            "slots_changed",
            "server_up",
            "player_joined"
        ]
    );
    let json = serde_json::to_value(&e[0]).unwrap();
    assert_eq!(json["from_raw"], "^1Red");
    assert_eq!(json["to"], "Green");
    assert_eq!(serde_json::to_value(&e[4]).unwrap()["is_bot"], true);
    assert_eq!(e[4].describe(), "joined: bot (bot)");
    // A new server that does not answer: nothing.
    let f = Record::failed(
        Some("127.0.0.1:1".into()),
        "q3",
        Status::Down,
        "refused".into(),
    );
    assert!(d.update(3, [&r, &b, &f]).is_empty());
}

/// A record of `addr` on `map` without a player list, saying `num_players` are on it.
fn unlisted(addr: &str, map: &str, num_players: u32) -> Record {
    let mut r = online(addr, map, vec![]);
    let info = r.info.as_mut().unwrap();
    info.players = None;
    info.num_players = num_players;
    r
}

fn names(events: &[Event]) -> Vec<(&'static str, &[u8])> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::PlayerJoined(p) | EventKind::PlayerLeft(p) => {
                Some((e.kind.name(), p.name.as_bytes()))
            }
            _ => None,
        })
        .collect()
}

/// A scan whose list was lost (Quake III `getinfo` answered, `getstatus` not): nothing
/// about players then, and the next list is compared with the last known one.
#[test]
fn a_scan_without_the_list_keeps_the_last_known_one() {
    let p = |n: &[u8]| player(n, None);
    let mut d = Differ::new();
    d.update(1, [&online(A, "m", vec![p(b"a"), p(b"b"), p(b"c")])]);
    // No list, and the map changed: only the map.
    let e = d.update(2, [&unlisted(A, "m2", 3)]);
    assert_eq!(kinds(&e), ["map_changed"]);
    // The list back with one player changed: exactly that one leaving and one joining.
    let e = d.update(3, [&online(A, "m2", vec![p(b"a"), p(b"x"), p(b"c")])]);
    assert_eq!(
        names(&e),
        [("player_left", &b"b"[..]), ("player_joined", b"x")]
    );
    // Lost twice in a row, then the same list: nothing.
    assert!(d.update(4, [&unlisted(A, "m2", 3)]).is_empty());
    assert!(d.update(5, [&unlisted(A, "m2", 2)]).is_empty());
    let e = d.update(6, [&online(A, "m2", vec![p(b"c"), p(b"x"), p(b"a")])]);
    assert!(e.is_empty(), "{e:?}");
    // Lost, while one joined and two left: told once, when the list comes back (those
    // who left in the last known list's order).
    d.update(7, [&unlisted(A, "m2", 2)]);
    let e = d.update(8, [&online(A, "m2", vec![p(b"x"), p(b"y")])]);
    assert_eq!(
        names(&e),
        [
            ("player_left", &b"c"[..]),
            ("player_left", b"a"),
            ("player_joined", b"y")
        ]
    );
    assert!(d
        .update(9, [&online(A, "m2", vec![p(b"x"), p(b"y")])])
        .is_empty());
}

/// A server saying it has nobody needs no list: its list is empty.
#[test]
fn no_list_and_no_players_is_an_empty_list() {
    let mut d = Differ::new();
    d.update(1, [&online(A, "m", vec![player(b"a", Some(true))])]);
    let e = d.update(2, [&unlisted(A, "m", 0)]);
    assert_eq!(names(&e), [("player_left", &b"a"[..])]);
    // Then one with clients but no list: still empty as far as is known.
    assert!(d.update(3, [&unlisted(A, "m", 1)]).is_empty());
    let e = d.update(4, [&online(A, "m", vec![player(b"a", Some(true))])]);
    assert_eq!(names(&e), [("player_joined", &b"a"[..])]);
}

/// Until a list is known there is nothing to compare with: the first list is a baseline,
/// and a server that went down keeps its last list through an answer without one.
#[test]
fn the_first_list_is_a_baseline_and_down_keeps_the_list() {
    let p = |n: &[u8]| player(n, None);
    let mut d = Differ::new().initial(true);
    let e = d.update(1, [&unlisted(A, "m", 2)]);
    assert_eq!(kinds(&e), ["server_up"]);
    assert!(d
        .update(2, [&online(A, "m", vec![p(b"a"), p(b"b")])])
        .is_empty());
    let e = d.update(3, [&online(A, "m", vec![p(b"a")])]);
    assert_eq!(names(&e), [("player_left", &b"b"[..])]);
    let down = Record::failed(Some(A.into()), "openarena", Status::Timeout, "x".into());
    assert_eq!(kinds(&d.update(4, [&down])), ["server_down"]);
    assert_eq!(kinds(&d.update(5, [&unlisted(A, "m", 1)])), ["server_up"]);
    let e = d.update(6, [&online(A, "m", vec![p(b"c")])]);
    assert_eq!(
        names(&e),
        [("player_left", &b"a"[..]), ("player_joined", b"c")]
    );
}

/// A hostile server sending 100,000 players: 1,024 are tracked, the rest counted.
#[test]
fn players_tracked_are_capped() {
    let many: Vec<Player> = (0..100_000u32)
        .map(|i| player(i.to_string().as_bytes(), None))
        .collect();
    let mut d = Differ::new().initial(true);
    let e = d.update(1, [&online(A, "m", many.clone())]);
    assert_eq!(e.len(), 1 + MAX_PLAYERS);
    assert_eq!(d.untracked_players(), 100_000 - MAX_PLAYERS as u64);
    // The same list again: nothing, the same 1,024 tracked.
    assert!(d.update(2, [&online(A, "m", many)]).is_empty());
    let mut d = Differ::new().max_players(2).initial(true);
    let e = d.update(
        1,
        [&online(
            A,
            "m",
            vec![player(b"a", None), player(b"b", None), player(b"c", None)],
        )],
    );
    assert_eq!(kinds(&e), ["server_up", "player_joined", "player_joined"]);
}

#[test]
fn servers_tracked_are_capped_and_missing_ones_forgotten() {
    let mut d = Differ::new().max_servers(100).forget_after(2);
    let records: Vec<Record> = (0..1000)
        .map(|i| online(&format!("127.0.0.1:{}", 1000 + i), "m", vec![]))
        .collect();
    d.update(1, &records);
    assert_eq!(d.len(), 100);
    assert_eq!(d.untracked_servers(), 900);
    d.update(2, &records[..10]);
    assert_eq!(d.len(), 100);
    d.update(3, &records[..10]);
    assert_eq!(d.len(), 10, "the others missed two scans");
}

#[test]
fn the_same_bytes_in_two_dialects_are_two_players() {
    let plain = |name: &[u8]| Player::new(Text::new(name.to_vec(), Dialect::Plain));
    let mut d = Differ::new();
    d.update(1, [&online(A, "dm6", vec![player(b"^1Sarge", None)])]);
    // The same bytes in another dialect join; the first stays.
    let e = d.update(
        2,
        [&online(
            A,
            "dm6",
            vec![player(b"^1Sarge", None), plain(b"^1Sarge")],
        )],
    );
    assert_eq!(kinds(&e), ["player_joined"]);
    assert!(matches!(&e[0].kind, EventKind::PlayerJoined(p) if p.name.dialect() == Dialect::Plain));
    // The first leaves: one player_left, of the Ioq3 one.
    let e = d.update(3, [&online(A, "dm6", vec![plain(b"^1Sarge")])]);
    assert_eq!(kinds(&e), ["player_left"]);
    assert!(matches!(&e[0].kind, EventKind::PlayerLeft(p) if p.name.dialect() == Dialect::Ioq3));
    // Keys: name bytes capped, dialect, nth.
    let long = vec![b'x'; NAME_KEY_BYTES + 10];
    let names = [
        Text::new(long.clone(), Dialect::Plain),
        Text::new(long, Dialect::Plain),
        Text::new(b"a".to_vec(), Dialect::Ioq3),
    ];
    let keys = player_keys(&names);
    assert_eq!(keys[0].name.len(), NAME_KEY_BYTES);
    assert_eq!((keys[0].nth, keys[1].nth, keys[2].nth), (0, 1, 0));
}
