//! Connectionless datagrams a server is sent by others than its players: DDNet's register
//! challenge ([`challenge`]).

use crate::{seven, six};

/// The magic a connectionless message starts with after the header (`\xff\xff\xff\xff`).
const MAGIC: [u8; 4] = [0xFF; 4];

/// The challenge a DDNet HTTP master sends to a registering server over UDP to prove its
/// address (DDNet `src/engine/server/register.cpp`, `SERVERBROWSE_CHALLENGE`): the
/// connectionless header, `\xff\xff\xff\xffchal`, the challenge secret, NUL, the token, NUL.
/// The header is 0.6's ([`six::HEADER`]) unless `connless_token` is given, the server's 0.7
/// connless token (its `Connless-Token`): then 0.7's ([`seven::CONNLESS`], that token, and
/// no response token).
pub fn challenge(connless_token: Option<[u8; 4]>, secret: &str, token: &str) -> Vec<u8> {
    let mut d = Vec::with_capacity(20 + secret.len() + token.len());
    match connless_token {
        Some(t) => {
            d.push(seven::CONNLESS);
            d.extend_from_slice(&t);
            d.extend_from_slice(&seven::TOKEN_NONE.to_be_bytes());
        }
        None => d.extend_from_slice(&six::HEADER),
    }
    d.extend_from_slice(&MAGIC);
    d.extend_from_slice(b"chal");
    d.extend_from_slice(secret.as_bytes());
    d.push(0);
    d.extend_from_slice(token.as_bytes());
    d.push(0);
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenge_in_both_headers() {
        assert_eq!(
            challenge(None, "s:0", "t"),
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffchals:0\0t\0"
        );
        assert_eq!(
            challenge(Some([1, 2, 3, 4]), "s:1", ""),
            b"\x21\x01\x02\x03\x04\xff\xff\xff\xff\xff\xff\xff\xffchals:1\0\0"
        );
    }
}
