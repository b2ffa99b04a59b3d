//! A server's banner: an SVG drawn here (maud, so every text is escaped), and the same
//! rendered to PNG by resvg with a bundled font (DejaVu Sans, `assets/fonts/`), never the
//! system's: the PNG is the same on every machine.
//!
//! Sizes: [`SIZES`]. A name is shown with its colours (made readable on the banner's dark
//! background, [`super::colour::readable`]) or, with `colors=0`, in plain white; in either
//! case as text, never markup, cut to [`MAX_CHARS`] characters and clipped to its box.

use std::sync::{Arc, LazyLock};

use fragstat::core::model::Text;
use maud::{html, Markup};

use super::colour::{hex, readable, BACKGROUND};

/// The banner sizes served, `WIDTHxHEIGHT`: a full banner, a forum signature bar, a
/// leaderboard.
pub const SIZES: [(u32, u32); 3] = [(468, 60), (350, 20), (728, 90)];

/// Characters of a name (and of any other text) a banner shows at most.
pub const MAX_CHARS: usize = 64;

/// The bundled font's bytes: DejaVu Sans 2.37 (Bitstream Vera licence,
/// `assets/fonts/LICENSE-DejaVu.txt`).
const FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// The family the SVG asks for: the bundled font first (the PNG), then look-alikes a
/// browser showing the SVG may have.
const FAMILY: &str = "DejaVu Sans, Verdana, Bitstream Vera Sans, sans-serif";

/// What a banner shows of a server.
#[derive(Debug, Clone)]
pub struct Facts {
    /// The name, or `None` for a server that never said one (the address is shown).
    pub name: Option<Text>,
    /// `ip:port`.
    pub addr: String,
    /// Whether it answered in the last round.
    pub online: bool,
    /// "3 (+2 bots)/16", or "down".
    pub players: String,
    /// The map, where known.
    pub map: Option<String>,
    /// The game's title.
    pub game: String,
    /// The site's title.
    pub site: String,
}

/// `s` as XML character data may hold it: without the control characters XML 1.0 forbids
/// even escaped (a name's bytes may be anything), cut to `MAX_CHARS` characters with "…".
pub fn xml_text(s: &str) -> String {
    let allowed = |c: &char| {
        matches!(*c, '\t' | '\n' | '\r') || (*c >= ' ' && !matches!(*c, '\u{fffe}' | '\u{ffff}'))
    };
    let mut out: String = s.chars().filter(allowed).take(MAX_CHARS).collect();
    if s.chars().filter(allowed).nth(MAX_CHARS).is_some() {
        out.push('…');
    }
    out
}

/// The name as `tspan`s, coloured or white.
fn name_spans(f: &Facts, colours: bool) -> Markup {
    let Some(name) = &f.name else {
        return html! { tspan { (xml_text(&f.addr)) } };
    };
    let mut left = MAX_CHARS;
    let mut runs = Vec::new();
    for r in name.runs() {
        if left == 0 {
            break;
        }
        let text: String = xml_text(&r.text).chars().take(left).collect();
        left = left.saturating_sub(text.chars().count());
        let fill = r
            .color
            .filter(|_| colours)
            .map(|c| hex(readable(c, BACKGROUND)));
        runs.push((text, fill, r.half_alpha && colours));
    }
    html! {
        @for (text, fill, half) in runs {
            tspan fill=[fill] fill-opacity=[half.then_some(".5")] { (text) }
        }
    }
}

/// The banner as SVG: `w`×`h`, one of [`SIZES`].
pub fn svg(f: &Facts, (w, h): (u32, u32), colours: bool) -> String {
    let dot = if f.online { "#4caf50" } else { "#d65a5a" };
    let detail = match &f.map {
        Some(m) => format!("{} · {} · {}", f.players, xml_text(m), xml_text(&f.game)),
        None => format!("{} · {}", f.players, xml_text(&f.game)),
    };
    let (wf, hf) = (f64::from(w), f64::from(h));
    let body = if h < 40 {
        // One line: dot, name, then the numbers at the right.
        let numbers = match &f.map {
            Some(m) => format!("{} · {}", f.players, xml_text(m)),
            None => f.players.clone(),
        };
        html! {
            clipPath #n { rect x="0" y="0" width=(wf * 0.58) height=(hf) {} }
            circle cx="9" cy=(hf / 2.0) r="4" fill=(dot) {}
            text x="18" y=(hf / 2.0 + 4.5) font-size="12" font-weight="bold" fill="#ffffff" clip-path="url(#n)" { (name_spans(f, colours)) }
            text x=(wf - 6.0) y=(hf / 2.0 + 4.0) font-size="11" fill="#d0d0d0" text-anchor="end" { (numbers) }
        }
    } else {
        let k = hf / 60.0;
        html! {
            clipPath #n { rect x="0" y="0" width=(wf - 8.0 * k) height=(hf) {} }
            circle cx=(13.0 * k) cy=(15.0 * k) r=(5.0 * k) fill=(dot) {}
            text x=(24.0 * k) y=(20.0 * k) font-size=(15.0 * k) font-weight="bold" fill="#ffffff" clip-path="url(#n)" { (name_spans(f, colours)) }
            text x=(10.0 * k) y=(38.0 * k) font-size=(12.0 * k) fill="#d0d0d0" clip-path="url(#n)" { (detail) }
            text x=(10.0 * k) y=(53.0 * k) font-size=(10.5 * k) fill="#9aa0a6" { (xml_text(&f.addr)) }
            text x=(wf - 8.0 * k) y=(53.0 * k) font-size=(10.5 * k) fill="#8cc8ff" text-anchor="end" { (xml_text(&f.site)) }
        }
    };
    let title = match &f.name {
        Some(n) => xml_text(&n.display()),
        None => xml_text(&f.addr),
    };
    html! {
        svg xmlns="http://www.w3.org/2000/svg" width=(w) height=(h) viewBox={ "0 0 " (w) " " (h) }
            font-family=(FAMILY) role="img" {
            title { (title) " — " (f.players) }
            rect x="0.5" y="0.5" width=(wf - 1.0) height=(hf - 1.0) rx="4" fill=(hex(BACKGROUND)) stroke="#5a5f6e" {}
            (body)
        }
    }
    .into_string()
}

/// The font database the PNGs are drawn with: the bundled font only.
static FONTS: LazyLock<Arc<resvg::usvg::fontdb::Database>> = LazyLock::new(|| {
    let mut db = resvg::usvg::fontdb::Database::new();
    db.load_font_data(FONT.to_vec());
    db.set_sans_serif_family("DejaVu Sans");
    Arc::new(db)
});

/// Why a banner could not be drawn (a fault of this code, not of the request).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RenderError {
    /// The SVG did not parse.
    #[error("the banner's SVG: {0}")]
    Svg(String),
    /// The size has no pixels, or the PNG could not be encoded.
    #[error("the banner's PNG: {0}")]
    Png(String),
}

/// `svg` drawn as a PNG of its own size.
pub fn png(svg: &str) -> Result<Vec<u8>, RenderError> {
    let options = resvg::usvg::Options {
        fontdb: Arc::clone(&FONTS),
        font_family: "DejaVu Sans".into(),
        ..resvg::usvg::Options::default()
    };
    let tree =
        resvg::usvg::Tree::from_str(svg, &options).map_err(|e| RenderError::Svg(e.to_string()))?;
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| RenderError::Png("no pixels".into()))?;
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    pixmap
        .encode_png()
        .map_err(|e| RenderError::Png(e.to_string()))
}

/// `468x60` as one of [`SIZES`].
pub fn parse_size(s: &str) -> Option<(u32, u32)> {
    let (w, h) = s.split_once('x')?;
    let size = (w.parse().ok()?, h.parse().ok()?);
    SIZES.contains(&size).then_some(size)
}

#[cfg(test)]
mod tests {
    use fragstat::core::model::Dialect;

    use super::*;

    fn facts(name: &[u8]) -> Facts {
        Facts {
            name: Some(Text::new(name.to_vec(), Dialect::Ioq3)),
            addr: "127.0.0.1:27960".into(),
            online: true,
            players: "3 (+2 bots)/16".into(),
            map: Some("q3dm17<".into()),
            game: "Quake III Arena".into(),
            site: "Servers & <co>".into(),
        }
    }

    /// Markup, entities, a CDATA end, quotes and control characters in a name are text in
    /// the SVG (escaped, or dropped where XML cannot hold them), which parses.
    #[test]
    fn hostile_names_are_text() {
        let name = b"^1<script>alert(1)</script>^7&amp;]]>\"'\x01\x1b[31m\xef\xbf\xbe";
        for size in SIZES {
            for colours in [true, false] {
                let svg = svg(&facts(name), size, colours);
                assert!(!svg.contains("<script"), "{svg}");
                assert!(
                    svg.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
                    "{svg}"
                );
                assert!(svg.contains("&amp;amp;"), "{svg}");
                assert!(!svg.contains("]]>") && !svg.contains('\u{1}'), "{svg}");
                assert!(
                    !svg.contains('\u{1b}') && !svg.contains('\u{fffe}'),
                    "{svg}"
                );
                let opt = resvg::usvg::Options::default();
                let tree = resvg::usvg::Tree::from_str(&svg, &opt).expect(&svg);
                let got = (tree.size().width(), tree.size().height());
                assert_eq!(got, (size.0 as f32, size.1 as f32));
            }
        }
    }

    #[test]
    fn long_names_are_cut() {
        let long = "x".repeat(500);
        let svg = svg(&facts(long.as_bytes()), SIZES[0], true);
        assert!(!svg.contains(&"x".repeat(MAX_CHARS + 1)), "{svg}");
        assert!(svg.contains('…'));
        assert_eq!(xml_text("a\u{0}b\tc"), "ab\tc");
    }

    #[test]
    fn pngs_have_their_size_and_their_text() {
        for size in SIZES {
            let png = png(&svg(&facts(b"^1Red ^2Green"), size, true)).unwrap();
            let p = resvg::tiny_skia::Pixmap::decode_png(&png).unwrap();
            assert_eq!((p.width(), p.height()), size);
            // The bundled font drew the red name.
            let red = p
                .pixels()
                .iter()
                .filter(|c| c.red() > 200 && c.green() < 120 && c.alpha() == 255)
                .count();
            assert!(red > 10, "{size:?}: {red}");
        }
        assert_eq!(parse_size("350x20"), Some((350, 20)));
        assert_eq!(parse_size("351x20"), None);
        assert_eq!(parse_size("x"), None);
    }
}
