//! Name colours made readable on the pages' background: a colour whose WCAG 2 contrast
//! against the background is under 4.5:1 (the AA level for normal text) is lightened, its
//! hue and saturation kept, until it reaches it. `^4` blue (#0000ff, 2.2:1 on the page) and
//! `^0` black (1.4:1) become a light blue and a grey; colours that already read stay as the
//! game gives them.

/// The pages' background (`assets/style.css`, `body`).
pub const BACKGROUND: [u8; 3] = [0x2b, 0x2e, 0x36];

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
/// 4.5:1 (WCAG AA), else the least lightened colour of the same hue and saturation that
/// reaches it (white at worst).
pub fn readable(color: [u8; 3], background: [u8; 3]) -> [u8; 3] {
    if contrast_ratio(color, background) >= MIN_CONTRAST {
        return color;
    }
    let (h, s, l) = to_hsl(color);
    // Lightness up: a binary search for the least lightness that reads.
    let (mut lo, mut hi) = (l, 1.0);
    for _ in 0..24 {
        let mid = (lo + hi) / 2.0;
        if contrast_ratio(from_hsl(h, s, mid), background) >= MIN_CONTRAST {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let out = from_hsl(h, s, hi);
    if contrast_ratio(out, background) >= MIN_CONTRAST {
        out
    } else {
        [0xff, 0xff, 0xff]
    }
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
}
