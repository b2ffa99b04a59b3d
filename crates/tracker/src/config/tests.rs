use super::*;

#[test]
fn parses_and_checks() {
    let c = Config::from_toml(
        "database = \"x.db\"\ninterval_secs = 30\n[[source]]\ngame = \"oa\"\nmasters = [\"m:27950\"]\n",
    )
    .unwrap();
    assert_eq!(c.sources[0].game, "oa");
    assert_eq!(c.interval(), Duration::from_secs(30));
    assert_eq!(c.retention(), Some(Duration::from_secs(168 * 3600)));
    assert!(matches!(
        Config::from_toml("[[source]]\ngame = \"nope\"\nservers = [\"a\"]"),
        Err(ConfigError::UnknownGame(_))
    ));
    assert!(matches!(
        Config::from_toml("[[source]]\ngame = \"q3\""),
        Err(ConfigError::Invalid(_))
    ));
    assert!(matches!(
        Config::from_toml("bogus = 1"),
        Err(ConfigError::Toml(_))
    ));
    assert!(matches!(
        Config::from_toml(""),
        Err(ConfigError::Invalid(_))
    ));
}

#[test]
fn webhook_and_sse_settings() {
    let src = "[[source]]\ngame = \"oa\"\nservers = [\"a\"]\n";
    let c = Config::from_toml(&format!(
        "webhook = \"http://127.0.0.1:9/hook\"\nwebhook_format = \"discord\"\nsse_max_clients = 3\n{src}"
    ))
    .unwrap();
    assert_eq!(c.webhook_format, WebhookFormat::Discord);
    assert_eq!(c.sse_max_clients, 3);
    assert_eq!(Config::default().sse_max_clients, 64);
    for bad in [
        "webhook = \"ftp://x/\"\n",
        "webhook = \"not a url\"\n",
        "webhook_format = \"slack\"\n",
        "sse_max_clients = 0\n",
        "webhook_tries = 0\n",
        "webhook_queue = 0\n",
    ] {
        assert!(Config::from_toml(&format!("{bad}{src}")).is_err(), "{bad}");
    }
}

#[test]
fn values_that_would_panic_later_are_refused() {
    let src = "[[source]]\ngame = \"oa\"\nservers = [\"a\"]\n";
    for bad in [
        "interval_secs = 1e30\n",
        "retention_hours = 1e20\n",
        "interval_secs = -1\n",
    ] {
        let r = Config::from_toml(&format!("{bad}{src}"));
        assert!(matches!(r, Err(ConfigError::Invalid(_))), "{bad}: {r:?}");
    }
    let c = Config::from_toml(&format!(
        "interval_secs = 604800\nretention_hours = 876000\n{src}"
    ))
    .unwrap();
    let _ = (c.interval(), c.retention(), c.history());
    // [history]: each retention defaults to retention_hours; 0 keeps for ever.
    let c = Config::from_toml(&format!(
        "retention_hours = 48\n{src}[history]\nraw_hours = 6\nsessions_hours = 0\nflush_rounds = 3\nnew_players_per_round = 8\n"
    ))
    .unwrap();
    let h = c.history();
    assert_eq!(h.raw, Duration::from_secs(6 * 3600));
    assert_eq!(h.series, Some(Duration::from_secs(48 * 3600)));
    assert_eq!(h.sessions, None);
    assert_eq!((h.flush_rounds, h.new_players_per_round), (3, 8));
    // A gap in seconds: a year is fine, a century and a half is not.
    let c = Config::from_toml(&format!("{src}[history]\nsession_gap_secs = 31536000\n")).unwrap();
    assert_eq!(c.history().session_gap, Duration::from_secs(31_536_000));
    for bad in [
        "raw_hours = -1\n",
        "flush_rounds = 0\n",
        "bogus = 1\n",
        "session_gap_secs = 5e9\n",
        "session_gap_secs = -1\n",
    ] {
        assert!(
            Config::from_toml(&format!("{src}[history]\n{bad}")).is_err(),
            "{bad}"
        );
    }
    // The web guard's options.
    let c = Config::from_toml(&format!(
        "{src}[web]\nmax_per_ip = 4\nconnecting_ip_header = \"X-Real-IP\"\ntrusted_proxies = [\"127.0.0.1/32\"]\n"
    ))
    .unwrap();
    assert_eq!(c.web.limits().max_per_ip, 4);
    assert_eq!(
        c.web.limits(),
        fragstat_http_guard::Limits {
            max_per_ip: 4,
            ..fragstat_http_guard::Limits::default()
        }
    );
    assert!(c.web.client_ip().unwrap().header.is_some());
    let c = Config::from_toml(&format!(
        "{src}[web]\nmax_per_site = 32\nrequest_rate = 0\nsse_max_per_host = 1\nsse_max_per_network = 4\n"
    ))
    .unwrap();
    assert_eq!(c.web.limits().max_per_site, 32);
    assert!(c.web.limits().request_rate.is_unlimited());
    assert_eq!(c.web.sse_caps().v6, [1, 4, 4, 4]);
    assert_eq!(Config::default().web.sse_caps().v4, [2, 8, 8]);
    let c = Config::from_toml(&format!(
        "geoip = \"/x.mmdb\"\n{src}[web]\ntitle = \"My list\"\nbase_path = \"/servers/\"\ncors_origins = [\"https://example.org\", \"*\"]\n"
    ))
    .unwrap();
    assert_eq!(c.web.base(), "/servers");
    assert_eq!(c.web.title, "My list");
    assert_eq!(c.geoip.as_deref(), Some(std::path::Path::new("/x.mmdb")));
    assert!(c.country_from_name, "on unless turned off");
    let c = Config::from_toml(&format!("country_from_name = false\n{src}")).unwrap();
    assert!(!c.country_from_name);
    assert!(Config::from_toml(&format!("country_from_name = \"no\"\n{src}")).is_err());
    for bad in [
        "[web]\nmax_connections = 0\n",
        "[web]\nmax_per_net = 0\n",
        "[web]\nrequest_burst = 0\n",
        "[web]\nsse_max_per_host = 0\n",
        "[web]\ntrusted_proxies = [\"10.0.0.0/8\"]\n",
        "[web]\nconnecting_ip_header = \"X-Real-IP\"\n",
        "[web]\nbogus = 1\n",
        "[web]\nbase_path = \"servers\"\n",
        "[web]\nbase_path = \"/a/../b\"\n",
        "[web]\nbase_path = \"/a b\"\n",
        "[web]\ntitle = \"\"\n",
        "[web]\ncors_origins = [\"example.org\"]\n",
        "[web]\ncors_origins = [\"https://example.org/path\"]\n",
    ] {
        assert!(Config::from_toml(&format!("{src}{bad}")).is_err(), "{bad}");
    }
}

/// `[push]`: the listen address and limits, each at its default when left out; a web-only
/// tracker (no rounds, so no server to hear) and unusable limits refused.
#[test]
fn push_section() {
    let src = "[[source]]\ngame = \"etl\"\nservers = [\"127.0.0.1:27960\"]\n";
    let c = Config::from_toml(&format!("{src}[push]\nlisten = \"127.0.0.1:4444\"\n")).unwrap();
    let p = c.push.as_ref().unwrap();
    assert_eq!(p.listen, "127.0.0.1:4444".parse().unwrap());
    assert_eq!(p.limits(), fragstat::events::push::PushLimits::default());
    let c = Config::from_toml(&format!(
        "{src}[push]\nlisten = \"0.0.0.0:27960\"\nhost_rate = 5\nhost_burst = 70\nmax_servers = 100\n"
    ))
    .unwrap();
    let l = c.push.unwrap().limits();
    assert_eq!((l.host_rate.per_sec, l.host_rate.burst), (5, 70));
    assert_eq!(l.caps.v4, [100, 100, 100], "no cap above the table");
    for bad in [
        "web_only = true\n[push]\nlisten = \"127.0.0.1:1\"\n",
        "[push]\nlisten = \"127.0.0.1:1\"\nmax_datagram = 8\n",
        "[push]\nlisten = \"127.0.0.1:1\"\nhost_burst = 0\n",
        "[push]\nlisten = \"127.0.0.1:1\"\nmax_servers = 0\n",
    ] {
        let text = if bad.starts_with("web_only") {
            format!("{bad}{src}")
        } else {
            format!("{src}{bad}")
        };
        assert!(
            matches!(Config::from_toml(&text), Err(ConfigError::Invalid(_))),
            "{bad}"
        );
    }
    assert!(matches!(
        Config::from_toml(&format!(
            "{src}[push]\nlisten = \"127.0.0.1:1\"\nbogus = 1\n"
        )),
        Err(ConfigError::Toml(_))
    ));
}
