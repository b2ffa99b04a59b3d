//! Putting multi-datagram replies together: DDNet's extended info (`iext` + `iex+`, by packet
//! number) and the legacy 64-client info (`dtsf`, by client offset).
//!
//! There is no last-packet marker (ddnet server.cpp `CacheServerInfo`): a reply is complete
//! when the clients received reach the main packet's `num_clients` (the DDNet client does the
//! same, client.cpp `ProcessServerInfo`). A datagram delivered twice is dropped by its packet
//! number (or offset); packets may arrive in any order, `iex+` before `iext` included.

use std::collections::BTreeMap;

use fragstat_core::model::MAX_PLAYERS;

use crate::six::{Client, Info, More};

/// Most datagrams of one reply kept (a DDNet server sends at most a few dozen); later ones
/// are dropped and counted with the duplicates.
pub const MAX_DATAGRAMS: u32 = 256;

/// An extended or legacy reply being assembled.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Assembly {
    main: Option<Info>,
    /// Further clients by packet number (`iex+`) or offset (`dtsf` after the first).
    parts: BTreeMap<i32, Vec<Client>>,
    truncated: bool,
    datagrams: u32,
    duplicates: u32,
}

impl Assembly {
    /// Nothing received yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the `iext`; false when one was already here (a duplicate, dropped).
    pub fn add_main(&mut self, info: Info) -> bool {
        if self.main.is_some() {
            self.duplicates += 1;
            return false;
        }
        self.truncated |= info.truncated;
        self.datagrams += 1;
        self.main = Some(info);
        true
    }

    /// No more room: [`MAX_DATAGRAMS`] datagrams or [`MAX_PLAYERS`] clients kept (a hostile
    /// server sends parts without end).
    fn full(&self) -> bool {
        self.datagrams >= MAX_DATAGRAMS || self.clients() >= MAX_PLAYERS
    }

    /// Adds an `iex+`; false for a packet number already received, or when the reply is
    /// [full](Self::complete).
    pub fn add_more(&mut self, more: More) -> bool {
        if self.parts.contains_key(&more.packet_no) || self.full() {
            self.duplicates += 1;
            return false;
        }
        self.truncated |= more.truncated;
        self.datagrams += 1;
        self.parts.insert(more.packet_no, more.clients);
        true
    }

    /// Adds a `dtsf`: the one at offset 0 (or the first to come) gives the server fields;
    /// false for an offset already received.
    pub fn add_legacy(&mut self, mut info: Info) -> bool {
        let offset = info.offset.unwrap_or(0);
        let have_offset = self.parts.contains_key(&offset)
            || self
                .main
                .as_ref()
                .is_some_and(|m| m.offset.unwrap_or(0) == offset);
        if have_offset || (self.main.is_some() && self.full()) {
            self.duplicates += 1;
            return false;
        }
        self.truncated |= info.truncated;
        self.datagrams += 1;
        match &self.main {
            Some(m) if m.offset.unwrap_or(0) <= offset => {
                self.parts.insert(offset, std::mem::take(&mut info.clients));
            }
            Some(_) => {
                // An earlier offset than the one kept as main: it becomes the main.
                if let Some(old) = self.main.replace(info) {
                    self.parts.insert(old.offset.unwrap_or(0), old.clients);
                }
            }
            None => self.main = Some(info),
        }
        true
    }

    /// The main packet, when it has come.
    pub fn main(&self) -> Option<&Info> {
        self.main.as_ref()
    }

    /// Clients received so far.
    pub fn clients(&self) -> usize {
        self.main.as_ref().map_or(0, |m| m.clients.len())
            + self.parts.values().map(Vec::len).sum::<usize>()
    }

    /// Datagrams accepted (duplicates not counted).
    pub fn datagrams(&self) -> u32 {
        self.datagrams
    }

    /// Datagrams dropped as duplicates.
    pub fn duplicates(&self) -> u32 {
        self.duplicates
    }

    /// The main packet is here and the clients reach its count, or the reply is as big as
    /// one is kept ([`MAX_PLAYERS`] clients, [`MAX_DATAGRAMS`] datagrams), or it is
    /// [rate-limited](Self::rate_limited): nothing more comes.
    pub fn complete(&self) -> bool {
        self.main.as_ref().is_some_and(|m| {
            usize::try_from(m.num_clients).is_ok_and(|n| self.clients() >= n) || self.full()
        }) || self.rate_limited()
    }

    /// The main packet has counts and no client, and no other part came: DDNet's reply over
    /// `sv_server_info_per_second` (ddnet `src/engine/server/server.cpp` at 28baa427, lines
    /// 2431-2435: the main datagram alone; with clients, the `iext` always holds the first
    /// ones, lines 2458-2523), not the start of a longer one ([`crate::partial`]).
    pub fn rate_limited(&self) -> bool {
        self.parts.is_empty()
            && self.main.as_ref().is_some_and(|m| {
                m.offset.unwrap_or(0) == 0
                    && crate::partial::without_clients(m.num_clients, m.clients.len(), m.truncated)
            })
    }

    /// The reply as one [`Info`] (clients in packet order), and whether it is complete; `None`
    /// without the main packet.
    pub fn finish(self) -> Option<(Info, bool)> {
        let complete = self.complete();
        let mut info = self.main?;
        for clients in self.parts.into_values() {
            info.clients.extend(clients);
        }
        fragstat_core::model::keep_first(&mut info.clients, MAX_PLAYERS);
        info.truncated |= self.truncated;
        Some((info, complete))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(n: &str) -> Client {
        Client {
            name: n.as_bytes().to_vec(),
            reserved: Some(Vec::new()),
            ..Client::default()
        }
    }

    #[test]
    fn more_before_main_and_duplicates() {
        let mut a = Assembly::new();
        assert!(a.add_more(More {
            packet_no: 2,
            clients: vec![c("d")],
            ..More::default()
        }));
        assert!(a.add_more(More {
            packet_no: 1,
            clients: vec![c("b"), c("c")],
            ..More::default()
        }));
        assert!(!a.add_more(More {
            packet_no: 1,
            clients: vec![c("x")],
            ..More::default()
        }));
        assert!(!a.complete(), "no main yet");
        assert!(a.add_main(Info {
            num_clients: 4,
            clients: vec![c("a")],
            ..Info::default()
        }));
        assert!(a.complete());
        assert_eq!((a.datagrams(), a.duplicates()), (3, 1));
        let (info, complete) = a.finish().unwrap();
        assert!(complete);
        let names: Vec<_> = info.clients.iter().map(|c| c.name.clone()).collect();
        assert_eq!(
            names,
            [b"a".to_vec(), b"b".to_vec(), b"c".to_vec(), b"d".to_vec()]
        );
    }

    /// A hostile server sends `iex+` parts without end, announcing more clients than it
    /// sends: at most MAX_DATAGRAMS parts and MAX_PLAYERS clients are kept, and the reply
    /// is complete then.
    #[test]
    fn endless_parts_are_bounded() {
        let mut a = Assembly::new();
        a.add_main(Info {
            num_clients: i32::MAX,
            ..Info::default()
        });
        let mut kept = 0;
        for packet_no in 0..10_000 {
            let clients = if packet_no < 300 {
                Vec::new()
            } else {
                vec![c("x"); 24]
            };
            kept += u32::from(a.add_more(More {
                packet_no,
                clients,
                ..More::default()
            }));
        }
        assert_eq!(kept, MAX_DATAGRAMS - 1, "the main and 255 parts");
        assert!(a.complete(), "as complete as it can be");
        let mut b = Assembly::new();
        b.add_main(Info {
            num_clients: i32::MAX,
            ..Info::default()
        });
        for packet_no in 0..10_000 {
            b.add_more(More {
                packet_no,
                clients: vec![c("x"); 24],
                ..More::default()
            });
        }
        assert!(b.clients() < MAX_PLAYERS + 24);
        let (info, _) = b.finish().unwrap();
        assert_eq!(info.clients.len(), MAX_PLAYERS);
    }

    /// DDNet over its rate limit: an `iext` (or the `dtsf` at offset 0) with counts and no
    /// client is the whole reply; with a part already here, it is not.
    #[test]
    fn counts_without_clients_are_complete() {
        let bare = Info {
            num_clients: 5,
            ..Info::default()
        };
        let mut a = Assembly::new();
        a.add_main(bare.clone());
        assert!(a.rate_limited() && a.complete());
        let (info, complete) = a.finish().unwrap();
        assert!(complete && info.clients.is_empty());
        let mut b = Assembly::new();
        b.add_legacy(Info {
            offset: Some(0),
            ..bare.clone()
        });
        assert!(b.complete());
        let mut more_first = Assembly::new();
        more_first.add_more(More {
            packet_no: 1,
            clients: vec![c("x")],
            ..More::default()
        });
        more_first.add_main(bare);
        assert!(!more_first.rate_limited() && !more_first.complete());
        let mut empty = Assembly::new();
        empty.add_main(Info::default());
        assert!(!empty.rate_limited() && empty.complete(), "an empty server");
    }

    #[test]
    fn legacy_by_offset_in_any_order() {
        let mut a = Assembly::new();
        let part = |offset, names: &[&str]| Info {
            num_clients: 3,
            offset: Some(offset),
            clients: names
                .iter()
                .map(|n| Client {
                    name: n.as_bytes().to_vec(),
                    ..Client::default()
                })
                .collect(),
            ..Info::default()
        };
        assert!(a.add_legacy(part(2, &["c"])));
        assert!(a.add_legacy(part(0, &["a", "b"])));
        assert!(!a.add_legacy(part(2, &["c"])));
        let (info, complete) = a.finish().unwrap();
        assert!(complete);
        assert_eq!(info.offset, Some(0));
        assert_eq!(info.clients.len(), 3);
        assert_eq!(info.clients[2].name, b"c");
    }
}
