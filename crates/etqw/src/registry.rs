//! ETQW in the game registry: `etqw` (qstat's `etqws`).

use std::net::SocketAddr;
use std::sync::Arc;

use fragstat_core::model::ServerInfo;
use fragstat_core::registry::{
    Ask, Decoded, EmuError, EmuMaster, EmuServer, Family, Game, GameRef, HttpBody, MasterOptions,
    MasterQuery,
};
use fragstat_core::service::Service;
use fragstat_core::{BoxError, DecodeError, Exchange, ExchangeExt};
use fragstat_idtech4::dict::hex;
use fragstat_idtech4::END_OF_PLAYERS;
use serde::Serialize;

use crate::emulate::{EmulatedServer, ServerConfig};
use crate::exchange::ServerExchange;
use crate::packet::{decode, Packet};
use crate::view::server_info;

/// The family as the facade registers it.
pub const FAMILY: Family = Family {
    id: "etqw",
    title: "Enemy Territory: Quake Wars",
    games,
    find,
};

fn games() -> Vec<GameRef> {
    vec![Arc::new(EtqwEntry)]
}

fn find(id: &str) -> Option<GameRef> {
    fragstat_core::registry::find_in(games(), id)
}

/// Enemy Territory: Quake Wars as a registry [`Game`].
#[derive(Debug, Clone, Copy, Default)]
pub struct EtqwEntry;

/// Default query port (qstat `ETQW_DEFAULT_PORT`; gamedig).
pub const DEFAULT_PORT: u16 = 27733;

#[derive(Debug, PartialEq, Serialize)]
struct GetInfoFields {
    extended: bool,
    challenge: String,
    echo: String,
}

/// Longest name or map an emulated server takes.
const MAX_TEXT: usize = 256;

fn check_text(field: &str, value: &[u8]) -> Result<(), EmuError> {
    EmuError::check_text(field, value, b"\0", MAX_TEXT, "an ETQW string")
}

impl Game for EtqwEntry {
    fn id(&self) -> &str {
        "etqw"
    }

    fn title(&self) -> &str {
        "Enemy Territory: Quake Wars"
    }

    fn aliases(&self) -> &[&str] {
        &["etqws", "quakewars"]
    }

    fn family(&self) -> &'static str {
        FAMILY.id
    }

    fn default_port(&self) -> u16 {
        DEFAULT_PORT
    }

    fn master_port(&self) -> Option<u16> {
        None
    }

    /// Real ETQW servers echo something other than the challenge (captures answered a zero
    /// challenge with `000000ba…` and `00000002…`): a reply whose echo is not this query's
    /// is taken on its source address and marked unverified.
    fn echoes_challenge(&self) -> bool {
        false
    }

    fn server_query(&self, ask: Ask) -> Box<dyn Exchange<Output = ServerInfo>> {
        // getInfoEx adds each player's xp, team, kills and deaths.
        ServerExchange::new(ask.players || ask.rules)
            .map_output(|r| {
                let mut info = server_info(&r.response, r.datagram_len);
                info.unverified = r.unverified;
                info
            })
            .boxed()
    }

    fn master_query(&self, options: &MasterOptions) -> Result<MasterQuery, BoxError> {
        if options.ext || options.gamename.is_some() {
            return Err("etqw: the server-list feed takes no options".into());
        }
        Ok(MasterQuery::Http {
            default_url: Some(crate::feed::DEFAULT_URL),
            parse: crate::feed::parse,
        })
    }

    fn decode(&self, datagram: &[u8]) -> Result<Decoded, DecodeError> {
        Ok(match decode(datagram)? {
            Packet::InfoResponse(r) => Decoded::Server(Box::new(server_info(&r, datagram.len()))),
            Packet::GetInfo(g) => Decoded::Packet {
                kind: if g.ex { "getInfoEx" } else { "getInfo" }.into(),
                fields: Arc::new(GetInfoFields {
                    extended: g.ex,
                    challenge: hex(&g.challenge),
                    echo: hex(&g.echo()),
                }),
            },
        })
    }

    fn emulated_server(&self, config: &EmuServer) -> Result<Box<dyn Service>, EmuError> {
        check_text("the server name", &config.name)?;
        check_text("the map name", &config.map)?;
        config.check_slots(u32::from(END_OF_PLAYERS), true, "an ETQW server")?;
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
            .map(|s| Box::new(s) as Box<dyn Service>)
            .map_err(|e| EmuError(e.to_string()))
    }

    fn emulated_master(&self, _config: &EmuMaster) -> Result<Box<dyn Service>, EmuError> {
        Err(EmuError(
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
    use super::*;

    #[test]
    fn registry_entry() {
        assert_eq!(find("ETQWS").unwrap().id(), "etqw");
        assert!(find("doom3").is_none());
        let g = EtqwEntry;
        assert!(matches!(
            g.master_query(&MasterOptions::default()).unwrap(),
            MasterQuery::Http { default_url: Some(u), .. } if u.starts_with("http://")
        ));
        assert!(g.emulated_master(&EmuMaster::default()).is_err());
        assert!(g.emulated_server(&EmuServer::new("x", "", 33)).is_err());
        assert!(g.emulated_server(&EmuServer::new("x", "", 32)).is_ok());
    }
}
