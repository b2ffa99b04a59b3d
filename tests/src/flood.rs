//! HTTP(S) floods for the tests and benchmarks of fragstat's listeners: a test CA and a
//! certificate for 127.0.0.1, a TLS client trusting it, and connections held from chosen
//! loopback addresses, idle or with a register body that stops short.

use std::net::SocketAddr;
use std::time::Duration;

/// A test CA and a certificate for 127.0.0.1 it signed: (chain PEM, key PEM, CA PEM).
pub fn test_ca() -> (String, String, String) {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "fragstat test CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);

    let mut leaf = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    leaf.distinguished_name
        .push(DnType::CommonName, "127.0.0.1");
    leaf.use_authority_key_identifier_extension = true;
    leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let leaf_key = KeyPair::generate().unwrap();
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer).unwrap();
    (
        format!("{}{}", leaf_cert.pem(), ca_cert.pem()),
        leaf_key.serialize_pem(),
        ca_cert.pem(),
    )
}

/// A TLS client trusting `ca_pem` only.
pub fn tls_connector(ca_pem: &str) -> tokio_rustls::TlsConnector {
    use rustls_pki_types::pem::PemObject;
    use tokio_rustls::rustls;
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls_pki_types::CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap())
        .unwrap();
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
}

/// Counts of what a flood saw.
#[derive(Default)]
pub struct Flood {
    /// Connections opened.
    pub opened: std::sync::atomic::AtomicU64,
    /// Connections the server closed (EOF, reset, failed handshake).
    pub closed_by_server: std::sync::atomic::AtomicU64,
    /// Set to stop holding.
    pub stop: std::sync::atomic::AtomicBool,
}

/// Holds connections from `from` to `to` open, idle (`None`) or with a register body that
/// stops short (`Some(tls)`), reopening each one the server closes, until `flood.stop`.
pub async fn hold(
    flood: std::sync::Arc<Flood>,
    from: std::net::IpAddr,
    to: SocketAddr,
    tls: Option<tokio_rustls::TlsConnector>,
) {
    use std::sync::atomic::Ordering::Relaxed;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    while !flood.stop.load(Relaxed) {
        let s = tokio::net::TcpSocket::new_v4().unwrap();
        s.bind(SocketAddr::new(from, 0)).unwrap();
        let Ok(tcp) = s.connect(to).await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        flood.opened.fetch_add(1, Relaxed);
        let mut buf = [0u8; 256];
        let closed = match &tls {
            None => {
                let mut tcp = tcp;
                loop {
                    tokio::select! {
                        r = tcp.read(&mut buf) => if matches!(r, Ok(0) | Err(_)) { break true },
                        () = tokio::time::sleep(Duration::from_millis(200)) => if flood.stop.load(Relaxed) { break false },
                    }
                }
            }
            Some(c) => {
                let name = rustls_pki_types::ServerName::try_from("127.0.0.1").unwrap();
                match c.connect(name, tcp).await {
                    Err(_) => true,
                    Ok(mut t) => {
                        let head = "POST /ddnet/15/register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 30000\r\n\r\n{\"a\":[";
                        if t.write_all(head.as_bytes()).await.is_err() {
                            true
                        } else {
                            loop {
                                tokio::select! {
                                    r = t.read(&mut buf) => if matches!(r, Ok(0) | Err(_)) { break true },
                                    () = tokio::time::sleep(Duration::from_millis(200)) => if flood.stop.load(Relaxed) { break false },
                                }
                            }
                        }
                    }
                }
            }
        };
        if closed {
            flood.closed_by_server.fetch_add(1, Relaxed);
        }
    }
}

/// GET `path` over HTTPS from `to` (trusting `connector`'s CA only): the whole answer.
pub async fn https_get(
    connector: &tokio_rustls::TlsConnector,
    to: SocketAddr,
    path: &str,
) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let tcp = tokio::net::TcpStream::connect(to).await.ok()?;
    let name = rustls_pki_types::ServerName::try_from("127.0.0.1").ok()?;
    let mut t = connector.connect(name, tcp).await.ok()?;
    let req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    t.write_all(req.as_bytes()).await.ok()?;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(crate::wait::SETTLE, t.read_to_end(&mut out)).await;
    Some(String::from_utf8_lossy(&out).into_owned())
}
