// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `vcuda run`.

use std::io::{self, BufRead, Read};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use crate::libdir;

/// How long a private backend may take to start listening.
const BACKEND_START_TIMEOUT: Duration = Duration::from_secs(20);

/// A backend started for one program; stopped when dropped.
struct PrivateBackend {
    child: Child,
    _dir: tempfile::TempDir,
    socket: PathBuf,
}

impl Drop for PrivateBackend {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn backend_exe() -> io::Result<PathBuf> {
    if let Some(p) = std::env::var_os("VCUDA_BACKEND") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe()?;
    let p = exe.with_file_name("vcuda-backend");
    if p.exists() {
        Ok(p)
    } else {
        Err(io::Error::other(format!(
            "{} not found (set VCUDA_BACKEND)",
            p.display()
        )))
    }
}

/// Like mkdtemp: a fresh directory (created, never reused) with an unpredictable name and
/// mode 0700, so no other user can take the socket's place or connect to it. (tempfile's
/// default mode would be 0777 less the umask.)
fn private_dir() -> io::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("vcuda-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
}

fn start_backend(executor: &str) -> io::Result<PrivateBackend> {
    let dir = private_dir()?;
    let socket = dir.path().join("backend.sock");
    let log = std::env::var("VCUDA_BACKEND_LOG").unwrap_or_else(|_| "warn".into());
    let mut child = Command::new(backend_exe()?)
        .args(["serve", "--notify-ready", "--socket"])
        .arg(&socket)
        .args(["--executor", executor])
        // One program, which may hold all of the executor's memory (the default share
        // protects tenants of a shared backend from each other).
        .args(["--session-mem-limit", "100%"])
        .env("RUST_LOG", log)
        // The private backend serves one program: the CUDA executor may hand the GPU's
        // device printf output back to it.
        .env("VCUDA_CUDA_CAPTURE_PRINTF", "1")
        .env_remove("VCUDA_SOCKET")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    // The backend says `ready` on stdout once its socket accepts connections (then nothing
    // more; the rest of its stdout is drained so it can never block on it).
    let (tx, rx) = std::sync::mpsc::channel();
    if let Some(out) = child.stdout.take() {
        std::thread::spawn(move || {
            let mut out = io::BufReader::new(out);
            let mut line = String::new();
            let ready = out.read_line(&mut line).is_ok() && line.trim_end() == "ready";
            let _ = tx.send(ready);
            let _ = io::copy(&mut out, &mut io::sink());
        });
    }
    match rx.recv_timeout(BACKEND_START_TIMEOUT) {
        Ok(true) => {}
        Ok(false) | Err(RecvTimeoutError::Disconnected) => {
            // It exited (or said something else): stop it and show why.
            let _ = child.kill();
            let st = child.wait()?;
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            return Err(io::Error::other(format!(
                "the backend exited ({st}):\n{}",
                err.trim_end()
            )));
        }
        Err(RecvTimeoutError::Timeout) => {
            let _ = child.kill();
            return Err(io::Error::other(
                "the backend did not start listening in time",
            ));
        }
    }
    // From here on its warnings go to our stderr.
    if let Some(mut e) = child.stderr.take() {
        std::thread::spawn(move || {
            let _ = io::copy(&mut e, &mut io::stderr());
        });
    }
    Ok(PrivateBackend {
        child,
        _dir: dir,
        socket,
    })
}

fn prepend(var: &str, dir: &Path) -> String {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => format!("{}:{v}", dir.display()),
        _ => dir.display().to_string(),
    }
}

/// Runs `program` through vcuda; returns its exit code (128 + signal if killed).
pub fn run(executor: &str, program: &[String]) -> io::Result<u8> {
    let lib_dir = libdir::lib_dir()?;
    let backend = match std::env::var_os("VCUDA_SOCKET") {
        Some(s) if !s.is_empty() => None,
        _ => Some(start_backend(executor)?),
    };
    let mut cmd = Command::new(&program[0]);
    cmd.args(&program[1..])
        .env("LD_LIBRARY_PATH", prepend("LD_LIBRARY_PATH", &lib_dir))
        .env("LD_PRELOAD", {
            let lib = lib_dir.join("libvcuda.so");
            match std::env::var("LD_PRELOAD") {
                Ok(v) if !v.is_empty() => format!("{}:{v}", lib.display()),
                _ => lib.display().to_string(),
            }
        });
    if let Some(b) = &backend {
        cmd.env("VCUDA_SOCKET", &b.socket);
    }
    // Let the program own the terminal's signals; we only wait for it.
    let status = cmd
        .status()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot run {}: {e}", program[0])))?;
    drop(backend);
    Ok(match (status.code(), status.signal()) {
        (Some(c), _) => c as u8,
        (None, Some(s)) => 128u8.wrapping_add(s as u8),
        _ => 1,
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;

    #[test]
    fn private_backend_dir_is_0700() {
        let a = private_dir().unwrap();
        let b = private_dir().unwrap();
        assert_ne!(a.path(), b.path());
        assert_eq!(std::fs::metadata(a.path()).unwrap().mode() & 0o7777, 0o700);
    }
}
