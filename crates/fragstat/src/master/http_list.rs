//! HTTP master lists in [`Client::master_list`](crate::Client::master_list): DDNet's
//! `servers.json`, the ETQW feed, IW4x's list; each fetched and parsed, one answer per list.

#[cfg(feature = "http")]
use std::net::IpAddr;
#[cfg(feature = "http")]
use std::net::SocketAddr;

use tokio::sync::mpsc;

use super::{send, Answer, HttpParse, Plan};
use crate::client::Client;
use crate::error::Error;

/// The URL to fetch for an HTTP master given as `text`: a URL as is; `HOST[:PORT]` with the
/// standard list's scheme and path.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) fn http_url(text: &str, default_url: Option<&str>) -> Result<String, Error> {
    if text.contains("://") {
        return Ok(text.to_string());
    }
    let Some(default) = default_url else {
        return Err(Error::InvalidInput(format!(
            "{text}: this game's master is an HTTP list: give its URL"
        )));
    };
    let (scheme, rest) = default.split_once("://").unwrap_or(("https", default));
    let path = rest.find('/').map_or("/", |i| rest.get(i..).unwrap_or("/"));
    Ok(format!("{scheme}://{text}{path}"))
}

#[cfg(feature = "http")]
pub(super) fn spawn_http(
    client: &Client,
    plan: &Plan,
    default_url: Option<&'static str>,
    parse: HttpParse,
    tx: &mpsc::UnboundedSender<Answer>,
) {
    let max = client.config().limits.max_http_bytes;
    for (index, t) in plan.masters.iter().enumerate() {
        let url = match http_url(&t.text(), default_url) {
            Ok(u) => u,
            Err(e) => {
                send(tx, index, None, None, Err(e));
                continue;
            }
        };
        let http = match client.inner.http() {
            Ok(h) => h,
            Err(e) => {
                send(tx, index, None, Some(url), Err(e));
                continue;
            }
        };
        let tx = tx.clone();
        let wanted = tx.clone();
        let addr = url_addr(&url);
        tokio::spawn(super::while_wanted(wanted, async move {
            let t0 = std::time::Instant::now();
            let body = crate::http::fetch(&http, &url, max).await;
            let rtt = t0.elapsed();
            let (result, warnings) = match body.and_then(|b| parse(&b).map_err(Error::Decode)) {
                Ok(list) => (Ok(list.servers), list.warnings),
                Err(e) => (Err(e), Vec::new()),
            };
            let _ = tx.send(Answer {
                index,
                round: 0,
                addr,
                url: Some(url),
                rtt: result.is_ok().then_some(rtt),
                result,
                warnings,
                skipped: false,
            });
        }));
    }
}

/// The address of an HTTP master named by an IP literal or `localhost` (whose lists may then
/// hold loopback servers, as a UDP master on loopback may).
#[cfg(feature = "http")]
pub(super) fn url_addr(url: &str) -> Option<SocketAddr> {
    let u = reqwest::Url::parse(url).ok()?;
    let port = u.port_or_known_default()?;
    let ip = match u.host()? {
        url::Host::Ipv4(v4) => IpAddr::V4(v4),
        url::Host::Ipv6(v6) => IpAddr::V6(v6),
        url::Host::Domain(d) if d.eq_ignore_ascii_case("localhost") => {
            IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)
        }
        url::Host::Domain(_) => return None,
    };
    Some(SocketAddr::new(ip, port))
}

#[cfg(not(feature = "http"))]
pub(super) fn spawn_http(
    _client: &Client,
    plan: &Plan,
    _default_url: Option<&'static str>,
    _parse: HttpParse,
    tx: &mpsc::UnboundedSender<Answer>,
) {
    for index in 0..plan.masters.len() {
        send(
            tx,
            index,
            None,
            None,
            Err(Error::InvalidInput(format!(
                "{}'s master is an HTTP list: build fragstat with the `http` feature",
                plan.game.id()
            ))),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_masters_may_be_given_as_host_and_port() {
        let ddnet = Some("https://master1.ddnet.org/ddnet/15/servers.json");
        assert_eq!(
            http_url("127.0.0.1:8443", ddnet).unwrap(),
            "https://127.0.0.1:8443/ddnet/15/servers.json"
        );
        assert_eq!(
            http_url("http://x/y.json", ddnet).unwrap(),
            "http://x/y.json"
        );
        let etqw = Some("http://etqw-ipgetter.demonware.net/ipgetter/");
        assert_eq!(
            http_url("feed.example:8080", etqw).unwrap(),
            "http://feed.example:8080/ipgetter/"
        );
        assert!(matches!(
            http_url("host", None),
            Err(Error::InvalidInput(_))
        ));
    }
}
