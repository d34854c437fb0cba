// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `vcuda vm run --migrate-after`: moves the running guest, its CUDA state with it, to a
//! second QEMU with a backend of its own, through QMP (QEMU's JSON control protocol).
//!
//! The same steps move a guest between two hosts by hand (MIGRATION.md): the
//! destination QEMU starts with `-incoming defer` next to its own backend, takes
//! `migrate-incoming`, and the source is told to `migrate` there.

use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long a QMP socket may take to appear, and a command to answer.
const QMP_TIMEOUT: Duration = Duration::from_secs(30);

/// A QMP connection, past the greeting and `qmp_capabilities`.
pub(super) struct Qmp {
    out: UnixStream,
    input: BufReader<UnixStream>,
}

impl Qmp {
    /// Connects to the QMP socket at `path`, waiting up to [`QMP_TIMEOUT`] for it.
    pub(super) fn connect(path: &Path) -> io::Result<Self> {
        let t = Instant::now();
        let out = loop {
            match UnixStream::connect(path) {
                Ok(s) => break s,
                Err(e) if t.elapsed() > QMP_TIMEOUT => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("QMP socket {}: {e}", path.display()),
                    ));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        };
        out.set_read_timeout(Some(QMP_TIMEOUT))?;
        let mut q = Self {
            input: BufReader::new(out.try_clone()?),
            out,
        };
        let greeting = q.read()?;
        if greeting.get("QMP").is_none() {
            return Err(io::Error::other(format!("not a QMP greeting: {greeting}")));
        }
        q.execute("qmp_capabilities", json!({}))?;
        Ok(q)
    }

    fn read(&mut self) -> io::Result<Value> {
        let mut line = String::new();
        if self.input.read_line(&mut line)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "QEMU closed its QMP socket",
            ));
        }
        serde_json::from_str(&line).map_err(|e| io::Error::other(format!("QMP: {e}: {line}")))
    }

    /// Runs `command` with `arguments`; its `return` value, or its error as an error.
    pub(super) fn execute(&mut self, command: &str, arguments: Value) -> io::Result<Value> {
        let msg = json!({ "execute": command, "arguments": arguments });
        writeln!(self.out, "{msg}")?;
        loop {
            let v = self.read()?;
            if let Some(r) = v.get("return") {
                return Ok(r.clone());
            }
            if let Some(e) = v.get("error") {
                let desc = e.get("desc").and_then(Value::as_str).unwrap_or("failed");
                return Err(io::Error::other(format!("QMP {command}: {desc}")));
            }
            // An event: not the answer.
        }
    }
}

/// What a finished migration measured (QEMU's `query-migrate`).
#[derive(Debug)]
pub(super) struct Migrated {
    /// The guest's downtime, ms.
    pub(super) downtime_ms: u64,
    /// From `migrate` to the end, ms.
    pub(super) total_ms: u64,
    /// Bytes of the migration stream QEMU counted (guest RAM, and the device state after it).
    pub(super) bytes: u64,
    /// Of `total_ms`, the setup (dirty logging started, devices told), ms.
    pub(super) setup_ms: u64,
    /// Rounds of copying dirty RAM.
    pub(super) rounds: u64,
}

/// Migrates the guest of `source` to `dest` (started with `-incoming defer`) through the
/// Unix socket `uri_path`; waits up to `timeout` for the end.
pub(super) fn migrate(
    source: &mut Qmp,
    dest: &mut Qmp,
    uri_path: &Path,
    timeout: Duration,
) -> io::Result<Migrated> {
    let uri = format!("unix:{}", uri_path.display());
    dest.execute("migrate-incoming", json!({ "uri": uri }))?;
    // A local socket: no bandwidth cap (QEMU's default is 128 MiB/s).
    source.execute(
        "migrate-set-parameters",
        json!({ "max-bandwidth": 64u64 << 30, "downtime-limit": 300 }),
    )?;
    source.execute("migrate", json!({ "uri": uri }))?;
    let t = Instant::now();
    loop {
        let info = source.execute("query-migrate", json!({}))?;
        match info.get("status").and_then(Value::as_str) {
            Some("completed") => {
                let n = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
                let ram = info.get("ram").cloned().unwrap_or(Value::Null);
                return Ok(Migrated {
                    downtime_ms: n(&info, "downtime"),
                    total_ms: n(&info, "total-time"),
                    bytes: n(&ram, "transferred"),
                    setup_ms: n(&info, "setup-time"),
                    rounds: n(&ram, "dirty-sync-count"),
                });
            }
            Some("failed" | "cancelled") => {
                let why = info
                    .get("error-desc")
                    .and_then(Value::as_str)
                    .unwrap_or("no reason given");
                return Err(io::Error::other(format!("migration failed: {why}")));
            }
            _ if t.elapsed() > timeout => {
                let _ = source.execute("migrate_cancel", json!({}));
                return Err(io::Error::other(
                    "migration did not finish in time; cancelled",
                ));
            }
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}
