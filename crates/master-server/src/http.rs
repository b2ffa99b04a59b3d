//! The DDNet HTTP master on a TCP socket, over TLS (DDNet's libcurl accepts only https) or
//! plain HTTP behind a TLS-terminating proxy: `POST /ddnet/15/register` and
//! `GET /ddnet/15/servers.json`. Challenge tokens go to game servers over UDP.
//!
//! The two can be served from separate listeners ([`DdnetOptions::list`]), each an
//! http-guard [`Server`] with connection slots, caps and timeouts of its own: a flood of
//! connections or requests for `servers.json` then cannot take the slots DDNet servers
//! register through, and a flood of registrations cannot keep clients from the list
//! (security review H4).

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Extension, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::Router;
use fragstat_http_guard::{ClientAddr, ClientIp, Limits, Server, Stats as HttpStats};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls;
use tokio_rustls::TlsAcceptor;
use tracing::debug;

use crate::ddnet::{DdnetMaster, Register, Status, MAX_INFO};

/// Loads a TLS certificate chain and key (PEM files). HTTP/1.1 only is offered (ALPN).
pub fn tls_config(cert: &Path, key: &Path) -> std::io::Result<Arc<rustls::ServerConfig>> {
    let bad = |what: &str, e: &dyn std::fmt::Display| {
        std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{what}: {e}"))
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| bad(&cert.display().to_string(), &e))?
        .collect::<Result<_, _>>()
        .map_err(|e| bad(&cert.display().to_string(), &e))?;
    if let Some(first) = certs.first() {
        match certificate_validity(first, std::time::SystemTime::now()) {
            Ok(msg) => tracing::info!(cert = %cert.display(), "TLS certificate {msg}"),
            Err(msg) => {
                tracing::warn!(cert = %cert.display(), "TLS certificate {msg}: DDNet servers (libcurl) will refuse it and no registration will succeed")
            }
        }
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| bad(&key.display().to_string(), &e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad("TLS", &e))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| bad("TLS certificate", &e))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Days before expiry from which a certificate is warned about.
const EXPIRY_WARNING_DAYS: i64 = 14;

/// Whether `cert` is valid at `now`, in words: `Ok("valid until …")`, or `Err` when it has
/// expired, is not valid yet, expires within 14 days, or cannot be read.
pub fn certificate_validity(
    cert: &CertificateDer<'_>,
    now: std::time::SystemTime,
) -> Result<String, String> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref())
        .map_err(|e| format!("cannot be read: {e}"))?;
    let validity = parsed.validity();
    let now = now
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .and_then(|d| i64::try_from(d.as_secs()).ok())
        .unwrap_or(0);
    let (from, until) = (
        validity.not_before.timestamp(),
        validity.not_after.timestamp(),
    );
    if now < from {
        Err(format!("is not valid before {}", validity.not_before))
    } else if now > until {
        Err(format!("expired on {}", validity.not_after))
    } else if until - now < EXPIRY_WARNING_DAYS * 86_400 {
        Err(format!(
            "expires on {}, in less than {EXPIRY_WARNING_DAYS} days",
            validity.not_after
        ))
    } else {
        Ok(format!("valid until {}", validity.not_after))
    }
}

#[derive(Clone)]
struct Shared {
    master: Arc<Mutex<DdnetMaster>>,
    udp: Arc<tokio::net::UdpSocket>,
}

fn header(h: &HeaderMap, name: &str) -> Option<String> {
    h.get(name)?.to_str().ok().map(str::to_string)
}

fn reply(status: Status) -> axum::response::Response {
    let code = match status {
        Status::Error { .. } => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    };
    let body = serde_json::to_string(&status).unwrap_or_default() + "\n";
    (code, [("content-type", "application/json")], body).into_response()
}

fn internal() -> Status {
    Status::Error {
        message: "internal".into(),
    }
}

async fn register(
    State(s): State<Shared>,
    Extension(ClientAddr(client)): Extension<ClientAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> axum::response::Response {
    let ip: IpAddr = client.ip();
    let now = std::time::Instant::now();
    if header(&headers, "Action").as_deref() == Some("delete") {
        let status = match (header(&headers, "Address"), header(&headers, "Secret")) {
            (Some(a), Some(sec)) => s
                .master
                .lock()
                .map(|mut m| m.delete(ip, &a, &sec))
                .unwrap_or_else(|_| internal()),
            _ => Status::Error {
                message: "missing header Address or Secret".into(),
            },
        };
        return reply(status);
    }
    if !body.is_empty() {
        let json = headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.split(';')
                    .next()
                    .is_some_and(|m| m.trim() == "application/json")
            });
        if !json {
            return (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "the body must be application/json\n",
            )
                .into_response();
        }
    }
    let Some(info_serial) = header(&headers, "Info-Serial").and_then(|v| v.parse().ok()) else {
        return reply(Status::Error {
            message: "missing or bad header Info-Serial".into(),
        });
    };
    // The body goes to the registry unparsed: it is parsed only once the token is checked.
    let r = Register {
        address: header(&headers, "Address").unwrap_or_default(),
        secret: header(&headers, "Secret").unwrap_or_default(),
        connless_token: header(&headers, "Connless-Token"),
        challenge_secret: header(&headers, "Challenge-Secret").unwrap_or_default(),
        challenge_token: header(&headers, "Challenge-Token"),
        info_serial,
        info: (!body.is_empty()).then_some(body),
    };
    let (status, challenge) = match s.master.lock() {
        Ok(mut m) => m.register(now, ip, r),
        Err(_) => (internal(), None),
    };
    if let Some((to, d)) = challenge {
        if let Err(e) = s.udp.send_to(&d, to).await {
            debug!(%to, error = %e, "challenge not sent");
        }
    }
    debug!(%client, ?status, "register");
    reply(status)
}

async fn servers_json(State(s): State<Shared>) -> axum::response::Response {
    let body = s
        .master
        .lock()
        .map(|mut m| m.servers_json(std::time::Instant::now()))
        .unwrap_or_default();
    ([("content-type", "application/json")], body).into_response()
}

/// How the DDNet HTTP master's listener is guarded.
#[derive(Debug, Clone, Default)]
pub struct DdnetOptions {
    /// Timeouts and connection caps.
    pub limits: Limits,
    /// Where the client's address comes from (a trusted proxy's header, or the TCP peer).
    pub client_ip: ClientIp,
    /// Serve `servers.json` on this address, from a listener (a connection pool) of its own
    /// with the same limits; the main listener then serves `register` only. `None`: both
    /// on the main listener.
    pub list: Option<SocketAddr>,
}

/// What the metrics endpoint reads of the DDNet master.
#[derive(Debug, Clone)]
pub struct DdnetMetrics {
    /// The registry.
    pub master: Arc<Mutex<DdnetMaster>>,
    /// Its (register) listener's counters.
    pub http: Arc<HttpStats>,
    /// The `servers.json` listener's counters, when it has its own.
    pub list_http: Option<Arc<HttpStats>>,
}

/// The DDNet master's listener, bound.
#[derive(Debug)]
pub struct DdnetBound {
    listener: tokio::net::TcpListener,
    list_listener: Option<tokio::net::TcpListener>,
    tls: Option<Arc<rustls::ServerConfig>>,
    udp: Arc<tokio::net::UdpSocket>,
    options: DdnetOptions,
    master: Arc<Mutex<DdnetMaster>>,
    http: Arc<HttpStats>,
    list_http: Arc<HttpStats>,
}

async fn bind_tcp(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| std::io::Error::new(e.kind(), format!("binding {addr}: {e}")))
}

/// Binds the HTTP(S) listener on `addr` (and the list's, [`DdnetOptions::list`]) and a UDP
/// socket for challenges, for `master`.
pub async fn bind_ddnet(
    addr: SocketAddr,
    tls: Option<Arc<rustls::ServerConfig>>,
    options: DdnetOptions,
    master: DdnetMaster,
) -> std::io::Result<DdnetBound> {
    let listener = bind_tcp(addr).await?;
    let list_listener = match options.list {
        Some(a) => Some(bind_tcp(a).await?),
        None => None,
    };
    let any: SocketAddr = if addr.is_ipv4() {
        "0.0.0.0:0".parse().unwrap_or(addr)
    } else {
        "[::]:0".parse().unwrap_or(addr)
    };
    let udp = Arc::new(tokio::net::UdpSocket::bind(any).await?);
    Ok(DdnetBound {
        listener,
        list_listener,
        tls,
        udp,
        options,
        master: Arc::new(Mutex::new(master)),
        http: Arc::default(),
        list_http: Arc::default(),
    })
}

impl DdnetBound {
    fn base(&self, listener: &tokio::net::TcpListener) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        match listener.local_addr() {
            Ok(a) => format!("{scheme}://{a}/ddnet/15/"),
            Err(_) => String::new(),
        }
    }

    /// The base URL (`https://ADDR/ddnet/15/`): register at `…/register` (and, without a
    /// listener for the list, list at `…/servers.json`).
    pub fn url(&self) -> String {
        self.base(&self.listener)
    }

    /// The list's URL (`https://ADDR/ddnet/15/servers.json`), on its own listener when it has
    /// one.
    pub fn list_url(&self) -> String {
        let base = self.base(self.list_listener.as_ref().unwrap_or(&self.listener));
        format!("{base}servers.json")
    }

    /// The registry and counters, for the metrics endpoint.
    pub fn metrics(&self) -> DdnetMetrics {
        DdnetMetrics {
            master: Arc::clone(&self.master),
            http: Arc::clone(&self.http),
            list_http: self
                .list_listener
                .as_ref()
                .map(|_| Arc::clone(&self.list_http)),
        }
    }

    /// Serves until `shutdown` completes.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> std::io::Result<()> {
        let master = Arc::clone(&self.master);
        let shared = Shared {
            master: self.master,
            udp: self.udp,
        };
        let register_app = Router::new()
            .route("/ddnet/15/register", post(register))
            .layer(DefaultBodyLimit::max(MAX_INFO));
        let list_app = Router::new().route("/ddnet/15/servers.json", get(servers_json));
        let (app, list_app) = match self.list_listener {
            Some(_) => (register_app, Some(list_app.with_state(shared.clone()))),
            None => (register_app.merge(list_app), None),
        };
        let app = app.with_state(shared);
        let tls = self.tls.map(TlsAcceptor::from);
        for (what, l) in [
            ("DDNet HTTP master", Some(&self.listener)),
            ("DDNet servers.json", self.list_listener.as_ref()),
        ] {
            if let Some(a) = l.and_then(|l| l.local_addr().ok()) {
                fragstat_http_guard::log_listening(what, a, tls.is_some(), &self.options.limits);
                fragstat_http_guard::warn_if_public_plain_http(a, tls.is_some(), what);
            }
        }
        // Expiry also runs without requests, so an idle registry gives its memory back.
        let expire = tokio::spawn(async move {
            let mut every = tokio::time::interval(std::time::Duration::from_secs(5));
            loop {
                every.tick().await;
                if let Ok(mut m) = master.lock() {
                    m.expire(std::time::Instant::now());
                }
            }
        });
        // Two pools: each listener its own http-guard server (slots, caps, timeouts).
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
            let _ = rx.wait_for(|s| *s).await;
        };
        let main = Server {
            listener: self.listener,
            tls: tls.clone(),
            limits: self.options.limits,
            client_ip: self.options.client_ip.clone(),
            stats: self.http,
        }
        .serve(app, stopped(stop_rx.clone()));
        let list = async {
            match (self.list_listener, list_app) {
                (Some(listener), Some(list_app)) => {
                    Server {
                        listener,
                        tls,
                        limits: self.options.limits,
                        client_ip: self.options.client_ip,
                        stats: self.list_http,
                    }
                    .serve(list_app, stopped(stop_rx))
                    .await
                }
                _ => Ok(()),
            }
        };
        let stop = async {
            shutdown.await;
            let _ = stop_tx.send(true);
            Ok(())
        };
        let r = tokio::try_join!(stop, main, list).map(|_| ());
        expire.abort();
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    /// A self-signed certificate valid from `from` to `until` (Unix seconds).
    fn cert(from: i64, until: i64) -> CertificateDer<'static> {
        let mut p = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
        p.not_before = rcgen::date_time_ymd(1970, 1, 1) + Duration::from_secs(from as u64);
        p.not_after = rcgen::date_time_ymd(1970, 1, 1) + Duration::from_secs(until as u64);
        let key = rcgen::KeyPair::generate().unwrap();
        p.self_signed(&key).unwrap().der().clone()
    }

    #[test]
    fn expired_early_and_soon_expiring_certificates_are_warned_about() {
        let day = 86_400;
        let now_s = 1_800_000_000;
        let now = UNIX_EPOCH + Duration::from_secs(now_s as u64);
        let ok = certificate_validity(&cert(now_s - day, now_s + 90 * day), now);
        assert!(
            ok.as_ref().is_ok_and(|m| m.starts_with("valid until")),
            "{ok:?}"
        );
        let expired = certificate_validity(&cert(now_s - 90 * day, now_s - day), now);
        assert!(
            expired.as_ref().is_err_and(|m| m.starts_with("expired on")),
            "{expired:?}"
        );
        let early = certificate_validity(&cert(now_s + day, now_s + 90 * day), now);
        assert!(
            early
                .as_ref()
                .is_err_and(|m| m.starts_with("is not valid before")),
            "{early:?}"
        );
        let soon = certificate_validity(&cert(now_s - day, now_s + 3 * day), now);
        assert!(
            soon.as_ref()
                .is_err_and(|m| m.contains("less than 14 days")),
            "{soon:?}"
        );
        let junk = certificate_validity(&CertificateDer::from(vec![1u8, 2, 3]), SystemTime::now());
        assert!(junk.is_err());
    }
}
