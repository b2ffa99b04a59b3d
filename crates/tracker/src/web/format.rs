//! Times as the pages write them: "3 min ago", "2 h 5 min".

/// "3 min ago" for a Unix-ms time, at `now`.
pub fn ago(ms: i64, now: i64) -> String {
    let s = now.saturating_sub(ms) / 1000;
    match s {
        i64::MIN..=9 => "just now".into(),
        10..=59 => format!("{s} s ago"),
        60..=3599 => format!("{} min ago", s / 60),
        3600..=86_399 => format!("{} h ago", s / 3600),
        _ => format!("{} d ago", s / 86_400),
    }
}

/// "2 h 5 min", "45 s".
pub fn duration_text(secs: i64) -> String {
    let s = secs.max(0);
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min", s / 60),
        3600..=86_399 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        _ => format!("{} d {} h", s / 86_400, s % 86_400 / 3600),
    }
}
