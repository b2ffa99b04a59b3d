//! Join links: a URL that starts the game's client on a server, for the games whose client
//! registers a URL scheme; the pages show a copy-address button for the rest. Each scheme is
//! checked in the client's source:
//!
//! - DDNet (`ddnet`, and Teeworlds 0.6 servers, which the DDNet client joins):
//!   `ddnet://HOST:PORT` — ddnet/ddnet `src/engine/client/client.h`
//!   (`CONNECTLINK_DOUBLE_SLASH "ddnet://"`, handled in `src/engine/client/client.cpp`).
//!   Teeworlds 0.7 servers are joined by DDNet as `tw-0.7+udp://` addresses only from its
//!   own server list, not from a link, so they get the copy button.
//! - Quake III Arena (`q3`): `quake3://connect/HOST:PORT` — ioquake3
//!   `code/sys/sys_main.c`, `Sys_ParseProtocolUri` ("quake3://connect/example.com:27950";
//!   the scheme is the build's `PROTOCOL_HANDLER`, `quake3` in ioquake3's own builds).
//!   OpenArena 0.8.8 and the other ioq3-based games predate that handler or build without
//!   it, so they get the copy button.
//! - Warsow (`warsow`): `warsow://HOST:PORT` — Warsow/qfusion `source/qcommon/version.warsow.h`
//!   (`APP_URI_SCHEME APPLICATION "://"`, `APPLICATION "Warsow"`; schemes are
//!   case-insensitive).

/// The join URL of a server of `game` at `addr` (`ip:port`), where the game's client has a
/// URL scheme.
pub fn join_url(game: &str, addr: &str) -> Option<String> {
    // An address is `ip:port` or `[v6]:port` as the tracker writes it: nothing to escape.
    if !addr
        .bytes()
        .all(|b| b.is_ascii_hexdigit() || matches!(b, b'.' | b':' | b'[' | b']'))
    {
        return None;
    }
    match game {
        "ddnet" | "teeworlds" => Some(format!("ddnet://{addr}")),
        "q3" => Some(format!("quake3://connect/{addr}")),
        "warsow" => Some(format!("warsow://{addr}")),
        _ => None,
    }
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
    }
}
