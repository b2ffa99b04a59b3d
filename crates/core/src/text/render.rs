//! Everything that shows a string in a dialect, built on its [`Tokens`](super::Tokens):
//! stripped bytes, display text, colour runs, ANSI and HTML.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::tokens::{strip_to, Color, Token};
use super::{decode_cow, decode_lossless, latin1};
use crate::model::Dialect;

/// One run of text in one colour, for rendering coloured names (HTML, images).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Run {
    /// The colour as 8-bit RGB; `None` is the default colour (before any code, or after a
    /// code that resets to it).
    pub color: Option<[u8; 3]>,
    /// The text, decoded with [`decode_lossless`] (not escaped for any markup).
    pub text: String,
    /// Drawn at half alpha (DarkPlaces `^8`).
    pub half_alpha: bool,
    /// An embedded icon in place of text (Quake 4 `^i`, Call of Duty's IW materials): its
    /// name, decoded with [`decode_lossless`]; `text` is empty then.
    pub icon: Option<String>,
}

impl Run {
    /// A run of text in a colour, opaque, not an icon.
    pub fn new(color: Option<[u8; 3]>, text: impl Into<String>) -> Self {
        Run {
            color,
            text: text.into(),
            half_alpha: false,
            icon: None,
        }
    }
}

/// Which colours ANSI output uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum AnsiColors {
    /// The 8 basic colours (`30`-`37`) for a dialect whose table has exactly id's 8 colours,
    /// 24-bit (`38;2;R;G;B`) for RGB codes and for every code of a dialect with a bigger
    /// table.
    #[default]
    Auto,
    /// The nearest of the 16 basic colours (`30`-`37`, `90`-`97`, xterm's defaults), for
    /// terminals without 24-bit colour.
    Ansi16,
}

/// The colour state of a renderer: what a run is drawn in.
#[derive(Clone, Copy, Default, PartialEq)]
struct Pen {
    /// The last colour set (`None`: the default).
    base: Option<[u8; 3]>,
    /// Quake 4 brightness steps since it, in tenths.
    adjust: i8,
    half_alpha: bool,
}

impl Pen {
    /// Takes a colour code.
    fn set(&mut self, c: Color) {
        match c {
            Color::Default => *self = Pen::default(),
            Color::Indexed { rgb, .. } | Color::Rgb(rgb) => {
                *self = Pen {
                    base: Some(rgb),
                    ..Pen::default()
                }
            }
            Color::HalfAlpha(rgb) => {
                *self = Pen {
                    base: Some(rgb),
                    adjust: 0,
                    half_alpha: true,
                }
            }
            Color::Brightness(d) => self.adjust = self.adjust.saturating_add(d),
        }
    }

    /// The colour drawn: the base with the brightness steps added (Q4DEC
    /// `devicecontext.cpp`: `drawTextColor + drawTextColorAdjust` per component), clamped.
    /// Steps on the default colour are not known here and are not shown.
    fn color(&self) -> Option<[u8; 3]> {
        let step = f32::from(self.adjust) * 25.5;
        self.base
            .map(|c| c.map(|v| (f32::from(v) + step).clamp(0.0, 255.0).round() as u8))
    }
}

impl Dialect {
    /// The bytes of `s` that the dialect's engine draws: colour codes removed, nothing else
    /// changed (every byte kept is one of `s`, in order).
    ///
    /// ```
    /// use fragstat_core::model::Dialect;
    /// assert_eq!(Dialect::IdTech3.strip(b"^^1x^*"), b"^x");
    /// assert_eq!(Dialect::DarkPlaces.strip(b"^^1x^*"), b"^1x^*");
    /// ```
    #[inline]
    pub fn strip(&self, s: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(s.len());
        self.strip_into(s, &mut out);
        out
    }

    /// [`Dialect::strip`], appended to `out`.
    #[inline]
    pub fn strip_into(&self, s: &[u8], out: &mut Vec<u8>) {
        // Stripping never adds bytes: room for all of them, written by index, then cut to
        // what was kept (a capacity check per byte pushed cost more than the stripping).
        let start = out.len();
        out.resize(start + s.len(), 0);
        let kept = strip_to(*self, s, out.get_mut(start..).unwrap_or_default());
        out.truncate(start + kept);
    }

    /// [`Dialect::display_cow`] of ASCII text, stripped into `buf` (no allocation): `None`
    /// when `s` is not ASCII or longer than `buf`.
    #[inline]
    pub(crate) fn display_ascii_in<'b>(&self, s: &[u8], buf: &'b mut [u8]) -> Option<&'b str> {
        if !s.is_ascii() {
            return None;
        }
        let dst = buf.get_mut(..s.len())?;
        let kept = strip_to(*self, s, dst);
        // ASCII in, ASCII out: stripping only removes bytes.
        std::str::from_utf8(dst.get(..kept)?).ok()
    }

    /// For display: [`Dialect::strip`], then UTF-8 when valid, else ISO-8859-1 (lossless).
    pub fn display(&self, s: &[u8]) -> String {
        self.display_cow(s).into_owned()
    }

    /// [`Dialect::display`] without copying when there is no `^` and the bytes are UTF-8.
    #[inline]
    pub fn display_cow<'a>(&self, s: &'a [u8]) -> Cow<'a, str> {
        if *self == Dialect::Plain || !s.contains(&b'^') {
            return decode_cow(s);
        }
        Cow::Owned(match String::from_utf8(self.strip(s)) {
            Ok(t) => t,
            Err(e) => latin1(e.as_bytes()),
        })
    }

    /// The colour runs of `s`: each colour code starts a run in its colour (through the
    /// dialect's table), adjacent runs of one colour are merged, an icon is a run of its
    /// own.
    ///
    /// ```
    /// use fragstat_core::model::Dialect;
    /// use fragstat_core::text::Run;
    /// let r = Dialect::Wet.runs(b"^xhi^*there");
    /// assert_eq!(r, [Run::new(Some([255, 128, 0]), "hi"), Run::new(None, "there")]);
    /// ```
    pub fn runs(&self, s: &[u8]) -> Vec<Run> {
        let mut out: Vec<Run> = Vec::new();
        let mut pen = Pen::default();
        let mut pending: Vec<u8> = Vec::new();
        let flush = |out: &mut Vec<Run>, pending: &mut Vec<u8>, pen: Pen| {
            if pending.is_empty() {
                return;
            }
            let text = decode_lossless(pending);
            pending.clear();
            let color = pen.color();
            match out.last_mut() {
                Some(last)
                    if last.icon.is_none()
                        && last.color == color
                        && last.half_alpha == pen.half_alpha =>
                {
                    last.text.push_str(&text)
                }
                _ => out.push(Run {
                    color,
                    text,
                    half_alpha: pen.half_alpha,
                    icon: None,
                }),
            }
        };
        for t in self.tokens(s) {
            match t {
                Token::Text(t) => pending.extend_from_slice(t),
                Token::Color(c) => {
                    flush(&mut out, &mut pending, pen);
                    pen.set(c);
                }
                Token::Icon(name) => {
                    flush(&mut out, &mut pending, pen);
                    out.push(Run {
                        color: pen.color(),
                        text: String::new(),
                        half_alpha: pen.half_alpha,
                        icon: Some(decode_lossless(name)),
                    });
                }
                Token::Control(_) => {}
            }
        }
        flush(&mut out, &mut pending, pen);
        out
    }

    /// `s` for a terminal: colour codes as ANSI colours (`39`, the terminal's default, for
    /// the default colour), text decoded with [`decode_cow`], icons left out, ending with a
    /// reset (`\x1b[0m`).
    ///
    /// ```
    /// use fragstat_core::model::Dialect;
    /// use fragstat_core::text::AnsiColors;
    /// assert_eq!(Dialect::Ioq3.ansi(b"^1R", AnsiColors::Auto), "\x1b[31mR\x1b[0m");
    /// assert_eq!(Dialect::Wet.ansi(b"^8O", AnsiColors::Auto), "\x1b[38;2;255;128;0mO\x1b[0m");
    /// assert_eq!(Dialect::Wet.ansi(b"^8O", AnsiColors::Ansi16), "\x1b[33mO\x1b[0m");
    /// ```
    pub fn ansi(&self, s: &[u8], colors: AnsiColors) -> String {
        // id's colour index → the ANSI colour of that name (5 is cyan, 6 magenta in id's).
        const BASIC: [u8; 8] = [30, 31, 32, 33, 34, 36, 35, 37];
        let basic = self.palette().len() == 8;
        let mut out = String::with_capacity(s.len() + 16);
        let mut pen = Pen::default();
        for t in self.tokens(s) {
            let c = match t {
                Token::Text(t) => {
                    out.push_str(&decode_cow(t));
                    continue;
                }
                Token::Color(c) => c,
                Token::Icon(_) | Token::Control(_) => continue,
            };
            pen.set(c);
            match (c, colors) {
                (Color::Indexed { index, .. }, AnsiColors::Auto) if basic => {
                    let code = BASIC.get(usize::from(index)).copied().unwrap_or(37);
                    let _ = write!(out, "\x1b[{code}m");
                }
                _ => match pen.color() {
                    None => out.push_str("\x1b[39m"),
                    Some(rgb) => write_ansi(&mut out, rgb, colors),
                },
            }
        }
        out.push_str("\x1b[0m");
        out
    }

    /// `s` as HTML: its [`Dialect::runs`] through [`runs_html`].
    ///
    /// ```
    /// use fragstat_core::model::Dialect;
    /// assert_eq!(
    ///     Dialect::DarkPlaces.html(b"<^1b^8>"),
    ///     "<span>&lt;</span><span style=\"color:#ff0000\">b</span>\
    ///      <span style=\"color:#ffffff;opacity:.5\">&gt;</span>"
    /// );
    /// ```
    pub fn html(&self, s: &[u8]) -> String {
        runs_html(&self.runs(s))
    }
}

/// One colour for a terminal.
fn write_ansi(out: &mut String, [r, g, b]: [u8; 3], colors: AnsiColors) {
    match colors {
        AnsiColors::Auto => {
            let _ = write!(out, "\x1b[38;2;{r};{g};{b}m");
        }
        AnsiColors::Ansi16 => {
            let _ = write!(out, "\x1b[{}m", nearest16([r, g, b]));
        }
    }
}

/// The SGR code of the nearest of the 16 basic colours (xterm's default palette).
pub(super) fn nearest16(rgb: [u8; 3]) -> u8 {
    const XTERM: [([u8; 3], u8); 16] = [
        ([0, 0, 0], 30),
        ([205, 0, 0], 31),
        ([0, 205, 0], 32),
        ([205, 205, 0], 33),
        ([0, 0, 238], 34),
        ([205, 0, 205], 35),
        ([0, 205, 205], 36),
        ([229, 229, 229], 37),
        ([127, 127, 127], 90),
        ([255, 0, 0], 91),
        ([0, 255, 0], 92),
        ([255, 255, 0], 93),
        ([92, 92, 255], 94),
        ([255, 0, 255], 95),
        ([0, 255, 255], 96),
        ([255, 255, 255], 97),
    ];
    let dist = |p: [u8; 3]| -> u32 {
        p.iter()
            .zip(rgb)
            .map(|(&a, b)| u32::from(a.abs_diff(b)).pow(2))
            .sum()
    };
    XTERM
        .iter()
        .min_by_key(|(p, _)| dist(*p))
        .map_or(37, |&(_, code)| code)
}

/// Colour runs as HTML: each run a `<span>`, its text escaped (`&`, `<`, `>`, `"`: attributes
/// are double-quoted, so `'` stays as it is, as maud writes it),
/// `style="color:#rrggbb"` when it has a colour, `opacity:.5` at half alpha; an icon is an
/// empty `<span class="icon" title="NAME">`.
pub fn runs_html(runs: &[Run]) -> String {
    let mut out = String::new();
    for r in runs {
        out.push_str("<span");
        if let Some(name) = &r.icon {
            out.push_str(" class=\"icon\" title=\"");
            escape_html(&mut out, name);
            out.push('"');
        }
        let color = r
            .color
            .map(|[r, g, b]| format!("color:#{r:02x}{g:02x}{b:02x}"));
        let style: Vec<&str> = color
            .as_deref()
            .into_iter()
            .chain(r.half_alpha.then_some("opacity:.5"))
            .collect();
        if !style.is_empty() {
            let _ = write!(out, " style=\"{}\"", style.join(";"));
        }
        out.push('>');
        escape_html(&mut out, &r.text);
        out.push_str("</span>");
    }
    out
}

/// `s` escaped for HTML text and double-quoted attribute values.
fn escape_html(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
}
