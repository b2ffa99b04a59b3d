//! The server page's SVG chart of players over time.

use maud::{html, Markup};

use super::time_text;
use crate::store::HistoryPoint;

/// The chart's size.
const CHART_W: f64 = 800.0;
const CHART_H: f64 = 220.0;
const PAD: f64 = 36.0;

/// The player-count chart: one polyline per stretch of rounds the server answered, the slot
/// count dashed, rounds it did not answer as red marks on the axis.
pub fn chart(points: &[HistoryPoint]) -> Markup {
    let t0 = points.first().map_or(0, |p| p.at);
    let t1 = points.last().map_or(1, |p| p.at).max(t0.saturating_add(1));
    let top = points
        .iter()
        .flat_map(|p| [p.num_players, p.max_players])
        .flatten()
        .max()
        .unwrap_or(1)
        .max(1);
    let span = t1.saturating_sub(t0).max(1) as f64;
    let x = |at: i64| PAD + at.saturating_sub(t0) as f64 / span * (CHART_W - 2.0 * PAD);
    let y = |n: i64| CHART_H - PAD - n as f64 / top as f64 * (CHART_H - 2.0 * PAD);
    let mut lines: Vec<String> = Vec::new();
    let mut slots: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut current_slots = String::new();
    let mut down = Vec::new();
    for p in points {
        match (p.status.as_str(), p.num_players) {
            ("online", Some(n)) => {
                current.push_str(&format!("{:.1},{:.1} ", x(p.at), y(n)));
                if let Some(m) = p.max_players {
                    current_slots.push_str(&format!("{:.1},{:.1} ", x(p.at), y(m)));
                }
            }
            _ => {
                down.push(x(p.at));
                if !current.is_empty() {
                    lines.push(std::mem::take(&mut current));
                    slots.push(std::mem::take(&mut current_slots));
                }
            }
        }
    }
    if !current.is_empty() {
        lines.push(current);
        slots.push(current_slots);
    }
    html! {
        svg #chart xmlns="http://www.w3.org/2000/svg" width=(CHART_W) height=(CHART_H)
            viewBox={ "0 0 " (CHART_W) " " (CHART_H) } role="img" data-points=(points.len()) {
            title { "Players over time" }
            line x1=(PAD) y1=(CHART_H - PAD) x2=(CHART_W - PAD) y2=(CHART_H - PAD) stroke="#777" {}
            line x1=(PAD) y1=(PAD) x2=(PAD) y2=(CHART_H - PAD) stroke="#777" {}
            text x="4" y=(PAD + 4.0) { (top) }
            text x="4" y=(CHART_H - PAD + 4.0) { "0" }
            line x1=(CHART_W - 230.0) y1="14" x2=(CHART_W - 210.0) y2="14" class="players" {}
            text x=(CHART_W - 205.0) y="18" { "players" }
            line x1=(CHART_W - 140.0) y1="14" x2=(CHART_W - 120.0) y2="14" class="slots" {}
            text x=(CHART_W - 115.0) y="18" { "slots" }
            rect.down x=(CHART_W - 75.0) y="11" width="3" height="6" {}
            text x=(CHART_W - 68.0) y="18" { "no answer" }
            @if !points.is_empty() {
                text x=(PAD) y=(CHART_H - 10.0) { (time_text(t0)) }
                text x=(CHART_W - PAD) y=(CHART_H - 10.0) text-anchor="end" { (time_text(t1)) }
            }
            @for s in &slots { polyline.slots points=(s.trim_end()) {} }
            @for l in &lines { polyline.players points=(l.trim_end()) {} }
            @for d in &down { rect.down x=(format!("{:.1}", d - 1.5)) y=(CHART_H - PAD - 3.0) width="3" height="6" {} }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_breaks_on_downtime() {
        let p = |at, status: &str, n| HistoryPoint {
            at,
            status: status.into(),
            num_players: n,
            max_players: n.map(|_| 8),
            rtt_ms: None,
            map: None,
            num_bots: None,
            rounds: 1,
            online_rounds: i64::from(status == "online"),
            players_min: None,
            players_max: None,
        };
        let svg = chart(&[
            p(0, "online", Some(1)),
            p(10, "online", Some(3)),
            p(20, "timeout", None),
            p(30, "online", Some(8)),
        ])
        .into_string();
        assert_eq!(
            svg.matches("<polyline class=\"players\"").count(),
            2,
            "{svg}"
        );
        assert_eq!(svg.matches("class=\"down\"").count(), 2, "{svg}"); // and the legend's
        assert!(chart(&[]).into_string().contains("<svg"));
        // Stored values out of any sensible range draw, they do not panic.
        let odd = chart(&[p(i64::MIN, "online", Some(1)), p(i64::MAX, "online", None)]);
        assert!(odd.into_string().contains("<svg"));
        assert_eq!(time_text(i64::MAX), "9999-12-31T23:59:59Z");
        assert_eq!(time_text(-5), "1970-01-01T00:00:00Z");
    }
}
