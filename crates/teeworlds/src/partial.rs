//! Replies that list only part of a server's clients, and how to tell.
//!
//! * **The count in the name.** When not every client fits, DDNet appends ` [N/M]` to the
//!   server name: N all clients, M the slots. Its 0.7 reply (ddnet
//!   `src/engine/server/server.cpp` at 28baa427, `CacheServerInfoSixup`, lines 2558-2567
//!   and 2599-2608, since 19.2, 3b40ac82) is cut to the clients that fit one datagram, the
//!   counts then those of the listed clients; its vanilla 0.6 reply (lines 2352-2363 and
//!   2383-2392, `CacheServerInfo`) lists at most 16 clients and caps the counts at 15 (16
//!   when full) and 16 slots. A name is read back only when the reply is that case: a
//!   server literally named `x [3/4]` that lists its clients keeps its name.
//! * **Counts without clients.** Over `sv_server_info_per_second` (50) info requests in a
//!   second, DDNet answers with the counts and no client (lines 2260-2279
//!   `RateLimitServerInfoConnless`, 2431-2435: the main datagram alone). That is a
//!   rate-limited reply, not an empty server.

use crate::{seven, six};

/// DDNet's vanilla client limit (`VANILLA_MAX_CLIENTS`, ddnet
/// `src/engine/shared/protocol.h` line 90).
pub const VANILLA_MAX_CLIENTS: usize = 16;

/// The version prefix of DDNet's 0.7 replies (`"0.7↔%s"`, server.cpp line 2556).
pub const SIXUP_VERSION_PREFIX: &str = "0.7↔";

/// ` [N/M]` read off the end of a server name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NameCount {
    /// The name without the suffix: its length in bytes.
    pub stem: usize,
    /// N: every client on the server.
    pub clients: u32,
    /// M: the client slots.
    pub slots: u32,
}

/// The ` [N/M]` at the end of `name` (decimal digits only), if any.
///
/// ```
/// use fragstat_teeworlds::partial::{name_count, NameCount};
/// assert_eq!(name_count(b"x [30/64]"), Some(NameCount { stem: 1, clients: 30, slots: 64 }));
/// assert_eq!(name_count(b"x [30/64"), None);
/// assert_eq!(name_count(b"x[30/64]"), None);
/// assert_eq!(name_count(b"x [-1/64]"), None);
/// ```
pub fn name_count(name: &[u8]) -> Option<NameCount> {
    let body = name.strip_suffix(b"]")?;
    let open = body.iter().rposition(|&b| b == b'[')?;
    let stem = body.get(..open)?.strip_suffix(b" ")?;
    let inner = body.get(open + 1..)?;
    let slash = inner.iter().position(|&b| b == b'/')?;
    let number = |b: &[u8]| -> Option<u32> {
        if b.is_empty() || b.len() > 10 || !b.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(b).ok()?.parse().ok()
    };
    Some(NameCount {
        stem: stem.len(),
        clients: number(inner.get(..slash)?)?,
        slots: number(inner.get(slash + 1..)?)?,
    })
}

/// DDNet's vanilla 0.6 reply with more than 16 clients: the name's N is over 16 and over
/// the clients listed, the counts capped (15 or 16 clients of at most 16 slots).
pub fn vanilla_cut(info: &six::Info) -> Option<NameCount> {
    let c = name_count(&info.name)?;
    let n = usize::try_from(c.clients).ok()?;
    let capped = matches!(info.num_clients, 15 | 16) && info.max_clients <= 16;
    (capped && n > VANILLA_MAX_CLIENTS && n > info.clients.len()).then_some(c)
}

/// DDNet's 0.7 reply cut to one datagram: a DDNet version (`0.7↔…`), the counts those of the
/// clients listed, and the name's N over them.
pub fn sixup_cut(info: &seven::Info) -> Option<NameCount> {
    if !info.version.starts_with(SIXUP_VERSION_PREFIX.as_bytes()) || info.truncated {
        return None;
    }
    let c = name_count(&info.name)?;
    let listed = info.clients.len();
    let n = usize::try_from(c.clients).ok()?;
    (usize::try_from(info.num_clients) == Ok(listed) && n > listed).then_some(c)
}

/// Counts without any client: a DDNet reply over its rate limit (the datagram was not cut
/// inside a client).
pub fn without_clients(num_clients: i32, listed: usize, truncated: bool) -> bool {
    listed == 0 && num_clients > 0 && !truncated
}

/// The warning of a reply without clients.
pub fn rate_limited_warning(num_clients: u32) -> String {
    format!(
        "no client list: the server sent its counts ({num_clients} clients) without clients, \
         as DDNet does above sv_server_info_per_second (50) info replies a second"
    )
}

/// The warning of a reply with the count in its name.
pub fn cut_warning(listed: usize, c: NameCount) -> String {
    format!(
        "{listed} of {} clients listed: the server cut its client list and put the real count \
         in its name (\" [{}/{}]\", removed from the name)",
        c.clients, c.clients, c.slots
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes() {
        for (name, want) in [
            (&b"My DDNet Server [60/64]"[..], Some((15, 60, 64))),
            (b" [1/2]", Some((0, 1, 2))),
            (b"a [b] [3/4]", Some((5, 3, 4))),
            (b"x [30/64] ", None),
            (b"x [/64]", None),
            (b"x [30/]", None),
            (b"x [30 /64]", None),
            (b"x [99999999999/64]", None),
            (b"x [4294967296/64]", None),
            (b"[3/4]", None),
            (b"", None),
            (b"]", None),
        ] {
            assert_eq!(
                name_count(name).map(|c| (c.stem, c.clients, c.slots)),
                want,
                "{}",
                String::from_utf8_lossy(name)
            );
        }
    }
}
