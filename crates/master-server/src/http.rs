//! The DDNet HTTP master on a TCP socket, over TLS (DDNet's libcurl accepts only https) or
//! plain HTTP behind a TLS-terminating proxy: `POST /ddnet/15/register` and
//! `GET /ddnet/15/servers.json`. Challenge tokens go to game servers over UDP.

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
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls;
use tokio_rustls::TlsAcceptor;
use tracing::{debug, info};

use crate::ddnet::{DdnetMaster, Register, Status};

/// Largest register body taken (a DDNet server's info with 64 clients is ~10 KB).
const MAX_BODY: usize = 64 * 1024;

/// Loads a TLS certificate chain and key (PEM files).
pub fn tls_config(cert: &Path, key: &Path) -> std::io::Result<Arc<rustls::ServerConfig>> {
    let bad = |what: &str, e: &dyn std::fmt::Display| {
        std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{what}: {e}"))
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| bad(&cert.display().to_string(), &e))?
        .collect::<Result<_, _>>()
        .map_err(|e| bad(&cert.display().to_string(), &e))?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| bad(&key.display().to_string(), &e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad("TLS", &e))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| bad("TLS certificate", &e))?;
    Ok(Arc::new(config))
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

async fn register(
    State(s): State<Shared>,
    Extension(peer): Extension<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> axum::response::Response {
    let ip: IpAddr = peer.ip();
    let now = std::time::Instant::now();
    if header(&headers, "Action").as_deref() == Some("delete") {
        let status = match (header(&headers, "Address"), header(&headers, "Secret")) {
            (Some(a), Some(sec)) => s
                .master
                .lock()
                .map(|mut m| m.delete(ip, &a, &sec))
                .unwrap_or(Status::Error {
                    message: "internal".into(),
                }),
            _ => Status::Error {
                message: "missing header Address or Secret".into(),
            },
        };
        return reply(status);
    }
    let info = if body.is_empty() {
        None
    } else {
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
        match serde_json::from_slice(&body) {
            Ok(v) => Some(v),
            Err(e) => {
                return reply(Status::Error {
                    message: format!("body: {e}"),
                })
            }
        }
    };
    let Some(info_serial) = header(&headers, "Info-Serial").and_then(|v| v.parse().ok()) else {
        return reply(Status::Error {
            message: "missing or bad header Info-Serial".into(),
        });
    };
    let r = Register {
        address: header(&headers, "Address").unwrap_or_default(),
        secret: header(&headers, "Secret").unwrap_or_default(),
        connless_token: header(&headers, "Connless-Token"),
        challenge_secret: header(&headers, "Challenge-Secret").unwrap_or_default(),
        challenge_token: header(&headers, "Challenge-Token"),
        info_serial,
        info,
    };
    let (status, challenge) = match s.master.lock() {
        Ok(mut m) => m.register(now, ip, r),
        Err(_) => (
            Status::Error {
                message: "internal".into(),
            },
            None,
        ),
    };
    if let Some((to, d)) = challenge {
        if let Err(e) = s.udp.send_to(&d, to).await {
            debug!(%to, error = %e, "challenge not sent");
        }
    }
    debug!(%peer, ?status, "register");
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

/// The DDNet master's listener, bound.
#[derive(Debug)]
pub struct DdnetBound {
    listener: tokio::net::TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    udp: Arc<tokio::net::UdpSocket>,
}

/// Binds the HTTP(S) listener on `addr` and a UDP socket for challenges.
pub async fn bind_ddnet(
    addr: SocketAddr,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> std::io::Result<DdnetBound> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| std::io::Error::new(e.kind(), format!("binding {addr}: {e}")))?;
    let any: SocketAddr = if addr.is_ipv4() {
        "0.0.0.0:0".parse().unwrap_or(addr)
    } else {
        "[::]:0".parse().unwrap_or(addr)
    };
    let udp = Arc::new(tokio::net::UdpSocket::bind(any).await?);
    Ok(DdnetBound { listener, tls, udp })
}

impl DdnetBound {
    /// The base URL (`https://ADDR/ddnet/15/`): register at `…/register`, list at
    /// `…/servers.json`.
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        match self.listener.local_addr() {
            Ok(a) => format!("{scheme}://{a}/ddnet/15/"),
            Err(_) => String::new(),
        }
    }

    /// Serves until `shutdown` completes.
    pub async fn run(
        self,
        master: DdnetMaster,
        shutdown: impl Future<Output = ()>,
    ) -> std::io::Result<()> {
        let shared = Shared {
            master: Arc::new(Mutex::new(master)),
            udp: self.udp,
        };
        let app = Router::new()
            .route("/ddnet/15/register", post(register))
            .route("/ddnet/15/servers.json", get(servers_json))
            .layer(DefaultBodyLimit::max(MAX_BODY))
            .with_state(shared);
        let acceptor = self.tls.map(TlsAcceptor::from);
        if let Ok(a) = self.listener.local_addr() {
            info!(addr = %a, tls = acceptor.is_some(), "DDNet HTTP master");
        }
        tokio::pin!(shutdown);
        loop {
            let (tcp, peer) = tokio::select! {
                () = &mut shutdown => return Ok(()),
                r = self.listener.accept() => match r {
                    Ok(c) => c,
                    Err(e) => {
                        debug!(error = %e, "accept failed");
                        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                        continue;
                    }
                },
            };
            let app = app.clone().layer(Extension(peer));
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let service = TowerToHyperService::new(app);
                let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                let result = match acceptor {
                    Some(acc) => match acc.accept(tcp).await {
                        Ok(tls) => builder.serve_connection(TokioIo::new(tls), service).await,
                        Err(e) => {
                            debug!(%peer, error = %e, "TLS handshake failed");
                            return;
                        }
                    },
                    None => builder.serve_connection(TokioIo::new(tcp), service).await,
                };
                if let Err(e) = result {
                    debug!(%peer, error = %e, "connection ended");
                }
            });
        }
    }
}
