// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The `/metrics` endpoint: a small HTTP/1.1 responder on a thread of its own.
//!
//! A scrape is one short request, so connections are served one at a time, each bounded:
//! its request head at most [`MAX_HEAD`] bytes, [`TIMEOUT`] to send it and to take the
//! answer; a client that stalls delays other scrapes by at most that, and can never touch
//! the sessions. Only `GET` (and `HEAD`) of `/metrics` is answered; the connection is closed
//! after each answer.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use log::info;

use super::text::{Identity, render};
use crate::log_limit::LogLimiter;

/// The most bytes of a request head read.
pub const MAX_HEAD: usize = 8192;
/// How long a client has to send its request and to take the answer.
pub const TIMEOUT: Duration = Duration::from_secs(5);

static LIMITER: LazyLock<LogLimiter> =
    LazyLock::new(|| LogLimiter::new(module_path!(), 10, Duration::from_secs(60)));

/// Serves `/metrics` on `addr` (`HOST:PORT`; port 0 picks one) from a new thread: the
/// address bound.
pub fn spawn(addr: &str, id: Identity) -> io::Result<SocketAddr> {
    let addrs: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("--metrics {addr}: not HOST:PORT ({e})"),
            )
        })?
        .collect();
    let listener = TcpListener::bind(&addrs[..])?;
    let bound = listener.local_addr()?;
    info!("metrics on http://{bound}/metrics");
    std::thread::Builder::new()
        .name("vcuda-metrics".into())
        .spawn(move || {
            for conn in listener.incoming() {
                match conn {
                    Ok(c) => {
                        if let Err(e) = answer(c, &id) {
                            LIMITER.warn(format_args!("metrics request: {e}"));
                        }
                    }
                    Err(e) => LIMITER.warn(format_args!("metrics accept: {e}")),
                }
            }
        })?;
    Ok(bound)
}

/// Reads one request from `c` and answers it.
fn answer(mut c: TcpStream, id: &Identity) -> io::Result<()> {
    let deadline = Instant::now() + TIMEOUT;
    c.set_write_timeout(Some(TIMEOUT))?;
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "request too slow"));
        }
        c.set_read_timeout(Some(left))?;
        let n = c.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
        if head.len() > MAX_HEAD {
            return respond(&mut c, "431 Request Header Fields Too Large", "", false);
        }
    }
    let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let mut parts = line.split(|&b| b == b' ');
    let (method, target) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let path = target.split(|&b| b == b'?').next().unwrap_or_default();
    match (method, path) {
        (b"GET" | b"HEAD", b"/metrics") => {
            respond(&mut c, "200 OK", &render(id), method == b"HEAD")
        }
        (b"GET" | b"HEAD", _) => respond(&mut c, "404 Not Found", "try /metrics\n", false),
        _ => respond(&mut c, "405 Method Not Allowed", "", false),
    }
}

fn respond(c: &mut TcpStream, status: &str, body: &str, head_only: bool) -> io::Result<()> {
    let mut r = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if !head_only {
        r.push_str(body);
    }
    c.write_all(r.as_bytes())?;
    c.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(addr: SocketAddr, req: &[u8]) -> String {
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(req).unwrap();
        let mut s = String::new();
        c.read_to_string(&mut s).unwrap();
        s
    }

    #[test]
    fn it_answers_metrics_and_nothing_else() {
        let id = Identity {
            executor: "cpu",
            isolation: "thread",
            memory_limit: None,
        };
        let addr = spawn("127.0.0.1:0", id).unwrap();
        let ok = get(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.contains("\r\n\r\n# HELP vcuda_info"), "{ok}");
        let head = get(addr, b"HEAD /metrics HTTP/1.1\r\n\r\n");
        assert!(head.ends_with("\r\n\r\n"), "{head}");
        assert!(get(addr, b"GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(get(addr, b"POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        let big = [b'a'; MAX_HEAD + 10];
        assert!(get(addr, &big).starts_with("HTTP/1.1 431"));
        // A client that sends nothing and hangs up does not stop the server.
        drop(TcpStream::connect(addr).unwrap());
        assert!(get(addr, b"GET /metrics HTTP/1.0\r\n\r\n").starts_with("HTTP/1.1 200"));
    }
}
