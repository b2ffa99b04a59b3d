//! A record as one line of JSON, written straight into a byte buffer.
//!
//! [`Record::write_json`] writes exactly the bytes `serde_json::to_writer` writes for the
//! same record (the `Serialize` impls in [`crate::model`] and [`crate::record`] are the one
//! definition of the shape; the tests compare the two on every fixture of every family, on
//! hostile text, and on every record shape, each optional key present and absent, in
//! `json_shapes.rs`, which also reads each back through de.rs's reader), but
//! for a scan it is the hot path: each server's record is ~90 JSON strings, and serde's
//! per-field machinery (the map state, escaping every constant key again, one `io::Write`
//! call per piece) cost more than decoding the reply. Here the keys are byte literals, the
//! numbers go through itoa, and a string that is printable ASCII with no `"` or `\` (nearly
//! every name, map and server variable) is checked eight bytes at a time and copied whole.
//! Everything else takes the same route as serialization: [`text`] decodes it and the
//! escaper below writes serde_json's escapes (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`,
//! `\u00XX` with lower-case hex for the other control characters; U+007F and non-ASCII
//! written as they are). The family-specific `extra` parts and the `rtt_ms` float go
//! through serde_json itself.

use std::borrow::Cow;

use crate::model::{Dialect, ExtraRef, Player, Rules, ScoreKind, ServerInfo, Text};
use crate::record::{Record, Status};
use crate::text;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// True when any byte of `w` is below 0x20, `"` or `\`, or (`ascii_only`) above 0x7F. Exact
/// as a yes/no answer: the subtraction can only borrow out of a byte that already matched.
#[inline]
fn word_is_special(w: u64, ascii_only: bool) -> bool {
    let control = w.wrapping_sub(ONES * 0x20) & !w;
    let q = w ^ (ONES * u64::from(b'"'));
    let quote = q.wrapping_sub(ONES) & !q;
    let s = w ^ (ONES * u64::from(b'\\'));
    let slash = s.wrapping_sub(ONES) & !s;
    let high = if ascii_only { w } else { 0 };
    (control | quote | slash | high) & HIGHS != 0
}

#[inline]
fn byte_is_special(b: u8, ascii_only: bool) -> bool {
    b < 0x20 || b == b'"' || b == b'\\' || (ascii_only && b >= 0x80)
}

/// True when `s` can be copied between quotes as it is: no byte to escape and (with
/// `ascii_only`) no byte above 0x7F.
#[inline]
fn is_plain(s: &[u8], ascii_only: bool) -> bool {
    let mut words = s.chunks_exact(8);
    for w in words.by_ref() {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        if word_is_special(u64::from_le_bytes(b), ascii_only) {
            return false;
        }
    }
    !words
        .remainder()
        .iter()
        .any(|&b| byte_is_special(b, ascii_only))
}

/// Writes `s` as a JSON string, quotes included, escaped as serde_json escapes.
fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    if is_plain(bytes, false) {
        out.extend_from_slice(bytes);
    } else {
        write_escaped(out, bytes);
    }
    out.push(b'"');
}

/// The escaping loop for strings with something to escape (UTF-8 bytes: every byte that
/// needs an escape is ASCII, so the runs between them stay whole characters).
fn write_escaped(out: &mut Vec<u8>, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if !byte_is_special(b, false) {
            continue;
        }
        out.extend_from_slice(bytes.get(start..i).unwrap_or_default());
        start = i + 1;
        let short = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            0x08 => b'b',
            0x0C => b'f',
            b'\n' => b'n',
            b'\r' => b'r',
            b'\t' => b't',
            _ => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xF)]);
                continue;
            }
        };
        out.push(b'\\');
        out.push(short);
    }
    out.extend_from_slice(bytes.get(start..).unwrap_or_default());
}

/// Writes bytes that read as `slow(bytes)` as a JSON string: copied whole when they are
/// printable ASCII with nothing to escape (then every decoding of them is the same text),
/// else decoded by `slow` and escaped.
#[inline]
fn write_bytes_as(out: &mut Vec<u8>, bytes: &[u8], slow: impl FnOnce(&[u8]) -> Cow<'_, str>) {
    if is_plain(bytes, true) {
        write_quoted(out, bytes);
    } else {
        write_str(out, &slow(bytes));
    }
}

fn write_opt_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => write_str(out, s),
        None => out.extend_from_slice(b"null"),
    }
}

fn write_u32(out: &mut Vec<u8>, n: u32) {
    // Counts, scores and pings are nearly always under 100: their digits are written
    // directly, not formatted and copied.
    match u8::try_from(n) {
        Ok(d @ 0..=9) => out.push(b'0' + d),
        Ok(d @ 10..=99) => out.extend_from_slice(&[b'0' + d / 10, b'0' + d % 10]),
        _ => out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes()),
    }
}

fn write_i32(out: &mut Vec<u8>, n: i32) {
    match u32::try_from(n) {
        Ok(n) => write_u32(out, n),
        Err(_) => out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes()),
    }
}

fn write_opt_u32(out: &mut Vec<u8>, n: Option<u32>) {
    match n {
        Some(n) => write_u32(out, n),
        None => out.extend_from_slice(b"null"),
    }
}

fn write_opt_i32(out: &mut Vec<u8>, n: Option<i32>) {
    match n {
        Some(n) => write_i32(out, n),
        None => out.extend_from_slice(b"null"),
    }
}

fn write_opt_bool(out: &mut Vec<u8>, b: Option<bool>) {
    out.extend_from_slice(match b {
        Some(true) => b"true",
        Some(false) => b"false",
        None => b"null",
    });
}

/// Anything else (a family's `extra` part, a float): through serde_json, which cannot fail
/// writing into a `Vec` for these types (their keys are strings).
fn write_serde<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    let start = out.len();
    if serde_json::to_writer(&mut *out, v).is_err() {
        // Nothing half-written stays in the line.
        out.truncate(start);
        out.extend_from_slice(b"null");
    }
}

/// A family's `extra` part, or `null`.
fn write_extra(out: &mut Vec<u8>, extra: Option<&ExtraRef>) {
    match extra {
        Some(e) => write_serde(out, e),
        None => out.extend_from_slice(b"null"),
    }
}

/// `Text::display_cow`, written. Printable ASCII with nothing to escape stays so once its
/// colour codes are stripped (stripping only removes bytes), so such Quake text is stripped
/// straight into `out`; anything else is decoded and escaped the long way.
fn write_display(out: &mut Vec<u8>, t: &Text) {
    write_display_of(out, t, is_plain(t.as_bytes(), true));
}

/// [`write_display`], knowing whether the text is plain ([`is_plain`] with `ascii_only`).
fn write_display_of(out: &mut Vec<u8>, t: &Text, plain: bool) {
    let bytes = t.as_bytes();
    match (t.dialect(), plain) {
        (Dialect::Plain, true) => write_quoted(out, bytes),
        (d, true) => {
            out.reserve(bytes.len() + 2);
            out.push(b'"');
            d.strip_into(bytes, out);
            out.push(b'"');
        }
        (_, false) => write_str(out, &t.display_cow()),
    }
}

/// `Text::raw_cow`, written, knowing whether the text is plain.
fn write_raw_of(out: &mut Vec<u8>, t: &Text, plain: bool) {
    if plain {
        write_quoted(out, t.as_bytes());
    } else {
        write_str(out, &t.raw_cow());
    }
}

/// A name and then its raw form (`"name":…,"name_raw":…`), the text checked once.
fn write_name_pair(out: &mut Vec<u8>, t: &Text) {
    let plain = is_plain(t.as_bytes(), true);
    write_display_of(out, t, plain);
    out.extend_from_slice(b",\"name_raw\":");
    write_raw_of(out, t, plain);
}

/// Plain bytes between quotes.
fn write_quoted(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    out.extend_from_slice(bytes);
    out.push(b'"');
}

fn write_player(out: &mut Vec<u8>, p: &Player) {
    out.extend_from_slice(b"{\"name\":");
    write_name_pair(out, &p.name);
    out.extend_from_slice(b",\"clan\":");
    match &p.clan {
        Some(c) => write_display(out, c),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"score\":");
    write_opt_i32(out, p.score);
    out.extend_from_slice(b",\"ping\":");
    write_opt_i32(out, p.ping);
    out.extend_from_slice(b",\"team\":");
    write_opt_i32(out, p.team);
    out.extend_from_slice(b",\"is_bot\":");
    write_opt_bool(out, p.is_bot);
    out.extend_from_slice(b",\"is_spectator\":");
    write_opt_bool(out, p.is_spectator);
    out.extend_from_slice(b",\"extra\":");
    write_extra(out, p.extra.as_ref());
    out.push(b'}');
}

fn write_rules(out: &mut Vec<u8>, rules: &Rules) {
    out.push(b'{');
    for (i, (k, v)) in rules.pairs().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_bytes_as(out, k, text::decode_cow);
        out.push(b':');
        write_bytes_as(out, v, text::decode_cow);
    }
    out.push(b'}');
}

/// The keys of [`ServerInfo::JSON_FIELDS`], each after a comma (the record's first keys come
/// before them).
fn write_info(out: &mut Vec<u8>, s: &ServerInfo) {
    out.extend_from_slice(b",\"name\":");
    write_name_pair(out, &s.name);
    out.extend_from_slice(b",\"map\":");
    write_display(out, &s.map);
    out.extend_from_slice(b",\"gametype\":");
    write_opt_str(out, s.gametype.as_deref());
    out.extend_from_slice(b",\"version\":");
    write_opt_str(out, s.version.as_deref());
    out.extend_from_slice(b",\"num_players\":");
    write_u32(out, s.num_players);
    out.extend_from_slice(b",\"max_players\":");
    write_u32(out, s.max_players);
    out.extend_from_slice(b",\"num_bots\":");
    write_opt_u32(out, s.num_bots);
    out.extend_from_slice(b",\"num_spectators\":");
    write_opt_u32(out, s.num_spectators);
    out.extend_from_slice(b",\"password\":");
    write_opt_bool(out, s.password);
    out.extend_from_slice(b",\"score_kind\":");
    write_opt_str(out, s.score_kind.map(ScoreKind::id));
    out.extend_from_slice(b",\"location\":");
    write_opt_str(out, s.location.as_deref());
    out.extend_from_slice(b",\"players\":");
    match &s.players {
        Some(players) => {
            out.push(b'[');
            for (i, p) in players.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_player(out, p);
            }
            out.push(b']');
        }
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"rules\":");
    write_rules(out, &s.rules);
    out.extend_from_slice(b",\"extra\":");
    write_extra(out, s.extra.as_ref());
    out.extend_from_slice(b",\"warnings\":[");
    for (i, w) in s.warnings.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, w);
    }
    out.extend_from_slice(b"],\"truncated\":");
    out.extend_from_slice(if s.truncated { b"true" } else { b"false" });
    out.extend_from_slice(b",\"unverified\":");
    out.extend_from_slice(if s.unverified { b"true" } else { b"false" });
    // Ids are lower-case ASCII letters and digits: nothing to escape.
    out.extend_from_slice(b",\"dialect\":\"");
    out.extend_from_slice(s.name.dialect().id().as_bytes());
    out.push(b'"');
}

/// What a record without a [`ServerInfo`] has after `rtt_ms`: every key `null`.
const NO_INFO: &[u8] = b",\"name\":null,\"name_raw\":null,\"map\":null,\"gametype\":null,\
\"version\":null,\"num_players\":null,\"max_players\":null,\"num_bots\":null,\
\"num_spectators\":null,\"password\":null,\"score_kind\":null,\"location\":null,\
\"players\":null,\"rules\":null,\"extra\":null,\
\"warnings\":null,\"truncated\":null,\"unverified\":null,\"dialect\":null";

pub(crate) fn write_record(out: &mut Vec<u8>, r: &Record) {
    out.extend_from_slice(b"{\"address\":");
    write_opt_str(out, r.address.as_deref());
    out.extend_from_slice(b",\"game\":");
    write_str(out, &r.game);
    out.extend_from_slice(match r.status {
        Status::Online => b",\"status\":\"online\",\"error\":",
        Status::Timeout => b",\"status\":\"timeout\",\"error\":",
        Status::Error => b",\"status\":\"error\",\"error\":",
        Status::Down => b",\"status\":\"down\",\"error\":",
    });
    write_opt_str(out, r.error.as_deref());
    out.extend_from_slice(b",\"rtt_ms\":");
    match r.rtt_ms {
        Some(ms) => write_serde(out, &ms),
        None => out.extend_from_slice(b"null"),
    }
    match &r.info {
        Some(info) => write_info(out, info),
        None => out.extend_from_slice(NO_INFO),
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

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
                    for ascii in [false, true] {
                        assert_eq!(
                            word_is_special(u64::from_le_bytes(w), ascii),
                            w.iter().any(|&b| byte_is_special(b, ascii)),
                            "{w:?} ascii_only={ascii}"
                        );
                    }
                }
            }
        }
        // Words mixing the bytes at every edge of the tests (borrows running across bytes).
        let edges = [
            0x00, 0x01, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x5b, 0x5c, 0x5d, 0x7e, 0x7f, 0x80, 0x81,
            0x9f, 0xa0, 0xa1, 0xdc, 0xdf, 0xe0, 0xfe, 0xff, b'a',
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
            for ascii in [false, true] {
                assert_eq!(
                    word_is_special(u64::from_le_bytes(w), ascii),
                    w.iter().any(|&b| byte_is_special(b, ascii)),
                    "{w:?} ascii_only={ascii}"
                );
            }
        }
    }
}
