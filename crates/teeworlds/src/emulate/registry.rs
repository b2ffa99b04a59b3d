//! The family's registry entry for the emulators: `fragstat serve teeworlds|teeworlds07|ddnet`.

use std::net::SocketAddr;

use fragstat_core::registry::{EmuError, EmuMaster, EmuServer, Emulate, FamilyGame, HttpBody};
use fragstat_core::service::Service;

use super::{EmulatedMaster, EmulatedServer, Flavor, InfoLimits, ServerConfig};
use crate::game::TeeworldsGame;

impl TeeworldsGame {
    /// The emulator that plays the game.
    pub(crate) fn flavor(&self) -> Flavor {
        match self {
            TeeworldsGame::Teeworlds => Flavor::Vanilla06,
            TeeworldsGame::Teeworlds07 => Flavor::Teeworlds07,
            TeeworldsGame::Ddnet => Flavor::Ddnet,
        }
    }

    /// The emulator's configuration for `config`, or why the protocol cannot carry it.
    pub(crate) fn server_config(&self, config: &EmuServer) -> Result<ServerConfig, EmuError> {
        let flavor = self.flavor();
        let limit = flavor.max_clients();
        if config.players > limit {
            return Err(EmuError::Config(format!(
                "{} clients: a {} server has at most {limit}",
                config.players,
                self.meta().title
            )));
        }
        if u64::from(config.max_players) < config.players as u64 {
            return Err(EmuError::Config(format!(
                "{} client slots cannot hold {} clients",
                config.max_players, config.players
            )));
        }
        for (field, v, max) in [("server name", &config.name, 63), ("map", &config.map, 31)] {
            if v.contains(&0) || v.len() > max {
                return Err(EmuError::Config(format!(
                    "the {field} must be at most {max} bytes without NUL"
                )));
            }
        }
        if config.heartbeat_to.is_some() {
            return Err(EmuError::Config(
                "Teeworlds emulators do not register with masters".into(),
            ));
        }
        config.check_no_private_slots(&self.meta().title)?;
        let mut c = ServerConfig::sample(flavor, &config.name, 0);
        if !config.map.is_empty() {
            c.map = config.map.clone();
        }
        if let Some(gt) = &config.gametype {
            if gt.contains('\0') || gt.len() > 15 {
                return Err(EmuError::Config(
                    "the game type must be at most 15 bytes".into(),
                ));
            }
            c.gametype = gt.as_bytes().to_vec();
        }
        c.max_clients = config.max_players;
        c.max_players = config.max_players;
        c.password = config.password;
        c.set_clients(config.players, config.seed);
        Ok(c)
    }
}

impl Emulate for TeeworldsGame {
    /// Teeworlds and DDNet draw no colour codes: a `^1` would show as text.
    fn default_name(&self) -> &'static str {
        "fragstat emulated server"
    }

    /// DDNet keeps its own limits on info replies ([`InfoLimits::DDNET`]: above 50 a second
    /// without clients, above 500 none), counted over info requests only as DDNet counts
    /// them, instead of the registry's guard (which drops every datagram over 500, the 0.7
    /// handshake's included); `rate_limit` off turns them off. Teeworlds has no limits.
    fn emulated_server(&self, config: &EmuServer) -> Result<Box<dyn Service>, EmuError> {
        let mut c = self.server_config(config)?;
        if !config.rate_limit {
            c.info_limits = InfoLimits::OFF;
        }
        let server = Box::new(EmulatedServer::new(c));
        Ok(match self.flavor() {
            Flavor::Ddnet => server,
            _ => config.guarded(FamilyGame::meta(*self).engine, server),
        })
    }

    fn emulated_master(&self, config: &EmuMaster) -> Result<Box<dyn Service>, EmuError> {
        // DDNet's own master is HTTP ([`Self::emulated_http_list`]); the emulated UDP one is
        // the 0.6 master DDNet used before it (read it as `teeworlds`).
        Ok(Box::new(EmulatedMaster::new(
            config.servers.clone(),
            *self == TeeworldsGame::Teeworlds07,
        )))
    }

    /// DDNet's `servers.json`: each server with the info its emulator answers with.
    fn emulated_http_list(
        &self,
        servers: &[(SocketAddr, EmuServer)],
    ) -> Result<HttpBody, EmuError> {
        if *self != TeeworldsGame::Ddnet {
            return Err(EmuError::Unsupported(format!(
                "{}: the master is a UDP master (serve it without an HTTP list)",
                self.id()
            )));
        }
        let mut list = crate::http::List::default();
        for (addr, config) in servers {
            let c = self.server_config(config)?;
            list.servers.push(crate::http::Server::new(
                vec![format!("tw-0.6+udp://{addr}")],
                Some("eu:de".into()),
                &crate::http::Info::of_emulated(&c),
            ));
        }
        Ok(HttpBody {
            content_type: "application/json",
            body: crate::http::render(&list),
        })
    }
}
