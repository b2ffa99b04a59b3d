//! The fast writer's side of the shapes' field types: each writes what its `Serialize`
//! writes (`json_shapes.rs` checks the two byte for byte).

use super::{ExtraField, PlayerShape, Players, Raw, RulesField, Shown};
use crate::json::{is_plain_ascii, write_quoted, write_serde, write_str, FastJson};
use crate::model::{Dialect, Text};
use crate::record::Status;
use crate::text;

impl FastJson for Shown<'_> {
    #[inline]
    fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Shown::Model(t) => write_shown(out, t),
            Shown::Read(t) => write_str(out, t),
        }
    }
}

/// `Text::display_cow`, written. Printable ASCII with nothing to escape stays so once its
/// colour codes are stripped (stripping only removes bytes), so such text is stripped
/// straight into `out`; anything else is decoded and escaped the long way.
fn write_shown(out: &mut Vec<u8>, t: &Text) {
    let bytes = t.as_bytes();
    match (t.dialect(), is_plain_ascii(bytes)) {
        (Dialect::Plain, true) => write_quoted(out, bytes),
        (d, true) => {
            out.reserve(bytes.len() + 2);
            out.push(b'"');
            d.strip_into(bytes, out);
            out.push(b'"');
        }
        (_, false) => t.with_shown(|s| write_str(out, s)),
    }
}

impl FastJson for Raw<'_> {
    #[inline]
    fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            // ASCII is the same characters in every decoding.
            Raw::Model(t) if is_plain_ascii(t.as_bytes()) => write_quoted(out, t.as_bytes()),
            Raw::Model(t) => write_str(out, &t.raw_cow()),
            Raw::Read(t) => write_str(out, t),
        }
    }
}

impl FastJson for Players<'_> {
    fn write_json(&self, out: &mut Vec<u8>) {
        out.push(b'[');
        match self {
            Players::Model(ps) => {
                for (i, p) in ps.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    PlayerShape::from(p).write_json(out);
                }
            }
            Players::Read(ps) => {
                for (i, p) in ps.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    p.write_json(out);
                }
            }
        }
        out.push(b']');
    }
}

/// Bytes that read as `text::decode_cow(bytes)`, written: copied whole when they are
/// printable ASCII with nothing to escape (then every decoding of them is the same text).
#[inline]
fn write_decoded(out: &mut Vec<u8>, bytes: &[u8]) {
    if is_plain_ascii(bytes) {
        write_quoted(out, bytes);
    } else {
        write_str(out, &text::decode_cow(bytes));
    }
}

impl FastJson for RulesField<'_> {
    fn write_json(&self, out: &mut Vec<u8>) {
        out.push(b'{');
        match self {
            RulesField::Model(rules) => {
                for (i, (k, v)) in rules.pairs().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write_decoded(out, k);
                    out.push(b':');
                    write_decoded(out, v);
                }
            }
            RulesField::Read(pairs) => {
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write_str(out, k);
                    out.push(b':');
                    write_str(out, v);
                }
            }
        }
        out.push(b'}');
    }
}

impl FastJson for ExtraField<'_> {
    fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            ExtraField::Model(e) => write_serde(out, e),
            ExtraField::Read(v) => write_serde(out, v),
        }
    }
}

impl FastJson for Status {
    #[inline]
    fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(match self {
            Status::Online => b"\"online\"",
            Status::Timeout => b"\"timeout\"",
            Status::Error => b"\"error\"",
            Status::Down => b"\"down\"",
        });
    }
}

impl FastJson for Dialect {
    #[inline]
    fn write_json(&self, out: &mut Vec<u8>) {
        // Ids are lower-case ASCII letters and digits: nothing to escape.
        write_quoted(out, self.id().as_bytes());
    }
}
