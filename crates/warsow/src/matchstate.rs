//! `g_match_time` and `g_match_score`: what a qfusion match is doing.
//!
//! Source: qfusion `source/game/g_frame.cpp` `G_UpdateServerInfo`, rewritten every snapshot:
//!
//! * `g_match_time`: `Warmup` (up to the warmup state), `Countdown`, `Finished` (after play);
//!   during play `"%02i:%02i / %02i:00%s"` (elapsed minutes and seconds, then the limit in
//!   minutes) or `"%02i:%02i%s"` without a limit, where `%s` is `" overtime"` (extended, with a
//!   limit) or `" suddendeath"` (extended, no limit), then `" (in timeout)"` when paused.
//! * `g_match_score`: in team games from play time on, `" %s: %i %s: %i"` (a leading space,
//!   then each team's name and score: `" ALPHA: 3 BETA: 14"`); Warsow 0.x listed up to four
//!   teams (`Red: 1 Blue: 2 Green: 3 Yellow: 4`); otherwise empty.
//!
//! The Warsow client matches the words case-insensitively (serverlist.cpp `handleMatchTime`),
//! and so do we. Values that fit none of these forms are kept as [`MatchTime::Other`].

use serde::Serialize;

/// The state of the match, from `g_match_time`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
#[non_exhaustive]
pub enum MatchTime {
    /// Warming up (players join and ready up).
    Warmup,
    /// Counting down to the start.
    Countdown,
    /// The match is over (scoreboard, next map).
    Finished,
    /// Being played.
    Playing {
        /// Seconds played.
        elapsed_secs: u32,
        /// The time limit in seconds, when there is one.
        limit_secs: Option<u32>,
        /// Extended past the limit (`overtime`).
        overtime: bool,
        /// Extended with no limit: the next score wins (`suddendeath`).
        sudden_death: bool,
        /// Paused (`(in timeout)`).
        timeout: bool,
    },
    /// A value in none of the known forms, as sent.
    Other {
        /// The raw value.
        raw: String,
    },
}

fn minsec(t: &str) -> Option<u32> {
    let (m, s) = t.split_once(':')?;
    if m.is_empty() || s.len() != 2 || !(m.bytes().chain(s.bytes()).all(|b| b.is_ascii_digit())) {
        return None;
    }
    let (m, s): (u32, u32) = (m.parse().ok()?, s.parse().ok()?);
    if s >= 60 {
        return None;
    }
    m.checked_mul(60)?.checked_add(s)
}

impl MatchTime {
    /// Parses a `g_match_time` value; `None` for an empty one (no match state sent).
    pub fn parse(value: &[u8]) -> Option<MatchTime> {
        let text = String::from_utf8_lossy(value);
        let t = text.trim();
        if t.is_empty() {
            return None;
        }
        let other = || MatchTime::Other {
            raw: text.clone().into_owned(),
        };
        for (word, state) in [
            ("warmup", MatchTime::Warmup),
            ("countdown", MatchTime::Countdown),
            ("finished", MatchTime::Finished),
        ] {
            if t.eq_ignore_ascii_case(word) {
                return Some(state);
            }
        }
        let lower = t.to_ascii_lowercase();
        let (rest, timeout) = match lower.strip_suffix("(in timeout)") {
            Some(r) => (r.trim_end(), true),
            None => (lower.as_str(), false),
        };
        let (rest, overtime) = match rest.strip_suffix("overtime") {
            Some(r) => (r.trim_end(), true),
            None => (rest, false),
        };
        let (rest, sudden_death) = match rest.strip_suffix("suddendeath") {
            Some(r) => (r.trim_end(), true),
            None => (rest, false),
        };
        let (elapsed, limit) = match rest.split_once('/') {
            Some((e, l)) => (e.trim(), Some(l.trim())),
            None => (rest.trim(), None),
        };
        let Some(elapsed_secs) = minsec(elapsed) else {
            return Some(other());
        };
        let limit_secs = match limit {
            Some(l) => match minsec(l) {
                Some(l) => Some(l),
                None => return Some(other()),
            },
            None => None,
        };
        Some(MatchTime::Playing {
            elapsed_secs,
            limit_secs,
            overtime,
            sudden_death,
            timeout,
        })
    }

    /// The value qfusion writes for this state (the inverse of [`MatchTime::parse`]).
    pub fn to_value(&self) -> String {
        match self {
            MatchTime::Warmup => "Warmup".into(),
            MatchTime::Countdown => "Countdown".into(),
            MatchTime::Finished => "Finished".into(),
            MatchTime::Playing {
                elapsed_secs,
                limit_secs,
                overtime,
                sudden_death,
                timeout,
            } => {
                let mut s = format!("{:02}:{:02}", elapsed_secs / 60, elapsed_secs % 60);
                if let Some(l) = limit_secs {
                    s.push_str(&format!(" / {:02}:{:02}", l / 60, l % 60));
                }
                if *overtime {
                    s.push_str(" overtime");
                }
                if *sudden_death {
                    s.push_str(" suddendeath");
                }
                if *timeout {
                    s.push_str(" (in timeout)");
                }
                s
            }
            MatchTime::Other { raw } => raw.clone(),
        }
    }
}

/// One team's score from `g_match_score`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct TeamScore {
    /// The team's name as the server calls it (`ALPHA`, `Red`…).
    pub team: String,
    /// Its score.
    pub score: i32,
}

impl TeamScore {
    /// Parses a `g_match_score` value: `name: score` pairs. A name may hold spaces; it ends at
    /// the `:` before a number. `Some(vec![])` for an empty value (not a team game, or before
    /// play); `None` when the value has another form.
    pub fn parse_all(value: &[u8]) -> Option<Vec<TeamScore>> {
        let text = String::from_utf8_lossy(value);
        let mut out = Vec::new();
        let mut name: Vec<&str> = Vec::new();
        let mut words = text.split_whitespace().peekable();
        while let Some(w) = words.next() {
            if let Some(n) = w.strip_suffix(':') {
                if let Some(score) = words.peek().and_then(|s| s.parse::<i32>().ok()) {
                    words.next();
                    name.push(n);
                    out.push(TeamScore {
                        team: name.join(" "),
                        score,
                    });
                    name.clear();
                    continue;
                }
            }
            name.push(w);
        }
        name.is_empty().then_some(out)
    }

    /// The value qfusion writes for these scores (`" A: 1 B: 2"`; empty for none).
    pub fn to_value(scores: &[TeamScore]) -> String {
        scores
            .iter()
            .map(|s| format!(" {}: {}", s.team, s.score))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn playing(e: u32, l: Option<u32>, o: bool, s: bool, t: bool) -> MatchTime {
        MatchTime::Playing {
            elapsed_secs: e,
            limit_secs: l,
            overtime: o,
            sudden_death: s,
            timeout: t,
        }
    }

    #[test]
    fn every_form_of_match_time() {
        for (value, want) in [
            ("Warmup", Some(MatchTime::Warmup)),
            ("COUNTDOWN", Some(MatchTime::Countdown)),
            ("Finished", Some(MatchTime::Finished)),
            ("", None),
            ("17:13", Some(playing(1033, None, false, false, false))),
            (
                "03:07 / 20:00",
                Some(playing(187, Some(1200), false, false, false)),
            ),
            (
                "21:30 / 20:00 overtime",
                Some(playing(1290, Some(1200), true, false, false)),
            ),
            (
                "11:02 suddendeath",
                Some(playing(662, None, false, true, false)),
            ),
            (
                "04:59 / 15:00 (in timeout)",
                Some(playing(299, Some(900), false, false, true)),
            ),
            (
                "22:00 / 20:00 overtime (in timeout)",
                Some(playing(1320, Some(1200), true, false, true)),
            ),
            ("soon", Some(MatchTime::Other { raw: "soon".into() })),
            ("1:99", Some(MatchTime::Other { raw: "1:99".into() })),
        ] {
            let got = MatchTime::parse(value.as_bytes());
            assert_eq!(got, want, "{value:?}");
            if let Some(m @ MatchTime::Playing { .. }) = got {
                assert_eq!(MatchTime::parse(m.to_value().as_bytes()), Some(m));
            }
        }
        assert_eq!(
            playing(1290, Some(1200), true, false, true).to_value(),
            "21:30 / 20:00 overtime (in timeout)"
        );
    }

    #[test]
    fn team_scores() {
        let s = TeamScore::parse_all(b" ALPHA: 3 BETA: 14").unwrap();
        assert_eq!(
            s,
            [
                TeamScore {
                    team: "ALPHA".into(),
                    score: 3
                },
                TeamScore {
                    team: "BETA".into(),
                    score: 14
                }
            ]
        );
        assert_eq!(TeamScore::to_value(&s), " ALPHA: 3 BETA: 14");
        let s = TeamScore::parse_all(b"Red: 1 Blue: -2 Green: 3 Yellow: 4").unwrap();
        assert_eq!(s.len(), 4);
        assert_eq!(s[1].score, -2);
        let s = TeamScore::parse_all(b" The Reds: 5 B: 0").unwrap();
        assert_eq!(s[0].team, "The Reds");
        assert_eq!(TeamScore::parse_all(b""), Some(vec![]));
        assert_eq!(TeamScore::parse_all(b"whatever"), None);
        assert_eq!(TeamScore::parse_all(b"A: x"), None);
    }
}
