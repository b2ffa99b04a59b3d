use std::sync::Arc;

use super::*;
use crate::model::{Dialect, Player, ScoreKind, ServerInfo, Text};
use crate::record::{Record, Status};

fn same_as_serde(r: &Record) {
    r.check_write_json();
}

/// Every byte value, alone and inside longer strings that cross the eight-byte words, in
/// every place text goes (names with and without colour codes, every dialect, rules,
/// warnings, addresses, errors).
#[test]
fn every_byte_in_every_field_reads_as_serde_writes_it() {
    let mut texts: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    for b in 0..=255u8 {
        for at in [0usize, 3, 7, 8, 9, 15, 16] {
            let mut t = b"abcdefghijklmnopq".to_vec();
            t.insert(at, b);
            texts.push(t);
        }
        texts.push(vec![b'^', b, b'x']);
        texts.push(vec![b'^', b'1', b, b'^', b'7', b'z']);
    }
    texts.extend([
        b"".to_vec(),
        b"^".to_vec(),
        b"^^".to_vec(),
        b"^x0BFblue^^^".to_vec(),
        "caf\u{e9} \u{1F600}".as_bytes().to_vec(),
        b"caf\xc3".to_vec(),
        b"^1caf\xc3\xa9".to_vec(),
        b"^1\xff\xfe".to_vec(),
        b"tab\there \"quoted\" back\\slash\r\n\x0c\x08\x1f\x7f".to_vec(),
        b"^#ff8000Or^*^c900R^iw07^n1^+^\x01//\x03abc^^00x".to_vec(),
    ]);
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
            info.warnings.push(text.raw());
            let mut p = Player::new(text.clone());
            p.clan = Some(text.clone());
            p.score = Some(-3);
            info.players = Some(vec![p, Player::default()]);
            same_as_serde(&Record::online(
                Some(text.raw()),
                &text.display(),
                info,
                None,
            ));
            same_as_serde(&Record::failed(None, "q3", Status::Error, text.display()));
        }
    }
}

#[test]
fn numbers_options_and_extras_read_as_serde_writes_them() {
    #[derive(Debug, PartialEq, serde::Serialize)]
    struct Crc {
        crc: u32,
        name: &'static str,
    }
    let mut info = ServerInfo {
        num_players: u32::MAX,
        max_players: 0,
        num_bots: Some(7),
        num_spectators: Some(0),
        password: Some(true),
        score_kind: Some(ScoreKind::Time),
        location: Some("eu:\"de\\\u{1}é".into()),
        truncated: true,
        unverified: true,
        ..ServerInfo::default()
    };
    info.set_extra(Crc {
        crc: 0xDEAD_BEEF,
        name: "a\"b",
    });
    let mut p = Player::new(Text::new(b"p".to_vec(), Dialect::Plain));
    (p.score, p.ping, p.team) = (Some(i32::MIN), Some(i32::MAX), Some(0));
    (p.is_bot, p.is_spectator) = (Some(false), Some(true));
    p.extra = Some(Arc::new(Crc { crc: 1, name: "" }));
    info.players = Some(vec![p]);
    info.warnings = vec!["one".into(), "two\n".into()];
    for rtt in [
        None,
        Some(std::time::Duration::from_micros(1_234)),
        Some(std::time::Duration::from_secs(3)),
        Some(std::time::Duration::ZERO),
    ] {
        same_as_serde(&Record::online(
            Some("[::1]:27960".into()),
            "q3",
            info.clone(),
            rtt,
        ));
    }
    let mut odd = Record::failed(None, "q3", Status::Timeout, "timed out".into());
    for ms in [f64::NAN, f64::INFINITY, 1e300, -0.0, 0.1 + 0.2] {
        odd.rtt_ms = Some(ms);
        same_as_serde(&odd);
    }
    same_as_serde(&Record::online(None, "q3", ServerInfo::default(), None));
    // Every number around the digit-count edges, both signs, in every numeric field.
    let edges = (0..=1_000)
        .chain([9_999, 10_000, 65_535, 99_999, 100_000, i32::MAX as u32 - 1])
        .chain([u32::MAX - 1, u32::MAX]);
    for n in edges {
        let mut info = ServerInfo::default();
        (info.num_players, info.max_players) = (n, n.wrapping_add(1));
        (info.num_bots, info.num_spectators) = (Some(n), Some(n / 7));
        let signed = i32::try_from(n).unwrap_or(i32::MAX);
        let mut p = Player::default();
        (p.score, p.ping, p.team) = (Some(signed), Some(-signed), Some(signed / 3));
        let q = Player {
            score: Some(i32::MIN + i32::try_from(n % 1000).unwrap_or(0)),
            ..Player::default()
        };
        info.players = Some(vec![p, q]);
        same_as_serde(&Record::online(None, "q3", info, None));
    }
}

#[test]
fn word_check_agrees_with_the_byte_check() {
    // Every pair of bytes at every pair of positions of a word, the rest filler.
    let fill = [b'a', 0x7f, b' ', 0x80, 0xff];
    for f in fill {
        for x in 0..=255u8 {
            for i in 0..8 {
                let mut w = [f; 8];
                w[i] = x;
                let w8 = u64::from_le_bytes(w);
                assert_eq!(
                    word_is_special::<false>(w8),
                    w.iter().any(|&b| byte_is_special::<false>(b)),
                    "{w:?}"
                );
                assert_eq!(
                    word_is_special::<true>(w8),
                    w.iter().any(|&b| byte_is_special::<true>(b)),
                    "{w:?} ASCII"
                );
            }
        }
    }
    // Words mixing the bytes at every edge of the tests (borrows running across bytes).
    let edges = [
        0x00, 0x01, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x5b, 0x5c, 0x5d, 0x7e, 0x7f, 0x80, 0x81, 0x9f,
        0xa0, 0xa1, 0xdc, 0xdf, 0xe0, 0xfe, 0xff, b'a',
    ];
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..2_000_000 {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let mut w = [0u8; 8];
        for (i, b) in w.iter_mut().enumerate() {
            *b = edges[((seed >> (i * 8)) as usize) % edges.len()];
        }
        let w8 = u64::from_le_bytes(w);
        assert_eq!(
            word_is_special::<false>(w8),
            w.iter().any(|&b| byte_is_special::<false>(b)),
            "{w:?}"
        );
        assert_eq!(
            word_is_special::<true>(w8),
            w.iter().any(|&b| byte_is_special::<true>(b)),
            "{w:?} ASCII"
        );
    }
}

/// `is_plain` and `is_plain_ascii` (words, overlapping last word, two halves) agree with the byte check on
/// every length to 40 with a special byte at every position, and on none.
#[test]
fn plain_check_agrees_with_the_byte_check_at_every_length() {
    for n in 0..40usize {
        let clean = vec![b'a'; n];
        assert!(is_plain(&clean) && is_plain_ascii(&clean), "{n}");
        for at in 0..n {
            for b in [0x00, 0x1f, b'"', b'\\', 0x7f, 0x80, 0xff, b' '] {
                let mut s = clean.clone();
                s[at] = b;
                assert_eq!(is_plain(&s), !byte_is_special::<false>(b), "n={n} at={at}");
                assert_eq!(
                    is_plain_ascii(&s),
                    !byte_is_special::<true>(b),
                    "n={n} at={at}"
                );
            }
        }
    }
}
