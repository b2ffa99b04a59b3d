//! The games of this family, with their protocol numbers, master names and ports.
//!
//! Sources: qfusion `source/qcommon/version.h` (`APP_PROTOCOL_VERSION`, `APPLICATION`),
//! `source/server/sv_oob.c` (`heartbeat DarkPlaces`); Warfork `version.warfork.h`;
//! DarkPlaces `netconn.c`; dpmaster `doc/techinfo.txt`.

use std::fmt;

use fragstat_quake3_oob::GetServers;

/// A game of the family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WarsowGame {
    /// Warsow 2.1 (qfusion), protocol 22 (Warsow 2.0 and 2.01 used 21).
    Warsow,
    /// Warfork (the qfusion fork on Steam), protocol 22.
    Warfork,
    /// Nexuiz Classic 2.5 (DarkPlaces), protocol 3.
    Nexuiz,
}

impl WarsowGame {
    /// Every game.
    pub const ALL: [WarsowGame; 3] = [WarsowGame::Warsow, WarsowGame::Warfork, WarsowGame::Nexuiz];

    /// The registry id.
    pub fn id(&self) -> &'static str {
        match self {
            WarsowGame::Warsow => "warsow",
            WarsowGame::Warfork => "warfork",
            WarsowGame::Nexuiz => "nexuiz",
        }
    }

    /// A human title.
    pub fn title(&self) -> &'static str {
        match self {
            WarsowGame::Warsow => "Warsow",
            WarsowGame::Warfork => "Warfork",
            WarsowGame::Nexuiz => "Nexuiz",
        }
    }

    /// Other names accepted on the command line (qstat's type names among them).
    pub fn aliases(&self) -> &'static [&'static str] {
        match self {
            WarsowGame::Warsow => &["warsows", "qfusion"],
            WarsowGame::Warfork => &["warforks"],
            WarsowGame::Nexuiz => &["nexuizs"],
        }
    }

    /// True for the qfusion engines (Warsow, Warfork); false for DarkPlaces.
    pub fn is_qfusion(&self) -> bool {
        matches!(self, WarsowGame::Warsow | WarsowGame::Warfork)
    }

    /// The network protocol (`protocol` key; masters filter on it; the short `info` query
    /// must name it). Warsow 2.1: 22, as qstat's `warsowm` and the Warsow client ask for
    /// (Warsow 2.0 and 2.01: 21); Warfork: 22 (its 2.1.5 sources say 26); DarkPlaces: 3.
    pub fn protocol(&self) -> i32 {
        match self {
            WarsowGame::Warsow => 22,
            WarsowGame::Warfork => 22,
            WarsowGame::Nexuiz => 3,
        }
    }

    /// The game name masters know it by (`getservers <name> <protocol>`; the `gamename` key).
    pub fn master_gamename(&self) -> &'static str {
        match self {
            WarsowGame::Warsow => "Warsow",
            WarsowGame::Warfork => "Warfork",
            WarsowGame::Nexuiz => "Nexuiz",
        }
    }

    /// The default game server port (qfusion `PORT_SERVER` 44400; DarkPlaces 26000).
    pub fn default_port(&self) -> u16 {
        match self {
            WarsowGame::Warsow | WarsowGame::Warfork => 44400,
            WarsowGame::Nexuiz => 26000,
        }
    }

    /// The default master port (dpmaster 27950).
    pub fn master_port(&self) -> u16 {
        27950
    }

    /// The heartbeat every one of them sends ("a protocol name here, not a game name").
    pub fn heartbeat(&self) -> &'static str {
        "DarkPlaces"
    }

    /// The master request the game's own browser sends: `getservers <name> <protocol> full
    /// empty` (qfusion serverlist.cpp; DarkPlaces), or the `getserversExt` form with IPv6.
    pub fn getservers(&self, ext: bool, gamename: Option<&str>) -> GetServers {
        let name = gamename.unwrap_or(self.master_gamename());
        let mut g = GetServers::ext(name, self.protocol());
        if !ext {
            g.ext = false;
            g.options = vec![b"full".to_vec(), b"empty".to_vec()];
        }
        g
    }
}

impl fmt::Display for WarsowGame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Encode;
    use fragstat_quake3_oob::Packet;

    #[test]
    fn master_requests_as_the_games_send_them() {
        let bytes = Packet::GetServers(WarsowGame::Warsow.getservers(false, None))
            .to_bytes()
            .unwrap();
        assert_eq!(bytes, b"\xff\xff\xff\xffgetservers Warsow 22 full empty\n");
        let bytes = Packet::GetServers(WarsowGame::Warfork.getservers(true, None))
            .to_bytes()
            .unwrap();
        assert_eq!(
            bytes,
            b"\xff\xff\xff\xffgetserversExt Warfork 22 empty full ipv4 ipv6\n"
        );
        let bytes = Packet::GetServers(WarsowGame::Nexuiz.getservers(false, Some("Xonotic")))
            .to_bytes()
            .unwrap();
        assert_eq!(bytes, b"\xff\xff\xff\xffgetservers Xonotic 3 full empty\n");
    }
}
