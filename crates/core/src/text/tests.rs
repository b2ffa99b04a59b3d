use super::*;

#[test]
fn strips_every_style() {
    assert_eq!(display(b"^w*ES*^3Bro^7chillin"), "*ES*Brochillin");
    assert_eq!(display(b"^9fishy^1'^6"), "fishy'");
    assert_eq!(
        display("^x555[^x0BF力^x777] ^xBBBIn^1t^7eger".as_bytes()),
        "[力] Integer"
    );
    assert_eq!(display(b"a^"), "a^");
    assert_eq!(display(b"^^7x"), "^7x");
    assert_eq!(display(b"^4d^5a^4n^5g^4e^5r "), "danger ");
    assert_eq!(display(b"plain"), "plain");
    assert_eq!(display(b"^1caf\xe9"), "café", "ISO-8859-1 after stripping");
    assert_eq!(display(b"caf\xe9"), "café");
    assert_eq!(display(b"^"), "^");
    assert_eq!(display(b""), "");
}

/// The bytes the tokens of `s` draw, concatenated.
fn token_text(d: Dialect, s: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for t in d.tokens(s) {
        if let Token::Text(t) = t {
            out.extend_from_slice(t);
        }
    }
    out
}

/// Every string of up to 4 bytes over the bytes that matter to some dialect, then 20,000
/// longer ones (5-9 bytes, a fixed pseudo-random sequence, so `^#` + six hex digits and
/// `^c` + three occur): in every dialect, `strip` (its own loop) keeps exactly the bytes of
/// the text tokens, no token is empty, and nothing panics.
#[test]
fn strip_agrees_with_the_tokens_in_every_dialect() {
    const ALPHABET: [u8; 16] = [
        b'^', b'x', b'#', b'c', b'i', b'0', b'7', b'8', b'9', b'F', b'a', b'*', b'[', b' ', 0xE9, 0,
    ];
    let mut strings: Vec<Vec<u8>> = Vec::new();
    for len in 0..=4u32 {
        for mut n in 0..ALPHABET.len().pow(len) {
            let mut s = Vec::new();
            for _ in 0..len {
                s.push(ALPHABET[n % ALPHABET.len()]);
                n /= ALPHABET.len();
            }
            strings.push(s);
        }
    }
    let mut seed: u64 = 0x5eed;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize
    };
    for _ in 0..20_000 {
        let len = 5 + next() % 5;
        // Carets more often than the rest: codes start with one.
        let s: Vec<u8> = (0..len)
            .map(|_| match next() % 4 {
                0 => b'^',
                _ => ALPHABET[next() % ALPHABET.len()],
            })
            .collect();
        strings.push(s);
    }
    assert_eq!(strings.len(), 69_905 + 20_000);
    for d in Dialect::ALL {
        for s in &strings {
            assert_eq!(d.strip(s), token_text(d, s), "{d} {s:?}");
            assert!(
                d.tokens(s)
                    .all(|t| !matches!(t, Token::Text(b) if b.is_empty())),
                "{d} {s:?}"
            );
        }
        // The renderers on a share of them (they allocate: slower).
        for s in strings.iter().step_by(7) {
            let runs = d.runs(s);
            let _ = d.ansi(s, AnsiColors::Auto);
            let _ = d.ansi(s, AnsiColors::Ansi16);
            let _ = runs_html(&runs);
            if s.is_ascii() {
                let text: String = runs.iter().map(|r| r.text.as_str()).collect();
                assert_eq!(text, d.display(s), "{d} {s:?}");
            }
        }
    }
}

#[test]
fn latin1_is_reversible() {
    let raw: Vec<u8> = (0..=255).collect();
    assert_eq!(from_latin1(&latin1(&raw)).unwrap(), raw);
    assert_eq!(decode_lossless(b"caf\xe9"), "café");
    assert_eq!(latin1(b"ascii"), "ascii");
    assert_eq!(latin1(b"\xff\x80a"), "\u{ff}\u{80}a");
}

#[test]
fn cow_forms_borrow_only_when_nothing_changes() {
    use std::borrow::Cow;
    // (raw, shown): `display` is `display_cow` owned, so the expected text is spelled out.
    let cases: [(&[u8], &str); 7] = [
        (b"plain", "plain"),
        (b"^1Red^7 ^^ ^x0BFblue", "Red ^ blue"),
        (b"caf\xc3\xa9", "caf\u{e9}"),
        (b"caf\xe9", "caf\u{e9}"),
        (b"^1caf\xe9", "caf\u{e9}"),
        // A colour code's byte may be half of a UTF-8 pair: what is left is ISO-8859-1.
        (b"^\xc3\xa9", "\u{a9}"),
        (b"", ""),
    ];
    for (s, shown) in cases {
        assert_eq!(display_cow(s), shown, "{s:?}");
        assert_eq!(latin1_cow(s), latin1(s), "{s:?}");
    }
    assert!(matches!(display_cow(b"plain"), Cow::Borrowed("plain")));
    assert!(matches!(display_cow(b"caf\xc3\xa9"), Cow::Borrowed(_)));
    assert!(matches!(display_cow(b"^1x"), Cow::Owned(_)));
    assert!(matches!(latin1_cow(b"plain"), Cow::Borrowed("plain")));
    // Valid UTF-8 but not ASCII: ISO-8859-1 maps each byte, so it cannot be borrowed.
    assert_eq!(latin1_cow(b"caf\xc3\xa9"), "caf\u{c3}\u{a9}");
}

#[test]
fn quake_charset_and_ansi() {
    assert_eq!(
        display_quake_charset(b"\xc7\xef\xec\xe4 \x12\x13"),
        "Gold 01"
    );
    assert_eq!(to_ansi(b"^1R^7W"), "\x1b[31mR\x1b[37mW\x1b[0m");
    assert!(to_ansi(b"^xF00x").starts_with("\x1b[38;2;255;0;0m"));
}

#[test]
fn colour_runs() {
    let r = runs(b"a^1b^1c^^^xF00d^");
    assert_eq!(
        r,
        vec![Run::new(None, "a"), Run::new(Some([255, 0, 0]), "bc^d^"),]
    );
    assert!(runs(b"").is_empty());
    assert_eq!(runs(b"^9x")[0].color, Some([255, 0, 0]));
}

#[test]
fn dialect_ids_round_trip() {
    let mut seen = std::collections::HashSet::new();
    for d in Dialect::ALL {
        assert!(seen.insert(d.id()), "{d:?}: id {} twice", d.id());
        assert_eq!(d.id().parse::<Dialect>(), Ok(d));
        assert_eq!(d.to_string(), d.id());
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            format!("\"{}\"", d.id())
        );
        assert!(d
            .id()
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
    }
    assert_eq!("quake".parse::<Dialect>(), Ok(Dialect::Quake));
    assert_eq!("idq3".parse::<Dialect>(), Ok(Dialect::IdTech3));
    let e = "klingon".parse::<Dialect>().unwrap_err();
    assert!(e.to_string().contains("klingon") && e.to_string().contains("daemon"));
    assert_eq!(
        "Quake".parse::<Dialect>(),
        Err(crate::model::UnknownDialect("Quake".into()))
    );
}

#[test]
fn ansi_per_dialect() {
    use AnsiColors::{Ansi16, Auto};
    // id's 8 colours: the basic ANSI ones (5 is cyan, 6 magenta); RGB codes 24-bit.
    assert_eq!(
        Dialect::IdTech3.ansi(b"^5c^6m", Auto),
        "\x1b[36mc\x1b[35mm\x1b[0m"
    );
    assert_eq!(
        Dialect::Quake.ansi(b"^xF80o", Auto),
        "\x1b[38;2;255;136;0mo\x1b[0m"
    );
    // A bigger table: every code 24-bit, the default colour the terminal's own.
    assert_eq!(
        Dialect::Wet.ansi(b"^1r^*d", Auto),
        "\x1b[38;2;255;0;0mr\x1b[39md\x1b[0m"
    );
    assert_eq!(
        Dialect::Daemon.ansi(b"^#3399ccx^0y", Auto),
        "\x1b[38;2;51;153;204mx\x1b[38;2;51;51;51my\x1b[0m"
    );
    assert_eq!(
        Dialect::Quake4.ansi(b"^c900R^0d^iw07", Auto),
        "\x1b[38;2;255;0;0mR\x1b[39md\x1b[0m"
    );
    // DarkPlaces ^8 (white, half alpha): plain white in a terminal.
    assert_eq!(
        Dialect::DarkPlaces.ansi(b"^8g", Auto),
        "\x1b[38;2;255;255;255mg\x1b[0m"
    );
    // 16 colours: the nearest of xterm's.
    assert_eq!(
        Dialect::IdTech3.ansi(b"^1r^7w^0b^4u", Ansi16),
        "\x1b[91mr\x1b[97mw\x1b[30mb\x1b[34mu\x1b[0m"
    );
    assert_eq!(
        Dialect::Daemon.ansi(b"^#808080g^9h", Ansi16),
        "\x1b[90mg\x1b[90mh\x1b[0m"
    );
    assert_eq!(Dialect::Plain.ansi(b"^1x", Auto), "^1x\x1b[0m");
    assert_eq!(Dialect::Ioq3.ansi(b"", Auto), "\x1b[0m");
    // Text after stripping is decoded per run: ISO-8859-1 where it is not UTF-8.
    assert_eq!(
        Dialect::Ioq3.ansi(b"^1caf\xe9", Auto),
        "\x1b[31mcaf\u{e9}\x1b[0m"
    );
}

#[test]
fn html_escapes_and_colours() {
    assert_eq!(
        Dialect::Ioq3.html(b"^1<script>&'\"^7x"),
        "<span style=\"color:#ff0000\">&lt;script&gt;&amp;'&quot;</span>\
         <span style=\"color:#ffffff\">x</span>"
    );
    assert_eq!(Dialect::Ioq3.html(b""), "");
    assert_eq!(Dialect::Plain.html(b"<^1>"), "<span>&lt;^1&gt;</span>");
    assert_eq!(
        Dialect::Quake4.html(b"^iw<7a"),
        "<span class=\"icon\" title=\"w&lt;7\"></span><span>a</span>"
    );
    assert_eq!(
        Dialect::DarkPlaces.html(b"^8h"),
        "<span style=\"color:#ffffff;opacity:.5\">h</span>"
    );
    let t = crate::model::Text::new(b"^1<b>".to_vec(), Dialect::Plain);
    assert_eq!(t.html(), "<span>^1&lt;b&gt;</span>");
    let t = crate::model::Text::new(b"^1<b>".to_vec(), Dialect::Qfusion);
    assert_eq!(t.html(), "<span style=\"color:#ff0000\">&lt;b&gt;</span>");
}

#[test]
fn text_uses_its_dialect() {
    use crate::model::Text;
    use std::borrow::Cow;
    let t = Text::new(b"^^1x".to_vec(), Dialect::Idtech4);
    assert_eq!(t.display(), "1x");
    assert_eq!(t.raw(), "^^1x");
    assert_eq!(t.runs(), [Run::new(Some([0, 0, 0]), "1x")]);
    assert_eq!(t.ansi(), "\x1b[38;2;0;0;0m1x\x1b[0m");
    let t = Text::new(b"^^1x".to_vec(), Dialect::IdTech3);
    assert_eq!(t.display(), "^x");
    assert_eq!(t.ansi_with(AnsiColors::Ansi16), "^\x1b[91mx\x1b[0m");
    let plain = Text::new(b"caf\xc3\xa9 ^1".to_vec(), Dialect::Plain);
    assert_eq!(plain.runs(), [Run::new(None, "caf\u{e9} ^1")]);
    assert!(Text::new(Vec::new(), Dialect::Plain).runs().is_empty());
    assert!(matches!(
        Text::new(b"no caret".to_vec(), Dialect::Daemon).display_cow(),
        Cow::Borrowed("no caret")
    ));
    assert!(matches!(
        Text::new(b"^1x".to_vec(), Dialect::Daemon).display_cow(),
        Cow::Owned(_)
    ));
}
