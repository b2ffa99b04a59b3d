//! What a server's scores count: [`ScoreKind`].

use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};

/// What the players' scores count, where the server says so ([`ServerInfo::score_kind`]):
/// points (frags, captures…) or race times (DDNet's `client_score_kind`, Teeworlds 0.7's
/// time-score flag).
///
/// [`ServerInfo::score_kind`]: super::ServerInfo::score_kind
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ScoreKind {
    /// Points: more is better.
    Points,
    /// Race times (seconds or as the game sends them).
    Time,
}

impl ScoreKind {
    /// The JSON name: `points` or `time`.
    pub fn id(self) -> &'static str {
        match self {
            ScoreKind::Points => "points",
            ScoreKind::Time => "time",
        }
    }

    /// The kind a server's own word names, by its first word (DDNet sends `time` or
    /// `points`, possibly followed by more); `None` for anything else.
    pub fn from_word(word: &str) -> Option<ScoreKind> {
        if word.starts_with("time") {
            Some(ScoreKind::Time)
        } else if word.starts_with("points") {
            Some(ScoreKind::Points)
        } else {
            None
        }
    }
}

impl fmt::Display for ScoreKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// A name that is not a [`ScoreKind`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a score kind (points or time): {0:?}")]
pub struct UnknownScoreKind(pub String);

impl FromStr for ScoreKind {
    type Err = UnknownScoreKind;
    /// Exactly `points` or `time`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "points" => Ok(ScoreKind::Points),
            "time" => Ok(ScoreKind::Time),
            other => Err(UnknownScoreKind(other.to_string())),
        }
    }
}

impl Serialize for ScoreKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in [ScoreKind::Points, ScoreKind::Time] {
            assert_eq!(k.id().parse::<ScoreKind>(), Ok(k));
            assert_eq!(serde_json::to_string(&k).unwrap(), format!("\"{k}\""));
        }
        assert!("race".parse::<ScoreKind>().is_err());
        assert_eq!(ScoreKind::from_word("time:1"), Some(ScoreKind::Time));
        assert_eq!(ScoreKind::from_word("points"), Some(ScoreKind::Points));
        assert_eq!(ScoreKind::from_word("laps"), None);
    }
}
