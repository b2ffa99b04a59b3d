use std::sync::Arc;

use crate::model::{Dialect, ExtraRef, MasterEntry, Player, ServerInfo, Text};
use crate::record::{Record, Status};

fn sample(dialect: Dialect) -> ServerInfo {
    let mut info = ServerInfo {
        name: Text::new(b"^1R\xe9d ^7\xff".to_vec(), dialect),
        map: Text::new(b"q3dm17".to_vec(), dialect),
        gametype: Some("ctf".into()),
        num_players: 2,
        max_players: 16,
        num_bots: Some(1),
        password: Some(false),
        score_kind: Some(crate::model::ScoreKind::Time),
        location: Some("eu:de".into()),
        ..ServerInfo::default()
    };
    let mut p = Player::new(Text::new(b"\x01^3Bot\xfe".to_vec(), dialect));
    p.score = Some(-3);
    p.is_bot = Some(true);
    p.clan = Some(Text::new(b"[fs]".to_vec(), dialect));
    info.players = Some(vec![p, Player::new(Text::new(Vec::new(), dialect))]);
    info.rules = [
        ("sv_hostname", "x"),
        ("g_gametype", "4"),
        ("sv_hostname", "again"),
    ]
    .into_iter()
    .collect();
    info.set_extra(serde_json::json!({"crc": 7, "nested": {"a": [1, 2]}}));
    info.warnings = vec!["skipped line 3".into()];
    info.truncated = true;
    info.unverified = true;
    info
}

#[test]
fn what_is_written_reads_back_and_writes_the_same() {
    for dialect in Dialect::ALL {
        let mut info = sample(dialect);
        if dialect == Dialect::Plain {
            info.name = Text::new("Ünï ☃".as_bytes().to_vec(), dialect);
        }
        let json = serde_json::to_string(&info).unwrap();
        let back: ServerInfo = serde_json::from_str(&json).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
        assert_eq!(
            back.name.as_bytes(),
            info.name.as_bytes(),
            "names are lossless"
        );
        assert_eq!(back.rules.get("sv_hostname"), Some(&b"x"[..]));
        assert_eq!(back.rules.len(), 3, "repeated keys kept");
        assert_eq!(
            back.players.as_ref().unwrap()[0].name,
            info.players.as_ref().unwrap()[0].name
        );
        let x = back.extra.as_ref().unwrap().as_any();
        assert!(x.downcast_ref::<serde_json::Value>().is_some());
        assert!(back.unverified && back.truncated);
        assert_eq!(back.name.dialect(), dialect, "the dialect reads back");
    }
}

#[test]
fn records_read_back_answered_or_not() {
    let online = Record::online(
        Some("127.0.0.1:27960".into()),
        "q3",
        sample(Dialect::Quake),
        Some(std::time::Duration::from_micros(1234)),
    );
    let failed = Record::failed(
        Some("127.0.0.1:1".into()),
        "q3",
        Status::Timeout,
        "timed out after 6 attempts".into(),
    );
    for r in [online, failed] {
        let json = serde_json::to_string(&r).unwrap();
        let back: Record = serde_json::from_str(&json).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), json);
        assert_eq!(back.status, r.status);
        assert_eq!(back.info.is_some(), r.info.is_some());
    }
    let mut e = MasterEntry::new("1.2.3.4:8303".parse().unwrap());
    e.addresses = vec!["tw-0.6+udp://1.2.3.4:8303".into()];
    e.info = Some(sample(Dialect::Plain));
    let json = serde_json::to_string(&e).unwrap();
    let back: MasterEntry = serde_json::from_str(&json).unwrap();
    assert_eq!(serde_json::to_string(&back).unwrap(), json);
}

/// A record stored before `score_kind` and `location` were the model's (a DDNet server's,
/// with both in its `extra`) reads them from there; a record's own fields win; an
/// unknown kind reads as none.
#[test]
fn earlier_records_keep_their_score_kind_and_location() {
    use crate::model::ScoreKind;
    let head = r#"{"name_raw": "x", "map": "", "num_players": 0, "max_players": 0"#;
    let read =
        |rest: &str| -> ServerInfo { serde_json::from_str(&format!("{head}{rest}}}")).unwrap() };
    let old = read(r#", "extra": {"protocol": "http", "score_kind": "time", "location": "eu:de"}"#);
    assert_eq!(old.score_kind, Some(ScoreKind::Time));
    assert_eq!(old.location.as_deref(), Some("eu:de"));
    let new = read(
        r#", "score_kind": "points", "location": "na:us", "extra": {"score_kind": "time", "location": "eu:de"}"#,
    );
    assert_eq!(new.score_kind, Some(ScoreKind::Points));
    assert_eq!(new.location.as_deref(), Some("na:us"));
    let none = read(r#", "score_kind": "laps", "extra": {"location": 5}"#);
    assert_eq!((none.score_kind, none.location), (None, None));
    let bare = read("");
    assert_eq!((bare.score_kind, bare.location), (None, None));
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    for bad in [
        "{}",
        r#"{"name_raw": "\u0100", "map": "", "num_players": 0, "max_players": 0, "dialect": "quake"}"#,
        r#"{"name_raw": "x", "map": "", "num_players": -1, "max_players": 0}"#,
        r#"{"name_raw": "x", "map": "", "num_players": 0, "max_players": 0, "rules": {"a": 1}}"#,
        r#"{"name_raw": "x", "map": "", "num_players": 0, "max_players": 0, "dialect": "klingon"}"#,
        "[]",
    ] {
        assert!(serde_json::from_str::<ServerInfo>(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_json_value_is_an_extra() {
    let v: ExtraRef = Arc::new(serde_json::json!({"x": 1}));
    assert!(v.dyn_eq(&serde_json::json!({"x": 1})));
}

/// `ServerInfo::JSON_FIELDS` names the keys the shape writes, in its order, and a record
/// writes its own five keys and then exactly those (`null` for a server that did not answer).
#[test]
fn json_fields_are_the_keys_the_shape_writes() {
    let keys =
        |v: serde_json::Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    let info = serde_json::to_value(sample(Dialect::Quake)).unwrap();
    assert_eq!(keys(info), ServerInfo::JSON_FIELDS);
    let failed = Record::failed(None, "q3", Status::Down, "refused".into());
    let v = serde_json::to_value(&failed).unwrap();
    let k = keys(v.clone());
    assert_eq!(k[..5], ["address", "game", "status", "error", "rtt_ms"]);
    assert_eq!(k[5..], ServerInfo::JSON_FIELDS);
    assert!(ServerInfo::JSON_FIELDS.iter().all(|f| v[f].is_null()));
}

/// Every shape's fast writer writes serde_json's bytes: master entries (with and without a
/// server), and shapes as read back (their `Read` branches), not only borrowed from the model.
#[test]
fn every_shape_writes_fast_what_serde_writes() {
    use super::{EntryShape, RecordShape};
    use crate::json::FastJson;
    let fast = |v: &dyn FastJson| {
        let mut out = Vec::new();
        v.write_json(&mut out);
        String::from_utf8(out).unwrap()
    };
    let mut e = MasterEntry::new("[::1]:8303".parse().unwrap());
    e.addresses = vec!["tw-0.6+udp://[::1]:8303".into(), "a\"b".into()];
    for info in [
        None,
        Some(sample(Dialect::Quake)),
        Some(sample(Dialect::Plain)),
    ] {
        e.info = info;
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(fast(&EntryShape::from(&e)), json);
        let read: EntryShape = serde_json::from_str(&json).unwrap();
        assert_eq!(fast(&read), json, "an entry as read");
    }
    let online = Record::online(
        Some("127.0.0.1:27960".into()),
        "q3",
        sample(Dialect::Quake),
        Some(std::time::Duration::from_micros(1234)),
    );
    let failed = Record::failed(None, "q3", Status::Down, "refused \"x\"".into());
    for r in [online, failed] {
        let json = serde_json::to_string(&r).unwrap();
        let read: RecordShape = serde_json::from_str(&json).unwrap();
        assert_eq!(fast(&read), json, "a record as read");
        assert_eq!(serde_json::to_string(&read).unwrap(), json);
    }
}
