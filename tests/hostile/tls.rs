// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Mutual TLS on the TCP transport: only clients with a certificate from the configured CA
//! are served; a real program runs over it.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::{ClientConnection, RootCertStore, StreamOwned};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use vcuda_tests::{Cuda, bin, bin_dir, build};

use super::{Backend, hello, hello_rw};

fn ca(name: &str) -> (Certificate, KeyPair) {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, name);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let k = KeyPair::generate().unwrap();
    (p.self_signed(&k).unwrap(), k)
}

fn leaf(names: &[&str], client: bool, issuer: &(Certificate, KeyPair)) -> (Certificate, KeyPair) {
    let mut p =
        CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    p.distinguished_name.push(DnType::CommonName, names[0]);
    p.extended_key_usages = vec![if client {
        ExtendedKeyUsagePurpose::ClientAuth
    } else {
        ExtendedKeyUsagePurpose::ServerAuth
    }];
    let k = KeyPair::generate().unwrap();
    (p.signed_by(&k, &issuer.0, &issuer.1).unwrap(), k)
}

/// Certificates for one test, as PEM files in a private directory.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, pem: String| std::fs::write(dir.path().join(name), pem).unwrap();
        let good = ca("vcuda test CA");
        let rogue = ca("someone else's CA");
        let server = leaf(&["localhost", "127.0.0.1"], false, &good);
        let client = leaf(&["tenant-1"], true, &good);
        let stranger = leaf(&["stranger"], true, &rogue);
        write("ca.pem", good.0.pem());
        write("rogue-ca.pem", rogue.0.pem());
        for (n, (c, k)) in [
            ("server", server),
            ("client", client),
            ("stranger", stranger),
        ] {
            write(&format!("{n}.pem"), c.pem());
            write(&format!("{n}.key"), k.serialize_pem());
        }
        Self { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn backend_args(&self) -> Vec<String> {
        [
            ("--tls-cert", "server.pem"),
            ("--tls-key", "server.key"),
            ("--tls-client-ca", "ca.pem"),
        ]
        .iter()
        .flat_map(|(f, n)| [f.to_string(), self.path(n).display().to_string()])
        .collect()
    }

    /// A rustls client trusting `ca`, presenting `identity` (`"client"`, `"stranger"`) if
    /// given.
    fn client(&self, ca: &str, identity: Option<&str>) -> Arc<rustls::ClientConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = RootCertStore::empty();
        for c in CertificateDer::pem_file_iter(self.path(ca)).unwrap() {
            roots.add(c.unwrap()).unwrap();
        }
        let b = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
        Arc::new(match identity {
            Some(id) => {
                let certs = CertificateDer::pem_file_iter(self.path(&format!("{id}.pem")))
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
                let key = PrivateKeyDer::from_pem_file(self.path(&format!("{id}.key"))).unwrap();
                b.with_client_auth_cert(certs, key).unwrap()
            }
            None => b.with_no_client_auth(),
        })
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A TLS backend on a loopback port, with `extra` arguments.
fn tls_backend(pki: &Pki, extra: &[&str]) -> (Backend, u16) {
    let port = free_port();
    let mut args = vec!["--socket".to_string(), format!("tcp:127.0.0.1:{port}")];
    args.extend(pki.backend_args());
    args.extend(extra.iter().map(|a| a.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let b = Backend::spawn(tempfile::tempdir().unwrap(), PathBuf::new(), &args, false);
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(start.elapsed() < Duration::from_secs(20), "{}", b.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    (b, port)
}

/// A `Hello` over TLS with `config`: its status, or the error that ended the exchange.
fn tls_hello(port: u16, config: Arc<rustls::ClientConfig>) -> std::io::Result<u32> {
    let tcp = TcpStream::connect(("127.0.0.1", port))?;
    tcp.set_read_timeout(Some(Duration::from_secs(10)))?;
    let conn = ClientConnection::new(config, ServerName::try_from("localhost").unwrap())
        .map_err(std::io::Error::other)?;
    let mut tls = StreamOwned::new(conn, tcp);
    hello_rw(&mut tls)
}

/// Sessions on the backend's threads, and in worker processes (which make the TLS
/// handshake themselves).
const ISOLATIONS: [&[&str]; 2] = [&["--isolation", "thread"], &["--isolation", "process"]];

#[test]
fn tcp_serves_only_clients_with_a_certificate_from_its_ca() {
    for isolation in ISOLATIONS {
        eprintln!("{isolation:?}");
        only_clients_with_a_certificate_from_its_ca(isolation);
    }
}

fn only_clients_with_a_certificate_from_its_ca(isolation: &[&str]) {
    let pki = Pki::new();
    let (b, port) = tls_backend(&pki, isolation);
    // A tenant with its certificate: served.
    assert_eq!(
        tls_hello(port, pki.client("ca.pem", Some("client"))).unwrap(),
        0
    );
    // No certificate, another CA's certificate, or no TLS at all: nothing is served.
    let no_cert = tls_hello(port, pki.client("ca.pem", None));
    let stranger = tls_hello(port, pki.client("ca.pem", Some("stranger")));
    let mut plain = TcpStream::connect(("127.0.0.1", port)).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let plain = hello(&mut plain);
    eprintln!("no certificate: {no_cert:?}\nanother CA's: {stranger:?}\nplain TCP: {plain:?}");
    assert!(no_cert.is_err() && stranger.is_err() && plain.is_err());
    // A client that does not trust the backend's CA refuses it.
    assert!(tls_hello(port, pki.client("rogue-ca.pem", Some("client"))).is_err());
    std::thread::sleep(Duration::from_millis(200));
    let log = b.log();
    assert!(log.contains("mutual TLS"), "{log}");
    assert!(log.contains("TLS handshake failed"), "{log}");
}

#[test]
fn tcp_beyond_loopback_needs_tls() {
    let o = Command::new(bin("vcuda-backend"))
        .args(["serve", "--executor", "cpu", "--socket", "tcp:0.0.0.0:0"])
        .env_remove("VCUDA_SOCKET")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("--tls-client-ca"), "{err}");
    // Some of the TLS options but not all: a usage error.
    let o = Command::new(bin("vcuda-backend"))
        .args([
            "serve",
            "--socket",
            "tcp:127.0.0.1:0",
            "--tls-cert",
            "x.pem",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--tls-key"));
    // With TLS, any address.
    let pki = Pki::new();
    let mut args = vec!["--socket".to_string(), "tcp:0.0.0.0:0".to_string()];
    args.extend(pki.backend_args());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let b = Backend::spawn(tempfile::tempdir().unwrap(), PathBuf::new(), &args, false);
    let start = Instant::now();
    while !b.log().contains("serving") {
        assert!(start.elapsed() < Duration::from_secs(20), "{}", b.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(b.log().contains("mutual TLS"), "{}", b.log());
}

fn run_over_tls(pki: &Pki, port: u16, exe: &Path, tls: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(bin("vcuda"));
    cmd.args(["run", "--"])
        .arg(exe)
        .env("VCUDA_SOCKET", format!("tcp:127.0.0.1:{port}"))
        .env("VCUDA_LIB_DIR", bin_dir())
        .env("VCUDA_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in tls {
        cmd.env(k, pki.path(v));
    }
    cmd.output().unwrap()
}

#[test]
fn a_program_runs_over_mutual_tls() {
    let Some(exe) = build("vectorAdd", Cuda::V13) else {
        return;
    };
    for isolation in ISOLATIONS {
        eprintln!("{isolation:?}");
        runs_over_mutual_tls(&exe, isolation);
    }
}

fn runs_over_mutual_tls(exe: &Path, isolation: &[&str]) {
    let pki = Pki::new();
    let (b, port) = tls_backend(&pki, isolation);
    let ok = run_over_tls(
        &pki,
        port,
        exe,
        &[
            ("VCUDA_TLS_CERT", "client.pem"),
            ("VCUDA_TLS_KEY", "client.key"),
            ("VCUDA_TLS_CA", "ca.pem"),
        ],
    );
    let out = String::from_utf8_lossy(&ok.stdout);
    assert!(
        ok.status.success() && out.contains("PASS"),
        "{out}{}\n{}",
        String::from_utf8_lossy(&ok.stderr),
        b.log()
    );
    // Without its certificate the program gets a CUDA error, and says why.
    let refused = run_over_tls(&pki, port, exe, &[("VCUDA_TLS_CA", "ca.pem")]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(err.contains("VCUDA_TLS_CERT"), "{err}");
}
