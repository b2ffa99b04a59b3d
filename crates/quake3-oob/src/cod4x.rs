//! CoD4X's master over TCP: the request and the list stream.
//!
//! Sources (docs/protocols/quake3.md, "CoD4X master over TCP"): callofduty4x/CoD4x_Client_pub
//! `src/cl_main.c` @`b4524803`, `CL_GetServersThread` (:1382-1533) and `CL_GlobalServers_f`:
//! * the client connects to `<master>:20810` (`PORT_MASTER`, `q_shared.h:79`), sends
//!   `"\xff\xff\xff\xffgetservers %d %s"` with `PROTOCOL_VERSION` 21 (`UPDATE_VERSION_NUM
//!   "21.3"`, `q_shared.h:46,61`) and the keywords each followed by a space, and the NUL
//!   (`qlen = strlen(querystring) +1`, :1414-1422);
//! * it reads until the master closes the connection (`//We are done`, :1440-1443), at most
//!   `MAX_SERVERSPACKETLENGTH` (256 KiB) within `MASTERQUERY_TIMELIMIT` (15 s);
//! * the stream starts `FF FF FF FF getserversResponse` (:1452, only the first segment:
//!   pyq3serverlist `reader.py:60`); the client skips to the first `\`;
//! * each entry is `\` + 4 bytes it skips + 1 to 3 addresses, each a type byte (`NA_IP` 4,
//!   `NA_IP6` 5, `qcommon.h:146-147`), the address (4 or 16 bytes) and the port (2 bytes,
//!   network order); an entry ends at the next `\` (:1466-1533);
//! * `\EOT` or `\EOF` at an entry's start ends the list.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use fragstat_core::model::MasterEntry;
use fragstat_core::registry::{HttpList, MasterOptions, MasterQuery, MasterQueryError};
use fragstat_core::wire::Reader;
use fragstat_core::{DecodeError, EncodeError};

/// The master's TCP port (`PORT_MASTER`).
pub const MASTER_PORT: u16 = 20810;

/// The protocol number the CoD4X client asks for (`PROTOCOL_VERSION` 21).
pub const PROTOCOL: i32 = 21;

/// Most bytes of one list the client reads (`MAX_SERVERSPACKETLENGTH`, 256 KiB).
pub const MAX_STREAM: usize = 256 * 1024;

/// Most addresses in one entry (the client's `ip < 3` loop).
pub const MAX_ADDRESSES: usize = 3;

/// The stream's header.
const HEADER: &[u8] = b"getserversResponse";

/// Address type bytes (`netadrtype_t`).
const NA_IP: u8 = 4;
const NA_IP6: u8 = 5;

/// The request the CoD4X client sends: `FF FF FF FF getservers <protocol> <kw> <kw> \0`
/// (each keyword followed by a space, then the NUL).
pub fn request(protocol: i32, keywords: &[&str]) -> Vec<u8> {
    let mut out = crate::OOB_HEADER.to_vec();
    out.extend_from_slice(format!("getservers {protocol} ").as_bytes());
    for k in keywords {
        out.extend_from_slice(k.as_bytes());
        out.push(b' ');
    }
    out.push(0);
    out
}

/// How the list ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// `\EOT`.
    Eot,
    /// `\EOF`.
    Eof,
}

/// One server of the stream: the 4 bytes before its addresses (meaning unknown; zero in all
/// data seen) and its 1 to 3 addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Cod4xEntry {
    /// The 4 bytes the client skips.
    pub tag: [u8; 4],
    /// Its addresses (IPv4 or IPv6), in wire order.
    pub addrs: Vec<SocketAddr>,
}

impl Cod4xEntry {
    /// An entry with a zero tag.
    pub fn new(addrs: Vec<SocketAddr>) -> Self {
        Cod4xEntry { tag: [0; 4], addrs }
    }
}

/// A whole list stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Cod4xList {
    /// Bytes between the header and the first `\` (Activision's masters send `\n\0`).
    pub prefix: Vec<u8>,
    /// The servers, in wire order.
    pub entries: Vec<Cod4xEntry>,
    /// The end marker, when one came (the master closing ends the list too).
    pub end: Option<End>,
    /// Bytes after the end marker.
    pub trailing: Vec<u8>,
    /// Why reading stopped before the stream's end (what came before is kept, as the
    /// client keeps it).
    pub stopped: Option<DecodeError>,
}

/// Decodes a whole stream. Only a missing or wrong header is an error; a malformed entry
/// stops reading (see [`Cod4xList::stopped`]).
pub fn decode_stream(bytes: &[u8]) -> Result<Cod4xList, DecodeError> {
    let mut r = Reader::new(bytes);
    if !r.eat(&crate::OOB_HEADER) {
        return Err(DecodeError::BadHeader {
            expected: &crate::OOB_HEADER,
            found: bytes.iter().take(4).copied().collect(),
        });
    }
    let at = r.offset();
    let word = r.take("header", HEADER.len())?;
    if !word.eq_ignore_ascii_case(HEADER) {
        return Err(DecodeError::UnexpectedCommand {
            offset: at,
            command: fragstat_core::wire::excerpt(word),
            expected: "getserversResponse",
        });
    }
    let mut list = Cod4xList {
        prefix: r.take_while(|b| b != b'\\').to_vec(),
        ..Cod4xList::default()
    };
    while !r.is_empty() {
        let rest = r.rest();
        let end = match rest.get(1..4) {
            Some(b"EOT") => Some(End::Eot),
            Some(b"EOF") => Some(End::Eof),
            _ => None,
        };
        if end.is_some() {
            list.end = end;
            let _ = r.take("end marker", 4);
            list.trailing = r.take_rest().to_vec();
            break;
        }
        match read_entry(&mut r) {
            (Some(e), None) => list.entries.push(e),
            (partial, Some(err)) => {
                list.entries.extend(partial);
                list.stopped = Some(err);
                break;
            }
            (None, None) => break,
        }
    }
    Ok(list)
}

/// Reads `\` + tag + addresses: the entry, and the error that stopped it (with the
/// addresses read before it, as the client keeps them).
fn read_entry(r: &mut Reader<'_>) -> (Option<Cod4xEntry>, Option<DecodeError>) {
    let head = r.take("entry", 5).map(|h| -> [u8; 4] {
        h.get(1..5)
            .and_then(|t| t.try_into().ok())
            .unwrap_or([0; 4])
    });
    let tag = match head {
        Ok(t) => t,
        Err(e) => return (None, Some(e)),
    };
    let mut entry = Cod4xEntry {
        tag,
        addrs: Vec::with_capacity(1),
    };
    loop {
        match read_addr(r) {
            Ok(a) => entry.addrs.push(a),
            Err(e) => return (partial(entry), Some(e)),
        }
        if r.is_empty() || r.peek() == Some(b'\\') {
            return (Some(entry), None);
        }
        if entry.addrs.len() >= MAX_ADDRESSES {
            let err = DecodeError::Invalid {
                field: "entry",
                offset: r.offset(),
                reason: "no `\\` after three addresses",
            };
            return (Some(entry), Some(err));
        }
    }
}

fn partial(e: Cod4xEntry) -> Option<Cod4xEntry> {
    (!e.addrs.is_empty()).then_some(e)
}

fn read_addr(r: &mut Reader<'_>) -> Result<SocketAddr, DecodeError> {
    let at = r.offset();
    match r.u8("address type")? {
        NA_IP => {
            let b: [u8; 6] = r.array("IPv4 address")?;
            let [a, b1, c, d, hi, lo] = b;
            Ok(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::new(a, b1, c, d),
                u16::from_be_bytes([hi, lo]),
            )))
        }
        NA_IP6 => {
            let ip: [u8; 16] = r.array("IPv6 address")?;
            let port: [u8; 2] = r.array("IPv6 port")?;
            Ok(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(ip),
                u16::from_be_bytes(port),
                0,
                0,
            )))
        }
        _ => Err(DecodeError::Invalid {
            field: "address type",
            offset: at,
            reason: "neither 4 (IPv4) nor 5 (IPv6)",
        }),
    }
}

impl Cod4xList {
    /// The stream's bytes. Refuses what would read back otherwise: a `\` in the prefix, an
    /// entry without addresses or with more than three, a tag reading `EOT`/`EOF`, trailing
    /// bytes without an end marker.
    pub fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        if self.prefix.contains(&b'\\') {
            return Err(EncodeError::forbidden("prefix (holds `\\`)"));
        }
        if self.end.is_none() && !self.trailing.is_empty() {
            return Err(EncodeError::forbidden(
                "trailing bytes without an end marker",
            ));
        }
        let mut out = crate::OOB_HEADER.to_vec();
        out.extend_from_slice(HEADER);
        out.extend_from_slice(&self.prefix);
        for e in &self.entries {
            if e.addrs.is_empty() || e.addrs.len() > MAX_ADDRESSES {
                return Err(EncodeError::forbidden("entry (1 to 3 addresses)"));
            }
            if matches!(e.tag.get(..3), Some(b"EOT" | b"EOF")) {
                return Err(EncodeError::forbidden("entry tag (read as the end)"));
            }
            out.push(b'\\');
            out.extend_from_slice(&e.tag);
            for a in &e.addrs {
                match a {
                    SocketAddr::V4(v4) => {
                        out.push(NA_IP);
                        out.extend_from_slice(&v4.ip().octets());
                    }
                    SocketAddr::V6(v6) => {
                        out.push(NA_IP6);
                        out.extend_from_slice(&v6.ip().octets());
                    }
                }
                out.extend_from_slice(&a.port().to_be_bytes());
            }
        }
        match self.end {
            Some(End::Eot) => out.extend_from_slice(b"\\EOT"),
            Some(End::Eof) => out.extend_from_slice(b"\\EOF"),
            None => {}
        }
        out.extend_from_slice(&self.trailing);
        Ok(out)
    }

    /// The servers as master entries: one per entry, at its first IPv4 address (else its
    /// last address, as the client keeps them), with every address in `addresses` when
    /// there are several; port-0 addresses are left out.
    pub fn master_entries(&self) -> Vec<MasterEntry> {
        self.entries
            .iter()
            .filter_map(|e| {
                let addrs: Vec<SocketAddr> =
                    e.addrs.iter().copied().filter(|a| a.port() != 0).collect();
                let primary = addrs
                    .iter()
                    .find(|a| a.is_ipv4())
                    .or_else(|| addrs.last())
                    .copied()?;
                let mut m = MasterEntry::new(primary);
                if addrs.len() > 1 {
                    m.addresses = addrs.iter().map(ToString::to_string).collect();
                }
                Some(m)
            })
            .collect()
    }
}

/// The stream as a list for [`MasterQuery::Tcp`]: the entries read, and why reading stopped
/// early as a warning.
pub fn parse_list(bytes: &[u8]) -> Result<HttpList, DecodeError> {
    let list = decode_stream(bytes)?;
    let mut out = HttpList::default();
    out.servers.extend(list.master_entries());
    out.warnings
        .extend(list.stopped.map(|e| format!("stopped reading: {e}")));
    Ok(out)
}

/// The stream an emulated master sends for `servers`: one entry per address, zero tags,
/// `\EOF` last (the real master's end, as the C# browser and qstat read it).
pub fn render(entries: Vec<Cod4xEntry>) -> Vec<u8> {
    let list = Cod4xList {
        entries,
        end: Some(End::Eof),
        ..Cod4xList::default()
    };
    list.encode().unwrap_or_default()
}

/// `cod4x`'s master query: the CoD4X client's request over TCP (`getservers 21 full empty`
/// unless another protocol is given; the master is reported to ignore the number).
pub(crate) fn master_query(
    id: &str,
    options: &MasterOptions,
) -> Result<MasterQuery, MasterQueryError> {
    if options.ext || options.gamename.is_some() {
        return Err(MasterQueryError::option(
            id,
            "CoD4X's TCP master has no extended request and no game name",
        ));
    }
    Ok(MasterQuery::Tcp {
        request: request(options.protocol.unwrap_or(PROTOCOL), &["full", "empty"]),
        parse: parse_list,
    })
}

/// What `fragstat decode cod4x` shows of a stream besides its servers.
#[derive(Debug, PartialEq, serde::Serialize)]
struct StreamDetails {
    stream: &'static str,
    end: Option<&'static str>,
    prefix: Option<String>,
    trailing: Option<String>,
    stopped: Option<String>,
}

/// True when `bytes` start as a list stream does (the header, any case).
pub(crate) fn is_stream(bytes: &[u8]) -> bool {
    bytes.starts_with(&crate::OOB_HEADER)
        && bytes
            .get(4..4 + HEADER.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(HEADER))
}

/// A stream as `fragstat decode` shows it.
pub(crate) fn decoded(bytes: &[u8]) -> Result<fragstat_core::registry::Decoded, DecodeError> {
    use fragstat_core::text::latin1;
    let l = decode_stream(bytes)?;
    let text = |b: &[u8]| (!b.is_empty()).then(|| latin1(b));
    Ok(fragstat_core::registry::Decoded::Servers {
        servers: l.master_entries(),
        details: Some(std::sync::Arc::new(StreamDetails {
            stream: "cod4x-tcp",
            end: l.end.map(|e| match e {
                End::Eot => "EOT",
                End::Eof => "EOF",
            }),
            prefix: text(&l.prefix),
            trailing: text(&l.trailing),
            stopped: l.stopped.map(|e| e.to_string()),
        })),
    })
}

#[cfg(test)]
#[path = "cod4x_tests.rs"]
mod tests;
