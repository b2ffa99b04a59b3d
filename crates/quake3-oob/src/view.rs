//! A flat summary of a server from its infoResponse and/or statusResponse: the fields a
//! server browser shows. Sans-IO; the raw replies stay available for everything else.

use crate::game::keys;
use crate::info::InfoString;
use crate::packet::{InfoResponse, Player, StatusResponse};

/// What a browser shows of one server. Text fields are raw bytes; see [`crate::text`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Server name, raw (colour codes kept).
    pub name: Vec<u8>,
    /// Map name.
    pub map: Vec<u8>,
    /// Game type value as sent.
    pub gametype: Vec<u8>,
    /// Players on the server (the status list when there is one, else the info `clients`).
    pub num_players: u32,
    /// Maximum players.
    pub max_players: u32,
    /// Bots, when known (infoResponse `clients` − `g_humanplayers`).
    pub num_bots: Option<u32>,
    /// Password required, when known.
    pub password: Option<bool>,
    /// Players in server order (empty without a statusResponse).
    pub players: Vec<Player>,
    /// Every key/value: the status infostring first, then info keys it did not have. The
    /// `challenge` key (our own nonce echoed back) is left out.
    pub rules: InfoString,
}

fn count(v: Option<i64>) -> Option<u32> {
    v.and_then(|n| u32::try_from(n).ok())
}

impl Summary {
    /// Summarises whatever replies are at hand (copies them; see [`Summary::from_replies`]).
    pub fn new(info: Option<&InfoResponse>, status: Option<&StatusResponse>) -> Self {
        Self::from_replies(info.cloned(), status.cloned())
    }

    /// Summarises the replies, moving their players and variables instead of copying them.
    pub fn from_replies(info: Option<InfoResponse>, status: Option<StatusResponse>) -> Self {
        let info = info.map(|i| i.info);
        let (mut rules, players) = match status {
            Some(s) => (s.info, Some(s.players)),
            None => (InfoString::new(), None),
        };
        rules.remove(b"challenge");
        if let Some(i) = &info {
            for (k, v) in i.pairs() {
                if k != b"challenge" && rules.get_bytes(k).is_none() {
                    rules.push(k, v);
                }
            }
        }
        let clients = info.as_ref().and_then(|i| count(i.get_int(keys::CLIENTS)));
        let humans = info.as_ref().and_then(|i| count(i.get_int(keys::HUMANS)));
        let num_bots = match (clients, humans) {
            (Some(c), Some(h)) => c.checked_sub(h),
            _ => None,
        };
        let num_players = match &players {
            Some(p) => u32::try_from(p.len()).unwrap_or(u32::MAX),
            None => clients.unwrap_or(0),
        };
        Summary {
            name: rules.get_any(keys::NAME).unwrap_or_default().to_vec(),
            map: rules.get_any(keys::MAP).unwrap_or_default().to_vec(),
            gametype: rules.get_any(keys::GAMETYPE).unwrap_or_default().to_vec(),
            num_players,
            // statusResponse carries the true sv_maxclients; the rules list it first.
            max_players: count(rules.get_int(keys::MAX_PLAYERS)).unwrap_or(0),
            num_bots,
            password: rules
                .get_any(keys::PASSWORD)
                .map(|v| v != b"0" && !v.is_empty()),
            players: players.unwrap_or_default(),
            rules,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::{EmulatedServer, ServerConfig};
    use crate::Game;

    #[test]
    fn merges_info_and_status() {
        let emu = EmulatedServer::new(ServerConfig::sample(Game::OpenArena, b"^1Emu", 4));
        let info = emu.info_response(Some(b"c1"));
        let status = emu.status_response(Some(b"c2"));
        let s = Summary::new(Some(&info), Some(&status));
        assert_eq!(s.name, b"^1Emu");
        assert_eq!((s.num_players, s.max_players, s.num_bots), (4, 8, Some(2)));
        assert_eq!(s.password, Some(false));
        assert_eq!(
            s.rules.get("challenge"),
            None,
            "our nonce is not a server variable"
        );
        assert_eq!(s.rules.get("gamename"), Some(&b"Quake3Arena"[..]));
        assert_eq!(
            s.rules.get("g_humanplayers"),
            Some(&b"2"[..]),
            "info-only keys are kept"
        );
        let only_info = Summary::new(Some(&info), None);
        assert_eq!((only_info.num_players, only_info.players.len()), (4, 0));
    }
}
