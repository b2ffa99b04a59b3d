//! `[web.api]`: the JSON API's request rates and its optional keys, and the secrets of the
//! configuration (API keys, `webhook_secret`), which are never shown: not in a log line, an
//! error or the configuration's `Debug`.
//!
//! ```toml
//! [web.api]
//! rate = 5              # /api/* requests a second per host without a key (IPv4 address, IPv6 /64)
//! burst = 100           # … at once after a quiet spell
//! site_rate = 20        # … per IPv4 /24, IPv6 /56
//! site_burst = 400
//! net_rate = 50         # … per IPv4 /16, IPv6 /48
//! net_burst = 1000
//! key_rate = 50         # requests a second per key (every client using it together)
//! key_burst = 1000
//!
//! [[web.api.keys]]
//! name = "discord-bot"  # shown in /metrics and the logs (the key never is)
//! key = "…"             # 16 to 256 visible ASCII characters; `Authorization: Bearer …` or `X-Api-Key: …`
//! rate = 100            # its own rate and burst (default key_rate, key_burst)
//! burst = 2000
//! ```

use serde::Deserialize;

/// A secret from the configuration: compared in constant time where it is checked, and shown
/// as `***` by `Debug`.
#[derive(Clone, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// A secret of this text.
    pub fn new(text: impl Into<String>) -> Secret {
        Secret(text.into())
    }

    /// The text, for the code that uses it (signing, hashing): never to be shown.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Checks a secret's form: `min` to 256 visible ASCII characters (no spaces, so one
    /// pasted with a line break is caught).
    pub fn check(&self, what: &str, min: usize) -> Result<(), String> {
        let ok =
            (min..=256).contains(&self.0.len()) && self.0.bytes().all(|b| b.is_ascii_graphic());
        if ok {
            Ok(())
        } else {
            Err(format!(
                "{what} must be {min} to 256 visible ASCII characters (no spaces; its text is not shown)"
            ))
        }
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

/// One API key: its name (shown), the key (never shown), and its own rate.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ApiKey {
    /// What `/metrics` and the logs call it.
    pub name: String,
    /// The key clients send (`Authorization: Bearer KEY` or `X-Api-Key: KEY`).
    pub key: Secret,
    /// Requests a second with this key (all its clients together); default `key_rate`.
    pub rate: Option<u32>,
    /// Requests at once after a quiet spell; default `key_burst`.
    pub burst: Option<u32>,
}

/// `[web.api]`: request rates on `/api/*` (on top of the guard's `request_rate`, which counts
/// every request, pages too) and the optional keys. A rate of 0 is no limit.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct ApiConfig {
    /// Requests a second per host without a key (IPv4 address, IPv6 /64).
    pub rate: u32,
    /// … at once after a quiet spell.
    pub burst: u32,
    /// Requests a second per IPv4 /24, IPv6 /56 without a key (the hosts there together).
    pub site_rate: u32,
    /// … at once.
    pub site_burst: u32,
    /// Requests a second per IPv4 /16, IPv6 /48 without a key.
    pub net_rate: u32,
    /// … at once.
    pub net_burst: u32,
    /// Requests a second per key, unless the key says.
    pub key_rate: u32,
    /// … at once, unless the key says.
    pub key_burst: u32,
    /// The keys (none by default: every client is keyless).
    pub keys: Vec<ApiKey>,
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            rate: 5,
            burst: 100,
            site_rate: 20,
            site_burst: 400,
            net_rate: 50,
            net_burst: 1000,
            key_rate: 50,
            key_burst: 1000,
            keys: Vec::new(),
        }
    }
}

/// Keys at most: the keys are compared one by one (in constant time) on every keyed request.
pub const MAX_KEYS: usize = 1000;

impl ApiConfig {
    /// Checks the rates (a limited rate's burst at least 1) and the keys (names 1 to 64
    /// bytes and unique, keys 16 to 256 visible ASCII characters and unique, at most
    /// [`MAX_KEYS`]).
    pub fn check(&self) -> Result<(), String> {
        let mut rates = vec![
            ("rate", self.rate, self.burst),
            ("site_rate", self.site_rate, self.site_burst),
            ("net_rate", self.net_rate, self.net_burst),
            ("key_rate", self.key_rate, self.key_burst),
        ];
        for k in &self.keys {
            rates.push((
                "a key's rate",
                self.key_rate(k).per_sec,
                self.key_rate(k).burst,
            ));
        }
        for (what, rate, burst) in rates {
            if rate > 0 && burst == 0 {
                return Err(format!("[web.api] {what}: its burst must be at least 1"));
            }
        }
        if self.keys.len() > MAX_KEYS {
            return Err(format!("[web.api] at most {MAX_KEYS} keys"));
        }
        for (i, k) in self.keys.iter().enumerate() {
            if k.name.is_empty() || k.name.len() > 64 || k.name.chars().any(char::is_control) {
                return Err(
                    "[web.api] keys: a name must be 1 to 64 bytes, no control characters".into(),
                );
            }
            k.key.check(&format!("[web.api] key {:?}", k.name), 16)?;
            for other in &self.keys[..i] {
                if other.name == k.name {
                    return Err(format!(
                        "[web.api] keys: the name {:?} is used twice",
                        k.name
                    ));
                }
                if other.key == k.key {
                    return Err(format!(
                        "[web.api] keys {:?} and {:?} are the same key",
                        other.name, k.name
                    ));
                }
            }
        }
        Ok(())
    }

    /// A key's rate: its own, else `key_rate` / `key_burst`.
    pub fn key_rate(&self, k: &ApiKey) -> fragstat::core::fair::Rate {
        fragstat::core::fair::Rate {
            per_sec: k.rate.unwrap_or(self.key_rate),
            burst: k.burst.unwrap_or(self.key_burst),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_checked_and_never_shown() {
        let parse = |t: &str| toml::from_str::<ApiConfig>(t);
        let c = parse(
            "rate = 1\nburst = 2\n[[keys]]\nname = \"bot\"\nkey = \"0123456789abcdef-secret\"\nrate = 9\n",
        )
        .unwrap();
        assert!(c.check().is_ok());
        assert_eq!(c.key_rate(&c.keys[0]).per_sec, 9);
        assert_eq!(c.key_rate(&c.keys[0]).burst, 1000);
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("secret") && shown.contains("***"),
            "{shown}"
        );
        for bad in [
            "[[keys]]\nname = \"a\"\nkey = \"short\"\n",
            "[[keys]]\nname = \"a\"\nkey = \"0123456789abcdef with space\"\n",
            "[[keys]]\nname = \"\"\nkey = \"0123456789abcdef\"\n",
            "[[keys]]\nname = \"a\"\nkey = \"0123456789abcdef\"\n[[keys]]\nname = \"b\"\nkey = \"0123456789abcdef\"\n",
            "[[keys]]\nname = \"a\"\nkey = \"0123456789abcdef\"\n[[keys]]\nname = \"a\"\nkey = \"0123456789abcdeg\"\n",
            "rate = 3\nburst = 0\n",
        ] {
            let e = parse(bad).unwrap().check().unwrap_err();
            assert!(!e.contains("0123456789abcdef"), "the key is not shown: {e}");
        }
        assert!(parse("nope = 1\n").is_err());
    }
}
