//! The short `info` query of qfusion: `info <protocol> [full] [empty]` and its reply
//! `info\n\\n\\NAME\\m\\MAP\\u\\ c/ m\\…\\EOT`.
//!
//! Source: qfusion `source/server/sv_oob.c` `SVC_InfoResponse` and `SV_ShortInfoString`: the
//! server stays silent unless the protocol matches, and when it is full (without `full`) or
//! empty (without `empty`). The reply's pairs are separated by **two** backslashes, values are
//! space-padded (`%8s` map, `%2i/%2i` clients and slots capped at 99, `%6s` game type, `%2i`
//! bots), the string is at most 180 bytes and ends in `EOT`. Keys: `n` name, `m` map, `u`
//! clients/slots (bots included), `g` game type, `mo` mod directory, `ig` instagib, `s` skill
//! level, `p` password, `b` bots, `mm` matchmaking. A missing `p` or `b` means 0.
//!
//! Warsow 0.3 (protocol 9; `/work/shared/seeds/warsow-query.txt`, the 0.x query document)
//! pads otherwise: `u` `%02i/%02i` (`03/16`), `g` `%5s`. The readers trim spaces and take
//! leading zeros, so both forms read the same.

use crate::EncodeError;
use fragstat_core::model::Rules;
use fragstat_core::wire::{decimal_i32, Reader};

use crate::DecodeError;

/// An `info` request.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InfoRequest {
    /// The protocol asked for; a server answers only its own.
    pub protocol: i32,
    /// Answer even when full.
    pub full: bool,
    /// Answer even when empty.
    pub empty: bool,
}

impl InfoRequest {
    /// `info <protocol> full empty`: answered whatever the server's state.
    pub fn any(protocol: i32) -> Self {
        InfoRequest {
            protocol,
            full: true,
            empty: true,
        }
    }

    /// Reads the arguments after `info` (whitespace-separated, like `Cmd_TokenizeString`).
    pub(crate) fn decode_args(base: usize, args: &[u8]) -> Result<Self, DecodeError> {
        let mut words = args
            .split(|&b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0))
            .filter(|w| !w.is_empty());
        let proto = words.next().ok_or(DecodeError::Missing {
            field: "protocol",
            offset: base,
        })?;
        let protocol = decimal_i32(proto, "protocol", base)?;
        let (mut full, mut empty) = (false, false);
        for w in words {
            full |= w.eq_ignore_ascii_case(b"full");
            empty |= w.eq_ignore_ascii_case(b"empty");
        }
        Ok(InfoRequest {
            protocol,
            full,
            empty,
        })
    }

    /// Appends the command and arguments (after the out-of-band header).
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(format!("info {}", self.protocol).as_bytes());
        if self.full {
            out.extend_from_slice(b" full");
        }
        if self.empty {
            out.extend_from_slice(b" empty");
        }
        out.push(b'\n');
    }
}

/// The short info reply: its pairs, raw (padding kept), in wire order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShortInfo {
    /// The pairs as sent (values keep their padding).
    pub pairs: Rules,
    /// The reply ended with `EOT` (qfusion always writes it; a reply without it was cut).
    pub terminated: bool,
    /// Pairs were separated by single backslashes (the 0.x documentation's notation) rather
    /// than qfusion's double ones.
    pub single_backslashes: bool,
}

/// The longest short info string qfusion writes (`MAX_STRING_SVCINFOSTRING`).
pub const MAX_SHORT_INFO: usize = 180;

fn trimmed(v: &[u8]) -> &[u8] {
    let start = v.iter().position(|&b| b != b' ').unwrap_or(v.len());
    let end = v.iter().rposition(|&b| b != b' ').map_or(start, |e| e + 1);
    v.get(start..end).unwrap_or_default()
}

fn int(v: &[u8]) -> Option<i32> {
    decimal_i32(trimmed(v), "value", 0).ok()
}

impl ShortInfo {
    /// Parses the text after `info\n`, which starts at absolute offset `base`.
    pub(crate) fn decode_body(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let base = r.offset();
        let body = r.take_rest();
        if body.is_empty() {
            return Err(DecodeError::Missing {
                field: "short info",
                offset: base,
            });
        }
        let (sep, single): (&[u8], bool) = if body.starts_with(b"\\\\") {
            (b"\\\\", false)
        } else if body.starts_with(b"\\") {
            (b"\\", true)
        } else {
            return Err(DecodeError::Invalid {
                field: "short info",
                offset: base,
                reason: "does not start with '\\\\'",
            });
        };
        let mut fields = Vec::new();
        let mut rest = body.get(sep.len()..).unwrap_or_default();
        let mut offset = base + sep.len();
        loop {
            match find(rest, sep) {
                Some(i) => {
                    fields.push((offset, rest.get(..i).unwrap_or_default()));
                    rest = rest.get(i + sep.len()..).unwrap_or_default();
                    offset += i + sep.len();
                }
                None => {
                    fields.push((offset, rest));
                    break;
                }
            }
        }
        let mut info = ShortInfo {
            single_backslashes: single,
            ..ShortInfo::default()
        };
        // The last field is `EOT` (the terminator, not a key), or what a cut reply left.
        match fields.last() {
            Some((_, b"EOT")) => {
                info.terminated = true;
                fields.pop();
            }
            Some((_, b"")) => {
                fields.pop();
            }
            _ => {}
        }
        let mut it = fields.into_iter();
        while let Some((at, key)) = it.next() {
            let Some((_, value)) = it.next() else {
                if !info.terminated {
                    // A reply cut inside a key: keep what was complete.
                    break;
                }
                return Err(DecodeError::Invalid {
                    field: "short info",
                    offset: at,
                    reason: "key without a value",
                });
            };
            if key.is_empty() {
                return Err(DecodeError::Invalid {
                    field: "short info key",
                    offset: at,
                    reason: "empty",
                });
            }
            info.pairs.push(key, value);
        }
        Ok(info)
    }

    /// Appends `info\n` and the pairs in qfusion's form (double backslashes, `EOT` when
    /// terminated). Fails when a key or value holds a backslash, a NUL or a newline.
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        out.extend_from_slice(b"info\n");
        let sep: &[u8] = if self.single_backslashes {
            b"\\"
        } else {
            b"\\\\"
        };
        if self.pairs.is_empty() && !self.terminated {
            return Err(EncodeError::Invalid(
                "an empty short info without EOT cannot be read back",
            ));
        }
        for (k, v) in self.pairs.pairs() {
            if k.is_empty() || k == b"EOT" {
                return Err(EncodeError::Invalid("short info key is empty or EOT"));
            }
            if k.iter().chain(v).any(|&b| matches!(b, b'\\' | 0 | b'\n')) {
                return Err(EncodeError::Invalid(
                    "short info pair holds '\\', NUL or a newline",
                ));
            }
            out.extend_from_slice(sep);
            out.extend_from_slice(k);
            out.extend_from_slice(sep);
            out.extend_from_slice(v);
        }
        if self.terminated {
            out.extend_from_slice(sep);
            out.extend_from_slice(b"EOT");
        } else if self
            .pairs
            .pairs()
            .next_back()
            .is_some_and(|(_, v)| v.is_empty() || v == b"EOT")
        {
            // `\\k\\` would read back as a reply cut after its key, `\\k\\EOT` as a
            // terminated one.
            return Err(EncodeError::Invalid(
                "an unterminated short info cannot end in an empty value or EOT",
            ));
        }
        Ok(())
    }

    /// The raw value of `key`.
    pub fn get(&self, key: &str) -> Option<&[u8]> {
        self.pairs.get(key)
    }

    /// Server name (`n`), raw.
    pub fn name(&self) -> Option<&[u8]> {
        self.get("n")
    }

    /// Map (`m`), padding removed.
    pub fn map(&self) -> Option<&[u8]> {
        self.get("m").map(trimmed)
    }

    /// Game type (`g`), padding removed.
    pub fn gametype(&self) -> Option<&[u8]> {
        self.get("g").map(trimmed)
    }

    /// Mod directory (`mo`), padding removed; sent only when not the base game.
    pub fn game_dir(&self) -> Option<&[u8]> {
        self.get("mo").map(trimmed)
    }

    /// Clients (bots included) and slots (`u`, `%2i/%2i`, each capped at 99).
    pub fn clients(&self) -> Option<(u32, u32)> {
        let u = self.get("u")?;
        let slash = u.iter().position(|&b| b == b'/')?;
        let (c, m) = (u.get(..slash)?, u.get(slash + 1..)?);
        Some((u32::try_from(int(c)?).ok()?, u32::try_from(int(m)?).ok()?))
    }

    /// Bots (`b`); a missing key means 0.
    pub fn bots(&self) -> Option<u32> {
        match self.get("b") {
            Some(b) => u32::try_from(int(b)?).ok(),
            None => Some(0),
        }
    }

    /// A password is needed (`p`); a missing key means no.
    pub fn password(&self) -> bool {
        self.get("p").and_then(int).is_some_and(|p| p != 0)
    }

    /// Instagib (`ig`); a missing key means no.
    pub fn instagib(&self) -> bool {
        self.get("ig").and_then(int).is_some_and(|p| p != 0)
    }

    /// Skill level (`s`: 1 easy, 2 normal, 3 hard).
    pub fn skill_level(&self) -> Option<i32> {
        self.get("s").and_then(int)
    }

    /// Builds the reply qfusion's `SV_ShortInfoString` would write (padding, caps, the
    /// 180-byte limit that drops optional pairs which do not fit).
    #[allow(clippy::too_many_arguments)]
    pub fn build(
        name: &[u8],
        map: &[u8],
        clients: u32,
        slots: u32,
        gametype: &[u8],
        skill: i32,
        password: bool,
        bots: u32,
        instagib: bool,
    ) -> Self {
        // hostname is copied into char[64].
        let name = name.get(..63).unwrap_or(name);
        let mut pairs = Rules::new();
        pairs.push("n", name);
        pairs.push("m", pad(map, 8));
        pairs.push("u", format!("{:2}/{:2}", clients.min(99), slots.min(99)));
        // Each optional entry goes in only while the string stays under the limit
        // (MAX_SVCINFOSTRING_LEN - len > strlen(entry)).
        let mut len = 2 + 1 + 2 + name.len() + 2 + 1 + 2 + pairs.get("m").map_or(0, <[u8]>::len);
        len += 2 + 1 + 2 + 5 + 2;
        let mut optional = |pairs: &mut Rules, k: &str, v: Vec<u8>| {
            let entry = k.len() + 2 + v.len() + 2;
            if (MAX_SHORT_INFO - 4).saturating_sub(len) > entry {
                pairs.push(k, v);
                len += entry;
            }
        };
        optional(&mut pairs, "g", pad(gametype, 6));
        if instagib {
            optional(&mut pairs, "ig", b"1".to_vec());
        }
        optional(&mut pairs, "s", skill.to_string().into_bytes());
        if password {
            optional(&mut pairs, "p", b"1".to_vec());
        }
        if bots > 0 {
            optional(&mut pairs, "b", format!("{:2}", bots.min(99)).into_bytes());
        }
        ShortInfo {
            pairs,
            terminated: true,
            single_backslashes: false,
        }
    }
}

fn pad(v: &[u8], width: usize) -> Vec<u8> {
    let mut out = vec![b' '; width.saturating_sub(v.len())];
    out.extend_from_slice(v);
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &[u8]) -> Result<ShortInfo, DecodeError> {
        ShortInfo::decode_body(&mut Reader::with_base(body, 9))
    }

    #[test]
    fn reads_qfusion_padding_and_defaults() {
        let i = parse(b"\\\\n\\\\^1My ^7Server\\\\m\\\\    wca1\\\\u\\\\ 3/16\\\\g\\\\    ca\\\\s\\\\1\\\\EOT")
            .unwrap();
        assert!(i.terminated && !i.single_backslashes);
        assert_eq!(i.name(), Some(&b"^1My ^7Server"[..]));
        assert_eq!(i.map(), Some(&b"wca1"[..]));
        assert_eq!(i.get("m"), Some(&b"    wca1"[..]), "raw keeps the padding");
        assert_eq!(i.clients(), Some((3, 16)));
        assert_eq!(i.gametype(), Some(&b"ca"[..]));
        assert_eq!(
            (i.bots(), i.password(), i.skill_level()),
            (Some(0), false, Some(1))
        );
    }

    #[test]
    fn reads_warsow_03_padding() {
        // The 0.x document's `%02i/%02i` and `%5s`, with its `b` `%2i`.
        let i = parse(b"\\\\n\\\\Old\\\\m\\\\wdm2\\\\u\\\\03/16\\\\g\\\\   ca\\\\b\\\\ 2\\\\EOT")
            .unwrap();
        assert_eq!(i.clients(), Some((3, 16)));
        assert_eq!(i.gametype(), Some(&b"ca"[..]));
        assert_eq!(i.bots(), Some(2));
        let i = parse(b"\\\\n\\\\x\\\\u\\\\00/08\\\\EOT").unwrap();
        assert_eq!(i.clients(), Some((0, 8)));
    }

    #[test]
    fn builds_what_it_reads() {
        let b = ShortInfo::build(b"name", b"wdm1", 5, 16, b"dm", 2, true, 2, true);
        let mut out = Vec::new();
        b.encode_body(&mut out).unwrap();
        assert_eq!(
            out,
            b"info\n\\\\n\\\\name\\\\m\\\\    wdm1\\\\u\\\\ 5/16\\\\g\\\\    dm\\\\ig\\\\1\\\\s\\\\2\\\\p\\\\1\\\\b\\\\ 2\\\\EOT"
        );
        let back = parse(out.strip_prefix(b"info\n").unwrap()).unwrap();
        assert_eq!(back, b);
        assert_eq!(back.bots(), Some(2));
        assert!(back.password() && back.instagib());
    }

    #[test]
    fn long_names_push_optional_pairs_out() {
        let b = ShortInfo::build(&[b'x'; 100], b"wdm1", 5, 16, b"dm", 2, true, 2, true);
        let mut out = Vec::new();
        b.encode_body(&mut out).unwrap();
        assert!(out.len() - 5 <= MAX_SHORT_INFO, "{}", out.len());
        assert_eq!(b.name().map(<[u8]>::len), Some(63));
    }

    #[test]
    fn errors_name_offsets() {
        let e = parse(b"n\\\\x").unwrap_err();
        assert_eq!((e.kind(), e.offset()), ("invalid", 9));
        let e = parse(b"\\\\n\\\\x\\\\\\\\v\\\\EOT").unwrap_err();
        assert_eq!((e.kind(), e.field()), ("invalid", Some("short info key")));
        // Cut short: what was complete is kept, not terminated.
        let i = parse(b"\\\\n\\\\x\\\\m\\\\  dm").unwrap();
        assert!(!i.terminated);
        assert_eq!(i.map(), Some(&b"dm"[..]));
        let i = parse(b"\\n\\old\\u\\1/8\\EOT").unwrap();
        assert!(i.single_backslashes);
        assert_eq!(i.clients(), Some((1, 8)));
    }
}
