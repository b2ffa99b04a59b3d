//! Players who opt out, and what the about page says (docs/tracker.md, "Privacy").
//!
//! ```toml
//! [privacy]
//! opt_out = ["Alice", "bob the builder"]   # never stored: compared as the site shows names
//! about = "Run by … Mail privacy@example.org to be forgotten."   # the about page's text
//! about_file = "/etc/fragstat/about.txt"   # … or read from a file at start (not both)
//! ```
//!
//! A name is compared as the site shows it: colours stripped, case-insensitively
//! ([`crate::store::name_key`]), in every dialect. Its players are taken out of every round's
//! records before anything is written or announced, so they are in no session, player row,
//! search, page, API answer, event or webhook. `fragstat track forget NAME` does the same for
//! a name from then on (kept in the database's `forgotten` table) and deletes what was kept
//! of it.

use std::collections::BTreeSet;
use std::path::PathBuf;

use fragstat::core::model::Text;
use fragstat::core::record::Record;
use serde::Deserialize;

use crate::store::name_key;

/// Most names `opt_out` takes.
pub const MAX_OPT_OUT: usize = 10_000;
/// Most bytes of the about page's text.
pub const MAX_ABOUT_BYTES: usize = 64 * 1024;

/// `[privacy]`: the opt-out list and the about page's text.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PrivacyConfig {
    /// Player names never stored (as the site shows them: colours stripped; any case).
    pub opt_out: Vec<String>,
    /// The about page's text: paragraphs apart by a blank line; `http(s)://` and `mailto:`
    /// words become links.
    pub about: Option<String>,
    /// The about page's text, read from this file when the tracker starts.
    pub about_file: Option<PathBuf>,
}

impl PrivacyConfig {
    /// Checks the values (not the file, read by [`PrivacyConfig::about_text`]).
    pub fn check(&self) -> Result<(), String> {
        if self.opt_out.len() > MAX_OPT_OUT {
            return Err(format!(
                "[privacy] opt_out: at most {MAX_OPT_OUT} names (forget the rest with `fragstat track forget`)"
            ));
        }
        if let Some(n) = self.opt_out.iter().find(|n| n.trim().is_empty()) {
            return Err(format!("[privacy] opt_out: an empty name ({n:?})"));
        }
        if self.about.is_some() && self.about_file.is_some() {
            return Err("[privacy]: about or about_file, not both".into());
        }
        if self
            .about
            .as_ref()
            .is_some_and(|a| a.len() > MAX_ABOUT_BYTES)
        {
            return Err(format!("[privacy] about: at most {MAX_ABOUT_BYTES} bytes"));
        }
        Ok(())
    }

    /// The about page's text: `about`, or `about_file`'s contents (read now; an unreadable
    /// or oversized file is an error naming it), or none.
    pub fn about_text(&self) -> Result<Option<String>, String> {
        let Some(path) = &self.about_file else {
            return Ok(self.about.clone());
        };
        let bytes = std::fs::read(path)
            .map_err(|e| format!("[privacy] about_file {}: {e}", path.display()))?;
        if bytes.len() > MAX_ABOUT_BYTES {
            return Err(format!(
                "[privacy] about_file {}: at most {MAX_ABOUT_BYTES} bytes",
                path.display()
            ));
        }
        Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
    }
}

/// The names whose players are never stored: the configuration's and those forgotten.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OptOut {
    names: BTreeSet<String>,
}

impl OptOut {
    /// The names `names` (as shown, any case), keyed ([`name_key`]).
    pub fn new<'a>(names: impl IntoIterator<Item = &'a str>) -> OptOut {
        OptOut {
            names: names.into_iter().map(name_key).collect(),
        }
    }

    /// No name.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The names, keyed.
    pub fn names(&self) -> impl Iterator<Item = &String> {
        self.names.iter()
    }

    /// Whether a player named `name` opted out.
    pub fn matches(&self, name: &Text) -> bool {
        !self.names.is_empty() && self.names.contains(&name_key(&name.display()))
    }

    /// Takes the players who opted out out of `records`' lists (their servers' counts stay:
    /// they are counted, never named). How many were taken out.
    pub fn filter(&self, records: &mut [Record]) -> usize {
        if self.names.is_empty() {
            return 0;
        }
        let mut n = 0;
        for r in records {
            if let Some(ps) = r.info.as_mut().and_then(|i| i.players.as_mut()) {
                let before = ps.len();
                ps.retain(|p| !self.matches(&p.name));
                n += before - ps.len();
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use fragstat::core::model::{Dialect, Player, ServerInfo};

    use super::*;

    #[test]
    fn names_match_as_shown_in_any_case_and_dialect() {
        let o = OptOut::new(["Alice", "BOB the builder"]);
        let t = |s: &str, d| Text::new(s.as_bytes().to_vec(), d);
        assert!(o.matches(&t("^1Ali^7ce", Dialect::Quake)));
        assert!(o.matches(&t("ALICE", Dialect::Plain)));
        assert!(o.matches(&t("bob THE builder", Dialect::Plain)));
        assert!(!o.matches(&t("Alice2", Dialect::Quake)));
        assert!(!o.matches(&t("Ali", Dialect::Quake)));
        // A DDNet name keeps its caret: `^1Alice` there is not "Alice".
        assert!(!o.matches(&t("^1Alice", Dialect::Plain)));
        assert!(!OptOut::default().matches(&t("Alice", Dialect::Quake)));
    }

    #[test]
    fn filter_takes_the_players_out_and_keeps_the_count() {
        let mut info = ServerInfo::default();
        info.players = Some(
            ["^2alice", "carol"]
                .iter()
                .map(|n| Player::new(Text::new(n.as_bytes().to_vec(), Dialect::Quake)))
                .collect(),
        );
        info.num_players = 2;
        let mut records = vec![Record::online(
            Some("127.0.0.1:27960".into()),
            "q3",
            info,
            None,
        )];
        assert_eq!(OptOut::new(["ALICE"]).filter(&mut records), 1);
        let info = records[0].info.as_ref().unwrap();
        assert_eq!(info.num_players, 2);
        let names: Vec<String> = info
            .players
            .iter()
            .flatten()
            .map(|p| p.name.display())
            .collect();
        assert_eq!(names, ["carol"]);
    }

    #[test]
    fn config_is_checked() {
        let ok = PrivacyConfig {
            opt_out: vec!["a".into()],
            about: Some("x".into()),
            about_file: None,
        };
        assert!(ok.check().is_ok());
        let both = PrivacyConfig {
            about_file: Some("/x".into()),
            ..ok.clone()
        };
        assert!(both.check().unwrap_err().contains("not both"));
        let empty = PrivacyConfig {
            opt_out: vec![" ".into()],
            ..ok.clone()
        };
        assert!(empty.check().unwrap_err().contains("empty name"));
        let missing = PrivacyConfig {
            about: None,
            about_file: Some("/nonexistent/about.txt".into()),
            ..ok
        };
        assert!(missing
            .about_text()
            .unwrap_err()
            .contains("/nonexistent/about.txt"));
    }
}
