//! Display-time text helpers: colour codes per engine, and the Quake character set.
//!
//! Names stay raw bytes everywhere else; these functions are for showing them. Colour codes
//! differ by engine: each [`Dialect`] is one engine's rule (docs/protocols/colours.md: the
//! rules, their tables and the engine source line of each). A dialect's [`Tokens`] — text,
//! colour codes, icons — are what every form is built from: [`Dialect::strip`],
//! [`Dialect::display`], [`Dialect::runs`] (HTML, images), [`Dialect::ansi`],
//! [`Dialect::html`].
//!
//! The free functions here ([`strip_colors`], [`display`], [`runs`], [`to_ansi`]…) use
//! [`Dialect::Quake`], fragstat's generic rule for engines it does not know more precisely:
//! the widest set — `^^` is a literal caret (as qstat shows it), `^x` + three hex digits is
//! a DarkPlaces colour, `^` + any other byte is a colour code, and a lone `^` at the end is
//! kept.
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

mod render;
#[cfg(test)]
mod tests;
mod tokens;

pub use render::{runs_html, AnsiColors, Run};
pub use tokens::{Color, Token, Tokens};

use crate::model::Dialect;

/// Removes colour codes ([`Dialect::Quake`]), keeping every other byte.
///
/// ```
/// assert_eq!(fragstat_core::text::strip_colors(b"^1Red^7 ^^ ^x0BFblue"), b"Red ^ blue");
/// ```
pub fn strip_colors(s: &[u8]) -> Vec<u8> {
    Dialect::Quake.strip(s)
}

/// [`strip_colors`], appended to `out`.
///
/// ```
/// let mut out = b"name: ".to_vec();
/// fragstat_core::text::strip_colors_into(b"^1Red^7", &mut out);
/// assert_eq!(out, b"name: Red");
/// ```
pub fn strip_colors_into(s: &[u8], out: &mut Vec<u8>) {
    Dialect::Quake.strip_into(s, out)
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

/// Strips colours ([`Dialect::Quake`]) and decodes for display (see [`strip_colors`],
/// [`decode_lossless`]).
pub fn display(s: &[u8]) -> String {
    Dialect::Quake.display(s)
}

/// [`display`] without copying when there is nothing to strip and the bytes are UTF-8.
pub fn display_cow(s: &[u8]) -> std::borrow::Cow<'_, str> {
    Dialect::Quake.display_cow(s)
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

/// Renders colour codes ([`Dialect::Quake`]) as ANSI terminal colours: the 8 basic ones
/// for `^0`…`^7`, 24-bit for `^xRGB` ([`Dialect::ansi`] with [`AnsiColors::Auto`]), ending
/// with a reset. Text is decoded with [`decode_lossless`].
pub fn to_ansi(s: &[u8]) -> String {
    Dialect::Quake.ansi(s, AnsiColors::Auto)
}

/// Splits a [`Dialect::Quake`] string into colour runs ([`Dialect::runs`]): `^0`…`^7`
/// (ioq3's `ColorIndex`, so `^8` is black again), `^xRGB`, `^^` a literal caret. Adjacent
/// runs of one colour are merged.
///
/// ```
/// use fragstat_core::text::{runs, Run};
/// let r = runs(b"^1Red^7 W");
/// assert_eq!(r[0], Run::new(Some([255, 0, 0]), "Red"));
/// assert_eq!(r[1].text, " W");
/// ```
pub fn runs(s: &[u8]) -> Vec<Run> {
    Dialect::Quake.runs(s)
}
