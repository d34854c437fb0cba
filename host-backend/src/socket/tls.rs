// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Mutual TLS for the TCP transport (rustls, ring).
//!
//! With `--tls-cert`, `--tls-key` and `--tls-client-ca`, every TCP connection must complete
//! a TLS handshake in which the client presents a certificate that chains to the client CA
//! before a single byte of the protocol is read; the handshake counts against the
//! handshake timeout and the bound on connections without a `Hello`. A client without a
//! valid certificate is never served.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConnection, StreamOwned};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use super::{Closer, Conn};

/// The TLS settings of a TCP listener: `(certificate chain, key, client CA)` files.
#[derive(Debug, Clone)]
pub struct TlsFiles<'a> {
    /// The server's certificate chain (PEM).
    pub cert: &'a Path,
    /// Its private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key: &'a Path,
    /// The CA that client certificates must chain to (PEM, one or more certificates).
    pub client_ca: &'a Path,
}

fn bad(what: &str, path: &Path, e: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{what} {}: {e}", path.display()),
    )
}

/// Reads every certificate of a PEM file.
pub fn load_certs(path: &Path) -> io::Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad("cannot read certificates from", path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad("bad certificate in", path, e))?;
    if certs.is_empty() {
        return Err(bad("no certificate in", path, "empty"));
    }
    Ok(certs)
}

/// Reads the private key of a PEM file.
pub fn load_key(path: &Path) -> io::Result<PrivateKeyDer<'static>> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| bad("cannot read a private key from", path, e))
}

/// The rustls server configuration: our certificate, and client certificates required and
/// verified against the client CA.
pub fn server_config(files: &TlsFiles<'_>) -> io::Result<Arc<rustls::ServerConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = RootCertStore::empty();
    for c in load_certs(files.client_ca)? {
        roots
            .add(c)
            .map_err(|e| bad("bad client CA certificate in", files.client_ca, e))?;
    }
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| bad("cannot use the client CA", files.client_ca, e))?;
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_client_cert_verifier(verifier)
        .with_single_cert(load_certs(files.cert)?, load_key(files.key)?)
        .map_err(|e| bad("the certificate does not match the key in", files.key, e))?;
    Ok(Arc::new(config))
}

/// A TCP connection after a completed TLS handshake with an authenticated client.
pub struct TlsConn {
    tls: StreamOwned<ServerConnection, TcpStream>,
}

impl std::fmt::Debug for TlsConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConn").finish_non_exhaustive()
    }
}

impl TlsConn {
    /// Runs the server side of the handshake on `tcp`, which must end by `deadline`
    /// (whatever the client does: each read and write is bounded by the time left).
    pub fn accept(
        config: Arc<rustls::ServerConfig>,
        mut tcp: TcpStream,
        deadline: Instant,
    ) -> io::Result<Self> {
        let mut conn = ServerConnection::new(config).map_err(io::Error::other)?;
        while conn.is_handshaking() {
            let left = deadline
                .checked_duration_since(Instant::now())
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    io::Error::new(io::ErrorKind::TimedOut, "timed out in the TLS handshake")
                })?;
            tcp.set_read_timeout(Some(left))?;
            tcp.set_write_timeout(Some(left))?;
            match conn.complete_io(&mut tcp) {
                Ok((0, 0)) if conn.is_handshaking() => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the client left during the TLS handshake",
                    ));
                }
                Ok(_) => {}
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock) => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "timed out in the TLS handshake",
                    ));
                }
                Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                    // A certificate rustls refused, or not TLS at all.
                    return Err(io::Error::new(
                        io::ErrorKind::PermissionDenied,
                        format!("TLS handshake failed: {e}"),
                    ));
                }
                Err(e) => return Err(e),
            }
        }
        if conn.peer_certificates().is_none_or(|c| c.is_empty()) {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "the client sent no certificate",
            ));
        }
        Ok(Self {
            tls: StreamOwned::new(conn, tcp),
        })
    }
}

impl Read for TlsConn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.tls.read(buf)
    }
}

impl Write for TlsConn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tls.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tls.flush()
    }
}

impl AsFd for TlsConn {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.tls.sock.as_fd()
    }
}

impl Conn for TlsConn {
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.tls.sock.set_read_timeout(t)
    }

    fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.tls.sock.set_write_timeout(t)
    }

    fn closer(&self) -> io::Result<Closer> {
        let s = self.tls.sock.try_clone()?;
        Ok(Box::new(move || {
            let _ = s.shutdown(Shutdown::Both);
        }))
    }
}
