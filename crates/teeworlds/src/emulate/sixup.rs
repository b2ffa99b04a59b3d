//! The emulated servers' 0.7 `inf3`, and DDNet's cut of it to one datagram.
//!
//! ddnet `src/engine/server/server.cpp` at 28baa427 (20.0-rc6), `CacheServerInfoSixup`
//! (lines 2530-2614; since 19.2, 3b40ac82): the info is packed with every client; when,
//! after a client, the packed info (version to the last client, without the `inf3` type and
//! the browse token) passes `NET_MAX_CONNLESS_PAYLOAD − 128 − 32` = 1234 bytes (lines
//! 2599-2608), it is packed again with only the clients before that one, the counts then
//! theirs, and the name `"%s [%d/%d]"` (lines 2558-2567): `sv_name`, all clients, the slots
//! (`sv_max_clients − sv_reserved_slots`), at most 63 bytes (`char aName[64]`,
//! `str_format` cuts on a UTF-8 boundary). Over the info rate limit (`SendClients` false):
//! the plain name, every client counted, none listed.

use fragstat_core::wire::put_varint;

use super::{Answer, EmuClient, EmulatedServer, Flavor, ServerConfig};
use crate::seven;

/// The packed info's size past which DDNet cuts it (`NET_MAX_CONNLESS_PAYLOAD − 128 − 32`;
/// `NET_MAX_CONNLESS_PAYLOAD` = 1400 − 6, `src/engine/shared/network.h` lines 68-69).
pub const CUT_ABOVE: usize = 1394 - 128 - 32;

/// `name [clients/slots]` in at most `max` bytes, cut on a UTF-8 boundary (DDNet's
/// `str_format` into a buffer of `max + 1` bytes, or `CPacker::AddString` with limit `max`).
pub fn with_count(name: &[u8], clients: usize, slots: usize, max: usize) -> Vec<u8> {
    let mut out = name.to_vec();
    out.extend_from_slice(format!(" [{clients}/{slots}]").as_bytes());
    if out.len() > max {
        let mut end = max;
        while end > 0 && out.get(end).is_some_and(|b| b & 0xC0 == 0x80) {
            end -= 1;
        }
        out.truncate(end);
    }
    out
}

fn client7(c: &EmuClient) -> seven::Client {
    let spectator = if c.player {
        0
    } else {
        seven::client_flags::SPECTATOR
    };
    let bot = if c.bot { seven::client_flags::BOT } else { 0 };
    seven::Client {
        name: c.name.clone(),
        clan: c.clan.clone(),
        country: c.country,
        score: c.score,
        flags: spectator | bot,
    }
}

/// Bytes one client takes in the packed info.
pub(super) fn packed_len(c: &seven::Client) -> usize {
    let mut v = Vec::with_capacity(15);
    for n in [c.country, c.score, c.flags] {
        put_varint(&mut v, n);
    }
    c.name.len() + 1 + c.clan.len() + 1 + v.len()
}

/// Bytes of the packed info before its clients (after the `inf3` type and the token).
pub(super) fn head_len(info: &seven::Info) -> usize {
    let mut v = Vec::with_capacity(24);
    for n in [
        info.flags,
        info.skill_level,
        info.num_players,
        info.max_players,
        info.num_clients,
        info.max_clients,
    ] {
        put_varint(&mut v, n);
    }
    [
        &info.version,
        &info.name,
        &info.hostname,
        &info.map,
        &info.gametype,
    ]
    .iter()
    .map(|s| s.len() + 1)
    .sum::<usize>()
        + v.len()
}

impl EmulatedServer {
    /// The 0.7 `inf3` for `browse_token` (DDNet sixup: `0.7↔` version, time scores, cut to
    /// one datagram with the count in the name when the clients do not fit).
    pub fn seven_info(&self, browse_token: i32) -> seven::Info {
        self.seven_reply(browse_token, Answer::Full)
    }

    /// The 0.7 `inf3`; for DDNet without clients unless `answer` is [`Answer::Full`].
    pub(super) fn seven_reply(&self, browse_token: i32, answer: Answer) -> seven::Info {
        let c = &self.config;
        let mut info = self.seven_with(browse_token, c.name.clone(), &c.clients);
        if c.flavor != Flavor::Ddnet {
            return info;
        }
        if answer != Answer::Full {
            info.clients.clear();
            return info;
        }
        let mut size = head_len(&info);
        for (i, cl) in info.clients.iter().enumerate() {
            size += packed_len(cl);
            if size > CUT_ABOVE {
                let slots = c.max_clients as usize;
                let name = with_count(&c.name, c.clients.len(), slots, 63);
                return self.seven_with(browse_token, name, c.clients.get(..i).unwrap_or(&[]));
            }
        }
        info
    }

    /// The info naming the server `name` and listing `clients` (the counts theirs).
    pub(super) fn seven_with(
        &self,
        browse_token: i32,
        name: Vec<u8>,
        clients: &[EmuClient],
    ) -> seven::Info {
        let c = &self.config;
        let ddnet = c.flavor == Flavor::Ddnet;
        let mut version = c.version.clone();
        let mut flags = i32::from(c.password) * seven::server_flags::PASSWORD;
        if ddnet {
            version = [crate::partial::SIXUP_VERSION_PREFIX.as_bytes(), &c.version].concat();
            flags |= seven::server_flags::TIMESCORE;
        }
        let players = clients.iter().filter(|cl| cl.player).count();
        seven::Info {
            token: browse_token,
            version,
            name,
            hostname: c.hostname.clone(),
            map: c.map.clone(),
            gametype: c.gametype.clone(),
            flags,
            skill_level: c.skill_level,
            num_players: ServerConfig::int(players),
            max_players: ServerConfig::int((c.max_players as usize).max(players)),
            num_clients: ServerConfig::int(clients.len()),
            max_clients: ServerConfig::int((c.max_clients as usize).max(clients.len())),
            clients: clients.iter().map(client7).collect(),
            truncated: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_counts_are_cut_on_a_character() {
        assert_eq!(with_count(b"x", 3, 4, 63), b"x [3/4]");
        let long = "é".repeat(32);
        let n = with_count(long.as_bytes(), 100, 128, 63);
        assert_eq!(n.len(), 62, "a 2-byte character not split");
        assert!(std::str::from_utf8(&n).is_ok());
        assert_eq!(with_count(&[b'a'; 60], 100, 128, 64).len(), 64);
    }
}
