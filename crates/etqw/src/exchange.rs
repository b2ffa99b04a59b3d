//! The sans-IO server query: `getInfo` or `getInfoEx` with an 8-byte challenge.

use crate::Encode;
use crate::EncodeError;
use fragstat_core::{Exchange, Verdict};

use crate::packet::{decode, GetInfo, InfoResponse, Packet};

/// A reply and the length of the datagram it came in (the size field is checked against it).
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The decoded reply.
    pub response: InfoResponse,
    /// Bytes in the datagram.
    pub datagram_len: usize,
    /// The reply did not echo this query's challenge (real ETQW servers echo something
    /// else), so it is taken on its source address alone.
    pub unverified: bool,
}

/// One query. The challenge is a random nonce whose first byte is the attempt number.
///
/// ETQW echoes are opaque in practice (real servers answered GameQ's zero challenge with
/// `000000ba…` and `00000002…`), so a reply from the server's address is accepted whatever
/// it echoes; an echo of this query's challenge also says which attempt it answers (for the
/// RTT).
#[derive(Debug)]
pub struct ServerExchange {
    ex: bool,
    nonce: [u8; 8],
}

impl ServerExchange {
    /// A query; `ex` sends `getInfoEx` (players' xp, team, kills and deaths too).
    pub fn new(ex: bool) -> Self {
        Self::with_nonce(ex, fragstat_core::nonce::u64())
    }

    /// A query with a given nonce.
    pub fn with_nonce(ex: bool, nonce: u64) -> Self {
        ServerExchange {
            ex,
            nonce: nonce.to_le_bytes(),
        }
    }

    /// The challenge sent on `attempt`.
    pub fn challenge(&self, attempt: u32) -> [u8; 8] {
        let mut c = self.nonce;
        c[0] = u8::try_from(attempt).unwrap_or(u8::MAX);
        c
    }
}

impl Exchange for ServerExchange {
    type Output = Reply;

    fn requests(&mut self, attempt: u32) -> Result<Vec<Vec<u8>>, EncodeError> {
        let request = Packet::GetInfo(GetInfo {
            ex: self.ex,
            challenge: self.challenge(attempt).to_vec(),
        });
        Ok(vec![request.to_bytes()?])
    }

    fn on_datagram(&mut self, datagram: &[u8]) -> Verdict<Reply> {
        match decode(datagram) {
            Ok(Packet::InfoResponse(response)) => {
                let echo = response.challenge;
                let ours = echo.get(1..) == self.nonce.get(1..);
                let attempt = ours.then(|| echo.first().map(|&a| u32::from(a))).flatten();
                Verdict::Done {
                    output: Ok(Reply {
                        response,
                        datagram_len: datagram.len(),
                        unverified: !ours,
                    }),
                    attempt,
                }
            }
            Ok(_) => Verdict::Ignore("not an infoResponse"),
            Err(e) => Verdict::Invalid(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emulate::{EmulatedServer, ServerConfig};

    #[test]
    fn echoed_nonce_names_the_attempt_and_opaque_echoes_are_accepted() {
        let emu = EmulatedServer::new(ServerConfig::sample(b"x", b"", 2, 8)).unwrap();
        let mut ex = ServerExchange::with_nonce(true, 0x1122_3344_5566_7788);
        let req = ex.requests(2).unwrap().remove(0);
        assert!(req.starts_with(b"\xff\xffgetInfoEx\0"));
        let Verdict::Done { output, attempt } = ex.on_datagram(&emu.respond(&req).unwrap()) else {
            panic!()
        };
        assert_eq!(attempt, Some(2));
        let reply = output.unwrap();
        assert!(reply.response.ex && !reply.unverified);
        // A server that echoes something else (as real ones do) still answers the query.
        let other = emu.respond(b"\xff\xffgetInfoEx\0\0\0\0\0").unwrap();
        let Verdict::Done { attempt, output } = ex.on_datagram(&other) else {
            panic!()
        };
        assert_eq!(attempt, None);
        assert!(output.unwrap().unverified, "an echo not ours is marked");
        assert!(matches!(
            ex.on_datagram(b"\xff\xffgetInfo\0"),
            Verdict::Ignore(_)
        ));
        assert!(matches!(
            ex.on_datagram(b"\xff\xffinfoResponse\0"),
            Verdict::Invalid(_)
        ));
    }
}
