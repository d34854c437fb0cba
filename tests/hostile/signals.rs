// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `vcuda run` and the program it runs end together: a signal another process sends to
//! `vcuda run` reaches the program, and the program does not outlive a killed `vcuda run`.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use vcuda_tests::{bin, bin_dir};

/// `vcuda run -- sh -c SCRIPT`, with the program's pid written to `pidfile` first.
fn run_shell(script: &str, pidfile: &Path) -> Child {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(bin("vcuda"));
    cmd.args(["run", "--executor", "cpu", "--", "sh", "-c"])
        .arg(format!("echo $$ > {}; {script}", pidfile.display()))
        .env_remove("VCUDA_SOCKET")
        .env("VCUDA_BACKEND", bin("vcuda-backend"))
        .env("VCUDA_LIB_DIR", bin_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    // A shell cannot trap a signal ignored when it started, and a test harness run in the
    // background (or under nohup) ignores SIGINT or SIGHUP: start from the defaults, as a
    // program in a terminal does.
    // SAFETY: between fork and exec the closure only calls signal (async-signal-safe).
    unsafe {
        cmd.pre_exec(|| {
            for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(s, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    cmd.spawn().unwrap()
}

fn read_pid(pidfile: &Path) -> i32 {
    let start = Instant::now();
    loop {
        if let Some(pid) = std::fs::read_to_string(pidfile)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the program did not start"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether `pid` still runs (a zombie nobody reaped yet counts as gone).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, r)| r.trim_start().starts_with(['Z', 'X']))
        })
        .is_some_and(|dead| !dead)
}

/// Waits (up to 10 s) for `pid` to be gone; how long it took.
fn gone_within(pid: i32) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if !alive(pid) {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

#[test]
fn a_signal_sent_to_vcuda_run_reaches_the_program() {
    for (sig, name) in [
        (libc::SIGTERM, "TERM"),
        (libc::SIGINT, "INT"),
        (libc::SIGHUP, "HUP"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        // The program says which signal it got and exits with its own status.
        let script = format!("trap 'echo got {name}; exit 7' {name}; while :; do sleep 0.05; done");
        let mut child = run_shell(&script, &pidfile);
        let pid = read_pid(&pidfile);
        signal(&child, sig);
        let status = child.wait().unwrap();
        let mut out = String::new();
        std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
        eprintln!("SIG{name} to vcuda run: the program printed {out:?}, vcuda run exited {status}");
        assert_eq!(out.trim(), format!("got {name}"), "SIG{name}");
        assert_eq!(
            status.code(),
            Some(7),
            "vcuda run exits with the program's status"
        );
        assert!(gone_within(pid).is_some());
    }
}

#[test]
fn the_program_dies_with_a_killed_vcuda_run() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let mut child = run_shell("exec sleep 600", &pidfile);
    let pid = read_pid(&pidfile);
    assert!(alive(pid));
    signal(&child, libc::SIGKILL);
    child.wait().unwrap();
    let took = gone_within(pid);
    eprintln!("vcuda run killed (SIGKILL): its program gone after {took:?}");
    assert!(took.is_some(), "the program outlived vcuda run");
}
