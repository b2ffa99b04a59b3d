//! Engine-format cases: each datagram is what `Tracker_Send` writes for the format string of
//! `src/server/sv_tracker.c` (etlegacy/etlegacy `a8e5f856`) on the line named, built by hand
//! (no public capture of tracker traffic exists).

use super::*;

fn dg(text: &[u8]) -> Vec<u8> {
    let mut d = OOB_HEADER.to_vec();
    d.extend_from_slice(text);
    d
}

fn ok(text: &[u8]) -> Push {
    decode_push(&dg(text)).unwrap_or_else(|e| panic!("{:?}: {e}", String::from_utf8_lossy(text)))
}

fn err(text: &[u8]) -> DecodeError {
    match decode_push(&dg(text)) {
        Err(e) => e,
        Ok(p) => panic!("{:?} decoded as {p:?}", String::from_utf8_lossy(text)),
    }
}

const GUID: &[u8] = b"A1B2C3D4E5F60718293A4B5C6D7E8F90";

/// Every event of the catalogue, as the engine formats it.
#[test]
fn every_event_decodes() {
    // :193, :206, :283, :299, :414.
    assert_eq!(ok(b"start"), Push::Start);
    assert_eq!(ok(b"stop"), Push::Stop);
    assert_eq!(ok(b"maprestart"), Push::MapRestart);
    assert_eq!(ok(b"mapend"), Push::MapEnd);
    assert_eq!(ok(b"p"), Push::KeepAlive);
    // :220 "connect %i %s %s": the name is the rest, spaces and colour codes kept.
    let mut text = b"connect 12 ".to_vec();
    text.extend_from_slice(GUID);
    text.extend_from_slice(b" ^1Foo ^7Bar \\o/");
    assert_eq!(
        ok(&text),
        Push::Connect(PushClient {
            slot: 12,
            guid: GUID.to_vec(),
            name: b"^1Foo ^7Bar \\o/".to_vec(),
        })
    );
    // A bot's GUID (no cl_guid, n_guid or sil_guid: :515 "unknown").
    let Push::Connect(bot) = ok(b"connect 1 unknown [BOT]Ricky") else {
        panic!()
    };
    assert_eq!((bot.slot, &bot.guid[..]), (1, &b"unknown"[..]));
    // :234 "disconnect %i".
    assert_eq!(ok(b"disconnect 63"), Push::Disconnect { slot: 63 });
    // :253 "name %i %s %s".
    let Push::Name(n) = ok(b"name 0 unknown ^3New") else {
        panic!()
    };
    assert_eq!((n.slot, &n.name[..]), (0, &b"^3New"[..]));
    // :267 "map %s".
    assert_eq!(
        ok(b"map supply"),
        Push::Map {
            map: b"supply".to_vec()
        }
    );
    // :365 "wsc %i".
    assert_eq!(ok(b"wsc 2"), Push::StatsCount { clients: 2 });
    // :374 "ws %i 0 0 0\\%s", the suffix `Tracker_createClientInfo` (:309-329):
    // ping\score\team char\class\name.
    assert_eq!(
        ok(b"ws 1 0 0 0\\0\\0\\3\\0\\^2Spec"),
        Push::StatsRow(StatsRow {
            slot: 1,
            stats: b"0 0 0".to_vec(),
            ping: 0,
            score: 0,
            team: b'3',
            class: 0,
            name: b"^2Spec".to_vec(),
        })
    );
    // :467 the legacy mod's row (`G_createStats`, g_match.c:528-639) with the suffix.
    let Push::StatsRow(w) =
        ok(b"ws 0 1 5 3 7 2 1 0 4 6 10 0 0 0 0 0 0 0 0 12.5 0 1.25 0.10\\48\\12\\1\\2\\^1Foo")
    else {
        panic!()
    };
    assert_eq!(
        (w.slot, w.ping, w.score, w.team, w.class),
        (0, 48, 12, b'1', 2)
    );
    assert!(w.stats.starts_with(b"1 5 3 7"));
    assert_eq!(w.name, b"^1Foo");
}

/// What the engine cannot send, or the decoder refuses to keep, is an error naming the field
/// and its offset (absolute, the header counted).
#[test]
fn errors_name_field_and_offset() {
    let e = decode_push(b"\xff\xff\xffpstart").unwrap_err();
    assert_eq!(e.kind(), "bad_header");
    let e = err(b"hello 1");
    assert_eq!((e.kind(), e.offset()), ("unknown_command", 4));
    let e = err(b"connect 64 x name");
    assert_eq!((e.field(), e.offset()), (Some("slot"), 12));
    let e = err(b"connect -1 x name");
    assert_eq!(e.field(), Some("slot"));
    let e = err(b"connect 3 ");
    assert_eq!(
        (e.kind(), e.field(), e.offset()),
        ("missing", Some("guid"), 14)
    );
    let e = err(b"connect 3 GUID");
    assert_eq!((e.kind(), e.field()), ("missing", Some("guid")));
    let e = err(b"connect 3  name");
    assert_eq!((e.field(), e.offset()), (Some("guid"), 14));
    let e = err(b"connect");
    assert_eq!((e.field(), e.offset()), (Some("arguments"), 11));
    let e = err(b"disconnect x");
    assert_eq!((e.kind(), e.offset()), ("bad_number", 15));
    let e = err(b"start now");
    assert_eq!((e.field(), e.offset()), (Some("arguments"), 9));
    // No newline ends a pushed datagram (`NET_OutOfBandPrint` adds none).
    assert_eq!(err(b"p\n").kind(), "unknown_command");
    let e = err(b"map ");
    assert_eq!(e.field(), Some("map"));
    let e = err(b"wsc 65");
    assert_eq!((e.kind(), e.field()), ("too_many", Some("clients")));
    let e = err(b"ws 1 0 0 0\\0\\0\\33\\0\\x");
    assert_eq!((e.field(), e.offset()), (Some("team"), 19));
    let e = err(b"ws 1 0 0 0 no info");
    assert_eq!((e.kind(), e.field()), ("missing", Some("client info")));
    let e = err(b"disconnect 1\0junk");
    assert_eq!((e.field(), e.offset()), (Some("text"), 16));
}

/// Bounds: a GUID, name or map past its cap is refused (never cut), and so is a datagram
/// past the engine's buffer, before anything is read.
#[test]
fn bounds_are_checked_before_keeping() {
    let long_guid = [b'A'; MAX_GUID + 1];
    let mut text = b"connect 1 ".to_vec();
    text.extend_from_slice(&long_guid);
    text.extend_from_slice(b" x");
    let e = err(&text);
    assert_eq!(
        (e.kind(), e.field(), e.offset()),
        ("too_many", Some("guid"), 14)
    );
    let mut text = b"name 1 g ".to_vec();
    text.extend_from_slice(&[b'n'; MAX_NAME + 1]);
    assert_eq!(err(&text).field(), Some("name"));
    let mut text = b"map ".to_vec();
    text.extend_from_slice(&[b'm'; MAX_MAP + 1]);
    assert_eq!(err(&text).field(), Some("map"));
    let huge = dg(&vec![b'p'; MAX_PUSH_BYTES]);
    let e = decode_push(&huge).unwrap_err();
    assert_eq!((e.kind(), e.offset()), ("too_many", 0));
    // At the caps exactly: taken.
    let mut text = b"connect 1 ".to_vec();
    text.extend_from_slice(&[b'A'; MAX_GUID]);
    text.push(b' ');
    text.extend_from_slice(&[b'n'; MAX_NAME]);
    assert!(matches!(ok(&text), Push::Connect(_)));
}

/// encode → decode gives the value back, and the bytes are the engine's exactly.
#[test]
fn encode_writes_the_engine_bytes() {
    let cases: Vec<(Push, &[u8])> = vec![
        (Push::Start, b"start"),
        (Push::KeepAlive, b"p"),
        (
            Push::Connect(PushClient {
                slot: 5,
                guid: b"unknown".to_vec(),
                name: b"^1A b".to_vec(),
            }),
            b"connect 5 unknown ^1A b",
        ),
        (Push::Disconnect { slot: 5 }, b"disconnect 5"),
        (
            Push::Map {
                map: b"goldrush".to_vec(),
            },
            b"map goldrush",
        ),
        (Push::StatsCount { clients: 3 }, b"wsc 3"),
        (
            Push::StatsRow(StatsRow {
                slot: 2,
                stats: b"0 0 0".to_vec(),
                ping: 999,
                score: -3,
                team: b'3',
                class: 0,
                name: b"Spec".to_vec(),
            }),
            b"ws 2 0 0 0\\999\\-3\\3\\0\\Spec",
        ),
    ];
    for (push, text) in cases {
        let bytes = push.to_bytes().unwrap();
        assert_eq!(bytes, dg(text), "{push:?}");
        assert_eq!(decode_push(&bytes).unwrap(), push);
    }
    // What the wire cannot carry is refused.
    let bad = Push::Connect(PushClient {
        slot: 1,
        guid: b"a b".to_vec(),
        name: Vec::new(),
    });
    assert_eq!(bad.to_bytes().unwrap_err().kind(), "forbidden");
    assert_eq!(
        Push::Disconnect { slot: 64 }.to_bytes().unwrap_err().kind(),
        "out_of_range"
    );
}
