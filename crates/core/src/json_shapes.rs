//! One definition of the JSON shape (issue 32, item 7): the shape structs of shape.rs, which
//! the model's `Serialize` and `Deserialize` impls both derive from. The fast NDJSON writer
//! (`Record::write_json`, the shapes' `FastJson` impls) and the reader are checked against
//! serde_json on every record shape: each optional key present and absent, alone and in
//! combination (every single field, then 6,000 combinations drawn at random), every status,
//! dialect and score kind, with and without players, rules, warnings and family extras; and
//! the bytes against a digest taken before the shape was one definition.

use std::sync::Arc;
use std::time::Duration;

use crate::model::{Dialect, Player, ScoreKind, ServerInfo, Text};
use crate::record::{Record, Status};

/// A family's typed extra, as a family crate would have it.
#[derive(Debug, PartialEq, serde::Serialize)]
struct Extra {
    crc: u32,
    kind: &'static str,
}

/// The choices one record is made of: each bit of `mask` turns one optional part on.
const PARTS: u32 = 24;

fn player(mask: u64, dialect: Dialect, i: i32) -> Player {
    let on = |b: u32| mask >> b & 1 == 1;
    let mut p = Player::new(Text::new(format!("^1p{i} \"x\"").into_bytes(), dialect));
    p.clan = on(0).then(|| Text::new(b"^2clan\\".to_vec(), dialect));
    p.score = on(1).then_some(-i);
    p.ping = on(2).then_some(i * 7);
    p.team = on(3).then_some(i % 3);
    p.is_bot = on(4).then_some(i % 2 == 0);
    p.is_spectator = on(5).then_some(false);
    if on(6) {
        p.extra = Some(Arc::new(Extra {
            crc: 7,
            kind: "tee",
        }));
    }
    p
}

fn record(mask: u64, dialect: Dialect, status: Status) -> Record {
    let on = |b: u32| mask >> b & 1 == 1;
    let address = on(0).then(|| "[::1]:27960".to_string());
    if !matches!(status, Status::Online) {
        return Record::failed(address, "q3", status, "why \"not\"\n".into());
    }
    let mut info = ServerInfo {
        name: Text::new(b"^1My ^7Server\x01".to_vec(), dialect),
        map: Text::new(b"q3dm17".to_vec(), dialect),
        gametype: on(1).then(|| "ctf".into()),
        version: on(2).then(|| "ioq3 1.36_GIT".into()),
        num_players: 3,
        max_players: 16,
        num_bots: on(3).then_some(1),
        num_spectators: on(4).then_some(0),
        password: on(5).then_some(on(6)),
        score_kind: on(7).then_some(if on(8) {
            ScoreKind::Time
        } else {
            ScoreKind::Points
        }),
        location: on(9).then(|| "eu:de".into()),
        truncated: on(10),
        unverified: on(11),
        ..ServerInfo::default()
    };
    if on(12) {
        info.rules.push(b"sv_hostname", b"^1My Server");
        info.rules.push(b"g_needpass", b"0");
    }
    if on(13) {
        info.set_extra(Extra {
            crc: 0xDEAD_BEEF,
            kind: "ddnet",
        });
    }
    if on(14) {
        info.warnings.push("a warning".into());
    }
    if on(15) {
        // Players of every shape: bits 16.. choose each one's optional keys.
        let n = if on(16) { 2 } else { 0 };
        info.players = Some(
            (0..n)
                .map(|i: i32| player(mask >> (17 + i), dialect, i))
                .collect(),
        );
    }
    let rtt = on(23).then(|| Duration::from_micros(1_234));
    Record::online(address, "q3", info, rtt)
}

/// The writer writes serde's bytes; the reader reads them, and writing what it read gives
/// them again.
fn check(r: &Record) {
    r.check_write_json();
    let serde = serde_json::to_vec(r).unwrap();
    let back: Record = serde_json::from_slice(&serde).unwrap_or_else(|e| {
        panic!(
            "the reader refuses what serde writes: {e}\n{}",
            String::from_utf8_lossy(&serde)
        )
    });
    let again = serde_json::to_vec(&back).unwrap();
    assert!(
        again == serde,
        "read back, the record writes otherwise:\n{}\n{}",
        String::from_utf8_lossy(&serde),
        String::from_utf8_lossy(&again)
    );
    back.check_write_json();
}

#[test]
fn writer_and_reader_agree_with_serde_on_every_record_shape() {
    let statuses = [Status::Online, Status::Timeout, Status::Error, Status::Down];
    let mut masks: Vec<u64> = vec![0, (1 << PARTS) - 1];
    // Each part alone, and everything but it.
    for b in 0..PARTS {
        masks.push(1 << b);
        masks.push(((1 << PARTS) - 1) & !(1 << b));
    }
    // Combinations: a fixed-seed generator, so a failure repeats.
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..6_000 {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        masks.push((seed >> 17) & ((1 << PARTS) - 1));
    }
    for (i, mask) in masks.iter().enumerate() {
        let dialect = Dialect::ALL[i % Dialect::ALL.len()];
        // A record that did not answer has no server keys: a few masks are enough.
        let statuses = if i < 4 { &statuses[..] } else { &statuses[..1] };
        for &status in statuses {
            check(&record(*mask, dialect, status));
        }
    }
}

/// FNV-1a, 64 bits: a digest that stays the same across builds and platforms.
fn fnv(bytes: &[u8], mut h: u64) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The JSON of every record shape above, byte for byte, is what it was when the shape was
/// written three times (json.rs's writer, de.rs's reader and the `Serialize` impls, before
/// issue 32 made the shape one definition): a digest of every line, taken with the old
/// code. A change to the shape fails here; if it is meant, docs/json.md says so and the
/// digest is taken again.
#[test]
fn the_shape_writes_the_bytes_it_always_wrote() {
    let statuses = [Status::Online, Status::Timeout, Status::Error, Status::Down];
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut lines = 0;
    for b in 0..PARTS {
        for (i, &dialect) in Dialect::ALL.iter().enumerate() {
            let status = statuses[(b as usize + i) % statuses.len()];
            for mask in [1u64 << b, ((1 << PARTS) - 1) & !(1 << b)] {
                let r = record(mask, dialect, status);
                let mut line = Vec::new();
                r.write_json(&mut line);
                h = fnv(&line, h);
                h = fnv(b"\n", h);
                lines += 1;
                // ServerInfo and Player alone, through serde_json.
                if let Some(info) = &r.info {
                    h = fnv(&serde_json::to_vec(info).unwrap(), h);
                    let mut e = crate::model::MasterEntry::new("[::1]:8303".parse().unwrap());
                    e.addresses = vec!["tw-0.6+udp://[::1]:8303".into()];
                    e.info = Some(info.clone());
                    h = fnv(&serde_json::to_vec(&e).unwrap(), h);
                }
            }
        }
    }
    println!("{lines} lines, digest {h:#018x}");
    assert_eq!(h, GOLDEN, "the JSON shape changed ({lines} lines)");
}

/// Taken at a7aea43 (before the one definition) with the test above.
const GOLDEN: u64 = 0x19b2_e036_3f50_74e4;

/// Hostile text, through the same digest: every byte value alone, inside longer text across
/// the eight-byte words and after colour codes, non-UTF-8 and non-ASCII text, a name over
/// 128 bytes with colour codes, repeated rule keys, in every dialect and every place text
/// goes. Taken with the old code like the digest above.
#[test]
fn hostile_text_writes_the_bytes_it_always_wrote() {
    let mut texts: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    for b in 0..=255u8 {
        for at in [0usize, 7, 8, 15] {
            let mut t = b"abcdefghijklmnopq".to_vec();
            t.insert(at, b);
            texts.push(t);
        }
        texts.push(vec![b'^', b, b'x']);
        texts.push(vec![b'^', b'1', b, b'^', b'7', b'z']);
    }
    let mut long = b"^1".repeat(40);
    long.extend_from_slice(&[b'n'; 100]);
    texts.extend([
        Vec::new(),
        b"^".to_vec(),
        b"^^".to_vec(),
        b"^x0BFblue^^^".to_vec(),
        "caf\u{e9} \u{1F600}".as_bytes().to_vec(),
        b"caf\xc3".to_vec(),
        b"^1caf\xc3\xa9".to_vec(),
        b"^1\xff\xfe".to_vec(),
        b"tab\there \"quoted\" back\\slash\r\n\x0c\x08\x1f\x7f".to_vec(),
        b"^#ff8000Or^*^c900R^iw07^n1^+^\x01//\x03abc^^00x".to_vec(),
        long,
    ]);
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut lines = 0;
    for dialect in Dialect::ALL {
        for t in &texts {
            let text = Text::new(t.clone(), dialect);
            let mut info = ServerInfo {
                name: text.clone(),
                map: text.clone(),
                gametype: Some(text.raw()),
                version: Some(text.display()),
                ..ServerInfo::default()
            };
            info.rules.push(t, t);
            info.rules.push(b"k", t);
            info.rules.push(t, b"again");
            info.warnings.push(text.raw());
            let mut p = Player::new(text.clone());
            p.clan = Some(text.clone());
            info.players = Some(vec![p]);
            let r = Record::online(Some(text.raw()), &text.display(), info, None);
            let mut line = Vec::new();
            r.write_json(&mut line);
            h = fnv(&line, h);
            h = fnv(b"\n", h);
            lines += 1;
        }
    }
    println!("{lines} lines, digest {h:#018x}");
    assert_eq!(
        h, GOLDEN_HOSTILE,
        "hostile text writes otherwise ({lines} lines)"
    );
}

/// Taken at a7aea43 with the test above.
const GOLDEN_HOSTILE: u64 = 0xc72e_c79d_16d0_78f5;
