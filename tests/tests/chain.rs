// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The CUDA executor, verified without a GPU: a `vcuda-backend serve --executor cuda` whose
//! "driver" is vcuda's own `libcuda.so.1` (from `vcuda lib-dir`), which forwards to a second
//! backend on the CPU executor:
//!
//! ```text
//! program -> libvcuda -> [gpu.sock] CUDA executor -> cudarc -> vcuda's libcuda.so.1
//!         -> libvcuda -> [cpu.sock] CPU executor
//! ```
//!
//! Every program of `tests/cuda/` runs through it, so the CUDA executor's module loading,
//! parameter layouts, copies and staging, streams, events, sticky errors and its cuBLAS and
//! cuRAND calls (through vcuda's libcublas and libcurand, on the same session) run real
//! kernels. The programs that cannot pass yet are listed in [`KNOWN`], with the reason.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use vcuda_tests::{
    Cuda, Link, all_programs, bin, bin_dir, build, build_linked, check_output, source, spec,
};

/// Programs the chain cannot pass yet, and why (none today: keep the list for what the
/// next runtime feature brings).
const KNOWN: &[(&str, &str)] = &[];

/// Programs whose static-runtime build the chain cannot pass yet, and why (none today).
const KNOWN_STATIC: &[(&str, &str)] = &[];

struct Backend(Child);

impl Drop for Backend {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `vcuda-backend serve` on `socket` with `args` and `env`, and waits for it.
fn serve(socket: &Path, log: &Path, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Backend {
    let mut cmd = Command::new(bin("vcuda-backend"));
    cmd.args(["serve", "--notify-ready", "--socket"])
        .arg(socket)
        .args(args)
        .env_remove("VCUDA_SOCKET")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap());
    for (k, v) in env {
        cmd.env(k, v);
    }
    // SAFETY: prctl is async-signal-safe; the backend dies with this test process.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let b = Backend(cmd.spawn().unwrap());
    let start = Instant::now();
    while std::os::unix::net::UnixStream::connect(socket).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "backend did not start: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    b
}

/// Waits until backend `pid` has no session thread left (the previous program's session
/// has torn down its context). Contexts of one process share the CPU-side session of the
/// chain, and with it a sticky error, until the last of them is destroyed.
fn wait_idle(pid: u32) {
    let start = Instant::now();
    let busy = || {
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| {
                d.flatten().any(|t| {
                    std::fs::read_to_string(t.path().join("comm"))
                        .is_ok_and(|c| c.trim() == "vcuda-session")
                })
            })
            .unwrap_or(false)
    };
    // With worker processes (the CUDA executor's default), the previous program's worker.
    let workers = || {
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
            .is_ok_and(|c| !c.trim().is_empty())
    };
    while busy() || workers() {
        if start.elapsed() > Duration::from_secs(10) {
            // Not fatal (the next program may still pass), but never the normal case.
            eprintln!("warning: backend {pid} still serves a session after 10 s");
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn lib_dir() -> PathBuf {
    let o = Command::new(bin("vcuda"))
        .arg("lib-dir")
        .env("VCUDA_LIB_DIR", bin_dir())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    PathBuf::from(String::from_utf8_lossy(&o.stdout).trim())
}

fn run(gpu: &Path, exe: &Path, args: &[String]) -> Output {
    Command::new(bin("vcuda"))
        .args(["run", "--"])
        .arg(exe)
        .args(args)
        .env("VCUDA_SOCKET", gpu)
        .env("VCUDA_LIB_DIR", bin_dir())
        .output()
        .unwrap()
}

#[test]
fn every_program_runs_on_the_cuda_executor_over_vcudas_libcuda() {
    chain(Link::Shared, KNOWN);
}

/// The same programs built with nvcc's default static runtime: NVIDIA's runtime inside the
/// program drives vcuda's `libcuda.so.1` (its export tables), whose session the CUDA
/// executor replays on the driver below it.
#[test]
fn every_static_program_runs_on_the_cuda_executor_over_vcudas_libcuda() {
    chain(Link::Static, KNOWN_STATIC);
}

fn chain(link: Link, known: &[(&str, &str)]) {
    if build("vectorAdd", Cuda::V13).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (cpu, gpu) = (dir.path().join("cpu.sock"), dir.path().join("gpu.sock"));
    let _cpu = serve(
        &cpu,
        &dir.path().join("cpu.log"),
        &["--executor", "cpu"],
        &[],
    );
    let lib = lib_dir();
    let _gpu = serve(
        &gpu,
        &dir.path().join("gpu.log"),
        // No warm worker: `wait_idle` waits for the backend to have no worker left, and a
        // warm one would always be there (every program then waited its full 10 s).
        &["--executor", "cuda", "--cuda-ipc", "--warm-context", "off"],
        &[
            ("VCUDA_SOCKET", cpu.as_os_str()),
            ("LD_LIBRARY_PATH", lib.as_os_str()),
            // Kernels' printf comes back to the program, as `vcuda run` arranges.
            ("VCUDA_CUDA_CAPTURE_PRINTF", std::ffi::OsStr::new("1")),
        ],
    );
    let log = std::fs::read_to_string(dir.path().join("gpu.log")).unwrap_or_default();
    assert!(!log.contains("unavailable"), "{log}");
    let mut failed = Vec::new();
    for name in all_programs() {
        let s = spec(&source(&name));
        let Some(exe) = build_linked(&name, Cuda::V13, link) else {
            continue;
        };
        wait_idle(_gpu.0.id());
        let o = run(&gpu, &exe, &s.args);
        let r = std::panic::catch_unwind(|| check_output(&name, &s, &o));
        let known = known.iter().find(|(n, _)| *n == name);
        match (r, known) {
            (Ok(()), None) => eprintln!("ok: {name}"),
            (Ok(()), Some(_)) => failed.push(format!("{name} passes now: drop it from KNOWN")),
            (Err(_), Some((_, why))) => eprintln!("known failure: {name}: {why}"),
            (Err(e), None) => failed.push(format!(
                "{name}: {}",
                e.downcast_ref::<String>().map_or("failed", String::as_str)
            )),
        }
    }
    assert!(
        failed.is_empty(),
        "{}\n--- CUDA backend log\n{}",
        failed.join("\n"),
        std::fs::read_to_string(dir.path().join("gpu.log")).unwrap_or_default()
    );
}
