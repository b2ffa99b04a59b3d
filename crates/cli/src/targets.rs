//! Server addresses from the command line and files: `HOST[:PORT]`, `[IPv6]:PORT`, bare IPv6.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;

/// One address as given, and what it resolved to.
#[derive(Debug, Clone)]
pub struct Target {
    /// As the user wrote it.
    pub text: String,
    /// The resolved address.
    pub addr: Option<SocketAddr>,
    /// Why it did not resolve.
    pub error: Option<String>,
}

/// Reads one address per line; `#` starts a comment; `-` is standard input.
pub fn read_list(path: &Path) -> std::io::Result<Vec<String>> {
    let text = if path == Path::new("-") {
        std::io::read_to_string(std::io::stdin())?
    } else {
        std::fs::read_to_string(path)?
    };
    Ok(text
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect())
}

/// Splits `text` into host and port (`default_port` when none is given).
fn split(text: &str, default_port: u16) -> Result<(String, u16), String> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Ok((ip.to_string(), default_port));
    }
    if let Ok(sa) = text.parse::<SocketAddr>() {
        return Ok((sa.ip().to_string(), sa.port()));
    }
    if let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        return Ok((inner.to_string(), default_port));
    }
    match text.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => {
            let port = port
                .parse::<u16>()
                .map_err(|_| format!("bad port in {text:?}"))?;
            Ok((host.to_string(), port))
        }
        Some(_) => Err(format!("cannot read address {text:?}")),
        None => Ok((text.to_string(), default_port)),
    }
}

/// The first IPv4 address of a name, else its first address: most game servers listen on
/// IPv4 only, while names like `localhost` often list `::1` first. Give `[v6]:port` to
/// choose IPv6.
fn prefer_ipv4(addrs: impl Iterator<Item = SocketAddr>) -> Option<SocketAddr> {
    let all: Vec<SocketAddr> = addrs.collect();
    all.iter().find(|a| a.is_ipv4()).or(all.first()).copied()
}

/// Resolves every address (DNS for host names).
pub async fn resolve(texts: &[String], default_port: u16) -> Vec<Target> {
    let mut out = Vec::with_capacity(texts.len());
    for text in texts {
        let target = match split(text, default_port) {
            Err(e) => Target {
                text: text.clone(),
                addr: None,
                error: Some(e),
            },
            Ok((host, port)) => match host.parse::<IpAddr>() {
                Ok(ip) => Target {
                    text: text.clone(),
                    addr: Some(SocketAddr::new(ip, port)),
                    error: None,
                },
                Err(_) => match tokio::net::lookup_host((host.as_str(), port)).await {
                    Ok(addrs) => match prefer_ipv4(addrs) {
                        Some(a) => Target {
                            text: text.clone(),
                            addr: Some(a),
                            error: None,
                        },
                        None => Target {
                            text: text.clone(),
                            addr: None,
                            error: Some(format!("{host}: no address")),
                        },
                    },
                    Err(e) => Target {
                        text: text.clone(),
                        addr: None,
                        error: Some(format!("{host}: {e}")),
                    },
                },
            },
        };
        out.push(target);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_prefer_ipv4() {
        let v6: SocketAddr = "[::1]:1".parse().unwrap();
        let v4: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert_eq!(prefer_ipv4([v6, v4].into_iter()), Some(v4));
        assert_eq!(prefer_ipv4([v6].into_iter()), Some(v6));
        assert_eq!(prefer_ipv4(std::iter::empty()), None);
    }

    #[test]
    fn address_forms() {
        assert_eq!(
            split("127.0.0.1", 27960).unwrap(),
            ("127.0.0.1".into(), 27960)
        );
        assert_eq!(
            split("127.0.0.1:27961", 27960).unwrap(),
            ("127.0.0.1".into(), 27961)
        );
        assert_eq!(split("[::1]:27961", 27960).unwrap(), ("::1".into(), 27961));
        assert_eq!(split("::1", 27960).unwrap(), ("::1".into(), 27960));
        assert_eq!(split("[::1]", 27960).unwrap(), ("::1".into(), 27960));
        assert_eq!(
            split("localhost:1", 27960).unwrap(),
            ("localhost".into(), 1)
        );
        assert!(split("host:notaport", 27960).is_err());
    }
}
