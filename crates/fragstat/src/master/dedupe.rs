//! Masters given twice: each address is asked once.

use std::net::SocketAddr;

use fragstat_core::registry::GameRef;

use crate::client::Client;

impl Client {
    /// The masters to ask, each address once: a master named twice (`localhost:27950` and
    /// `127.0.0.1:27950`) would be asked twice from one socket, and its second list wait
    /// out the master timeout. Names that do not resolve are kept (their report says why).
    /// Also a line for each master left out, saying why (the CLI prints them).
    pub async fn dedupe_masters(
        &self,
        game: &GameRef,
        masters: &[String],
    ) -> (Vec<String>, Vec<String>) {
        let Some(port) = game.master_port() else {
            return (masters.to_vec(), Vec::new());
        };
        let mut seen: Vec<(SocketAddr, String)> = Vec::new();
        let mut out = Vec::with_capacity(masters.len());
        let mut notes = Vec::new();
        for (text, addr) in self.resolve(masters, port).await {
            let Ok(addr) = addr else {
                out.push(text);
                continue;
            };
            match seen.iter().find(|(a, _)| *a == addr) {
                Some((_, first)) if *first == text => {
                    notes.push(format!("master {text}: named twice, asked once"));
                }
                Some((_, first)) => notes.push(format!(
                    "master {text}: the same address as {first} ({addr}): asked once"
                )),
                None => {
                    seen.push((addr, text.clone()));
                    out.push(text);
                }
            }
        }
        (out, notes)
    }
}
