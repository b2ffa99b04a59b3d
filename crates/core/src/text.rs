//! Display-time text helpers: colour codes and the Quake character set.
//!
//! Names stay raw bytes everywhere else; these functions are for showing them. Colour codes
//! differ by engine (protocol notes §1.3): ioq3 1.36 treats `^` + alphanumeric as a code,
//! older id code and W:ET any character but `^` (`^?`, `^*`, `^<`…), DarkPlaces adds `^xRGB`.
//! We strip the widest set: `^^` is a literal caret (as qstat shows it), `^x` + three hex
//! digits is a DarkPlaces colour, `^` + any other byte is a colour code, and a lone `^` at the
//! end is kept.

/// One piece of a coloured string.
enum Piece<'a> {
    Text(&'a [u8]),
    Caret,
    Code(u8),
    Rgb(u8, u8, u8),
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).and_then(|d| u8::try_from(d).ok())
}

/// The pieces of a coloured string, one at a time (no allocation).
struct Pieces<'a> {
    rest: &'a [u8],
}

fn pieces(s: &[u8]) -> Pieces<'_> {
    Pieces { rest: s }
}

impl<'a> Iterator for Pieces<'a> {
    type Item = Piece<'a>;

    fn next(&mut self) -> Option<Piece<'a>> {
        let rest = self.rest;
        if rest.is_empty() {
            return None;
        }
        let Some(i) = rest.iter().position(|&b| b == b'^') else {
            self.rest = &[];
            return Some(Piece::Text(rest));
        };
        let (text, tail) = rest.split_at(i);
        if !text.is_empty() {
            self.rest = tail;
            return Some(Piece::Text(text));
        }
        Some(match tail {
            [b'^', b'^', more @ ..] => {
                self.rest = more;
                Piece::Caret
            }
            [b'^', b'x', r, g, b, more @ ..]
                if hex(*r).is_some() && hex(*g).is_some() && hex(*b).is_some() =>
            {
                self.rest = more;
                Piece::Rgb(
                    hex(*r).unwrap_or(0),
                    hex(*g).unwrap_or(0),
                    hex(*b).unwrap_or(0),
                )
            }
            [b'^', c, more @ ..] => {
                self.rest = more;
                Piece::Code(*c)
            }
            _ => {
                self.rest = &[];
                Piece::Text(tail)
            }
        })
    }
}

/// Removes colour codes, keeping every other byte.
///
/// ```
/// assert_eq!(fragstat_core::text::strip_colors(b"^1Red^7 ^^ ^x0BFblue"), b"Red ^ blue");
/// ```
pub fn strip_colors(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    strip_colors_into(s, &mut out);
    out
}

/// [`strip_colors`], appended to `out`.
///
/// ```
/// let mut out = b"name: ".to_vec();
/// fragstat_core::text::strip_colors_into(b"^1Red^7", &mut out);
/// assert_eq!(out, b"name: Red");
/// ```
pub fn strip_colors_into(s: &[u8], out: &mut Vec<u8>) {
    // Stripping never adds bytes: room for all of them, written by index, then cut to what
    // was kept (a capacity check per byte pushed cost more than the stripping).
    let start = out.len();
    out.resize(start + s.len(), 0);
    let kept = strip_colors_to(s, out.get_mut(start..).unwrap_or_default());
    out.truncate(start + kept);
}

/// The rules of `Pieces` in one pass, byte by byte (names are short: a search for the next
/// caret and a copy per run cost more), into `dst` (at least `s.len()` long); how many bytes
/// were kept.
fn strip_colors_to(s: &[u8], dst: &mut [u8]) -> usize {
    let mut kept = 0;
    let mut i = 0;
    while let Some(&b) = s.get(i) {
        if b != b'^' {
            if let Some(d) = dst.get_mut(kept) {
                *d = b;
            }
            kept += 1;
            i += 1;
            continue;
        }
        let literal = match (s.get(i + 1), s.get(i + 2..i + 5)) {
            // A lone caret at the end stays.
            (None, _) => {
                i += 1;
                true
            }
            (Some(b'^'), _) => {
                i += 2;
                true
            }
            (Some(b'x'), Some(rgb)) if rgb.iter().all(|&c| hex(c).is_some()) => {
                i += 5;
                false
            }
            (Some(_), _) => {
                i += 2;
                false
            }
        };
        if literal {
            if let Some(d) = dst.get_mut(kept) {
                *d = b'^';
            }
            kept += 1;
        }
    }
    kept
}

/// Decodes bytes for display: UTF-8 when the bytes are valid UTF-8 (Xonotic, modern mods),
/// otherwise ISO-8859-1 (every byte one character), which never loses a byte.
pub fn decode_lossless(s: &[u8]) -> String {
    match std::str::from_utf8(s) {
        Ok(t) => t.to_string(),
        Err(_) => latin1(s),
    }
}

/// [`decode_lossless`] without copying when the bytes are valid UTF-8.
pub fn decode_cow(s: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(s) {
        Ok(t) => std::borrow::Cow::Borrowed(t),
        Err(_) => std::borrow::Cow::Owned(latin1(s)),
    }
}

/// Maps every byte to the code point of the same value (ISO-8859-1). Reversible: this is how
/// fragstat writes raw names (`name_raw`) into JSON.
pub fn latin1(s: &[u8]) -> String {
    // ASCII is the same in both: one copy.
    if let (true, Ok(t)) = (s.is_ascii(), std::str::from_utf8(s)) {
        return t.to_owned();
    }
    let high = s.iter().filter(|&&b| b >= 0x80).count();
    let mut out = String::with_capacity(s.len() + high);
    out.extend(s.iter().map(|&b| char::from(b)));
    out
}

/// The reverse of [`latin1`]; `None` if a character is above U+00FF.
pub fn from_latin1(s: &str) -> Option<Vec<u8>> {
    s.chars().map(|c| u8::try_from(u32::from(c)).ok()).collect()
}

/// [`latin1`] without copying when the bytes are ASCII.
pub fn latin1_cow(s: &[u8]) -> std::borrow::Cow<'_, str> {
    if s.is_ascii() {
        if let Ok(t) = std::str::from_utf8(s) {
            return std::borrow::Cow::Borrowed(t);
        }
    }
    std::borrow::Cow::Owned(latin1(s))
}

/// Strips colours and decodes for display (see [`strip_colors`], [`decode_lossless`]).
pub fn display(s: &[u8]) -> String {
    display_cow(s).into_owned()
}

/// [`display`] without copying when there is nothing to strip and the bytes are UTF-8.
pub fn display_cow(s: &[u8]) -> std::borrow::Cow<'_, str> {
    if !s.contains(&b'^') {
        return decode_cow(s);
    }
    std::borrow::Cow::Owned(match String::from_utf8(strip_colors(s)) {
        Ok(t) => t,
        Err(e) => latin1(e.as_bytes()),
    })
}

/// Maps one byte of the Quake console font to a printable character.
///
/// Quake fonts repeat the low half in the high half (`0x80 | c` draws `c` in another colour),
/// and the low control range holds brackets, digits and dots. Other control bytes become `_`.
pub fn quake_char(b: u8) -> char {
    let c = b & 0x7F;
    match c {
        0x10 => '[',
        0x11 => ']',
        0x12..=0x1B => char::from(b'0' + (c - 0x12)),
        0x1C => '.',
        0x05 | 0x0E | 0x0F => '.',
        0x1D => '<',
        0x1E => '-',
        0x1F => '>',
        0x20..=0x7E => char::from(c),
        _ => '_',
    }
}

/// Strips colours and maps every byte through the Quake font ([`quake_char`]): plain ASCII for
/// names that use the high-bit "gold" characters.
pub fn display_quake_charset(s: &[u8]) -> String {
    strip_colors(s).into_iter().map(quake_char).collect()
}

/// Renders colour codes as ANSI terminal colours (24-bit for `^xRGB`), ending with a reset.
/// Text is decoded with [`decode_lossless`].
pub fn to_ansi(s: &[u8]) -> String {
    // Quake colour index = (code - '0') & 7 (ioq3 ColorIndex): black red green yellow blue cyan magenta white.
    const ANSI: [u8; 8] = [30, 31, 32, 33, 34, 36, 35, 37];
    let mut out = String::new();
    for p in pieces(s) {
        match p {
            Piece::Text(t) => out.push_str(&decode_lossless(t)),
            Piece::Caret => out.push('^'),
            Piece::Code(c) => {
                let idx = usize::from(c.wrapping_sub(b'0') & 7);
                let code = ANSI.get(idx).copied().unwrap_or(37);
                out.push_str(&format!("\x1b[{code}m"));
            }
            Piece::Rgb(r, g, b) => {
                out.push_str(&format!("\x1b[38;2;{};{};{}m", r * 17, g * 17, b * 17));
            }
        }
    }
    out.push_str("\x1b[0m");
    out
}

/// One run of text in one colour, for rendering coloured names (HTML, images).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// The colour as 8-bit RGB, `None` before the first colour code (the default colour).
    pub color: Option<[u8; 3]>,
    /// The text, decoded with [`decode_lossless`] (not escaped for any markup).
    pub text: String,
}

/// Splits a Quake-dialect string into colour runs: `^0`…`^7` (ioq3's `ColorIndex`, so `^8`
/// is black again), `^xRGB`, `^^` a literal caret. Adjacent runs of one colour are merged.
///
/// ```
/// use fragstat_core::text::{runs, Run};
/// let r = runs(b"^1Red^7 W");
/// assert_eq!(r[0], Run { color: Some([255, 0, 0]), text: "Red".into() });
/// assert_eq!(r[1].text, " W");
/// ```
pub fn runs(s: &[u8]) -> Vec<Run> {
    const RGB: [[u8; 3]; 8] = [
        [0, 0, 0],
        [255, 0, 0],
        [0, 255, 0],
        [255, 255, 0],
        [0, 0, 255],
        [0, 255, 255],
        [255, 0, 255],
        [255, 255, 255],
    ];
    let mut out: Vec<Run> = Vec::new();
    let mut color = None;
    let mut pending: Vec<u8> = Vec::new();
    let flush = |out: &mut Vec<Run>, pending: &mut Vec<u8>, color: Option<[u8; 3]>| {
        if pending.is_empty() {
            return;
        }
        let text = decode_lossless(pending);
        pending.clear();
        match out.last_mut() {
            Some(last) if last.color == color => last.text.push_str(&text),
            _ => out.push(Run { color, text }),
        }
    };
    for p in pieces(s) {
        match p {
            Piece::Text(t) => pending.extend_from_slice(t),
            Piece::Caret => pending.push(b'^'),
            Piece::Code(c) => {
                flush(&mut out, &mut pending, color);
                color = RGB.get(usize::from(c.wrapping_sub(b'0') & 7)).copied();
            }
            Piece::Rgb(r, g, b) => {
                flush(&mut out, &mut pending, color);
                color = Some([r * 17, g * 17, b * 17]);
            }
        }
    }
    flush(&mut out, &mut pending, color);
    out
}

#[cfg(test)]
mod tests {
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

    /// `strip_colors` (one loop) keeps exactly the bytes the `Pieces` reading keeps, for every
    /// string of up to 6 bytes over the characters that matter (carets, `x`, hex and non-hex
    /// digits, a high byte, a space).
    #[test]
    fn strip_colors_agrees_with_the_pieces_reading() {
        fn reference(s: &[u8]) -> Vec<u8> {
            let mut out = Vec::new();
            for p in pieces(s) {
                match p {
                    Piece::Text(t) => out.extend_from_slice(t),
                    Piece::Caret => out.push(b'^'),
                    Piece::Code(_) | Piece::Rgb(..) => {}
                }
            }
            out
        }
        let alphabet = [b'^', b'x', b'0', b'F', b'g', 0xE9, b' '];
        let mut checked = 0;
        let mut s = Vec::new();
        for len in 0..=6u32 {
            for mut n in 0..alphabet.len().pow(len) {
                s.clear();
                for _ in 0..len {
                    s.push(alphabet[n % alphabet.len()]);
                    n /= alphabet.len();
                }
                assert_eq!(strip_colors(&s), reference(&s), "{s:?}");
                checked += 1;
            }
        }
        assert_eq!(checked, 137_257);
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
            vec![
                Run {
                    color: None,
                    text: "a".into()
                },
                Run {
                    color: Some([255, 0, 0]),
                    text: "bc^d^".into()
                },
            ]
        );
        assert!(runs(b"").is_empty());
        assert_eq!(runs(b"^9x")[0].color, Some([255, 0, 0]));
    }
}
