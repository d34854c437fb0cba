// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The deployment files under `deploy/`: the systemd units verify clean (`deploy/check.sh`),
//! and the shared backend's unit, run as systemd would run it (socket activation, the
//! unit's own command line), serves an unchanged nvcc-built program.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use vcuda_tests::{Cuda, Kill, bin, bin_dir, build, repo_root};

#[test]
fn the_deployment_files_check_clean() {
    let o = Command::new("bash")
        .arg(repo_root().join("deploy/check.sh"))
        .args(["--bin-dir"])
        .arg(bin_dir())
        .output()
        .expect("run deploy/check.sh");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{text}");
}

/// The words of the unit's `ExecStart=`, with the unit's and the drop-in's settings
/// applied as systemd would: the binary from this build, `$VCUDA_BACKEND_ARGS` empty, the
/// socket group this user's own.
fn exec_start(unit: &str) -> Vec<String> {
    let text = std::fs::read_to_string(repo_root().join("deploy/systemd").join(unit)).unwrap();
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("an ExecStart line");
    let gid = nix::unistd::getgid().as_raw().to_string();
    let mut words: Vec<String> = Vec::new();
    let mut group_next = false;
    for w in line.split_whitespace() {
        let w = if std::mem::take(&mut group_next) {
            gid.clone()
        } else {
            w.replace(
                "/usr/local/bin/vcuda-backend",
                &bin("vcuda-backend").display().to_string(),
            )
        };
        group_next = w == "--socket-group";
        if w != "$VCUDA_BACKEND_ARGS" {
            words.push(w);
        }
    }
    words
}

#[test]
fn the_socket_unit_starts_a_backend_that_serves_programs() {
    if Command::new("systemd-socket-activate")
        .arg("--help")
        .stdout(Stdio::null())
        .status()
        .is_err()
    {
        eprintln!("systemd-socket-activate not installed; skipped");
        return;
    }
    let Some(exe) = build("vectorAdd", Cuda::V13) else {
        return;
    };
    let words = exec_start("vcuda-backend.service");
    assert!(words.contains(&"fd:3".to_owned()), "{words:?}");
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("vcuda.sock");
    // As vcuda-backend.socket and the cpu-executor.conf drop-in set it up.
    let mut activate = Command::new("systemd-socket-activate")
        .arg("-l")
        .arg(&socket)
        .args(&words)
        .env("VCUDA_EXECUTOR", "cpu")
        .env_remove("VCUDA_SOCKET")
        .stderr(Stdio::null())
        .spawn()
        .expect("start systemd-socket-activate");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !socket.exists() {
        if let Ok(Some(st)) = activate.try_wait() {
            panic!("systemd-socket-activate exited: {st}");
        }
        assert!(Instant::now() < deadline, "no socket");
        std::thread::sleep(Duration::from_millis(20));
    }
    let _activate = Kill(activate);
    let o = Command::new(bin("vcuda"))
        .args(["run", "--"])
        .arg(&exe)
        .env("VCUDA_SOCKET", &socket)
        .env("VCUDA_LIB_DIR", bin_dir())
        .output()
        .expect("run vcuda");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.contains("PASS"),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
