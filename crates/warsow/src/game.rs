//! The games of this family, with their protocol numbers, master names and ports.
//!
//! Sources: qfusion `source/qcommon/version.h` (`APP_PROTOCOL_VERSION`, `APPLICATION`),
//! `source/server/sv_oob.c` (`heartbeat DarkPlaces`); Warfork `version.warfork.h`;
//! DarkPlaces `netconn.c` (the master request, lines 3839-3854 of the 2024 tree; ports
//! 26000 and 27950), `com_game.c` (the network game names `Nexuiz`, `Xonotic`); dpmaster
//! `doc/techinfo.txt`; Xonotic `qcsrc/common/gamemodes/gamemode/*` and Nexuiz 2.5.2's
//! `maps/*.mapinfo` (game type short names); qstat's `qstat.cfg` (`XONOTICS`, `XONOTICM`).

use std::fmt;

use fragstat_quake3_oob::GetServers;

/// A game type of a DarkPlaces game: its short name (the first field of `qcstatus`) and
/// whether its player lines carry a team.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct GameType {
    /// The short name, as `qcstatus` and the `gametype` field have it (`dm`, `ctf`).
    pub name: &'static str,
    /// A human title.
    pub title: &'static str,
    /// How many teams its players are in by default: 0 outside team games. In team games
    /// the engine writes each player's team before the name (`score ping team "name"`; see
    /// [`WarsowGame::team_column`]).
    pub teams: u8,
}

const fn gt(name: &'static str, title: &'static str, teams: u8) -> GameType {
    GameType { name, title, teams }
}

/// Nexuiz 2.5.2's game types: the `type` lines of the `maps/*.mapinfo` files in Debian's
/// `nexuiz-data` `data.pk3`. Each was seen in `qcstatus` on a real server (Debian's
/// `nexuiz-server` with `+g_tdm 1`, `+g_domination 1`, `+g_keyhunt 1`…), the team column in
/// `tdm`, `ctf`, `dom`, `kh` and `ons`, and three teams in `kh` (`5:…:13:…:14:…`); except
/// `cts`, which that server ran as `rc`.
const NEXUIZ_GAMETYPES: [GameType; 11] = [
    gt("dm", "Deathmatch", 0),
    gt("tdm", "Team Deathmatch", 2),
    gt("ctf", "Capture the Flag", 2),
    gt("dom", "Domination", 2),
    gt("kh", "Key Hunt", 3),
    gt("ons", "Onslaught", 2),
    gt("rune", "Rune Match", 0),
    gt("lms", "Last Man Standing", 0),
    gt("arena", "Arena", 0),
    gt("cts", "Complete the Stage", 0),
    gt("rc", "Race", 0),
];

/// Xonotic's game types: the `gamemode/*` modules of `qcsrc/common/gamemodes/gamemode/`
/// (xonotic-data.pk3dir `_mod.inc`). Confirmed short names: `dm` and `ctf` (real replies:
/// xrcon's Xonotic 0.7.0 capture, `ctf:0.7.0:P315:…`) and `ca` (`gametype_init(this,
/// _("Clan Arena"),"ca",…)` in `clanarena/clanarena.qh`); the others are the names the
/// modules are known by, not each checked in its `gametype_init`. Team games are those that
/// turn teams on (`ActivateTeamplay()` in 0.7's `qcsrc/server/teamplay.qc`,
/// `GameRules_teams(true)` since); their default team counts are Nexuiz's (key hunt 3), not
/// checked.
const XONOTIC_GAMETYPES: [GameType; 17] = [
    gt("dm", "Deathmatch", 0),
    gt("tdm", "Team Deathmatch", 2),
    gt("ctf", "Capture the Flag", 2),
    gt("ca", "Clan Arena", 2),
    gt("dom", "Domination", 2),
    gt("kh", "Key Hunt", 3),
    gt("ft", "Freeze Tag", 2),
    gt("as", "Assault", 2),
    gt("ons", "Onslaught", 2),
    gt("nb", "Nexball", 2),
    gt("lms", "Last Man Standing", 0),
    gt("duel", "Duel", 0),
    gt("race", "Race", 0),
    gt("cts", "Complete the Stage", 0),
    gt("ka", "Keepaway", 0),
    gt("inv", "Invasion", 0),
    gt("surv", "Survival", 0),
];

/// A game of the family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WarsowGame {
    /// Warsow 2.1 (qfusion), protocol 22 (Warsow 2.0 and 2.01 used 21).
    Warsow,
    /// Warfork (the qfusion fork on Steam), protocol 27 (2.16).
    Warfork,
    /// Nexuiz Classic 2.5 (DarkPlaces), protocol 3.
    Nexuiz,
    /// Xonotic (DarkPlaces), protocol 3.
    Xonotic,
}

impl WarsowGame {
    /// Every game.
    pub const ALL: [WarsowGame; 4] = [
        WarsowGame::Warsow,
        WarsowGame::Warfork,
        WarsowGame::Nexuiz,
        WarsowGame::Xonotic,
    ];

    /// The registry id.
    pub fn id(&self) -> &'static str {
        match self {
            WarsowGame::Warsow => "warsow",
            WarsowGame::Warfork => "warfork",
            WarsowGame::Nexuiz => "nexuiz",
            WarsowGame::Xonotic => "xonotic",
        }
    }

    /// A human title.
    pub fn title(&self) -> &'static str {
        match self {
            WarsowGame::Warsow => "Warsow",
            WarsowGame::Warfork => "Warfork",
            WarsowGame::Nexuiz => "Nexuiz",
            WarsowGame::Xonotic => "Xonotic",
        }
    }

    /// Other names accepted on the command line (qstat's type names among them).
    pub fn aliases(&self) -> &'static [&'static str] {
        match self {
            WarsowGame::Warsow => &["warsows", "qfusion"],
            WarsowGame::Warfork => &["warforks"],
            WarsowGame::Nexuiz => &["nexuizs"],
            WarsowGame::Xonotic => &["xonotics"],
        }
    }

    /// True for the qfusion engines (Warsow, Warfork); false for DarkPlaces.
    pub fn is_qfusion(&self) -> bool {
        matches!(self, WarsowGame::Warsow | WarsowGame::Warfork)
    }

    /// True for the DarkPlaces games (Nexuiz, Xonotic).
    pub fn is_darkplaces(&self) -> bool {
        !self.is_qfusion()
    }

    /// The game types of a DarkPlaces game (empty for qfusion, whose `gametype` key is the
    /// name itself and whose player lines always carry a team).
    pub fn gametypes(&self) -> &'static [GameType] {
        match self {
            WarsowGame::Nexuiz => &NEXUIZ_GAMETYPES,
            WarsowGame::Xonotic => &XONOTIC_GAMETYPES,
            WarsowGame::Warsow | WarsowGame::Warfork => &[],
        }
    }

    /// The game type called `name` (a `qcstatus` short name), when the game has it.
    pub fn gametype(&self, name: &str) -> Option<&'static GameType> {
        self.gametypes().iter().find(|g| g.name == name)
    }

    /// Whether a server of this game running game type `name` writes a team on each player
    /// line (`score ping team "name"`). DarkPlaces writes it when the `teamplay` cvar is
    /// above 0 (netconn.c:2819-2835). Nexuiz's game code sets that cvar in its team games
    /// (`ActivateTeamplay`: `teamplay_default`, 4; seen in tdm and ctf on a real server);
    /// Xonotic's does since `GameRules_teams` (`qcsrc/common/gamemodes/sv_rules.qc`:
    /// `cvar_set("teamplay", "2"); // DP needs this for sending proper getstatus replies.`),
    /// the 0.8 releases. Xonotic 0.7's `ActivateTeamplay()` set only its QuakeC global
    /// (`qcsrc/server/teamplay.qc`), which is why the public 0.7.0 CTF reply has no team
    /// column; the decoder takes both.
    pub fn team_column(&self, name: &str) -> bool {
        self.gametype(name).is_some_and(|g| g.teams > 0)
    }

    /// The network protocol (`protocol` key; masters filter on it; the short `info` query
    /// must name it). Warsow 2.1: 22, as qstat's `warsowm` and the Warsow client ask for
    /// (Warsow 2.0 and 2.01: 21); Warfork 2.16: 27 (TeamForbiddenLLC/warfork-qfusion
    /// `source/qcommon/version.h` @073dce79: `APP_PROTOCOL_VERSION 27` under `PUBLIC_BUILD`,
    /// 2400 in other builds; qstat configs still ask 22, GameserverLister 23); DarkPlaces: 3
    /// (`NET_PROTOCOL_VERSION`). Warsow 0.3 used 9: ask a master or a server for another
    /// protocol with [`MasterOptions::protocol`](fragstat_core::registry::MasterOptions::protocol)
    /// and [`Ask::protocol`](fragstat_core::registry::Ask::protocol).
    pub fn protocol(&self) -> i32 {
        match self {
            WarsowGame::Warsow => 22,
            WarsowGame::Warfork => 27,
            WarsowGame::Nexuiz | WarsowGame::Xonotic => 3,
        }
    }

    /// The game name masters know it by (`getservers <name> <protocol>`; the `gamename` key).
    pub fn master_gamename(&self) -> &'static str {
        match self {
            WarsowGame::Warsow => "Warsow",
            WarsowGame::Warfork => "Warfork",
            WarsowGame::Nexuiz => "Nexuiz",
            WarsowGame::Xonotic => "Xonotic",
        }
    }

    /// The default game server port (qfusion `PORT_SERVER` 44400; DarkPlaces 26000).
    pub fn default_port(&self) -> u16 {
        match self {
            WarsowGame::Warsow | WarsowGame::Warfork => 44400,
            WarsowGame::Nexuiz | WarsowGame::Xonotic => 26000,
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

    /// The master request the game's own browser sends: qfusion `getservers <name>
    /// <protocol> full empty` (serverlist.cpp), DarkPlaces `getservers <name> 3 empty full`
    /// (netconn.c:3839-3854), or the `getserversExt … empty full ipv4 ipv6` form (`ext`).
    /// `gamename` and `protocol` replace the game's own.
    pub fn getservers(
        &self,
        ext: bool,
        gamename: Option<&str>,
        protocol: Option<i32>,
    ) -> GetServers {
        let name = gamename.unwrap_or(self.master_gamename());
        let mut g = GetServers::ext(name, protocol.unwrap_or(self.protocol()));
        if !ext {
            g.ext = false;
            g.options = if self.is_qfusion() {
                vec![b"full".to_vec(), b"empty".to_vec()]
            } else {
                vec![b"empty".to_vec(), b"full".to_vec()]
            };
        }
        g
    }
}

impl WarsowGame {
    /// How the game's client draws colour codes: qfusion's rule for Warsow and Warfork,
    /// DarkPlaces' for Nexuiz and Xonotic (docs/protocols/colours.md).
    pub fn dialect(&self) -> fragstat_core::model::Dialect {
        if self.is_qfusion() {
            fragstat_core::model::Dialect::Qfusion
        } else {
            fragstat_core::model::Dialect::DarkPlaces
        }
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
        let bytes = |g: GetServers| Packet::GetServers(g).to_bytes().unwrap();
        assert_eq!(
            bytes(WarsowGame::Warsow.getservers(false, None, None)),
            b"\xff\xff\xff\xffgetservers Warsow 22 full empty\n"
        );
        // Warsow 0.3, as the seed's document has it.
        assert_eq!(
            bytes(WarsowGame::Warsow.getservers(false, None, Some(9))),
            b"\xff\xff\xff\xffgetservers Warsow 9 full empty\n"
        );
        assert_eq!(
            bytes(WarsowGame::Warfork.getservers(true, None, None)),
            b"\xff\xff\xff\xffgetserversExt Warfork 27 empty full ipv4 ipv6\n"
        );
        assert_eq!(
            bytes(WarsowGame::Xonotic.getservers(false, None, None)),
            b"\xff\xff\xff\xffgetservers Xonotic 3 empty full\n"
        );
        assert_eq!(
            bytes(WarsowGame::Xonotic.getservers(true, None, None)),
            b"\xff\xff\xff\xffgetserversExt Xonotic 3 empty full ipv4 ipv6\n"
        );
        assert_eq!(
            bytes(WarsowGame::Nexuiz.getservers(false, Some("Xonotic"), None)),
            b"\xff\xff\xff\xffgetservers Xonotic 3 empty full\n"
        );
    }

    #[test]
    fn gametypes_and_team_columns() {
        let n = WarsowGame::Nexuiz;
        assert!(n.team_column("tdm") && n.team_column("ctf"));
        assert!(!n.team_column("dm") && !n.team_column("unknown"));
        assert_eq!(n.gametype("ctf").map(|g| g.title), Some("Capture the Flag"));
        let x = WarsowGame::Xonotic;
        assert_eq!(x.gametype("ca").map(|g| g.teams), Some(2));
        assert_eq!(n.gametype("kh").map(|g| g.teams), Some(3));
        assert!(x.team_column("ctf") && !x.team_column("dm"));
        assert!(WarsowGame::Warsow.gametypes().is_empty());
        for g in [n, x] {
            let names: Vec<&str> = g.gametypes().iter().map(|t| t.name).collect();
            let mut unique = names.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(unique.len(), names.len(), "{g}");
        }
    }
}
