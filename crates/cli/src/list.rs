//! Server lists as people keep them: one address per line (`fragstat query GAME -f FILE`), or
//! qstat's server files — addresses separated by white space, each optionally preceded by a
//! server type (`q3s 1.2.3.4:27960`, `woets host`, `tees [::1]:8303`; qstat's type names are
//! aliases of fragstat's games) — several games in one file, `#` starting a comment.
//!
//! A line that cannot be read (not UTF-8, an unknown type, junk) is reported as its own
//! entry, with its line number; the rest of the file is read.

use std::net::SocketAddr;

use fragstat::GameRef;

/// One entry of a list.
#[derive(Debug, Clone)]
pub enum Entry {
    /// A server to ask: its game (the line's type, else the command's GAME) and address.
    Server {
        /// The game.
        game: GameRef,
        /// The address as written.
        text: String,
        /// The address, when the text is a literal `IP:PORT`, or a bare IP (with the game's
        /// port): read once, here, with nothing to resolve or check again.
        addr: Option<SocketAddr>,
    },
    /// Something that is not a server, and why.
    Bad {
        /// What was written (or `line N`).
        text: String,
        /// Why it was left out.
        reason: String,
    },
}

/// Reads a list; `default` is the game of addresses without a type (the command's GAME).
pub fn read(bytes: &[u8], default: Option<&GameRef>, source: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    // A type applies to the next address, as in qstat's files (they may be on separate lines).
    let mut pending: Option<(GameRef, String, usize)> = None;
    // A qstat master line (`q3m HOST`): reported, and its address not asked as a server.
    let mut master: Option<(GameRef, String, usize)> = None;
    for (n, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let line_no = n + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let Ok(line) = std::str::from_utf8(raw) else {
            out.push(Entry::Bad {
                text: format!("{source}:{line_no}"),
                reason: "not UTF-8 text".into(),
            });
            continue;
        };
        let line = match line.find('#') {
            Some(i) => line.get(..i).unwrap_or_default(),
            None => line,
        };
        // Words of this line that are neither addresses nor types: one entry for the line,
        // where the first of them stood.
        let mut junk: Option<(usize, Vec<&str>)> = None;
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let mut skip = false;
        for (k, &token) in tokens.iter().enumerate() {
            if std::mem::take(&mut skip) {
                continue;
            }
            if let Some((game, t, at)) = master.take() {
                out.push(Entry::Bad {
                    text: format!("{source}:{at}: {t} {token}"),
                    reason: format!(
                        "{t} is qstat's master type: list it with `fragstat master {} {token}` (--probe asks its servers)",
                        game.id()
                    ),
                });
                continue;
            }
            if let Some(game) = qstat_master_type(token) {
                if let Some((_, t, at)) = pending.take() {
                    out.push(Entry::Bad {
                        text: format!("{source}:{at}: {t}"),
                        reason: "a server type with no address after it".into(),
                    });
                }
                master = Some((game, token.to_string(), line_no));
                continue;
            }
            if let Some(game) = type_of(token) {
                if let Some((_, t, at)) = pending.take() {
                    out.push(Entry::Bad {
                        text: format!("{source}:{at}: {t}"),
                        reason: "a server type with no address after it".into(),
                    });
                }
                pending = Some((game, token.to_string(), line_no));
                continue;
            }
            // Most lines of a big list are `IP:PORT`: parsed once, here.
            let literal: Option<SocketAddr> = token.parse().ok();
            // A word where a type goes, before an address: a server type fragstat does not
            // know (`a2s 1.2.3.4`). Its address is not asked as another game's server.
            if pending.is_none() && literal.is_none() {
                if let Some(e) = unknown_type(token, tokens.get(k + 1), source, line_no) {
                    skip = true;
                    out.push(e);
                    continue;
                }
            }
            if literal.is_none() && !looks_like_address(token) {
                pending = None;
                junk.get_or_insert_with(|| (out.len(), Vec::new()))
                    .1
                    .push(token);
                continue;
            }
            let game = match pending.take() {
                Some((g, _, _)) => g,
                None => match default {
                    Some(g) => g.clone(),
                    None => {
                        out.push(Entry::Bad {
                            text: token.to_string(),
                            reason: format!(
                                "{source}:{line_no}: no game for this address (write `TYPE ADDRESS`, e.g. `q3s {token}`, or give GAME)"
                            ),
                        });
                        continue;
                    }
                },
            };
            // A bare IP takes the game's port, as the resolver would give it.
            let addr = literal.or_else(|| {
                let ip: std::net::IpAddr = token.parse().ok()?;
                Some(SocketAddr::new(ip, game.default_port()))
            });
            out.push(Entry::Server {
                game,
                text: token.to_string(),
                addr,
            });
        }
        if let Some((at, words)) = junk {
            let entry = match words.as_slice() {
                [word] => Entry::Bad {
                    text: (*word).to_string(),
                    reason: format!(
                        "{source}:{line_no}: not an address or a server type fragstat knows"
                    ),
                },
                _ => Entry::Bad {
                    text: line.trim().to_string(),
                    reason: format!(
                        "{source}:{line_no}: words that are not addresses or server types fragstat knows"
                    ),
                },
            };
            out.insert(at, entry);
        }
    }
    if let Some((game, t, at)) = master {
        out.push(Entry::Bad {
            text: format!("{source}:{at}: {t}"),
            reason: format!(
                "{t} is qstat's master type, with no address after it (`fragstat master {} ADDR`)",
                game.id()
            ),
        });
    }
    if let Some((_, t, at)) = pending {
        out.push(Entry::Bad {
            text: format!("{source}:{at}: {t}"),
            reason: "a server type with no address after it".into(),
        });
    }
    out
}

/// Why a server file gave no list.
pub(crate) enum ListError {
    /// Said already: a usage error (no such file, a directory, not text, no servers).
    Usage(std::process::ExitCode),
    /// A failure reading it.
    Io(anyhow::Error),
}

/// Reads a server file (`-`: standard input) as a list: a missing file, a directory, a file
/// that is not text or lists nothing are usage errors.
pub(crate) fn read_list(
    f: &std::path::Path,
    game: Option<&GameRef>,
) -> Result<Vec<Entry>, ListError> {
    let name = f.display();
    if f.is_dir() {
        return Err(ListError::Usage(crate::usage(format!(
            "{name} is a directory, not a server list"
        ))));
    }
    let bytes = match read_file(f) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ListError::Usage(crate::usage(format!(
                "{name}: no such file"
            ))))
        }
        Err(e) => {
            return Err(ListError::Io(
                anyhow::Error::from(e).context(format!("reading {name}")),
            ))
        }
    };
    if let Some(why) = not_text(&bytes) {
        return Err(ListError::Usage(crate::usage(format!(
            "{name} is not a text file ({why}): a server list is text, one address or `TYPE ADDRESS` a line"
        ))));
    }
    let read = read(&bytes, game, &name.to_string());
    if read.is_empty() {
        return Err(ListError::Usage(crate::usage(format!(
            "{name} lists no servers"
        ))));
    }
    Ok(read)
}

/// Reads a server file (or standard input, `-`).
pub(crate) fn read_file(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    if path == std::path::Path::new("-") {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut b)?;
        Ok(b)
    } else {
        std::fs::read(path)
    }
}

/// `token` before the address `next`, when it reads as a server type fragstat does not know
/// (`a2s 1.2.3.4`): one entry for the two, so the address is not asked as another game's.
fn unknown_type(token: &str, next: Option<&&str>, source: &str, line_no: usize) -> Option<Entry> {
    if looks_like_address(token) || !looks_like_type(token) {
        return None;
    }
    let addr = next.filter(|t| looks_like_address(t))?;
    Some(Entry::Bad {
        text: format!("{token} {addr}"),
        reason: format!(
            "{source}:{line_no}: {token:?} is a server type fragstat does not know (see `fragstat games`): not asked"
        ),
    })
}

/// A word that reads as a server type (qstat's are letters and digits, `-` and `_`).
fn looks_like_type(token: &str) -> bool {
    token.len() <= 24
        && token.bytes().any(|b| b.is_ascii_alphabetic())
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && !token.eq_ignore_ascii_case("localhost")
}

/// Why `bytes` is no text file (a server list), if it is not: a NUL byte, or no line that
/// is UTF-8.
pub fn not_text(bytes: &[u8]) -> Option<String> {
    if let Some(at) = bytes.iter().position(|&b| b == 0) {
        return Some(format!("a NUL byte at offset {at}"));
    }
    let mut lines = bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace));
    let mut any = false;
    let all_bad = lines.all(|l| {
        any = true;
        std::str::from_utf8(l).is_err()
    });
    (any && all_bad).then(|| "no line of it is UTF-8 text".to_string())
}

/// The game of a qstat master type (`q3m`, `woetm`, `rwm`, `dm3m`, `teem`…): qstat names a
/// game's master type as its server type with `m` for `s`.
pub fn qstat_master_type(token: &str) -> Option<GameRef> {
    // An address is never a type (and is not looked up among every game's names).
    if is_address_like(token) || fragstat::game(token).is_some() {
        return None;
    }
    let lower = token.to_ascii_lowercase();
    let stem = lower.strip_suffix('m')?;
    fragstat::game(&format!("{stem}s"))
}

/// A token with an address's punctuation (`:`, `.`, `[`): no game id or alias has it.
fn is_address_like(token: &str) -> bool {
    token.contains([':', '.', '['])
}

/// The game a qstat type string (or a fragstat game id or alias) names.
fn type_of(token: &str) -> Option<GameRef> {
    // An address is never a type, even one that is also a word (`localhost`).
    if is_address_like(token) {
        return None;
    }
    fragstat::game(token)
}

/// A host name, `HOST:PORT`, an IP address, `[IPv6]:PORT`.
fn looks_like_address(token: &str) -> bool {
    if token.parse::<std::net::SocketAddr>().is_ok() || token.parse::<std::net::IpAddr>().is_ok() {
        return true;
    }
    let host = match token.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => {
            if p.parse::<u16>().is_err() {
                return false;
            }
            h
        }
        Some(_) => return false,
        // A bare word is junk, not a host to look up (`localhost` aside): a name in a list
        // has a dot or a port.
        None if !token.contains('.') => return token.eq_ignore_ascii_case("localhost"),
        None => token,
    };
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(entries: &[Entry]) -> Vec<String> {
        entries
            .iter()
            .map(|e| match e {
                Entry::Server { game, text, .. } => format!("{} {text}", game.id()),
                Entry::Bad { text, .. } => format!("BAD {text}"),
            })
            .collect()
    }

    #[test]
    fn qstat_files_with_several_games_comments_and_bad_lines() {
        let file = b"# my servers\nq3s 1.2.3.4:27960\nwoets  5.6.7.8\n  tees [::1]:8303 dm3s\n10.0.0.1:27666\n\xff\xfe junk\nq3s not@an-address\nq4s\n\nopenarena host.example\n2.3.4.5 # untyped\n";
        let e = read(file, None, "servers.txt");
        assert_eq!(
            ids(&e),
            [
                "q3 1.2.3.4:27960",
                "et 5.6.7.8",
                "teeworlds [::1]:8303",
                "doom3 10.0.0.1:27666",
                "BAD servers.txt:6",
                "BAD not@an-address",
                "BAD servers.txt:8: q4s",
                "openarena host.example",
                "BAD 2.3.4.5",
            ]
        );
        // With a GAME for untyped addresses.
        let q3 = fragstat::game("q3").unwrap();
        let e = read(b"2.3.4.5\nwoets 5.6.7.8 1.1.1.1\r\n", Some(&q3), "-");
        assert_eq!(ids(&e), ["q3 2.3.4.5", "et 5.6.7.8", "q3 1.1.1.1"]);
    }

    /// Bare words are junk, never host names to look up (`localhost` and names with a dot or
    /// a port aside); a line of junk words is one entry; a qstat master line is reported and
    /// its address not asked.
    #[test]
    fn junk_words_are_not_looked_up_and_master_lines_are_not_asked() {
        let q3 = fragstat::game("q3").unwrap();
        let e = read(
            b"this is junk
localhost
LAN-box:27960
foo
q3m 1.2.3.4 q3s 5.6.7.8
woetm
",
            Some(&q3),
            "f",
        );
        assert_eq!(
            ids(&e),
            [
                "BAD this is junk",
                "q3 localhost",
                "q3 LAN-box:27960",
                "BAD foo",
                "BAD f:5: q3m 1.2.3.4",
                "q3 5.6.7.8",
                "BAD f:6: woetm",
            ]
        );
    }
}
