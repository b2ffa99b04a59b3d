//! What clap cannot check alone: numbers with a message that says what is wanted (a negative
//! number reaches these parsers, not clap's "unexpected argument"), and addresses as people
//! write them, checked before anything is sent (a typo is a usage error, exit 2, not an
//! outage, exit 3).

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

/// A whole number; `what_zero` says why 0 is refused (`None`: 0 is taken).
fn whole(s: &str, what_zero: Option<&str>) -> Result<u64, String> {
    let t = s.trim();
    if t.starts_with('-') && t.len() > 1 && t[1..].bytes().all(|b| b.is_ascii_digit()) {
        return Err(match what_zero {
            Some(_) => "must be 1 or more (a negative number is not taken)".into(),
            None => "must be 0 or more (a negative number is not taken)".into(),
        });
    }
    let n: u64 = t.parse().map_err(|_| {
        format!(
            "not a whole number: write {} or more, in digits",
            u8::from(what_zero.is_some())
        )
    })?;
    match what_zero {
        Some(why) if n == 0 => Err(format!("must be 1 or more ({why})")),
        _ => Ok(n),
    }
}

fn fit<T: TryFrom<u64>>(n: u64) -> Result<T, String> {
    T::try_from(n).map_err(|_| format!("{n} is too large"))
}

/// `--timeout-ms`, `--master-timeout-ms`: 1 or more.
pub fn timeout_ms(s: &str) -> Result<u64, String> {
    whole(s, Some("no reply comes back in 0 ms"))
}

/// `--concurrency`: 1 or more.
pub fn concurrency(s: &str) -> Result<u32, String> {
    fit(whole(s, Some("with no query in flight nothing is sent"))?)
}

/// `--max-per-ip`: 1 or more.
pub fn max_per_ip(s: &str) -> Result<u64, String> {
    whole(s, Some("0 would leave out every server"))
}

/// A count where 0 means something (`--retries`: none; `--rate`, `--deadline-ms`: no limit).
pub fn count_u32(s: &str) -> Result<u32, String> {
    fit(whole(s, None)?)
}

/// [`count_u32`] as a `u64`.
pub fn count_u64(s: &str) -> Result<u64, String> {
    whole(s, None)
}

/// Checks an address as written (`HOST[:PORT]`, `IP[:PORT]`, `[IPv6]:PORT`, a bare IPv6
/// address) without resolving it: `Err` says what is wrong, without repeating the address
/// (a result row shows it beside the reason; a usage error names it once before).
pub fn check_address(text: &str) -> Result<(), String> {
    let t = text;
    if t.trim().is_empty() {
        return Err("an empty address".into());
    }
    if t.parse::<IpAddr>().is_ok() {
        return Ok(());
    }
    if let Ok(sa) = t.parse::<SocketAddr>() {
        // Parsed: only port 0 is left to refuse (no string made again on every list line).
        return if sa.port() == 0 { port_ok("0") } else { Ok(()) };
    }
    if let Some(rest) = t.strip_prefix('[') {
        let Some((inner, after)) = rest.split_once(']') else {
            return Err(
                "the '[' is not closed (an IPv6 address is written [ADDR] or [ADDR]:PORT)".into(),
            );
        };
        if inner.parse::<Ipv6Addr>().is_err() {
            return Err(format!("{inner:?} is not an IPv6 address"));
        }
        return match after {
            "" => Ok(()),
            p => match p.strip_prefix(':') {
                Some(port) => port_ok(port),
                None => Err(format!(
                    "after ']' comes ':PORT' or nothing, e.g. [{inner}]:27960"
                )),
            },
        };
    }
    match t.rsplit_once(':') {
        Some((host, port)) if host.contains(':') => {
            // `::1:27960`: an IPv6 address and a port cannot be told apart without brackets.
            if host.parse::<Ipv6Addr>().is_ok() && port.bytes().all(|b| b.is_ascii_digit()) {
                Err(format!(
                    "an IPv6 address with a port is written [{host}]:{port}"
                ))
            } else {
                Err("not an address (an IPv6 address with a port is written [ADDR]:PORT)".into())
            }
        }
        Some((host, port)) => {
            host_ok(host)?;
            port_ok(port)
        }
        None => host_ok(t),
    }
}

/// A port as written: 1 to 65535.
fn port_ok(port: &str) -> Result<(), String> {
    if port.is_empty() {
        return Err("no port after ':'".to_string());
    }
    match port.parse::<u64>() {
        Ok(0) => Err("port 0 is no server's port (1 to 65535)".to_string()),
        Ok(p) if p > 65535 => Err(format!("port {p} is out of range (1 to 65535)")),
        Ok(_) => Ok(()),
        Err(_) => Err(format!("{port:?} is not a port (a number from 1 to 65535)")),
    }
}

/// A host name: no white space, control characters or URL punctuation.
fn host_ok(host: &str) -> Result<(), String> {
    if host.is_empty() {
        return Err("no host before ':'".to_string());
    }
    if let Some(c) = host
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || "/@[]?#\\,;".contains(*c))
    {
        return Err(format!("not a host name ({c:?} in it)"));
    }
    Ok(())
}

/// Checks every address of `texts` (given on the command line): each bad one is said on a
/// line of its own, and the result is a usage error.
pub fn check_addresses<'a>(
    texts: impl IntoIterator<Item = &'a String>,
) -> Result<(), std::process::ExitCode> {
    let bad: Vec<String> = texts
        .into_iter()
        .filter_map(|t| check_address(t).err().map(|e| format!("{t:?}: {e}")))
        .collect();
    match bad.as_slice() {
        [] => Ok(()),
        [one] => Err(crate::usage(format!("bad address: {one}"))),
        many => {
            for b in &many[..many.len() - 1] {
                eprintln!("error: bad address: {b}");
            }
            Err(crate::usage(format!(
                "bad address: {}",
                many.last().map_or("", String::as_str)
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_people_mistype() {
        for ok in [
            "127.0.0.1",
            "127.0.0.1:27960",
            "[::1]:27960",
            "[::1]",
            "::1",
            "localhost",
            "example.org:1",
            "LAN-box:65535",
        ] {
            assert_eq!(check_address(ok), Ok(()), "{ok}");
        }
        for (bad, says) in [
            ("127.0.0.1:0", "port 0"),
            ("127.0.0.1:99999", "out of range"),
            ("127.0.0.1:-5", "not a port"),
            ("[::1", "not closed"),
            ("::1:27960", "[::1]:27960"),
            ("", "empty"),
            ("host:", "no port"),
            (":27960", "no host"),
            ("a b", "not a host name"),
        ] {
            let e = check_address(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
            // A row shows the address beside the reason: the reason does not repeat it.
            if !bad.is_empty() && bad != "::1:27960" {
                assert!(!e.contains(bad), "{e}");
            }
        }
    }

    #[test]
    fn numbers_say_what_is_wanted() {
        assert!(timeout_ms("-1").unwrap_err().contains("1 or more"));
        assert!(timeout_ms("0").unwrap_err().contains("0 ms"));
        assert_eq!(timeout_ms("250"), Ok(250));
        assert!(count_u32("-1").unwrap_err().contains("0 or more"));
        assert_eq!(count_u32("0"), Ok(0));
        assert!(concurrency("x").unwrap_err().contains("whole number"));
    }
}
