//! `/about`: the operator's text (`[privacy] about` or `about_file`; a default one
//! otherwise), then what the site keeps and for how long, table by table, from the
//! configuration in force, and how a player opts out.

use std::time::Duration;

use axum::extract::State;
use axum::response::Html;
use maud::{html, Markup};

use super::pages::page;
use super::{AppState, Site};

/// "7 days", "24 hours", "90 minutes", "for ever".
pub fn kept_for(d: Option<Duration>) -> String {
    let Some(d) = d else {
        return "for ever".into();
    };
    let mins = d.as_secs() / 60;
    let plural = |n: u64, unit: &str| format!("{n} {unit}{}", if n == 1 { "" } else { "s" });
    match mins {
        m if m >= 48 * 60 && m % (24 * 60) == 0 => plural(m / (24 * 60), "day"),
        m if m >= 60 && m % 60 == 0 => plural(m / 60, "hour"),
        0 => plural(d.as_secs(), "second"),
        m => plural(m, "minute"),
    }
}

/// One word of the operator's text: a link where it is an `http(s)://` or `mailto:`
/// address, text otherwise (escaped either way).
fn word(w: &str) -> Markup {
    let link = ["https://", "http://", "mailto:"]
        .iter()
        .any(|p| w.starts_with(p) && w.len() > p.len());
    // A sentence's full stop or comma after the address is not part of it.
    let (addr, tail) = match w.char_indices().last() {
        Some((i, c)) if link && matches!(c, '.' | ',' | ';' | ')') => (&w[..i], &w[i..]),
        _ => (w, ""),
    };
    html! {
        @if link { a href=(addr) rel="nofollow" { (addr.trim_start_matches("mailto:")) } (tail) } @else { (w) }
    }
}

/// The operator's text as paragraphs (a blank line apart), lines kept.
pub fn text_html(text: &str) -> Markup {
    let paragraphs = text
        .replace("\r\n", "\n")
        .split("\n\n")
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect::<Vec<_>>();
    html! {
        @for para in &paragraphs {
            p.about {
                @for (i, line) in para.lines().enumerate() {
                    @if i > 0 { br; }
                    @for (j, w) in line.split(' ').enumerate() {
                        @if j > 0 { " " }
                        (word(w))
                    }
                }
            }
        }
    }
}

/// What is kept and for how long, from the history settings in force.
fn kept_html(site: &Site) -> Markup {
    let h = &site.history;
    let rows: [(&str, String); 6] = [
        (
            "Players: each name as the servers list it (colours kept), when first and last seen, and on which server",
            format!("{} after last seen", kept_for(h.players)),
        ),
        (
            "Sessions: a player's time on a server (joined, left, last score and team, whether a bot)",
            format!("{} after the session ended", kept_for(h.sessions)),
        ),
        (
            "Players on each server, every round (humans, bots, ping)",
            format!(
                "{} per round, then per {} for {}",
                kept_for(Some(h.raw)),
                kept_for(Some(h.bucket)),
                kept_for(h.series)
            ),
        ),
        (
            "Server changes: name, map, game type, slots, up or down",
            kept_for(h.changes),
        ),
        (
            "Servers, and the rounds (when each poll ran and what it found)",
            format!("{} after last polled", kept_for(h.rounds)),
        ),
        (
            "This site's visitors",
            "nothing stored: no cookies, no log of requests; addresses are held in memory while connected, for the connection and request limits".into(),
        ),
    ];
    html! {
        table #kept {
            thead { tr { th { "What" } th { "Kept for" } } }
            tbody {
                @for (what, how) in &rows { tr { td { (what) } td { (how) } } }
            }
        }
    }
}

pub(super) async fn about_page(State(st): State<AppState>) -> Html<String> {
    let site = &st.site;
    let body = html! {
        h1 { "About " (site.title) }
        @if let Some(text) = site.about.as_deref().filter(|t| !t.trim().is_empty()) {
            section #operator { (text_html(text)) }
        } @else {
            p.about {
                (site.title) " lists game servers and the players on them, as the servers publish "
                "them to anyone who asks. It polls the servers every "
                (kept_for(Some(Duration::from_secs_f64(site.interval_secs.max(1.0)))))
                " and keeps what changed."
            }
        }
        h2 { "What is kept, and for how long" }
        (kept_html(site))
        p.about { "Older rows are deleted after every round. Players' IP addresses are never seen: game servers do not publish them." }
        h2 { "Opting out" }
        p.about {
            "A player who does not want to be listed can ask the operator of this site. The name "
            "(as shown here, in any case) is then never stored again, and everything kept under it, "
            "its sessions included, is deleted."
        }
    };
    Html(page(site, "About", None, body).into_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read() {
        let h = |n: u64| Some(Duration::from_secs(n * 3600));
        assert_eq!(kept_for(h(168)), "7 days");
        assert_eq!(kept_for(h(24)), "24 hours");
        assert_eq!(kept_for(h(1)), "1 hour");
        assert_eq!(kept_for(Some(Duration::from_secs(600))), "10 minutes");
        assert_eq!(kept_for(Some(Duration::from_secs(15))), "15 seconds");
        assert_eq!(kept_for(None), "for ever");
    }

    #[test]
    fn operator_text_is_escaped_and_linked() {
        let h = text_html(
            "Run by <b>us</b>.\nMail mailto:privacy@example.org, or see https://example.org/x.\n\n\nSecond",
        )
        .into_string();
        assert!(h.contains("&lt;b&gt;us&lt;/b&gt;"), "{h}");
        assert!(
            h.contains(
                "<a href=\"mailto:privacy@example.org\" rel=\"nofollow\">privacy@example.org</a>,"
            ),
            "{h}"
        );
        assert!(
            h.contains(
                "<a href=\"https://example.org/x\" rel=\"nofollow\">https://example.org/x</a>."
            ),
            "{h}"
        );
        assert_eq!(h.matches("<p class=\"about\">").count(), 2, "{h}");
        assert!(h.contains("<br>"), "{h}");
        // A `javascript:` word stays text.
        assert!(!text_html("javascript:alert(1)")
            .into_string()
            .contains("href"));
    }
}
