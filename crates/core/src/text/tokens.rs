//! The tokenizer: one rule per [`Dialect`], each the engine's own decision after a `^`
//! (docs/protocols/colours.md names the source line of each). Everything that shows text —
//! stripping, display, colour runs, ANSI, HTML — is built on these rules.

use crate::model::Dialect;

/// A colour that a code sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Color {
    /// Back to the default colour, whatever the caller draws with (W:ET, ET: Legacy and
    /// Dæmon `^*`, idTech 4 and Quake 4 `^0`, Quake 4 `^r`).
    Default,
    /// Entry `index` of the dialect's table ([`Dialect::palette`]), as 8-bit RGB.
    Indexed {
        /// The entry.
        index: u8,
        /// Its colour.
        rgb: [u8; 3],
    },
    /// A colour written as RGB in the text (DarkPlaces and Dæmon `^xRGB`, Dæmon
    /// `^#RRGGBB`, Quake 4 `^cRGB`), as 8-bit RGB.
    Rgb([u8; 3]),
    /// This colour at half alpha (DarkPlaces `^8`: white, "half transparent").
    HalfAlpha([u8; 3]),
    /// Quake 4 `^+` / `^-`: the current colour brighter (positive) or darker by this many
    /// tenths on each component, until the next colour code.
    Brightness(i8),
}

/// One piece of a string in a dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Token<'a> {
    /// Bytes that are drawn, as they are in the string (not decoded). A `^` that the
    /// dialect shows is here too: `^^` in DarkPlaces is a token of one `^`.
    Text(&'a [u8]),
    /// A colour code.
    Color(Color),
    /// An embedded icon, by its name: Quake 4 `^i` + three bytes, Call of Duty's IW
    /// material `^` 0x01 (best effort).
    Icon(&'a [u8]),
    /// A code that draws nothing and sets no colour (Quake 4 `^n` + one byte), its bytes.
    Control(&'a [u8]),
}

/// What a `^` starts, in one dialect: the decision each rule makes.
pub(super) enum Step<'a> {
    /// The caret is an ordinary byte, drawn; the next byte starts a new decision.
    Visible,
    /// One caret is drawn, written as this many bytes (`^^` in DarkPlaces).
    Caret(usize),
    /// A code of this many bytes.
    Code(usize, Token<'a>),
}

/// The decision of one dialect at a `^` (the slice starts with it).
pub(super) type Rule = for<'a> fn(&'a [u8]) -> Step<'a>;

/// The 8 colours of id's table (Q3 `code/game/q_math.c:43-53`).
const Q3: [[u8; 3]; 8] = [
    [0, 0, 0],
    [255, 0, 0],
    [0, 255, 0],
    [255, 255, 0],
    [0, 0, 255],
    [0, 255, 255],
    [255, 0, 255],
    [255, 255, 255],
];

/// W:ET's 32 colours (ET `src/game/q_math.c:68-102`; ET: Legacy, Smokin' Guns).
const WET: [[u8; 3]; 32] = [
    [0, 0, 0],
    [255, 0, 0],
    [0, 255, 0],
    [255, 255, 0],
    [0, 0, 255],
    [0, 255, 255],
    [255, 0, 255],
    [255, 255, 255],
    [255, 128, 0],
    [128, 128, 128],
    [191, 191, 191],
    [191, 191, 191],
    [0, 128, 0],
    [128, 128, 0],
    [0, 0, 128],
    [128, 0, 0],
    [128, 64, 0],
    [255, 153, 26],
    [0, 128, 128],
    [128, 0, 128],
    [0, 128, 255],
    [128, 0, 255],
    [51, 153, 204],
    [204, 255, 204],
    [0, 102, 51],
    [255, 0, 51],
    [179, 26, 26],
    [153, 51, 0],
    [204, 153, 51],
    [153, 153, 51],
    [255, 255, 191],
    [255, 255, 128],
];

/// Dæmon's table (`src/common/Color.cpp:37-71`): W:ET's, but "black" is dark grey.
const DAEMON: [[u8; 3]; 32] = {
    let mut t = WET;
    t[0] = [51, 51, 51];
    t
};

/// id's 8 and two more.
const fn ten(eight: [u8; 3], nine: [u8; 3]) -> [[u8; 3]; 10] {
    [
        Q3[0], Q3[1], Q3[2], Q3[3], Q3[4], Q3[5], Q3[6], Q3[7], eight, nine,
    ]
}

/// Urban Terror 4.x (`code/qcommon/q_math.c:50-62`): orange, olive.
const URT: [[u8; 3]; 10] = ten([224, 79, 33], [74, 77, 48]);
/// OpenJK (`shared/qcommon/q_color.c:19-30`) and qfusion (`q_math.cpp:162-174`): orange, grey.
const ORANGE_GREY: [[u8; 3]; 10] = ten([255, 128, 0], [128, 128, 128]);
/// DarkPlaces (`gl_draw.c:852-877`): `^8` white at half alpha, `^9` grey.
const DP: [[u8; 3]; 10] = ten([255, 255, 255], [128, 128, 128]);

/// idTech 4's 16 (dhewm3 `neo/idlib/Str.cpp:49-67`; Quake 4 with `^:` at 10): id's 8, grey,
/// black.
const fn sixteen(ten: [u8; 3]) -> [[u8; 3]; 16] {
    let k = [0; 3];
    [
        Q3[0],
        Q3[1],
        Q3[2],
        Q3[3],
        Q3[4],
        Q3[5],
        Q3[6],
        Q3[7],
        [128, 128, 128],
        k,
        ten,
        k,
        k,
        k,
        k,
        k,
    ]
}

const IDTECH4: [[u8; 3]; 16] = sixteen([0, 0, 0]);
/// Quake 4 (`source/idlib/Str.cpp:22-43`): `^:` is the console colour.
const QUAKE4: [[u8; 3]; 16] = sixteen([240, 158, 13]);

impl Dialect {
    /// The dialect's colour table, index → 8-bit RGB (the engine's floats × 255, rounded);
    /// empty for [`Dialect::Plain`]. Where the engine draws an entry differently (idTech 4
    /// and Quake 4 `^0` is the default colour, DarkPlaces `^8` is half transparent) the
    /// tokens say so, not the table.
    pub fn palette(&self) -> &'static [[u8; 3]] {
        match self {
            Dialect::Plain => &[],
            Dialect::Quake
            | Dialect::IdTech3
            | Dialect::Ioq3
            | Dialect::JediKnight
            | Dialect::CallOfDuty => &Q3,
            Dialect::Wet | Dialect::Etl => &WET,
            Dialect::Daemon => &DAEMON,
            Dialect::UrbanTerror => &URT,
            Dialect::OpenJk | Dialect::Qfusion => &ORANGE_GREY,
            Dialect::DarkPlaces => &DP,
            Dialect::Idtech4 => &IDTECH4,
            Dialect::Quake4 => &QUAKE4,
        }
    }

    /// The pieces of `s` in this dialect, one at a time, without allocating.
    ///
    /// ```
    /// use fragstat_core::model::Dialect;
    /// use fragstat_core::text::{Color, Token};
    /// let t: Vec<Token> = Dialect::Daemon.tokens(b"^#ff8000Or^^").collect();
    /// assert_eq!(t, [Token::Color(Color::Rgb([255, 128, 0])), Token::Text(b"Or^")]);
    /// ```
    pub fn tokens<'a>(&self, s: &'a [u8]) -> Tokens<'a> {
        Tokens {
            rest: s,
            rule: rule(*self),
            pending: None,
        }
    }
}

/// The rule of a dialect.
pub(super) fn rule(d: Dialect) -> Rule {
    match d {
        Dialect::Quake => quake,
        Dialect::Plain => plain,
        Dialect::IdTech3 => idq3,
        Dialect::Wet => wet,
        Dialect::Etl => etl,
        Dialect::Ioq3 => ioq3,
        Dialect::UrbanTerror => urt,
        Dialect::JediKnight => jk,
        Dialect::OpenJk => openjk,
        Dialect::DarkPlaces => dp,
        Dialect::Daemon => daemon,
        Dialect::Idtech4 => idtech4,
        Dialect::Quake4 => quake4,
        Dialect::Qfusion => qfusion,
        Dialect::CallOfDuty => cod,
    }
}

/// The tokens of a string ([`Dialect::tokens`]).
#[derive(Debug, Clone)]
pub struct Tokens<'a> {
    rest: &'a [u8],
    rule: Rule,
    /// The code found after a run of text, for the next call.
    pending: Option<Token<'a>>,
}

impl<'a> Iterator for Tokens<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        if let Some(t) = self.pending.take() {
            return Some(t);
        }
        let rest = self.rest;
        let mut from = 0;
        loop {
            let caret = rest
                .get(from..)
                .and_then(|t| t.iter().position(|&b| b == b'^'));
            let Some(at) = caret.map(|p| p + from) else {
                self.rest = &[];
                return (!rest.is_empty()).then_some(Token::Text(rest));
            };
            let here = rest.get(at..).unwrap_or_default();
            match (self.rule)(here) {
                Step::Visible => from = at + 1,
                Step::Caret(n) => {
                    self.rest = here.get(n..).unwrap_or_default();
                    return Some(Token::Text(rest.get(..=at).unwrap_or_default()));
                }
                Step::Code(n, t) => {
                    self.rest = here.get(n..).unwrap_or_default();
                    if at == 0 {
                        return Some(t);
                    }
                    self.pending = Some(t);
                    return Some(Token::Text(rest.get(..at).unwrap_or_default()));
                }
            }
        }
    }
}

/// Keeps the bytes `rule` draws, into `dst` (at least `s.len()` long); how many were kept.
/// The same decisions as [`Tokens`], byte by byte: names are short, and a search for the
/// next caret plus a copy per run costs more (docs/benchmarks.md).
#[inline(always)]
pub(super) fn strip_by<'a>(
    s: &'a [u8],
    dst: &mut [u8],
    rule: impl Fn(&'a [u8]) -> Step<'a>,
) -> usize {
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
        let n = match rule(s.get(i..).unwrap_or_default()) {
            Step::Visible => 1,
            Step::Caret(n) => n,
            Step::Code(n, _) => {
                i += n;
                continue;
            }
        };
        if let Some(d) = dst.get_mut(kept) {
            *d = b'^';
        }
        kept += 1;
        i += n;
    }
    kept
}

/// [`strip_by`] with the dialect's rule, each dialect's loop compiled on its own.
#[inline]
pub(super) fn strip_to(d: Dialect, s: &[u8], dst: &mut [u8]) -> usize {
    match d {
        Dialect::Quake => strip_by(s, dst, quake),
        Dialect::Plain => strip_by(s, dst, plain),
        Dialect::IdTech3 => strip_by(s, dst, idq3),
        Dialect::Wet => strip_by(s, dst, wet),
        Dialect::Etl => strip_by(s, dst, etl),
        Dialect::Ioq3 => strip_by(s, dst, ioq3),
        Dialect::UrbanTerror => strip_by(s, dst, urt),
        Dialect::JediKnight => strip_by(s, dst, jk),
        Dialect::OpenJk => strip_by(s, dst, openjk),
        Dialect::DarkPlaces => strip_by(s, dst, dp),
        Dialect::Daemon => strip_by(s, dst, daemon),
        Dialect::Idtech4 => strip_by(s, dst, idtech4),
        Dialect::Quake4 => strip_by(s, dst, quake4),
        Dialect::Qfusion => strip_by(s, dst, qfusion),
        Dialect::CallOfDuty => strip_by(s, dst, cod),
    }
}

#[inline(always)]
fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Three hex digits as 8-bit RGB (each digit / 15, DP `gl_draw.c:885-891`).
#[inline(always)]
fn rgb12(r: u8, g: u8, b: u8) -> Option<[u8; 3]> {
    Some([hex(r)? * 17, hex(g)? * 17, hex(b)? * 17])
}

/// Entry `i` of `table` (every caller masks `i` into range).
#[inline(always)]
fn indexed(table: &[[u8; 3]], i: u8) -> Token<'static> {
    Token::Color(Color::Indexed {
        index: i,
        rgb: table.get(usize::from(i)).copied().unwrap_or([255; 3]),
    })
}

/// A code of two bytes.
#[inline(always)]
fn code2<'a>(t: Token<'a>) -> Step<'a> {
    Step::Code(2, t)
}

#[inline(always)]
fn plain(_: &[u8]) -> Step<'_> {
    Step::Visible
}

/// fragstat's generic rule (the widest): `^^` a caret, `^x` + 3 hex RGB, `^` + any other
/// byte id's `(c - '0') & 7`, a `^` at the end kept.
#[inline(always)]
fn quake(s: &[u8]) -> Step<'_> {
    match s {
        [_, b'^', ..] => Step::Caret(2),
        [_, b'x', r, g, b, ..] if rgb12(*r, *g, *b).is_some() => Step::Code(
            5,
            Token::Color(Color::Rgb(rgb12(*r, *g, *b).unwrap_or_default())),
        ),
        [_, c, ..] => code2(indexed(&Q3, c.wrapping_sub(b'0') & 7)),
        _ => Step::Visible,
    }
}

/// Q3 `code/game/q_shared.h:532-533` `Q_IsColorString`, `ColorIndex` line 543.
#[inline(always)]
fn idq3(s: &[u8]) -> Step<'_> {
    match s {
        [_, c, ..] if *c != 0 && *c != b'^' => code2(indexed(&Q3, c.wrapping_sub(b'0') & 7)),
        _ => Step::Visible,
    }
}

/// ET `src/game/q_shared.h:521-522` (the macro), 546-547 (`& 31`), 543 (`^*`, `COLOR_NULL`,
/// drawn as the default colour: `src/client/cl_scrn.c:233-243`).
#[inline(always)]
fn wet(s: &[u8]) -> Step<'_> {
    match s {
        [_, b'*', ..] => code2(Token::Color(Color::Default)),
        [_, c, ..] if *c != 0 && *c != b'^' => code2(indexed(&WET, c.wrapping_sub(b'0') & 31)),
        _ => Step::Visible,
    }
}

/// ETL `src/qcommon/q_shared.h:909-930`: ASCII codes must be `isgraph`, high bytes are codes.
#[inline(always)]
fn etl(s: &[u8]) -> Step<'_> {
    match s {
        [_, b'*', ..] => code2(Token::Color(Color::Default)),
        [_, c, ..] if *c >= 0x80 || (c.is_ascii_graphic() && *c != b'^') => {
            code2(indexed(&WET, c.wrapping_sub(b'0') & 31))
        }
        _ => Step::Visible,
    }
}

/// IOQ3 `code/qcommon/q_shared.c:26-46` (`^[0-9a-zA-Z]`), `ColorIndex` q_shared.h:412-413.
#[inline(always)]
fn ioq3(s: &[u8]) -> Step<'_> {
    match s {
        [_, c, ..] if c.is_ascii_alphanumeric() => code2(indexed(&Q3, c.wrapping_sub(b'0') & 7)),
        _ => Step::Visible,
    }
}

/// URT `code/qcommon/q_shared.h:352` (`^0-9`), `ColorIndex` line 364.
#[inline(always)]
fn urt(s: &[u8]) -> Step<'_> {
    match s {
        [_, c @ b'0'..=b'9', ..] => code2(indexed(&URT, c - b'0')),
        _ => Step::Visible,
    }
}

/// Jedi Academy retail `codemp/game/q_shared.h:1147` (`^0-7`), JK2 1.04 (JK2MV
/// `src/qcommon/q_shared.h:710`).
#[inline(always)]
fn jk(s: &[u8]) -> Step<'_> {
    match s {
        [_, c @ b'0'..=b'7', ..] => code2(indexed(&Q3, c - b'0')),
        _ => Step::Visible,
    }
}

/// OpenJK `shared/qcommon/q_color.h:16` (`^0-9`).
#[inline(always)]
fn openjk(s: &[u8]) -> Step<'_> {
    match s {
        [_, c @ b'0'..=b'9', ..] => code2(indexed(&ORANGE_GREY, c - b'0')),
        _ => Step::Visible,
    }
}

/// DP `common.c:1265-1349` `COM_StringDecolorize` / `gl_draw.c:1189-1219`.
#[inline(always)]
fn dp(s: &[u8]) -> Step<'_> {
    match s {
        [_, b'x', r, g, b, ..] if rgb12(*r, *g, *b).is_some() => Step::Code(
            5,
            Token::Color(Color::Rgb(rgb12(*r, *g, *b).unwrap_or_default())),
        ),
        [_, b'^', ..] => Step::Caret(2),
        [_, b'8', ..] => code2(Token::Color(Color::HalfAlpha([255; 3]))),
        [_, c @ b'0'..=b'9', ..] => code2(indexed(&DP, c - b'0')),
        _ => Step::Visible,
    }
}

/// DAE `src/common/Color.cpp:160-215` `Color::TokenIterator::NextToken`.
#[inline(always)]
fn daemon(s: &[u8]) -> Step<'_> {
    match s {
        [_, b'^', ..] => Step::Caret(2),
        [_, b'*', ..] => code2(Token::Color(Color::Default)),
        [_, c, ..] if (b'0'..=b'O').contains(&c.to_ascii_uppercase()) => {
            code2(indexed(&DAEMON, (c.to_ascii_uppercase() - b'0') % 32))
        }
        [_, b'x' | b'X', r, g, b, ..] if rgb12(*r, *g, *b).is_some() => Step::Code(
            5,
            Token::Color(Color::Rgb(rgb12(*r, *g, *b).unwrap_or_default())),
        ),
        [_, b'#', h @ ..] => match rgb24(h) {
            Some(c) => Step::Code(8, Token::Color(Color::Rgb(c))),
            None => Step::Visible,
        },
        _ => Step::Visible,
    }
}

/// Six hex digits at the start of `h` as RGB.
#[inline(always)]
fn rgb24(h: &[u8]) -> Option<[u8; 3]> {
    let byte = |i: usize| Some(hex(*h.get(i)?)? * 16 + hex(*h.get(i + 1)?)?);
    Some([byte(0)?, byte(2)?, byte(4)?])
}

/// dhewm3 `neo/idlib/Str.h:1015-1017` `idStr::IsColor`, `ColorIndex` 1066-1068; `^0`
/// (`C_COLOR_DEFAULT`) is drawn in the caller's colour (`neo/ui/DeviceContext.cpp`
/// `DrawText`).
#[inline(always)]
fn idtech4(s: &[u8]) -> Step<'_> {
    match s {
        [_, b'0', ..] => code2(Token::Color(Color::Default)),
        [_, c, ..] if *c != 0 && *c != b' ' => code2(indexed(&IDTECH4, c & 15)),
        _ => Step::Visible,
    }
}

/// Quake 4 `idStr::IsEscape` (Q4SDK `source/idlib/Str.cpp:1774-1834`) as the renderer
/// draws it (Q4DEC `ui/devicecontext.cpp` `idDeviceContext::DrawText`).
#[inline(always)]
fn quake4(s: &[u8]) -> Step<'_> {
    let nonzero = |b: &[u8]| b.iter().all(|&c| c != 0);
    match s {
        [_, b'^', ..] => Step::Visible,
        [_, b'0' | b'r' | b'R', ..] => code2(Token::Color(Color::Default)),
        [_, c @ (b'1'..=b'9' | b':'), ..] => code2(indexed(&QUAKE4, c & 15)),
        [_, b'+', ..] => code2(Token::Color(Color::Brightness(1))),
        [_, b'-', ..] => code2(Token::Color(Color::Brightness(-1))),
        [_, b'c' | b'C', r, g, b, ..] if nonzero(&[*r, *g, *b]) => Step::Code(
            5,
            Token::Color(Color::Rgb([ninths(*r), ninths(*g), ninths(*b)])),
        ),
        [_, b'n' | b'N', c, ..] if *c != 0 => {
            Step::Code(3, Token::Control(s.get(..3).unwrap_or_default()))
        }
        [_, b'i' | b'I', a, b, c, ..] if nonzero(&[*a, *b, *c]) => {
            Step::Code(5, Token::Icon(s.get(2..5).unwrap_or_default()))
        }
        _ => Step::Visible,
    }
}

/// A Quake 4 `^c` component: `(c - '0') / 9`, clamped to what a colour can be.
#[inline(always)]
fn ninths(c: u8) -> u8 {
    let d = u16::from(c.saturating_sub(b'0').min(9));
    u8::try_from((d * 510 + 9) / 18).unwrap_or(255)
}

/// qfusion `Q_GrabCharFromColorString` (`source/common/helpers/q_libc.cpp:113-150`).
#[inline(always)]
fn qfusion(s: &[u8]) -> Step<'_> {
    match s {
        [_, c @ b'0'..=b'9', ..] => code2(indexed(&ORANGE_GREY, c - b'0')),
        [_, b'^', ..] => Step::Caret(2),
        _ => Step::Visible,
    }
}

/// Call of Duty, best effort (docs/protocols/colours.md): `^0-9` with CoD4X's `& 7`
/// (`src/q_shared.h:161`); `^^` + digit, as names in captures write colours (`^^00East`:
/// a name filter that removes one `^0` leaves `^0`, so `^^` + two digits is the second);
/// the IW material escape `^` 0x01, two size bytes, a length, the name; `^:` and `^;`, which
/// IW4x names use as colours of their own (IW4x hostnames in the public captures start with
/// `^:`; drawn here as the default colour, unverified).
#[inline(always)]
fn cod(s: &[u8]) -> Step<'_> {
    match s {
        [_, c @ b'0'..=b'9', ..] => code2(indexed(&Q3, (c - b'0') & 7)),
        [_, b':' | b';', ..] => code2(Token::Color(Color::Default)),
        [_, b'^', b'0'..=b'9', c @ b'0'..=b'9', ..] => Step::Code(4, indexed(&Q3, (c - b'0') & 7)),
        [_, b'^', c @ b'0'..=b'9', ..] => Step::Code(3, indexed(&Q3, (c - b'0') & 7)),
        [_, 0x01, _, _, len, name @ ..] => match name.get(..usize::from(*len)) {
            Some(name) => Step::Code(5 + usize::from(*len), Token::Icon(name)),
            None => Step::Visible,
        },
        _ => Step::Visible,
    }
}
