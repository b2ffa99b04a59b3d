//! Datagrams of the family: the short `info` query and reply of qfusion, and every Quake III
//! out-of-band packet (decoded by [`fragstat_quake3_oob`]).

use crate::Encode;
use fragstat_core::wire::Reader;
use fragstat_quake3_oob::{Packet as Oob, OOB_HEADER};

use crate::short::{InfoRequest, ShortInfo};
use crate::DecodeError;
use crate::EncodeError;

/// One datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Packet {
    /// `info <protocol> [full] [empty]`: client → server (qfusion's short query).
    Info(InfoRequest),
    /// `info\n\\n\\…\\EOT`: the short reply.
    InfoReply(ShortInfo),
    /// Any Quake III out-of-band packet (`getinfo`, `statusResponse`, `getservers`…).
    Oob(Oob),
}

/// Decodes one datagram.
///
/// ```
/// use fragstat_warsow::{decode, Packet};
/// let p = decode(b"\xff\xff\xff\xffinfo 21 full empty\n")?;
/// assert!(matches!(p, Packet::Info(r) if r.protocol == 21 && r.full && r.empty));
/// # Ok::<(), fragstat_warsow::DecodeError>(())
/// ```
pub fn decode(datagram: &[u8]) -> Result<Packet, DecodeError> {
    let mut r = Reader::new(datagram);
    if r.eat(&OOB_HEADER) {
        // `infoResponse` also starts with `info`: only the bare word is the short query.
        let word_end = r.rest().iter().position(|b| !b.is_ascii_alphanumeric());
        if r.rest().starts_with(b"info") && word_end.is_none_or(|e| e == 4) {
            r.eat(b"info");
            if r.eat(b"\n") {
                return ShortInfo::decode_body(&mut r).map(Packet::InfoReply);
            }
            let at = r.offset();
            return InfoRequest::decode_args(at, r.take_rest()).map(Packet::Info);
        }
    }
    fragstat_quake3_oob::decode(datagram).map(Packet::Oob)
}

impl Encode for Packet {
    /// Appends the datagram to `out`.
    fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        match self {
            Packet::Info(r) => {
                out.extend_from_slice(&OOB_HEADER);
                r.encode_body(out);
                Ok(())
            }
            Packet::InfoReply(i) => {
                out.extend_from_slice(&OOB_HEADER);
                i.encode_body(out)
            }
            Packet::Oob(p) => p
                .encode(out)
                .map_err(|_| EncodeError::Invalid("out-of-band packet cannot be written back")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_words_do_not_shadow_info_response() {
        assert!(matches!(
            decode(b"\xff\xff\xff\xffinfoResponse\n\\challenge\\1\\sv_hostname\\x").unwrap(),
            Packet::Oob(Oob::InfoResponse(_))
        ));
        assert!(matches!(
            decode(b"\xff\xff\xff\xffinfo 22").unwrap(),
            Packet::Info(InfoRequest {
                protocol: 22,
                full: false,
                empty: false
            })
        ));
        let e = decode(b"\xff\xff\xff\xffinfo").unwrap_err();
        assert_eq!(
            (e.kind(), e.field(), e.offset()),
            ("missing", Some("protocol"), 8)
        );
        let e = decode(b"\xff\xff\xff\xffinfo x").unwrap_err();
        assert_eq!((e.kind(), e.offset()), ("bad_number", 8));
    }

    #[test]
    fn requests_round_trip() {
        for p in [
            Packet::Info(InfoRequest::any(21)),
            Packet::Info(InfoRequest {
                protocol: 9,
                full: false,
                empty: true,
            }),
        ] {
            assert_eq!(decode(&p.to_bytes().unwrap()).unwrap(), p);
        }
    }
}
