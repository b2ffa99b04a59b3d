//! Name colours made readable on the pages' backgrounds: a colour whose WCAG 2 contrast
//! against the background is under 4.5:1 (the AA level for normal text) is lightened (on the
//! dark theme) or darkened (on the light one), its hue and saturation kept, until it reaches
//! it. `^4` blue (#0000ff, 2.2:1 on the dark page) and `^0` black (1.4:1) become a light blue
//! and a grey there; `^3` yellow (1.1:1 on the light page) a dark yellow there; colours that
//! already read stay as the game gives them. A name's runs carry both ([`themed_html`]); the
//! style sheet picks one by `prefers-color-scheme`.

use maud::{html, Markup};

/// The dark theme's background (`assets/style.css`, `--bg`): the default.
pub const BACKGROUND: [u8; 3] = [0x2b, 0x2e, 0x36];

/// The light theme's background (`assets/style.css`, `--bg` under
/// `prefers-color-scheme: light`).
pub const LIGHT_BACKGROUND: [u8; 3] = [0xfa, 0xfa, 0xfa];

/// The contrast the pages ask of a name's colour (WCAG 2 AA, normal text).
pub const MIN_CONTRAST: f64 = 4.5;

/// WCAG 2 relative luminance of an sRGB colour.
fn luminance([r, g, b]: [u8; 3]) -> f64 {
    let lin = |c: u8| {
        let c = f64::from(c) / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)
}

/// WCAG 2 contrast ratio of two colours (1 to 21).
pub fn contrast_ratio(a: [u8; 3], b: [u8; 3]) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    let (hi, lo) = if la > lb { (la, lb) } else { (lb, la) };
    (hi + 0.05) / (lo + 0.05)
}

fn to_hsl([r, g, b]: [u8; 3]) -> (f64, f64, f64) {
    let (r, g, b) = (
        f64::from(r) / 255.0,
        f64::from(g) / 255.0,
        f64::from(b) / 255.0,
    );
    let max = r.max(g).max(b);
    let min = r.min(g).min(b);
    let l = (max + min) / 2.0;
    let d = max - min;
    if d == 0.0 {
        return (0.0, 0.0, l);
    }
    let s = d / (1.0 - (2.0 * l - 1.0).abs());
    let h = if max == r {
        ((g - b) / d).rem_euclid(6.0)
    } else if max == g {
        (b - r) / d + 2.0
    } else {
        (r - g) / d + 4.0
    } * 60.0;
    (h, s, l)
}

fn from_hsl(h: f64, s: f64, l: f64) -> [u8; 3] {
    let c = (1.0 - (2.0 * l - 1.0).abs()) * s;
    let x = c * (1.0 - ((h / 60.0).rem_euclid(2.0) - 1.0).abs());
    let m = l - c / 2.0;
    let (r, g, b) = match h {
        h if h < 60.0 => (c, x, 0.0),
        h if h < 120.0 => (x, c, 0.0),
        h if h < 180.0 => (0.0, c, x),
        h if h < 240.0 => (0.0, x, c),
        h if h < 300.0 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let byte = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    [byte(r), byte(g), byte(b)]
}

/// `color` as shown on `background`: itself when its contrast is at least
/// 4.5:1 (WCAG AA), else the colour of the same hue and saturation nearest to it that
/// reaches it: lighter on a dark background (white at worst), darker on a light one (black
/// at worst).
pub fn readable(color: [u8; 3], background: [u8; 3]) -> [u8; 3] {
    if contrast_ratio(color, background) >= MIN_CONTRAST {
        return color;
    }
    let (h, s, l) = to_hsl(color);
    // A light background: a colour reads darker. (0.18: where white and black contrast
    // equally with it.)
    let darken = luminance(background) > 0.18;
    // A binary search between the colour's lightness (`far` does not read) and the end that
    // does (`near` reads), for the one nearest the colour's that reads.
    let (mut far, mut near) = if darken { (l, 0.0) } else { (l, 1.0) };
    for _ in 0..24 {
        let mid = (far + near) / 2.0;
        if contrast_ratio(from_hsl(h, s, mid), background) >= MIN_CONTRAST {
            near = mid;
        } else {
            far = mid;
        }
    }
    let out = from_hsl(h, s, near);
    match (contrast_ratio(out, background) >= MIN_CONTRAST, darken) {
        (true, _) => out,
        (false, false) => [0xff, 0xff, 0xff],
        (false, true) => [0, 0, 0],
    }
}

/// A name's runs as HTML: each run's text escaped (maud) in a `span`, its colour made
/// readable on the dark page as its `color` and on the light page as `--light` (the style
/// sheet's light theme uses it), DarkPlaces' half alpha as `opacity:.5`, an icon as an empty
/// `span.icon` titled with its name.
pub fn themed_html(runs: &[fragstat::core::text::Run]) -> Markup {
    html! {
        @for r in runs {
            @let style = run_style(r.color, r.half_alpha);
            span class=[r.icon.is_some().then_some("icon")] title=[r.icon.as_deref()] style=[style] { (r.text) }
        }
    }
}

/// The pages' text colour on the light theme (`assets/style.css`, `--fg`).
pub const LIGHT_TEXT: [u8; 3] = [0x1d, 0x1f, 0x24];

/// `color` as the light theme shows it: a white or light grey (a game's default colour,
/// `^7`) as the page's text, every other colour [`readable`] on the light background.
pub fn light_variant(color: [u8; 3]) -> [u8; 3] {
    let (_, s, l) = to_hsl(color);
    if s < 0.15 && l > 0.6 {
        LIGHT_TEXT
    } else {
        readable(color, LIGHT_BACKGROUND)
    }
}

/// The `style` of a run: `color:#dark;--light:#light`, opacity; `None` when it has neither.
fn run_style(color: Option<[u8; 3]>, half_alpha: bool) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(c) = color {
        parts.push(format!("color:{}", hex(readable(c, BACKGROUND))));
        parts.push(format!("--light:{}", hex(light_variant(c))));
    }
    if half_alpha {
        parts.push("opacity:.5".to_string());
    }
    (!parts.is_empty()).then(|| parts.join(";"))
}

/// `#rrggbb`.
pub fn hex([r, g, b]: [u8; 3]) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_match_wcag() {
        assert!((contrast_ratio([0, 0, 0], [255, 255, 255]) - 21.0).abs() < 1e-9);
        assert!((contrast_ratio([9, 9, 9], [9, 9, 9]) - 1.0).abs() < 1e-9);
        // #0000ff on the page: the review's "barely readable".
        let blue = contrast_ratio([0, 0, 255], BACKGROUND);
        assert!(blue < 2.5, "{blue}");
        assert!(contrast_ratio([0, 0, 0], BACKGROUND) < 1.6);
    }

    #[test]
    fn dark_colours_are_lightened_keeping_their_hue() {
        for c in [
            [0, 0, 255],
            [0, 0, 0],
            [255, 0, 0],
            [0x80, 0, 0x80],
            [0x33, 0x33, 0x33],
        ] {
            let r = readable(c, BACKGROUND);
            let ratio = contrast_ratio(r, BACKGROUND);
            assert!(ratio >= MIN_CONTRAST, "{} → {}: {ratio}", hex(c), hex(r));
            // Not washed out to white when a lighter tint of the hue reads.
            assert!(
                ratio < MIN_CONTRAST + 0.3,
                "{} → {}: {ratio}",
                hex(c),
                hex(r)
            );
            let (h0, s0, _) = to_hsl(c);
            let (h1, s1, _) = to_hsl(r);
            if s0 > 0.0 {
                assert!(
                    (h0 - h1).abs() < 3.0,
                    "{} → {}: hue {h0} → {h1}",
                    hex(c),
                    hex(r)
                );
                assert!((s0 - s1).abs() < 0.05, "{} → {}", hex(c), hex(r));
            }
        }
        let blue = readable([0, 0, 255], BACKGROUND);
        assert!(
            blue[2] == 255 && blue[0] == blue[1] && blue[0] > 0x60,
            "{}",
            hex(blue)
        );
        // Colours that read are left alone.
        for c in [[255, 255, 255], [0, 255, 0], [255, 255, 0], [0, 255, 255]] {
            assert_eq!(readable(c, BACKGROUND), c);
        }
    }

    /// The light theme: every Quake III colour (and white, the default) reads on its
    /// background, darkened where it would not, hue kept; dark colours are left alone.
    #[test]
    fn light_colours_are_darkened_on_the_light_theme() {
        let quake = [
            [0, 0, 0],
            [255, 0, 0],
            [0, 255, 0],
            [255, 255, 0],
            [0, 0, 255],
            [0, 255, 255],
            [255, 0, 255],
            [255, 255, 255],
        ];
        for c in quake {
            for bg in [BACKGROUND, LIGHT_BACKGROUND] {
                let r = readable(c, bg);
                let ratio = contrast_ratio(r, bg);
                assert!(ratio >= MIN_CONTRAST, "{} on {}: {ratio}", hex(c), hex(bg));
            }
        }
        let yellow = readable([255, 255, 0], LIGHT_BACKGROUND);
        assert!(
            yellow[0] == yellow[1] && yellow[2] == 0 && yellow[0] < 0x90,
            "{}",
            hex(yellow)
        );
        assert!(contrast_ratio(yellow, LIGHT_BACKGROUND) < MIN_CONTRAST + 0.3);
        assert_eq!(readable([0, 0, 0], LIGHT_BACKGROUND), [0, 0, 0]);
        assert_eq!(readable([0, 0, 255], LIGHT_BACKGROUND), [0, 0, 255]);
        // White (`^7`) is the light page's text colour there, not a grey.
        assert_eq!(light_variant([255, 255, 255]), LIGHT_TEXT);
        assert_eq!(light_variant([255, 255, 0]), yellow);
    }

    /// Each coloured run says its colour for both themes, and its text is escaped.
    #[test]
    fn runs_carry_both_themes_escaped() {
        use fragstat::core::text::Run;
        let h = themed_html(&[
            Run::new(Some([255, 255, 0]), "<b>&"),
            Run::new(None, "plain"),
        ])
        .into_string();
        assert!(
            h.starts_with("<span style=\"color:#ffff00;--light:#"),
            "{h}"
        );
        assert!(h.contains("&lt;b&gt;&amp;"), "{h}");
        assert!(h.ends_with("<span>plain</span>"), "{h}");
    }
}
