//! The family's codec: a datagram is 0.7 when it starts with a 0.7 header byte, else 0.6.
//! The versions' own codecs are [`crate::six`] and [`crate::seven`].

use crate::{seven, six, DecodeError};

/// A 0.6 or a 0.7 packet.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Packet {
    /// 0.6.
    Six(six::Packet),
    /// 0.7.
    Seven(seven::Packet),
}

/// Decodes any Teeworlds datagram: 0.7 when it starts with a 0.7 header byte, else 0.6.
pub fn decode(datagram: &[u8]) -> Result<Packet, DecodeError> {
    match datagram.first() {
        Some(&seven::CONTROL | &seven::CONNLESS) => seven::decode(datagram).map(Packet::Seven),
        _ => six::decode(datagram).map(Packet::Six),
    }
}
