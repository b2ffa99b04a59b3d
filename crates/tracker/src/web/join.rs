//! Join links: a URL that starts the game's client on a server, for the games whose client
//! registers a URL scheme (the registry's [`GameMeta::join_scheme`], each checked in the
//! client's source by its family); the pages show a copy-address button for the rest.
//!
//! [`GameMeta::join_scheme`]: fragstat::core::registry::GameMeta::join_scheme

/// The join URL of a server of `game` at `addr` (`ip:port`), where the game's client has a
/// URL scheme ([`GameMeta::join_url`]); `None` for a game the registry does not know.
///
/// [`GameMeta::join_url`]: fragstat::core::registry::GameMeta::join_url
pub fn join_url(game: &str, addr: &str) -> Option<String> {
    fragstat::game(game)?.join_url(addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_per_game() {
        assert_eq!(
            join_url("ddnet", "127.0.0.1:8303").as_deref(),
            Some("ddnet://127.0.0.1:8303")
        );
        assert_eq!(
            join_url("q3", "[::1]:27960").as_deref(),
            Some("quake3://connect/[::1]:27960")
        );
        assert_eq!(
            join_url("warsow", "127.0.0.1:44400").as_deref(),
            Some("warsow://127.0.0.1:44400")
        );
        assert_eq!(join_url("openarena", "127.0.0.1:27960"), None);
        assert_eq!(join_url("teeworlds07", "127.0.0.1:8303"), None);
        assert_eq!(join_url("q3", "x\"><script>:1"), None);
        assert_eq!(join_url("no-such-game", "127.0.0.1:1"), None);
    }

    /// Every registered game's link is its registry entry's: a game added to the registry
    /// with a scheme gets its link with no change here.
    #[test]
    fn every_registered_game_links_as_its_registry_entry_says() {
        let addr = "127.0.0.1:1";
        let mut linked = 0;
        for g in fragstat::games() {
            let want = g.meta().join_scheme.map(|s| format!("{s}{addr}"));
            assert_eq!(join_url(g.id(), addr), want, "{}", g.id());
            linked += usize::from(want.is_some());
        }
        assert!(
            linked >= 4,
            "ddnet, teeworlds, q3 and warsow link: {linked}"
        );
    }
}
