//! The games that speak the Quake III out-of-band protocol, with their numbers and names.
//!
//! Sources: ioq3 `code/qcommon/q_shared.h` and `code/server/sv_main.c`; W:ET
//! `src/server/sv_main.c` (`HEARTBEAT_GAME`, `HEARTBEAT_DEAD`); dpmaster `doc/techinfo.txt`.

use std::fmt;
use std::str::FromStr;

use crate::master::GetServers;

/// A Quake III out-of-band game.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Quake3Game {
    /// Quake III Arena, protocol 68.
    Quake3,
    /// Wolfenstein: Enemy Territory, protocol 84.
    EnemyTerritory,
    /// OpenArena (ioquake3), protocol 71.
    OpenArena,
    /// Return to Castle Wolfenstein, protocol 60.
    Rtcw,
    /// Any other Q3-protocol game, named by its protocol number (`oob:NN` on the command line).
    Other(i32),
}

impl Quake3Game {
    /// Every named game.
    pub const ALL: [Quake3Game; 4] = [
        Quake3Game::Quake3,
        Quake3Game::EnemyTerritory,
        Quake3Game::OpenArena,
        Quake3Game::Rtcw,
    ];

    /// The short name used on the command line and in JSON (`q3`, `et`, `openarena`, `rtcw`, `oob:NN`).
    pub fn id(&self) -> String {
        match self {
            Quake3Game::Quake3 => "q3".into(),
            Quake3Game::EnemyTerritory => "et".into(),
            Quake3Game::OpenArena => "openarena".into(),
            Quake3Game::Rtcw => "rtcw".into(),
            Quake3Game::Other(p) => format!("oob:{p}"),
        }
    }

    /// Other names for it on the command line: qstat's server types and short forms.
    pub fn aliases(&self) -> &'static [&'static str] {
        match self {
            Quake3Game::Quake3 => &["q3a", "quake3", "q3s"],
            Quake3Game::EnemyTerritory => &["wolfet", "woets"],
            Quake3Game::OpenArena => &["oa", "openarenas"],
            Quake3Game::Rtcw => &["rtcws", "rws"],
            Quake3Game::Other(_) => &[],
        }
    }

    /// Whether its servers echo a query's challenge: the named games' do, in both replies
    /// (id's and ioq3's `SVC_Info`/`SVC_Status`: "echo back the parameter to status. so
    /// master servers can use it as a challenge"); for a protocol named only by its number
    /// (`oob:NN`) nothing is known, so a reply without one is taken and marked unverified.
    pub fn echoes_challenge(&self) -> bool {
        !matches!(self, Quake3Game::Other(_))
    }

    /// A human title.
    pub fn title(&self) -> &'static str {
        match self {
            Quake3Game::Quake3 => "Quake III Arena",
            Quake3Game::EnemyTerritory => "Wolfenstein: Enemy Territory",
            Quake3Game::OpenArena => "OpenArena",
            Quake3Game::Rtcw => "Return to Castle Wolfenstein",
            Quake3Game::Other(_) => "Quake III protocol game",
        }
    }

    /// The network protocol number servers report (`protocol` key) and masters filter on.
    pub fn protocol(&self) -> i32 {
        match self {
            Quake3Game::Quake3 => 68,
            Quake3Game::EnemyTerritory => 84,
            Quake3Game::OpenArena => 71,
            Quake3Game::Rtcw => 60,
            Quake3Game::Other(p) => *p,
        }
    }

    /// The default game server port (all of these use `PORT_SERVER` 27960).
    pub fn default_port(&self) -> u16 {
        27960
    }

    /// The default master port (`PORT_MASTER` 27950).
    pub fn master_port(&self) -> u16 {
        27950
    }

    /// The `com_gamename` dpmaster knows the game by (for `getserversExt`).
    pub fn master_gamename(&self) -> Option<&'static str> {
        match self {
            Quake3Game::Quake3 => Some("Quake3Arena"),
            Quake3Game::EnemyTerritory => Some("et"),
            Quake3Game::OpenArena => Some("Quake3Arena"),
            Quake3Game::Rtcw => Some("wolfmp"),
            Quake3Game::Other(_) => None,
        }
    }

    /// The heartbeat string the server sends its master.
    pub fn heartbeat(&self) -> &'static str {
        match self {
            Quake3Game::Quake3 | Quake3Game::Other(_) => "QuakeArena-1",
            Quake3Game::EnemyTerritory => "EnemyTerritory-1",
            // ioq3 with com_gamename other than Quake3Arena sends "DarkPlaces"; OpenArena's is Quake3Arena.
            Quake3Game::OpenArena => "QuakeArena-1",
            Quake3Game::Rtcw => "Wolfenstein-1",
        }
    }

    /// The shutdown heartbeat, for games that send one (ioq3 games repeat the normal heartbeat).
    pub fn flatline(&self) -> Option<&'static str> {
        match self {
            Quake3Game::EnemyTerritory => Some("ETFlatline-1"),
            Quake3Game::Rtcw => Some("WolfFlatline-1"),
            _ => None,
        }
    }

    /// The master request qstat and the game clients send: `getservers <protocol> empty full`.
    pub fn getservers(&self) -> GetServers {
        GetServers::anonymous(self.protocol())
    }

    /// The game's own short name for a `gametype` value, when it defines one (ioq3
    /// `gametype_t`, OpenArena's additions, W:ET and RtCW `g_gametype`).
    pub fn gametype_name(&self, value: i64) -> Option<&'static str> {
        const Q3: [&str; 8] = [
            "ffa",
            "tournament",
            "single",
            "tdm",
            "ctf",
            "oneflag",
            "obelisk",
            "harvester",
        ];
        const OA: [&str; 13] = [
            "ffa",
            "tournament",
            "single",
            "tdm",
            "ctf",
            "oneflag",
            "overload",
            "harvester",
            "elimination",
            "ctf_elimination",
            "lms",
            "double_domination",
            "domination",
        ];
        const ET: [&str; 7] = [
            "single",
            "coop",
            "objective",
            "stopwatch",
            "campaign",
            "lms",
            "map_voting",
        ];
        const RTCW: [&str; 9] = [
            "ffa",
            "tournament",
            "single",
            "tdm",
            "ctf",
            "objective",
            "stopwatch",
            "checkpoint",
            "capture_and_hold",
        ];
        let table: &[&str] = match self {
            Quake3Game::EnemyTerritory => &ET,
            Quake3Game::Rtcw => &RTCW,
            Quake3Game::OpenArena => &OA,
            Quake3Game::Quake3 | Quake3Game::Other(_) => &Q3,
        };
        usize::try_from(value)
            .ok()
            .and_then(|i| table.get(i))
            .copied()
    }
}

impl fmt::Display for Quake3Game {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.id())
    }
}

/// A game name that is not known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown Quake III game {0:?}: expected q3, et, openarena, rtcw or oob:PROTOCOL")]
pub struct UnknownGame(pub String);

impl FromStr for Quake3Game {
    type Err = UnknownGame;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.to_ascii_lowercase();
        match lower.as_str() {
            "q3" | "q3a" | "quake3" | "q3s" => Ok(Quake3Game::Quake3),
            "et" | "wolfet" | "woets" => Ok(Quake3Game::EnemyTerritory),
            "openarena" | "oa" | "openarenas" => Ok(Quake3Game::OpenArena),
            "rtcw" | "rtcws" | "rws" => Ok(Quake3Game::Rtcw),
            _ => lower
                .strip_prefix("oob:")
                .and_then(|p| p.parse::<i32>().ok())
                .filter(|p| *p >= 0)
                .map(Quake3Game::Other)
                .ok_or_else(|| UnknownGame(s.to_string())),
        }
    }
}

/// Infostring keys in the order they are looked up for each common field. getinfo and
/// getstatus use different names for the same thing (`hostname` vs `sv_hostname`).
pub mod keys {
    /// Server name.
    pub const NAME: &[&str] = &["sv_hostname", "hostname"];
    /// Map.
    pub const MAP: &[&str] = &["mapname"];
    /// Game type.
    pub const GAMETYPE: &[&str] = &["g_gametype", "gametype"];
    /// Maximum clients. statusResponse has the full `sv_maxclients`; infoResponse subtracts private slots.
    pub const MAX_PLAYERS: &[&str] = &["sv_maxclients"];
    /// Connected clients, bots included (infoResponse).
    pub const CLIENTS: &[&str] = &["clients"];
    /// Human clients (ioq3 `g_humanplayers`, W:ET `humans`).
    pub const HUMANS: &[&str] = &["g_humanplayers", "humans"];
    /// Password required (ioq3 `g_needpass`, W:ET `needpass`).
    pub const PASSWORD: &[&str] = &["g_needpass", "needpass"];
    /// Mod directory.
    pub const MOD: &[&str] = &["game", "fs_game", "gamename"];
    /// Server version string.
    pub const VERSION: &[&str] = &["version"];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for g in Quake3Game::ALL.into_iter().chain([Quake3Game::Other(43)]) {
            assert_eq!(g.id().parse::<Quake3Game>().unwrap(), g);
        }
        assert!("doom3".parse::<Quake3Game>().is_err());
        assert!("oob:x".parse::<Quake3Game>().is_err());
    }
}
