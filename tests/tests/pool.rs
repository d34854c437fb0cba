// SPDX-License-Identifier: Apache-2.0 OR MIT
//! A pool of backends (`VCUDA_SOCKET=a,b,c`): an unchanged nvcc-built program skips the
//! backends it cannot reach and runs on the one with the most free device memory per
//! session, as their `Hello` replies say.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use vcuda_tests::{Cuda, Kill, bin, bin_dir, build, build_source, repo_root};

/// A CPU backend on `socket` with `memory` of simulated device memory, all of it for one
/// session if need be.
fn backend(socket: &Path, memory: &str) -> Kill {
    let k = Kill(
        Command::new(bin("vcuda-backend"))
            .args(["serve", "--executor", "cpu", "--cpu-memory", memory])
            .args(["--session-mem-limit", "100%", "--socket"])
            .arg(socket)
            .env_remove("VCUDA_SOCKET")
            .stderr(Stdio::null())
            .spawn()
            .expect("start vcuda-backend"),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while !socket.exists() {
        assert!(Instant::now() < deadline, "no socket");
        std::thread::sleep(Duration::from_millis(20));
    }
    k
}

fn run(exe: &Path, sockets: &str) -> Output {
    Command::new(bin("vcuda"))
        .args(["run", "--"])
        .arg(exe)
        .env("VCUDA_SOCKET", sockets)
        .env("VCUDA_LIB_DIR", bin_dir())
        .env("VCUDA_LOG", "info")
        .output()
        .expect("run vcuda")
}

/// The backend the library says it chose.
fn chosen(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && out.contains("PASS"), "{out}{err}");
    err.lines()
        .find_map(|l| l.split("chose backend ").nth(1))
        .and_then(|r| r.split(' ').next())
        .unwrap_or_else(|| panic!("no choice logged:\n{err}"))
        .to_owned()
}

#[test]
fn a_program_runs_on_the_backend_with_the_most_free_memory_per_session() {
    let Some(exe) = build("vectorAdd", Cuda::V13) else {
        return;
    };
    let Some(held) = build_source(&repo_root().join("tests/metrics/held.cu"), Cuda::V13) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = |n: &str| -> PathBuf { dir.path().join(n) };
    let (a, b) = (path("a.sock"), path("b.sock"));
    let _a = backend(&a, "600M");
    let _b = backend(&b, "1G");
    let pool = format!(
        "{},{},{}",
        path("missing.sock").display(),
        a.display(),
        b.display()
    );
    // Idle: b has more memory.
    assert_eq!(chosen(&run(&exe, &pool)), b.display().to_string());

    // b serves a session already: 1 GiB for two sessions is less than 600 MiB for one.
    let mut h = Kill(
        Command::new(bin("vcuda"))
            .args(["run", "--"])
            .arg(&held)
            .env("VCUDA_SOCKET", &b)
            .env("VCUDA_LIB_DIR", bin_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    let mut out = BufReader::new(h.0.stdout.take().unwrap());
    out.read_line(&mut line).unwrap();
    assert!(line.starts_with("held"), "{line}");
    assert_eq!(chosen(&run(&exe, &pool)), a.display().to_string());
    h.0.stdin.take().unwrap().write_all(b"\n").unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "freed");
    assert!(h.0.wait().unwrap().success());

    // Nothing reachable: the program's first call fails as without a driver.
    let none = format!("{},tcp:127.0.0.1:1", path("missing.sock").display());
    let o = run(&exe, &none);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("cannot reach any vcuda backend"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
