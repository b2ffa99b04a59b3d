//! The server-info dictionary every idTech 4 reply carries (`idBitMsg::WriteDeltaDict` with
//! no base): `{ str key; str value }*` ended by an empty key, then a list of deleted keys
//! ended by another empty string. With no base the server deletes nothing, so the end is two
//! NULs; deleted keys, if a server ever sent some, are kept and reported rather than dropped.
//!
//! Shared by the ETQW codec, whose replies use the same dictionary.

use fragstat_core::model::Rules;
use fragstat_core::wire::Reader;
use fragstat_core::DecodeError;
use fragstat_core::EncodeError;

/// A decoded dictionary: the pairs in wire order and any deleted keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Dict {
    /// The key/value pairs, raw, in wire order.
    pub pairs: Rules,
    /// Keys listed as deleted (never sent by a server answering a query; kept if one does).
    pub deleted: Vec<Vec<u8>>,
}

impl Dict {
    /// A dictionary of `pairs` with no deleted keys (what a server answering a query sends).
    pub fn new(pairs: Rules) -> Self {
        Dict {
            pairs,
            deleted: Vec::new(),
        }
    }
}

/// Reads a dictionary at the reader's position.
///
/// Fails with [`DecodeError::Missing`] naming `info key`, `info value` or `deleted key` when
/// a string has no terminating NUL.
pub fn read_dict(r: &mut Reader<'_>) -> Result<Dict, DecodeError> {
    let mut dict = Dict::default();
    loop {
        let key = r.cstr("info key")?;
        if key.is_empty() {
            break;
        }
        let value = r.cstr("info value")?;
        dict.pairs.push(key, value);
    }
    loop {
        let key = r.cstr("deleted key")?;
        if key.is_empty() {
            break;
        }
        dict.deleted.push(key.to_vec());
    }
    Ok(dict)
}

/// Writes a player's slot byte, checking it is below 32 (32 ends the list) and above the
/// `previous` slot written (which it then becomes).
pub fn put_slot(out: &mut Vec<u8>, previous: &mut Option<u8>, slot: u8) -> Result<(), EncodeError> {
    if slot >= crate::END_OF_PLAYERS || previous.is_some_and(|q| slot <= q) {
        return Err(EncodeError::OutOfRange {
            field: "player slot (below 32, increasing)",
            value: i64::from(slot),
        });
    }
    *previous = Some(slot);
    out.push(slot);
    Ok(())
}

/// Appends `s` and its NUL, refusing a string that holds a NUL.
pub fn put_str(out: &mut Vec<u8>, s: &[u8], field: &'static str) -> Result<(), EncodeError> {
    if s.contains(&0) {
        return Err(EncodeError::forbidden(field));
    }
    out.extend_from_slice(s);
    out.push(0);
    Ok(())
}

/// Appends a dictionary as [`read_dict`] reads it.
pub fn write_dict(out: &mut Vec<u8>, dict: &Dict) -> Result<(), EncodeError> {
    for (k, v) in dict.pairs.pairs() {
        if k.is_empty() {
            return Err(EncodeError::Empty {
                field: "server-info key",
            });
        }
        put_str(out, k, "info key")?;
        put_str(out, v, "info value")?;
    }
    out.push(0);
    for k in &dict.deleted {
        if k.is_empty() {
            return Err(EncodeError::Empty {
                field: "server-info key",
            });
        }
        put_str(out, k, "deleted key")?;
    }
    out.push(0);
    Ok(())
}

/// The value of `key` compared case-insensitively, as the engine's `idDict::FindKey` does
/// (first match in wire order).
pub fn get_ci<'a>(pairs: &'a Rules, key: &str) -> Option<&'a [u8]> {
    pairs
        .pairs()
        .find(|(k, _)| k.eq_ignore_ascii_case(key.as_bytes()))
        .map(|(_, v)| v)
}

/// The value of `key` (case-insensitive) as a decimal integer, surrounding spaces allowed.
pub fn get_int_ci(pairs: &Rules, key: &str) -> Option<i64> {
    let v = get_ci(pairs, key)?;
    std::str::from_utf8(v).ok()?.trim().parse().ok()
}

/// Lower-case hex of `bytes`, for warnings and extra fields.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pairs_deleted_keys_and_empty_values() {
        let bytes = b"fs_game\0\0si_name\0x\0\0gone\0\0rest";
        let mut r = Reader::new(bytes);
        let d = read_dict(&mut r).unwrap();
        assert_eq!(d.pairs.get("fs_game"), Some(&b""[..]));
        assert_eq!(get_ci(&d.pairs, "SI_NAME"), Some(&b"x"[..]));
        assert_eq!(d.deleted, vec![b"gone".to_vec()]);
        assert_eq!(r.rest(), b"rest");
        let mut out = Vec::new();
        write_dict(&mut out, &d).unwrap();
        assert_eq!(&out[..], &bytes[..bytes.len() - 4]);
    }

    #[test]
    fn missing_terminators_name_the_field() {
        let e = read_dict(&mut Reader::with_base(b"si_name\0abc", 10)).unwrap_err();
        assert_eq!(
            (e.kind(), e.field(), e.offset()),
            ("missing", Some("info value"), 21)
        );
        let e = read_dict(&mut Reader::new(b"k\0v\0")).unwrap_err();
        assert_eq!((e.kind(), e.field()), ("missing", Some("info key")));
        let e = read_dict(&mut Reader::new(b"k\0v\0\0")).unwrap_err();
        assert_eq!((e.kind(), e.field()), ("missing", Some("deleted key")));
    }
}
