//! A sans-IO emulated ETQW 1.5 server answering `getInfo` and `getInfoEx` as the game does,
//! so that real clients (qstat `-etqws`) can be pointed at it.

use fragstat_core::registry::{EmuError, EmuMaster, EmuServer, Emulate, HttpBody};

use crate::game::EtqwGame;
use crate::Encode;
use std::net::SocketAddr;
use std::time::Instant;

use crate::EncodeError;
use fragstat_core::model::Rules;
use fragstat_core::service::{Outbox, Service};
use fragstat_idtech4::dict::Dict;
use fragstat_idtech4::{Protocol, END_OF_PLAYERS};

use crate::packet::{
    decode, Body, ExPlayer, Extended, InfoPlayer, InfoResponse, KnownBody, Packet, PostPlayers,
    ServerType, PROTOCOL_1_5,
};

/// What an emulated server reports.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// Protocol (10.21, ETQW 1.5, by default: qstat reads a rate that is not there in 10.19).
    pub protocol: Protocol,
    /// The server-info dictionary, in wire order.
    pub info: Rules,
    /// Players in slot order.
    pub players: Vec<InfoPlayer>,
    /// Their extended entries.
    pub extended: Vec<ExPlayer>,
    /// The block after the players.
    pub post: PostPlayers,
}

impl ServerConfig {
    /// A server named `name` on `map` (`valley` → `maps/valley.entities`; empty: `valley`)
    /// with `players` generated players, every second one a bot with ping 0, slot 1 left free
    /// as on real servers, alternately on the GDF and Strogg teams.
    pub fn sample(name: &[u8], map: &[u8], players: usize, max_players: u32) -> Self {
        let map: &[u8] = if map.is_empty() { b"valley" } else { map };
        let si_map = if map.starts_with(b"maps/") {
            map.to_vec()
        } else {
            [b"maps/".as_slice(), map, b".entities"].concat()
        };
        let mut info = Rules::new();
        info.push(
            "si_version",
            "ETQW 1.5.12663.12663  linux-x86 May  9 2008 (fragstat emulator)",
        );
        info.push("fs_game", "");
        info.push("net_serverDedicated", "1");
        info.push("si_maxPlayers", max_players.to_string());
        info.push("si_privateClients", "0");
        info.push("si_timelimit", "20");
        info.push("si_rules", "sdGameRulesCampaign");
        info.push("si_spectators", "1");
        info.push("si_pure", "1");
        info.push("si_needPass", "0");
        info.push("si_teamDamage", "1");
        info.push("si_name", name);
        info.push("bot_enable", "1");
        info.push("gamename", "baseETQW-1");
        info.push("si_map", si_map);
        let gap = usize::from(players < usize::from(END_OF_PLAYERS));
        let mut list = Vec::with_capacity(players);
        let mut extended = Vec::with_capacity(players);
        for i in 0..players {
            let n = u32::try_from(i).unwrap_or(0);
            let slot = u8::try_from(i + usize::from(i >= 1) * gap).unwrap_or(0);
            let bot = i % 2 == 1;
            list.push(InfoPlayer {
                slot,
                ping: if bot {
                    0
                } else {
                    u16::try_from(30 + 9 * n).unwrap_or(u16::MAX)
                },
                name: format!("^{}Player^7{}", n % 7 + 1, n + 1).into_bytes(),
                clan_position: u8::from(i % 4 == 3),
                clan: if i % 3 == 2 {
                    b"^1fs^7".to_vec()
                } else {
                    Vec::new()
                },
                bot: u8::from(bot),
            });
            extended.push(ExPlayer {
                slot,
                xp: 12.5 * (n + 1) as f32,
                team: if i % 2 == 0 {
                    b"gdf".to_vec()
                } else {
                    b"strogg".to_vec()
                },
                kills: i32::try_from(3 * n).unwrap_or(0),
                deaths: i32::try_from(n / 2).unwrap_or(0),
            });
        }
        ServerConfig {
            protocol: PROTOCOL_1_5,
            info,
            players: list,
            extended,
            post: PostPlayers {
                os_mask: 7,
                ranked: 0,
                time_left: 600_000,
                game_state: 2,
                server_type: ServerType::Regular {
                    interested_clients: 0,
                },
            },
        }
    }

    /// Sets a server-info value, replacing the key's first occurrence (or appending it).
    pub fn set(&mut self, key: &str, value: impl AsRef<[u8]>) {
        self.info.set_ci(key, value);
    }

    /// The reply to a request with echo `challenge`.
    pub fn response(&self, ex: bool, challenge: [u8; 8]) -> InfoResponse {
        InfoResponse {
            ex,
            challenge,
            protocol: self.protocol,
            size: None,
            dict: Dict::new(self.info.clone()),
            body: Body::Known(KnownBody {
                players: self.players.clone(),
                post: self.post,
                extended: ex.then(|| Extended::Players(self.extended.clone())),
                trailing: Vec::new(),
            }),
        }
    }
}

/// An ETQW server answering `getInfo` and `getInfoEx`.
#[derive(Debug, Clone)]
pub struct EmulatedServer {
    config: ServerConfig,
    /// Encoded replies with a zero challenge, plain and extended: only the 8 echo bytes differ.
    plain: Vec<u8>,
    ex: Vec<u8>,
}

/// Where the challenge echo starts in `infoResponse` / `infoExResponse`.
const ECHO_AT: [usize; 2] = [2 + 13, 2 + 15];

impl EmulatedServer {
    /// A server reporting `config`; fails when it cannot be encoded.
    pub fn new(config: ServerConfig) -> Result<Self, EncodeError> {
        let plain = Packet::InfoResponse(config.response(false, [0; 8])).to_bytes()?;
        let ex = Packet::InfoResponse(config.response(true, [0; 8])).to_bytes()?;
        Ok(EmulatedServer { config, plain, ex })
    }

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// Answers one datagram; `None` for anything a server ignores.
    pub fn respond(&self, datagram: &[u8]) -> Option<Vec<u8>> {
        let Packet::GetInfo(g) = decode(datagram).ok()? else {
            return None;
        };
        let (mut out, at) = if g.ex {
            (self.ex.clone(), ECHO_AT[1])
        } else {
            (self.plain.clone(), ECHO_AT[0])
        };
        out.get_mut(at..at + 8)?.copy_from_slice(&g.echo());
        Some(out)
    }
}

impl Service for EmulatedServer {
    fn handle(&mut self, _now: Instant, from: SocketAddr, datagram: &[u8], out: &mut Outbox) {
        if let Some(reply) = self.respond(datagram) {
            out.push((from, reply));
        }
    }
}

/// Longest name or map an emulated server takes.
const MAX_TEXT: usize = 256;

fn check_text(field: &str, value: &[u8]) -> Result<(), EmuError> {
    EmuError::check_text(field, value, b"\0", MAX_TEXT, "an ETQW string")
}

impl Emulate for EtqwGame {
    fn emulated_server(&self, config: &EmuServer) -> Result<Box<dyn Service>, EmuError> {
        check_text("the server name", &config.name)?;
        check_text("the map name", &config.map)?;
        config.check_slots(u32::from(END_OF_PLAYERS), true, "an ETQW server")?;
        config.check_no_private_slots("Enemy Territory: Quake Wars")?;
        let mut c = ServerConfig::sample(
            &config.name,
            &config.map,
            config.players,
            config.max_players,
        );
        c.set("si_needPass", if config.password { "1" } else { "0" });
        if let Some(gt) = &config.gametype {
            check_text("the game rules", gt.as_bytes())?;
            c.set("si_rules", gt);
        }
        let shift = u16::try_from(config.seed % 11).unwrap_or(0);
        for p in c.players.iter_mut().filter(|p| p.bot == 0) {
            p.ping = p.ping.saturating_add(shift);
        }
        c.post.time_left = c
            .post
            .time_left
            .saturating_sub(u32::try_from(config.seed % 60).unwrap_or(0) * 1000);
        EmulatedServer::new(c)
            .map(|s| {
                config.guarded(
                    fragstat_core::registry::FamilyGame::meta(*self).engine,
                    Box::new(s),
                )
            })
            .map_err(EmuError::from)
    }

    fn emulated_master(&self, _config: &EmuMaster) -> Result<Box<dyn Service>, EmuError> {
        Err(EmuError::Unsupported(
            "ETQW has no UDP master: its server list is an HTTP feed of IP:port lines \
             (`fragstat serve etqw --master` serves one)"
                .into(),
        ))
    }

    /// The feed: the servers' addresses, a line each.
    fn emulated_http_list(
        &self,
        servers: &[(SocketAddr, EmuServer)],
    ) -> Result<HttpBody, EmuError> {
        let addrs: Vec<SocketAddr> = servers.iter().map(|(a, _)| *a).collect();
        Ok(HttpBody {
            content_type: "text/plain",
            body: crate::feed::encode(&addrs).into_bytes(),
        })
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_registry_entry_emulates_servers_not_masters() {
        let g = EtqwGame::Etqw;
        assert!(g.emulated_master(&EmuMaster::default()).is_err());
        assert!(g.emulated_server(&EmuServer::new("x", "", 33)).is_err());
        assert!(g.emulated_server(&EmuServer::new("x", "", 32)).is_ok());
    }

    use super::*;

    #[test]
    fn spliced_replies_equal_the_encoded_ones() {
        let s = EmulatedServer::new(ServerConfig::sample(b"^1x", b"", 5, 24)).unwrap();
        for ex in [false, true] {
            let mut req = if ex {
                b"\xff\xffgetInfoEx\0".to_vec()
            } else {
                b"\xff\xffgetInfo\0".to_vec()
            };
            req.extend_from_slice(&[9, 8, 7, 6, 5, 4, 3, 2]);
            let built = Packet::InfoResponse(s.config().response(ex, [9, 8, 7, 6, 5, 4, 3, 2]))
                .to_bytes()
                .unwrap();
            assert_eq!(s.respond(&req).unwrap(), built);
        }
        // qstat sends 4 zero bytes: the second half echoes as -1.
        let r = s.respond(b"\xff\xffgetInfo\0\0\0\0\0").unwrap();
        let Packet::InfoResponse(r) = decode(&r).unwrap() else {
            panic!()
        };
        assert_eq!(r.challenge, [0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(r.size.unwrap() as usize, r.actual_size(s.plain.len()));
    }
}
