//! What [`GameMeta`] tells a front end about a game's servers beyond their queries: the URL
//! that joins one, and whether its scores are race times.

use super::GameMeta;
use crate::model::ScoreKind;

impl GameMeta {
    /// Sets the join URL scheme ([`GameMeta::join_scheme`]).
    pub fn join_scheme(mut self, scheme: impl Into<Option<&'static str>>) -> Self {
        self.join_scheme = scheme.into();
        self
    }

    /// Sets the race game types ([`GameMeta::race_gametypes`]).
    pub fn race_gametypes(mut self, gametypes: &'static [&'static str]) -> Self {
        self.race_gametypes = gametypes;
        self
    }

    /// Sets whether servers say what their scores count ([`GameMeta::declares_score_kind`]).
    pub fn declares_score_kind(mut self, declares: bool) -> Self {
        self.declares_score_kind = declares;
        self
    }

    /// The URL that has the game's client join the server at `addr` (`ip:port` or
    /// `[v6]:port`): the game's [`GameMeta::join_scheme`] then the address; `None` for a game
    /// whose client has no URL scheme, or an address with anything but hex digits, dots,
    /// colons and brackets (nothing to escape in what is returned).
    pub fn join_url(&self, addr: &str) -> Option<String> {
        let scheme = self.join_scheme?;
        let plain = addr
            .bytes()
            .all(|b| b.is_ascii_hexdigit() || matches!(b, b'.' | b':' | b'[' | b']'));
        (plain && !addr.is_empty()).then(|| format!("{scheme}{addr}"))
    }

    /// Whether a server of this game with game type `gametype` counts race times: as it says
    /// (`declared`, for any game), else when its game type contains one of the game's
    /// [`GameMeta::race_gametypes`].
    pub fn scores_are_times(&self, gametype: Option<&str>, declared: Option<ScoreKind>) -> bool {
        if let Some(k) = declared {
            return k == ScoreKind::Time;
        }
        let gt = gametype.unwrap_or_default().to_ascii_lowercase();
        self.race_gametypes.iter().any(|r| gt.contains(r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn game() -> GameMeta {
        GameMeta::new("fam", "g", "G", 1)
    }

    #[test]
    fn join_url_is_the_scheme_then_the_address() {
        assert_eq!(game().join_url("127.0.0.1:1"), None, "no scheme, no link");
        let g = game().join_scheme("g://connect/");
        assert_eq!(
            g.join_url("127.0.0.1:1").as_deref(),
            Some("g://connect/127.0.0.1:1")
        );
        assert_eq!(
            g.join_url("[::1]:1").as_deref(),
            Some("g://connect/[::1]:1")
        );
        for bad in ["x\"><script>:1", "a b:1", "", "1.2.3.4:1/x"] {
            assert_eq!(g.join_url(bad), None, "{bad}");
        }
    }

    #[test]
    fn race_times_as_declared_else_by_game_type() {
        let g = game().race_gametypes(&["race", "fastcap"]);
        assert!(g.scores_are_times(Some("My Race"), None));
        assert!(g.scores_are_times(Some("FastCap"), None));
        assert!(!g.scores_are_times(Some("DM"), None));
        assert!(!g.scores_are_times(None, None));
        assert!(!g.scores_are_times(Some("race"), Some(ScoreKind::Points)));
        assert!(g.scores_are_times(Some("DM"), Some(ScoreKind::Time)));
        assert!(
            !game().scores_are_times(Some("race"), None),
            "no rule, no race"
        );
        assert!(game().scores_are_times(None, Some(ScoreKind::Time)));
    }

    #[test]
    fn declares_score_kind_is_off_unless_set() {
        assert!(!game().declares_score_kind);
        assert!(game().declares_score_kind(true).declares_score_kind);
    }
}
