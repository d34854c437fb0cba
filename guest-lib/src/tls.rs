// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Mutual TLS to a TCP backend (rustls, ring).
//!
//! `VCUDA_TLS_CERT` and `VCUDA_TLS_KEY` name this program's client certificate chain and
//! key, `VCUDA_TLS_CA` the CA the backend's certificate must chain to (PEM files), and
//! `VCUDA_TLS_SERVER_NAME` the name to check in it (default: the host of
//! `VCUDA_SOCKET=tcp:HOST:PORT`). All three files or none: with none, TCP is plain (the
//! backend then only listens on loopback).

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::{ClientConnection, RootCertStore, StreamOwned};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};

/// A TLS connection to the backend.
pub type TlsStream = StreamOwned<ClientConnection, NoSigPipe>;

/// The TLS settings from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsEnv {
    cert: PathBuf,
    key: PathBuf,
    ca: PathBuf,
    server_name: Option<String>,
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

impl TlsEnv {
    /// Reads `VCUDA_TLS_*` through `var`: `None` when none of the files is named, an error
    /// when only some are.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> io::Result<Option<Self>> {
        let get = |k: &str| var(k).filter(|v| !v.is_empty());
        let (cert, key, ca) = (
            get("VCUDA_TLS_CERT"),
            get("VCUDA_TLS_KEY"),
            get("VCUDA_TLS_CA"),
        );
        match (cert, key, ca) {
            (None, None, None) => Ok(None),
            (Some(cert), Some(key), Some(ca)) => Ok(Some(Self {
                cert: cert.into(),
                key: key.into(),
                ca: ca.into(),
                server_name: get("VCUDA_TLS_SERVER_NAME"),
            })),
            _ => Err(invalid(
                "TLS needs all of VCUDA_TLS_CERT, VCUDA_TLS_KEY and VCUDA_TLS_CA".into(),
            )),
        }
    }

    /// Reads `VCUDA_TLS_*` from the process environment.
    pub fn from_env() -> io::Result<Option<Self>> {
        Self::from_vars(|k| std::env::var(k).ok())
    }

    fn config(&self) -> io::Result<Arc<rustls::ClientConfig>> {
        let bad = |what: &str, p: &PathBuf, e: &dyn std::fmt::Display| {
            invalid(format!("{what} {}: {e}", p.display()))
        };
        let certs = |p: &PathBuf| -> io::Result<Vec<CertificateDer<'static>>> {
            let v = CertificateDer::pem_file_iter(p)
                .map_err(|e| bad("cannot read certificates from", p, &e))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| bad("bad certificate in", p, &e))?;
            if v.is_empty() {
                return Err(bad("no certificate in", p, &"empty"));
            }
            Ok(v)
        };
        let mut roots = RootCertStore::empty();
        for c in certs(&self.ca)? {
            roots
                .add(c)
                .map_err(|e| bad("bad CA certificate in", &self.ca, &e))?;
        }
        let key = PrivateKeyDer::from_pem_file(&self.key)
            .map_err(|e| bad("cannot read a private key from", &self.key, &e))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(io::Error::other)?
            .with_root_certificates(roots)
            .with_client_auth_cert(certs(&self.cert)?, key)
            .map_err(|e| bad("the certificate does not match the key in", &self.key, &e))?;
        Ok(Arc::new(config))
    }

    /// Connects `tcp` (to `addr`, `host:port`) and completes the handshake.
    pub fn connect(&self, addr: &str, tcp: TcpStream) -> io::Result<TlsStream> {
        let host = match &self.server_name {
            Some(n) => n.clone(),
            None => host_of(addr).to_owned(),
        };
        let name = ServerName::try_from(host.clone())
            .map_err(|e| invalid(format!("{host:?} is not a server name: {e}")))?;
        let mut conn = ClientConnection::new(self.config()?, name).map_err(io::Error::other)?;
        let mut sock = NoSigPipe(tcp);
        while conn.is_handshaking() {
            match conn.complete_io(&mut sock) {
                Ok((0, 0)) if conn.is_handshaking() => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the backend closed the connection during the TLS handshake",
                    ));
                }
                Ok(_) => {}
                Err(e) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("TLS handshake with {addr} failed: {e}"),
                    ));
                }
            }
        }
        Ok(StreamOwned::new(conn, sock))
    }
}

/// The host part of `host:port` (`[v6]:port` too).
fn host_of(addr: &str) -> &str {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

/// A TCP stream whose writes never raise SIGPIPE (`send(MSG_NOSIGNAL)`): a backend that
/// went away is an error, not a signal that kills the program.
#[derive(Debug)]
pub struct NoSigPipe(pub TcpStream);

impl Read for NoSigPipe {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for NoSigPipe {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            // SAFETY: the socket is open for the call (we own it); `buf` is a live,
            // readable buffer of `buf.len()` bytes.
            let r = unsafe {
                libc::send(
                    self.0.as_raw_fd(),
                    buf.as_ptr().cast(),
                    buf.len(),
                    libc::MSG_NOSIGNAL,
                )
            };
            if r >= 0 {
                return Ok(r as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_three_files_or_none() {
        let vars = |set: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                set.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(TlsEnv::from_vars(vars(&[])).unwrap(), None);
        assert_eq!(
            TlsEnv::from_vars(vars(&[("VCUDA_TLS_CERT", "")])).unwrap(),
            None
        );
        let e = TlsEnv::from_vars(vars(&[("VCUDA_TLS_CERT", "c.pem")])).unwrap_err();
        assert!(e.to_string().contains("VCUDA_TLS_KEY"), "{e}");
        let t = TlsEnv::from_vars(vars(&[
            ("VCUDA_TLS_CERT", "c.pem"),
            ("VCUDA_TLS_KEY", "k.pem"),
            ("VCUDA_TLS_CA", "ca.pem"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(t.server_name, None);
        // Missing files are reported with their names.
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s = TcpStream::connect(tcp.local_addr().unwrap()).unwrap();
        let e = t.connect("localhost:1", s).map(drop).unwrap_err();
        assert!(e.to_string().contains("ca.pem"), "{e}");
    }

    #[test]
    fn host_of_an_address() {
        assert_eq!(host_of("gpu.example:7777"), "gpu.example");
        assert_eq!(host_of("10.0.0.1:7777"), "10.0.0.1");
        assert_eq!(host_of("[::1]:7777"), "::1");
    }
}
