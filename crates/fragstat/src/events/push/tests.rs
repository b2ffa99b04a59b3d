use std::net::SocketAddr;
use std::time::{Duration, Instant};

use fragstat_core::model::{Player, ServerInfo};

use super::*;
use crate::events::Differ;

const A: &str = "127.0.0.1:27960";
const GUID: &[u8] = b"A1B2C3D4E5F60718293A4B5C6D7E8F90";

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn dg(text: &[u8]) -> Vec<u8> {
    [&b"\xff\xff\xff\xff"[..], text].concat()
}

fn connect(slot: u8, name: &[u8]) -> Vec<u8> {
    dg(&[format!("connect {slot} ").as_bytes(), GUID, b" ", name].concat())
}

fn record(at: &str, map: &str, players: Option<&[&[u8]]>) -> Record {
    let mut info = ServerInfo::default();
    info.map = Text::new(map, Dialect::Etl);
    info.name = Text::new("^1ET^7:L", Dialect::Etl);
    info.num_players = players.map_or(1, |p| p.len() as u32);
    info.players = players.map(|ps| {
        ps.iter()
            .map(|p| Player::new(Text::new(p.to_vec(), Dialect::Etl)))
            .collect()
    });
    Record::online(Some(at.into()), "etl", info, None)
}

/// A listener knowing server `A` on `oasis` with no players.
fn listener(limits: PushLimits) -> (PushListener, Instant) {
    let t0 = Instant::now();
    let mut l = PushListener::new(limits, t0);
    l.know(&[record(A, "oasis", Some(&[]))]);
    (l, t0)
}

fn kinds(events: &[Event]) -> Vec<&'static str> {
    events.iter().map(|e| e.kind.name()).collect()
}

/// Only a known server's address *and port* is heard; its `connect` is a pushed
/// `player_joined` with the slot and GUID in the JSON.
#[test]
fn only_known_sources_are_heard_and_events_are_marked() {
    let (mut l, t0) = listener(PushLimits::default());
    let d = connect(3, b"^1Foo Bar");
    assert_eq!(
        l.handle(t0, 1, addr("127.0.0.1:27961"), &d),
        Err(Dropped::Unknown)
    );
    assert_eq!(
        l.handle(t0, 1, addr("127.0.0.2:27960"), &d),
        Err(Dropped::Unknown)
    );
    // IPv4-mapped IPv6 (a dual-stack socket) is the same server.
    let mapped = addr("[::ffff:127.0.0.1]:27960");
    let events = l.handle(t0, 5, mapped, &d).unwrap();
    assert_eq!(kinds(&events), ["player_joined"]);
    let json = serde_json::to_value(&events[0]).unwrap();
    assert_eq!(json["server"], A);
    assert_eq!(json["game"], "etl");
    assert_eq!(json["at"], 5);
    assert_eq!(json["pushed"], true);
    assert_eq!(json["slot"], 3);
    assert_eq!(json["guid"], std::str::from_utf8(GUID).unwrap());
    assert_eq!(json["name_raw"], "^1Foo Bar");
    assert_eq!(json["name"], "Foo Bar");
    assert_eq!(json["dialect"], "etl");
    let s = l.stats();
    assert_eq!((s.unknown, s.accepted, s.events), (2, 1, 1));
    // A scanned event has no `pushed`, `slot` or `guid` key.
    let mut differ = Differ::new();
    differ.update(1, &[record(A, "oasis", Some(&[]))]);
    let scanned = differ.update(2, &[record(A, "oasis", Some(&[b"x"]))]);
    let json = serde_json::to_value(&scanned[0]).unwrap();
    for key in ["pushed", "slot", "guid"] {
        assert!(json.get(key).is_none(), "{json}");
    }
}

/// `disconnect`, `name`, `map`, a reconnect, a stats row for a slot not seen, `stop`.
#[test]
fn each_event_becomes_the_scans_kind() {
    let (mut l, t0) = listener(PushLimits::default());
    let from = addr(A);
    let mut push = |d: &[u8]| l.handle(t0, 10, from, d).unwrap();
    assert_eq!(kinds(&push(&connect(0, b"Foo"))), ["player_joined"]);
    // The same client again (a reconnect): nothing.
    assert!(push(&connect(0, b"Foo")).is_empty());
    // A rename: one leaving, one joining.
    let e = push(&dg(b"name 0 unknown Bar"));
    assert_eq!(kinds(&e), ["player_left", "player_joined"]);
    let EventKind::PlayerLeft(p) = &e[0].kind else {
        panic!()
    };
    assert_eq!((p.name.as_bytes(), p.slot), (&b"Foo"[..], Some(0)));
    let e = push(&dg(b"disconnect 0"));
    assert_eq!(kinds(&e), ["player_left"]);
    // A slot never seen filled: nothing to report.
    assert!(push(&dg(b"disconnect 7")).is_empty());
    // A stats row fills it (no GUID there), so its disconnect is reported.
    assert!(push(&dg(b"ws 7 0 0 0\\20\\3\\1\\5\\Old")).is_empty());
    let e = push(&dg(b"disconnect 7"));
    let EventKind::PlayerLeft(p) = &e[0].kind else {
        panic!()
    };
    assert_eq!((p.name.as_bytes(), &p.guid), (&b"Old"[..], &None));
    // The map: from the last scan's.
    let e = push(&dg(b"map supply"));
    let EventKind::MapChanged { from, to } = &e[0].kind else {
        panic!()
    };
    assert_eq!(
        (from.as_bytes(), to.as_bytes()),
        (&b"oasis"[..], &b"supply"[..])
    );
    assert!(push(&dg(b"map supply")).is_empty(), "the same map again");
    for quiet in [&b"p"[..], b"maprestart", b"mapend", b"wsc 1"] {
        assert!(push(&dg(quiet)).is_empty());
    }
    // A client into a slot held by another: the other leaves first.
    push(&connect(2, b"A"));
    assert_eq!(
        kinds(&push(&connect(2, b"B"))),
        ["player_left", "player_joined"]
    );
    // `stop` and `start` empty the slots without events.
    assert!(push(&dg(b"stop")).is_empty());
    assert!(push(&dg(b"disconnect 2")).is_empty());
    push(&connect(2, b"C"));
    assert!(push(&dg(b"start")).is_empty());
    assert!(push(&dg(b"disconnect 2")).is_empty());
    // A name longer than the engine keeps is cut to its 35 bytes.
    let e = push(&connect(4, &[b'n'; 50]));
    let EventKind::PlayerJoined(p) = &e[0].kind else {
        panic!()
    };
    assert_eq!(p.name.as_bytes().len(), NAME_BYTES);
}

/// A scan's joins, leaves and map change a push already said are not said again; what the
/// pushes cancelled the scan does not see; what no push said passes.
#[test]
fn scanned_events_a_push_said_are_dropped() {
    let (mut l, t0) = listener(PushLimits::default());
    let from = addr(A);
    let mut differ = Differ::new();
    differ.update(0, &[record(A, "oasis", Some(&[b"Old"]))]);
    l.know(&[record(A, "oasis", Some(&[b"Old"]))]);
    // Pushed: Foo joins, the map changes, Tmp joins and leaves again.
    for d in [
        connect(1, b"Foo"),
        dg(b"map supply"),
        connect(2, b"Tmp"),
        dg(b"disconnect 2"),
    ] {
        l.handle(t0, 100, from, &d).unwrap();
    }
    // The next scan (started after the pushes) sees Foo, supply, and New no push said; Old
    // left without a push.
    let now = record(A, "supply", Some(&[b"Foo", b"New"]));
    let scanned = differ.update(200, std::slice::from_ref(&now));
    assert_eq!(
        kinds(&scanned),
        [
            "map_changed",
            "player_left",
            "player_joined",
            "player_joined"
        ]
    );
    let kept = l.reconcile(200, std::slice::from_ref(&now), scanned);
    l.know(std::slice::from_ref(&now));
    assert_eq!(kinds(&kept), ["player_left", "player_joined"]);
    let names: Vec<&[u8]> = kept
        .iter()
        .map(|e| match &e.kind {
            EventKind::PlayerLeft(p) | EventKind::PlayerJoined(p) => p.name.as_bytes(),
            _ => b"",
        })
        .collect();
    assert_eq!(names, [&b"Old"[..], b"New"]);
    assert_eq!(l.stats().reconciled, 2);
    // Nothing awaits any more: Foo leaving in the next scan is reported.
    let later = record(A, "supply", Some(&[b"New"]));
    let scanned = differ.update(300, std::slice::from_ref(&later));
    assert_eq!(kinds(&l.reconcile(300, &[later], scanned)), ["player_left"]);
}

/// A scan that saw a leave no push said empties that slot: the `disconnect` that comes later
/// is not reported twice. A change pushed during a scan waits for the next one.
#[test]
fn a_scanned_leave_frees_the_slot_and_late_pushes_wait() {
    let (mut l, t0) = listener(PushLimits::default());
    let from = addr(A);
    let mut differ = Differ::new();
    differ.update(0, &[record(A, "oasis", Some(&[]))]);
    // Pushed at 150, during the scan started at 100 that did not see it yet.
    l.handle(t0, 150, from, &connect(5, b"Late")).unwrap();
    let r = record(A, "oasis", Some(&[]));
    let scanned = differ.update(100, std::slice::from_ref(&r));
    assert!(l
        .reconcile(100, std::slice::from_ref(&r), scanned)
        .is_empty());
    // The next scan sees Late: already said.
    let r = record(A, "oasis", Some(&[b"Late"]));
    let scanned = differ.update(200, std::slice::from_ref(&r));
    assert_eq!(kinds(&scanned), ["player_joined"]);
    assert!(l
        .reconcile(200, std::slice::from_ref(&r), scanned)
        .is_empty());
    // Late leaves; the datagram is lost; the scan says it.
    let r = record(A, "oasis", Some(&[]));
    let scanned = differ.update(300, std::slice::from_ref(&r));
    assert_eq!(kinds(&l.reconcile(300, &[r], scanned)), ["player_left"]);
    // The retried disconnect (or a late copy) says nothing new.
    assert!(l
        .handle(t0, 310, from, &dg(b"disconnect 5"))
        .unwrap()
        .is_empty());
}

/// Size and rate limits; a host flooding at its rate leaves its /24 neighbour served; a
/// flood of strangers keeps no state.
#[test]
fn a_flooding_host_leaves_its_neighbour_served() {
    let limits = PushLimits::default();
    let t0 = Instant::now();
    let mut l = PushListener::new(limits, t0);
    let b = "127.0.0.2:27960";
    l.know(&[record(A, "oasis", Some(&[])), record(b, "oasis", Some(&[]))]);
    let big = dg(&[b'p'; 1400]);
    assert_eq!(l.handle(t0, 1, addr(A), &big), Err(Dropped::TooLarge));
    assert_eq!(
        l.handle(t0, 1, addr(A), &dg(b"nonsense")),
        Err(Dropped::Malformed)
    );
    // B floods: its burst, then nothing, whatever it sends.
    let mut taken = 0;
    for _ in 0..5000 {
        if l.handle(t0, 1, addr(b), &dg(b"p")).is_ok() {
            taken += 1;
        }
    }
    assert_eq!(taken, limits.host_rate.burst as usize);
    // A, in the same /24, still has the rest of the network's share.
    for slot in 0..10 {
        let e = l.handle(t0, 2, addr(A), &connect(slot, b"x")).unwrap();
        assert_eq!(kinds(&e), ["player_joined"]);
    }
    // A second later B has a second's worth again.
    let later = t0 + Duration::from_secs(1);
    assert!(l.handle(later, 3, addr(b), &dg(b"p")).is_ok());
    // Strangers: dropped before any table is touched.
    for i in 0..50_000u32 {
        let from = SocketAddr::from((std::net::Ipv4Addr::from(0x0a00_0000 + i), 27960));
        assert_eq!(l.handle(t0, 4, from, &dg(b"p")), Err(Dropped::Unknown));
    }
    assert_eq!(l.known(), 2);
    assert_eq!(l.stats().rate, 5000 - taken as u64);
}

/// The state is a fair table: one address with more servers than its cap holds its cap, and
/// another address is still admitted; a server no scan lists any more is forgotten.
#[test]
fn known_servers_are_shared_among_prefixes() {
    let limits = PushLimits {
        max_servers: 300,
        ..PushLimits::default()
    };
    let mut l = PushListener::new(limits, Instant::now());
    let mut records: Vec<Record> = (0..400u16)
        .map(|i| record(&format!("192.0.2.1:{}", 20000 + i), "oasis", None))
        .collect();
    records.push(record("198.51.100.7:27960", "oasis", None));
    // A game that does not push is not heard.
    let mut q3 = record("198.51.100.8:27960", "oasis", None);
    q3.game = "q3".into();
    records.push(q3);
    l.know(&records);
    assert_eq!(l.known(), 129, "128 of the one address, and the other");
    assert!(l.knows(addr("198.51.100.7:27960")));
    assert!(!l.knows(addr("198.51.100.8:27960")));
    assert_eq!(l.stats().refused_servers, 400 - 128);
    l.know(&records[..1]);
    assert_eq!(l.known(), 1);
}

/// What awaits a scan is bounded per server, and forgotten after `pending_for` when no scan
/// could check it.
#[test]
fn pending_changes_are_bounded_and_expire() {
    let limits = PushLimits {
        host_rate: Rate::UNLIMITED,
        net_rate: Rate::UNLIMITED,
        ..PushLimits::default()
    };
    let (mut l, t0) = listener(limits);
    let mut server = Server::new(A.into(), "etl".into(), Dialect::Etl);
    for i in 0..1000u32 {
        server.expect(format!("p{i}").as_bytes(), true, 10);
    }
    assert_eq!(server.pending.len(), MAX_PENDING);
    assert_eq!(&*server.pending[0].key, b"p872", "the oldest forgotten");
    // Through the listener: slots reused with new names (each a leave and a join).
    for i in 0..1000u32 {
        let d = connect((i % 64) as u8, format!("p{i}").as_bytes());
        l.handle(t0, 10, addr(A), &d).unwrap();
    }
    assert!(l.servers.get(&addr(A)).unwrap().pending.len() <= MAX_PENDING);
    // The server down at every scan: nothing checked; past `pending_for`, forgotten.
    let down = Record::failed(Some(A.into()), "etl", Status::Timeout, "timeout".into());
    l.reconcile(20, std::slice::from_ref(&down), Vec::new());
    assert!(!l.servers.get(&addr(A)).unwrap().pending.is_empty());
    let late = 20 + limits.pending_for.as_millis() as i64 + 20;
    l.reconcile(late, &[down], Vec::new());
    assert!(l.servers.get(&addr(A)).unwrap().pending.is_empty());
}

/// A scan that starts between the push and the change reaching the server's replies does not
/// make the push forgotten; two scans that both miss it do.
#[test]
fn a_push_survives_one_scan_that_misses_it() {
    let (mut l, t0) = listener(PushLimits::default());
    let mut differ = Differ::new();
    differ.update(0, &[record(A, "oasis", Some(&[]))]);
    l.handle(t0, 100, addr(A), &connect(1, b"Quick")).unwrap();
    let mut scan = |l: &mut PushListener, at: i64, players: &[&[u8]]| {
        let r = record(A, "oasis", Some(players));
        let events = differ.update(at, std::slice::from_ref(&r));
        kinds(&l.reconcile(at, &[r], events))
    };
    assert!(scan(&mut l, 150, &[]).is_empty(), "not there yet");
    assert!(scan(&mut l, 250, &[b"Quick"]).is_empty(), "already said");
    // Another push two scans miss: forgotten, so the third scan's join is reported.
    l.handle(t0, 300, addr(A), &connect(2, b"Ghost")).unwrap();
    assert!(scan(&mut l, 350, &[b"Quick"]).is_empty());
    assert!(scan(&mut l, 450, &[b"Quick"]).is_empty());
    assert_eq!(scan(&mut l, 550, &[b"Quick", b"Ghost"]), ["player_joined"]);
}

/// A network's rate: five hosts of one /24 flooding spend its burst (800) between them; a
/// server of another /24 is still served, and so is each host's share once time passes.
#[test]
fn a_flooding_network_leaves_other_networks_served() {
    let limits = PushLimits::default();
    let t0 = Instant::now();
    let mut l = PushListener::new(limits, t0);
    let mut records: Vec<Record> = (1..=5)
        .map(|h| record(&format!("10.0.0.{h}:27960"), "oasis", Some(&[])))
        .collect();
    records.push(record("10.0.1.1:27960", "oasis", Some(&[])));
    l.know(&records);
    let mut taken = 0;
    for _ in 0..1000 {
        for h in 1..=5 {
            if l.handle(t0, 1, addr(&format!("10.0.0.{h}:27960")), &dg(b"p"))
                .is_ok()
            {
                taken += 1;
            }
        }
    }
    assert_eq!(
        taken, limits.net_rate.burst as usize,
        "the /24's burst, no more"
    );
    assert!(l.handle(t0, 1, addr("10.0.1.1:27960"), &dg(b"p")).is_ok());
    let later = t0 + Duration::from_secs(1);
    assert!(l
        .handle(later, 2, addr("10.0.0.3:27960"), &dg(b"p"))
        .is_ok());
}
