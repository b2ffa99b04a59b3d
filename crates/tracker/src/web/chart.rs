//! Players-over-time charts, drawn on the server as SVG (they read without JavaScript): a
//! time axis from the window's true start to its end with ticks and labels (UTC; the pages'
//! script puts them in the visitor's local time), a grid, humans and bots as two lines, the
//! slots dashed, rounds without an answer and map changes marked, and values on hover or
//! keyboard focus (each slice of the window is a focusable group with a `<title>` and a
//! readout). The labels are text of a fixed size over a plot that stretches to the page's
//! width, so they read at 390 px as at 1366.

use maud::{html, Markup, PreEscaped};

use super::time_text;
use crate::store::{HistoryPoint, StatsPoint};

/// The chart's height (px) and the plot's top and bottom.
const HEIGHT: f64 = 250.0;
const PLOT_TOP: f64 = 30.0;
const PLOT_BOTTOM: f64 = 212.0;
/// The plot's own coordinates (stretched to its box).
const UNITS: f64 = 1000.0;
/// Most points a line has (more are averaged into as many columns).
const MAX_POINTS: usize = 480;
/// Slices of the window with a value on hover or focus.
const SLICES: usize = 24;

/// A point of a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// When (Unix ms).
    pub at: i64,
    /// Humans, or `None` where the server did not answer.
    pub humans: Option<f64>,
    /// Bots, where known.
    pub bots: Option<f64>,
    /// Slots, where known.
    pub slots: Option<f64>,
    /// The most humans the point stands for (a downsampled one), where known.
    pub humans_max: Option<f64>,
}

/// A mark on the time axis (a map change).
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// When (Unix ms).
    pub at: i64,
    /// What (the map's name).
    pub label: String,
}

/// What a chart draws: the window (`from`..`to`, Unix ms) whatever the data covers.
#[derive(Debug, Clone, Default)]
pub struct Chart {
    /// The window's start.
    pub from: i64,
    /// The window's end.
    pub to: i64,
    /// Points, oldest first.
    pub points: Vec<Point>,
    /// Map changes.
    pub marks: Vec<Mark>,
    /// Its name for screen readers.
    pub title: String,
}

/// A server's history as chart points: humans (players less bots), bots, slots; a round it
/// did not answer in as no value.
pub fn server_points(history: &[HistoryPoint]) -> Vec<Point> {
    history
        .iter()
        .map(|h| {
            let up = h.online_rounds > 0;
            let bots = h.num_bots.filter(|_| up);
            Point {
                at: h.at,
                humans: h
                    .num_players
                    .filter(|_| up)
                    .map(|n| (n as f64 - bots.unwrap_or(0.0)).max(0.0)),
                bots,
                slots: h.max_players.map(|m| m as f64),
                humans_max: h
                    .players_max
                    .map(|m| (m as f64 - bots.unwrap_or(0.0)).max(0.0)),
            }
        })
        .collect()
}

/// Site or game totals as chart points.
pub fn stats_points(points: &[StatsPoint]) -> Vec<Point> {
    points
        .iter()
        .map(|p| Point {
            at: p.at,
            humans: Some(p.humans),
            bots: Some(p.bots),
            slots: None,
            humans_max: Some(p.humans_max as f64),
        })
        .collect()
}

/// A round figure at or above `v` for the y axis, and its grid step.
fn nice_top(v: f64) -> (f64, f64) {
    let v = if v.is_finite() { v.max(1.0) } else { 1.0 };
    let mag = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        let step = m * mag / 4.0;
        let top = (v / step).ceil() * step;
        if top / step <= 5.0 {
            let step = if step < 1.0 { 1.0 } else { step };
            return (top.max(step), step);
        }
    }
    (v, v)
}

/// Ticks of the time axis for a window: (time, label, format for the script).
fn ticks(from: i64, to: i64) -> Vec<(i64, String, &'static str)> {
    const H: i64 = 3_600_000;
    const D: i64 = 24 * H;
    let span = to.saturating_sub(from).max(1);
    let (step, fmt) = match span {
        s if s <= 3 * H => (30 * 60_000, "hm"),
        s if s <= 12 * H => (2 * H, "hm"),
        s if s <= 36 * H => (4 * H, "hm"),
        s if s <= 8 * D => (D, "wd"),
        s if s <= 32 * D => (5 * D, "md"),
        s => ((s / 6).div_euclid(D).max(1) * D, "md"),
    };
    let mut out = Vec::new();
    let mut t = from.div_euclid(step).saturating_add(1).saturating_mul(step);
    while t < to && out.len() < 16 {
        out.push((t, tick_label(t, fmt), fmt));
        t = t.saturating_add(step);
    }
    out
}

/// A tick's label in UTC: `15:00`, `Mon 23`, `Nov 23`.
fn tick_label(t: i64, fmt: &str) -> String {
    let text = time_text(t);
    let day = text.get(8..10).unwrap_or("");
    match fmt {
        "hm" => text.get(11..16).unwrap_or("").to_string(),
        "wd" => {
            const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
            let wd = (t.div_euclid(86_400_000) + 3).rem_euclid(7) as usize;
            format!("{} {day}", DAYS.get(wd).unwrap_or(&""))
        }
        _ => {
            const MONTHS: [&str; 12] = [
                "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
            ];
            let m: usize = text.get(5..7).and_then(|m| m.parse().ok()).unwrap_or(1);
            format!("{} {day}", MONTHS.get(m.saturating_sub(1)).unwrap_or(&""))
        }
    }
}

/// `Nov 28 11:27` in UTC (the pages' script writes it in local time).
pub fn time_label(t: i64) -> String {
    let text = time_text(t);
    format!("{} {}", tick_label(t, "md"), text.get(11..16).unwrap_or(""))
}

/// Averages `points` into at most `n` columns of the window (a column with a point that had
/// no answer and none that had is no answer).
fn thin(points: &[Point], from: i64, to: i64, n: usize) -> Vec<Point> {
    if points.len() <= n {
        return points.to_vec();
    }
    let span = to.saturating_sub(from).max(1) as f64;
    let mut cols: Vec<(Point, usize)> = Vec::new();
    let mut col_of_last = usize::MAX;
    for p in points {
        let c = (((p.at.saturating_sub(from)) as f64 / span * n as f64).max(0.0) as usize).min(n);
        if c != col_of_last || cols.is_empty() {
            cols.push((p.clone(), 1));
            col_of_last = c;
            continue;
        }
        if let Some((acc, k)) = cols.last_mut() {
            let avg = |a: Option<f64>, b: Option<f64>, k: usize| match (a, b) {
                (Some(a), Some(b)) => Some((a * k as f64 + b) / (k + 1) as f64),
                (a, b) => a.or(b),
            };
            acc.humans = avg(acc.humans, p.humans, *k);
            acc.bots = avg(acc.bots, p.bots, *k);
            acc.slots = omax(acc.slots, p.slots);
            acc.humans_max = omax(omax(acc.humans_max, p.humans_max), p.humans);
            *k += 1;
        }
    }
    cols.into_iter().map(|(p, _)| p).collect()
}

/// The larger of two values, where there are any.
fn omax(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn pct(v: f64) -> String {
    format!("{:.2}%", v.clamp(0.0, 100.0))
}

/// The chart's inline style (scoped to `.chart`).
const STYLE: &str = "svg.chart{display:block;width:100%;height:250px;margin-top:.6em}\
.chart svg{height:182px;margin:0;background:none}\
.chart text{font-size:12px;fill:currentColor}\
.chart .grid{stroke:#8884;stroke-width:1}\
.chart .humans{fill:none;stroke:#4cc44c;stroke-width:2.5}\
.chart .bots{fill:none;stroke:#d9a03f;stroke-width:1.5;stroke-dasharray:5 3}\
.chart .slots{fill:none;stroke:#999;stroke-width:1;stroke-dasharray:2 3}\
.chart .down{fill:#d65a5a}\
.chart .mark{stroke:#7aa7ff;stroke-width:1;stroke-dasharray:3 2}\
.chart .mark-label{fill:#7aa7ff;font-size:11px}\
.chart .hit rect{fill:transparent}\
.chart .hit:hover rect,.chart .hit:focus rect{fill:#8882}\
.chart .hit:focus{outline:none}\
.chart .tip{visibility:hidden;font-weight:bold}\
.chart .hit:hover .tip,.chart .hit:focus .tip{visibility:visible}\
.chart .legend .key{stroke-width:3}\
.chart .nodata{fill:#8881}.chart .nodata-label{opacity:.7}\
.chart .now{fill:#4cc44c}\
.chart-caption{font-size:.85em;opacity:.85;margin:.2em 0}";

/// The chart.
pub fn chart(c: &Chart) -> Markup {
    let from = c.from;
    let to = c.to.max(from.saturating_add(1));
    let span = to.saturating_sub(from) as f64;
    let points = thin(&c.points, from, to, MAX_POINTS);
    let top_value = points
        .iter()
        .flat_map(|p| [p.humans, p.bots, p.slots, p.humans_max])
        .flatten()
        .fold(0.0, f64::max);
    let (top, step) = nice_top(top_value);
    let frac = |at: i64| (at.saturating_sub(from)) as f64 / span;
    let x = |at: i64| (frac(at) * UNITS).clamp(0.0, UNITS);
    let y = |v: f64| UNITS - (v / top).clamp(0.0, 1.0) * UNITS;
    let plot_h = PLOT_BOTTOM - PLOT_TOP;
    let y_px = |v: f64| PLOT_TOP + (1.0 - (v / top).clamp(0.0, 1.0)) * plot_h;
    // The lines, broken where there is no value.
    let line = |get: &dyn Fn(&Point) -> Option<f64>| -> Vec<String> {
        let mut out = Vec::new();
        let mut cur = String::new();
        for p in &points {
            match get(p) {
                Some(v) => cur.push_str(&format!("{:.1},{:.1} ", x(p.at), y(v))),
                None => {
                    if !cur.is_empty() {
                        out.push(std::mem::take(&mut cur));
                    }
                }
            }
        }
        if !cur.is_empty() {
            out.push(cur);
        }
        out
    };
    let humans = line(&|p| p.humans);
    let bots = line(&|p| p.humans.and(p.bots));
    let slots = line(&|p| p.humans.and(p.slots));
    let has_bots = points.iter().any(|p| p.bots.is_some_and(|b| b > 0.0));
    let has_slots = points.iter().any(|p| p.slots.is_some());
    // Before the first point there is no data (a server first seen lately, a new site):
    // shaded, and said, when it is more than a sliver of the window.
    let first = points.first().map(|p| frac(p.at).clamp(0.0, 1.0));
    let nodata = first.filter(|f| *f > 0.02);
    // The latest value, as a dot (a short line at the end of a long window is hard to see).
    let last = points
        .last()
        .and_then(|p| Some((frac(p.at).clamp(0.0, 1.0), p.humans?)));
    let down: Vec<f64> = points
        .iter()
        .filter(|p| p.humans.is_none())
        .map(|p| x(p.at))
        .collect();
    let marks: Vec<&Mark> = c
        .marks
        .iter()
        .filter(|m| m.at >= from && m.at <= to)
        .collect();
    // Labels for the newest marks, each at least 8 % of the width from the next one labelled.
    let mut labelled: Vec<&Mark> = Vec::new();
    for m in marks.iter().rev() {
        if labelled.len() < 6
            && labelled
                .last()
                .is_none_or(|l| frac(l.at) - frac(m.at) >= 0.08)
        {
            labelled.push(m);
        }
    }
    let mut grid = Vec::new();
    let mut v = 0.0;
    while v <= top + 1e-9 && grid.len() < 8 {
        grid.push(v);
        v += step;
    }
    html! {
        svg id="chart" class="chart" xmlns="http://www.w3.org/2000/svg" width="100%" height=(HEIGHT)
            role="group" aria-label=(c.title) data-points=(c.points.len()) data-from=(from) data-to=(to) {
            style { (PreEscaped(STYLE)) }
            title { (c.title) }
            // Legend.
            g.legend {
                line.humans.key x1="4" y1="12" x2="22" y2="12" {}
                text x="26" y="16" { "humans" }
                line.bots.key x1="84" y1="12" x2="102" y2="12" {}
                text x="106" y="16" { "bots" }
                @if has_slots {
                    line.slots.key x1="146" y1="12" x2="164" y2="12" {}
                    text x="168" y="16" { "slots" }
                }
                @if !down.is_empty() {
                    rect.down x="212" y="8" width="4" height="8" {}
                    text x="220" y="16" { "no answer" }
                }
                @if !marks.is_empty() {
                    line.mark x1="296" y1="4" x2="296" y2="18" {}
                    text x="300" y="16" { "map change" }
                }
            }
            @if let Some(f) = nodata {
                rect.nodata x="0" y=(PLOT_TOP) width=(pct(f * 100.0)) height=(PLOT_BOTTOM - PLOT_TOP) {}
                @if f > 0.3 {
                    text.nodata-label x=(pct(f * 50.0)) y=(PLOT_TOP + plot_h / 2.0) text-anchor="middle" {
                        "no data before " tspan data-t=(points.first().map_or(from, |p| p.at)) data-f="full" {
                            (time_label(points.first().map_or(from, |p| p.at)))
                        }
                    }
                }
            }
            // Grid and y labels (over the grid lines, inside the plot).
            @for g in &grid {
                line.grid x1="0" x2="100%" y1=(format!("{:.1}", y_px(*g))) y2=(format!("{:.1}", y_px(*g))) {}
                text x="3" y=(format!("{:.1}", y_px(*g) - 3.0)) { (format_count(*g)) }
            }
            // The plot, stretched to the width.
            svg x="0" y=(PLOT_TOP) width="100%" height=(plot_h) viewBox={ "0 0 " (UNITS) " " (UNITS) }
                preserveAspectRatio="none" aria-hidden="true" {
                @for m in &marks {
                    line.mark x1=(format!("{:.1}", x(m.at))) x2=(format!("{:.1}", x(m.at))) y1="0" y2=(UNITS) vector-effect="non-scaling-stroke" {}
                }
                @for s in &slots { polyline.slots points=(s.trim_end()) vector-effect="non-scaling-stroke" {} }
                @if has_bots { @for b in &bots { polyline.bots points=(b.trim_end()) vector-effect="non-scaling-stroke" {} } }
                @for h in &humans { polyline.humans points=(h.trim_end()) vector-effect="non-scaling-stroke" {} }
                @for d in &down { rect.down x=(format!("{:.1}", (d - 2.0).max(0.0))) y=(UNITS - 30.0) width="4" height="30" {} }
            }
            @if !labelled.is_empty() {
                @for m in &labelled {
                    text.mark-label x=(pct(frac(m.at) * 100.0)) y=(PLOT_TOP + 12.0)
                        text-anchor=(if frac(m.at) > 0.8 { "end" } else { "start" }) dx=(if frac(m.at) > 0.8 { "-3" } else { "3" }) { (m.label) }
                }
            }
            @if let Some((f, v)) = last {
                circle.now cx=(pct((f * 100.0).min(99.6))) cy=(format!("{:.1}", y_px(v))) r="3.5" {}
            }
            // The time axis.
            line.grid x1="0" x2="100%" y1=(PLOT_BOTTOM) y2=(PLOT_BOTTOM) {}
            @for (t, label, fmt) in ticks(from, to) {
                @let f = frac(t);
                line.grid x1=(pct(f * 100.0)) x2=(pct(f * 100.0)) y1=(PLOT_BOTTOM) y2=(PLOT_BOTTOM + 5.0) {}
                text x=(pct(f * 100.0)) y=(PLOT_BOTTOM + 19.0)
                    text-anchor=(if f < 0.04 { "start" } else if f > 0.96 { "end" } else { "middle" })
                    data-t=(t) data-f=(fmt) { (label) }
            }
            (slices(&c.points, from, to, &c.marks))
        }
    }
}

/// "12", "2.5", "1.2k".
fn format_count(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{:.0}k", v / 1000.0)
    } else if v.fract().abs() > 1e-9 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// The hover and focus readouts: the window in [`SLICES`] slices, each a focusable group
/// with the values of the points in it.
fn slices(points: &[Point], from: i64, to: i64, marks: &[Mark]) -> Markup {
    let span = to.saturating_sub(from).max(1);
    let w = span / SLICES as i64;
    html! {
        @for i in 0..SLICES {
            @let a = from.saturating_add(w.saturating_mul(i as i64));
            @let b = if i + 1 == SLICES { to } else { a.saturating_add(w) };
            @let inside: Vec<&Point> = points.iter().filter(|p| p.at >= a && p.at < b.max(a.saturating_add(1)) || (i + 1 == SLICES && p.at == to)).collect();
            @let text = slice_text(&inside, marks.iter().filter(|m| m.at >= a && m.at < b).map(|m| m.label.as_str()).collect());
            @let left = a.saturating_sub(from) as f64 / span as f64 * 100.0;
            g.hit tabindex="0" {
                title { (time_text(a)) " – " (time_text(b)) ": " (text) }
                rect x=(pct(left)) y=(PLOT_TOP) width=(pct(100.0 / SLICES as f64)) height=(PLOT_BOTTOM - PLOT_TOP) {}
                text.tip x="99%" y=(PLOT_TOP + 14.0) text-anchor="end" { (text) }
            }
        }
    }
}

/// "12 humans (max 15), 3 bots; map q3dm7" for a slice's points.
fn slice_text(points: &[&Point], maps: Vec<&str>) -> String {
    let mut parts = Vec::new();
    let answered: Vec<&&Point> = points.iter().filter(|p| p.humans.is_some()).collect();
    if answered.is_empty() {
        parts.push(
            if points.is_empty() {
                "no data"
            } else {
                "no answer"
            }
            .to_string(),
        );
    } else {
        let n = answered.len() as f64;
        let humans = answered.iter().filter_map(|p| p.humans).sum::<f64>() / n;
        let max = answered
            .iter()
            .flat_map(|p| [p.humans, p.humans_max])
            .flatten()
            .fold(0.0, f64::max);
        let mut s = format!("{} humans", format_count(humans.round()));
        if max.round() > humans.round() {
            s.push_str(&format!(" (max {})", format_count(max.round())));
        }
        let bots: Vec<f64> = answered.iter().filter_map(|p| p.bots).collect();
        if !bots.is_empty() {
            let b = bots.iter().sum::<f64>() / bots.len() as f64;
            s.push_str(&format!(", {} bots", format_count(b.round())));
        }
        parts.push(s);
    }
    if !maps.is_empty() {
        parts.push(format!("map → {}", maps.join(" → ")));
    }
    parts.join("; ")
}

/// The window links (24 h, 7 d, 30 d) of a chart at `path` (with `?` or `&` added), the
/// current one marked; those longer than the history kept (`max_hours`, 0: everything) left
/// out.
pub fn window_links(path: &str, current_hours: f64, max_hours: f64) -> Markup {
    let sep = if path.contains('?') { '&' } else { '?' };
    html! {
        nav.windows aria-label="chart window" {
            @for (h, label) in [(24.0, "24 h"), (168.0, "7 d"), (720.0, "30 d")] {
                @if max_hours <= 0.0 || h <= max_hours + 1e-9 {
                    @if (current_hours - h).abs() < 1e-9 {
                        strong aria-current="page" { (label) }
                    } @else {
                        a href={ (path) (sep) "hours=" (h) } { (label) }
                    }
                    " "
                }
            }
        }
    }
}

/// The caption under a chart: its window in words.
pub fn caption(from: i64, to: i64) -> Markup {
    html! {
        p.chart-caption {
            "From " span data-t=(from) data-f="full" title=(time_text(from)) { (time_label(from)) }
            " to " span data-t=(to) data-f="full" title=(time_text(to)) { (time_label(to)) }
            " (" span data-tz { "UTC" } ")"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(at: i64, humans: Option<f64>) -> Point {
        Point {
            at,
            humans,
            bots: humans.map(|_| 2.0),
            slots: humans.map(|_| 8.0),
            humans_max: None,
        }
    }

    #[test]
    fn chart_spans_the_window_with_two_series_and_marks() {
        let hour = 3_600_000;
        let from = 1_795_867_200_000 - 24 * hour;
        let to = 1_795_867_200_000;
        // Data only in the last hour: the axis still starts a day before.
        let points = vec![
            p(to - hour, Some(1.0)),
            p(to - hour / 2, Some(3.0)),
            p(to - hour / 4, None),
            p(to - 60_000, Some(6.0)),
        ];
        let svg = chart(&Chart {
            from,
            to,
            points,
            marks: vec![Mark {
                at: to - hour / 2,
                label: "q3dm7".into(),
            }],
            title: "Players over time".into(),
        })
        .into_string();
        assert!(svg.contains(&format!("data-from=\"{from}\"")), "{svg}");
        // Humans broken by the round without an answer; bots a line of its own.
        assert_eq!(
            svg.matches("<polyline class=\"humans\"").count(),
            2,
            "{svg}"
        );
        assert_eq!(svg.matches("<polyline class=\"bots\"").count(), 2, "{svg}");
        // The first point sits near the right end, not at the left edge.
        let first = svg
            .split("<polyline class=\"humans\" points=\"")
            .nth(1)
            .unwrap();
        let x0: f64 = first.split(',').next().unwrap().parse().unwrap();
        assert!(x0 > 950.0, "{x0}");
        // Ticks every 4 hours, labelled in UTC, for the script to localise.
        assert!(svg.contains("data-f=\"hm\">04:00</text>"), "{svg}");
        assert_eq!(svg.matches("data-f=\"hm\"").count(), 5, "{svg}");
        // The map change: a line and its label; values on hover and focus.
        assert!(svg.contains("class=\"mark\""), "{svg}");
        assert!(svg.contains(">q3dm7</text>"), "{svg}");
        assert_eq!(
            svg.matches("<g class=\"hit\" tabindex=\"0\">").count(),
            SLICES
        );
        assert!(svg.contains("3 humans"), "{svg}");
        assert!(svg.contains("map → q3dm7"), "{svg}");
        assert!(svg.contains("no data"), "{svg}");
        // The down round marked.
        assert!(svg.contains("<rect class=\"down\""), "{svg}");
        // Empty and odd input draws.
        assert!(chart(&Chart::default()).into_string().contains("<svg"));
        let odd = chart(&Chart {
            from: i64::MIN,
            to: i64::MAX,
            points: vec![p(i64::MIN, Some(f64::NAN)), p(0, Some(f64::INFINITY))],
            ..Chart::default()
        });
        assert!(odd.into_string().contains("<svg"));
    }

    #[test]
    fn ticks_by_window() {
        let d = 86_400_000;
        let to = 1_795_867_200_000;
        let week = ticks(to - 7 * d, to);
        assert_eq!(week.len(), 7, "{week:?}");
        assert_eq!(week[0].1, "Sun 22");
        let month = ticks(to - 30 * d, to);
        assert!(month.iter().all(|t| t.2 == "md"), "{month:?}");
        assert!(month.iter().any(|t| t.1 == "Nov 23"), "{month:?}");
        assert_eq!(nice_top(0.0), (1.0, 1.0));
        assert_eq!(nice_top(17.0).0, 20.0);
        let many: Vec<Point> = (0..2000).map(|_| p(0, Some(1.0))).collect();
        assert!(thin(&many, 0, 1, 100).len() <= 101);
    }

    #[test]
    fn window_links_mark_the_current_and_skip_what_is_not_kept() {
        let h = window_links("/stats?game=q3", 168.0, 168.0).into_string();
        assert!(h.contains("href=\"/stats?game=q3&amp;hours=24\""), "{h}");
        assert!(
            h.contains("<strong aria-current=\"page\">7 d</strong>"),
            "{h}"
        );
        assert!(!h.contains("30 d"), "{h}");
        assert!(window_links("/stats", 24.0, 0.0)
            .into_string()
            .contains("hours=720"));
    }
}
