// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Helpers for vcuda's end-to-end tests.
//!
//! The tests compile the CUDA programs in `tests/cuda/` with the CUDA 13.0 toolkit that
//! `images/cuda-toolkit.sh` installs from PyPI (cached), and run them unchanged through
//! `vcuda run`. They use the binaries of the same cargo profile (`target/<profile>/vcuda`,
//! `vcuda-backend`, `libvcuda.so`): build the workspace first (`cargo build --workspace`),
//! which `tests/run.sh` does.
//!
//! A program may start with header lines `// vcuda-test: KEY=VALUE`:
//! `expect=TEXT` (a line the output must contain), `args=A B` (arguments),
//! `libs=cublas,curand` (extra libraries to link), `nvcc=FLAGS` (extra nvcc flags),
//! `srcs=DIR/FILE.cu,...` (more translation units, relative to `tests/cuda/`; kept in
//! subdirectories so they are not programs themselves), `arch=90a` (the GPU architecture
//! to build for instead of `90`: `90a` for sm_90a's arch-specific instructions).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// The directory with the binaries of this test's cargo profile (`target/debug`, ...).
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/<test binary>
    exe.parent()
        .and_then(Path::parent)
        .expect("test binary in target/<profile>/deps")
        .to_path_buf()
}

/// A workspace binary, which must have been built.
pub fn bin(name: &str) -> PathBuf {
    let p = bin_dir().join(name);
    assert!(
        p.exists(),
        "{} is missing: run `cargo build --workspace` first (tests/run.sh does)",
        p.display()
    );
    p
}

/// Which CUDA toolkit builds a test program, and so which libcudart ABI it uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cuda {
    /// CUDA 13.0 from PyPI: `libcudart.so.13`.
    V13,
    /// CUDA 12.4 assembled from Debian and PyPI: `libcudart.so.12`.
    V12,
}

impl Cuda {
    fn tag(self) -> &'static str {
        match self {
            Cuda::V13 => "13",
            Cuda::V12 => "12",
        }
    }
}

/// The CUDA toolkit root (`bin/nvcc`, `include/`, `lib/`): `$VCUDA_CUDA_ROOT` (13) /
/// `$VCUDA_CUDA12_ROOT`, or the one `images/cuda-toolkit.sh` / `images/cuda12-toolkit.sh`
/// provides. `None` when it cannot be had and `VCUDA_REQUIRE_CUDA` is unset (tests then
/// skip with a message); CI sets it, so there a missing toolkit fails.
pub fn toolkit(v: Cuda) -> Option<&'static Path> {
    static ROOTS: [OnceLock<Option<PathBuf>>; 2] = [OnceLock::new(), OnceLock::new()];
    let (slot, var, script) = match v {
        Cuda::V13 => (&ROOTS[0], "VCUDA_CUDA_ROOT", "images/cuda-toolkit.sh"),
        Cuda::V12 => (&ROOTS[1], "VCUDA_CUDA12_ROOT", "images/cuda12-toolkit.sh"),
    };
    slot.get_or_init(|| {
        if let Some(r) = std::env::var_os(var) {
            return Some(PathBuf::from(r));
        }
        let out = Command::new("bash").arg(repo_root().join(script)).output();
        match out {
            Ok(o) if o.status.success() => Some(PathBuf::from(
                String::from_utf8_lossy(&o.stdout).trim().to_owned(),
            )),
            other => {
                let msg = format!("the CUDA {} toolkit is unavailable: {other:?}", v.tag());
                assert!(std::env::var_os("VCUDA_REQUIRE_CUDA").is_none(), "{msg}");
                eprintln!("skipping: {msg}");
                None
            }
        }
    })
    .as_deref()
}

/// How a test program links the CUDA runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// `-cudart=shared`: the program loads `libcudart.so`, which vcuda replaces.
    Shared,
    /// nvcc's default, `-cudart=static`: NVIDIA's runtime is inside the program and
    /// reaches vcuda through `libcuda.so.1` (the driver API and its export tables).
    Static,
}

/// Header settings of a test program.
#[derive(Debug, Default, Clone)]
pub struct Spec {
    /// Lines the output must contain.
    pub expect: Vec<String>,
    /// Arguments.
    pub args: Vec<String>,
    /// Extra libraries.
    pub libs: Vec<String>,
    /// Extra nvcc flags.
    pub nvcc: Vec<String>,
    /// More sources (relative to `tests/cuda/`).
    pub srcs: Vec<String>,
    /// The architecture (`90` unless `arch=`): the build's one `-gencode`.
    pub arch: String,
}

/// Reads a program's `// vcuda-test:` header lines.
pub fn spec(src: &Path) -> Spec {
    let text = std::fs::read_to_string(src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    let mut s = Spec {
        arch: "90".into(),
        ..Spec::default()
    };
    for line in text.lines().take_while(|l| l.starts_with("//")) {
        let Some(kv) = line.strip_prefix("// vcuda-test:") else {
            continue;
        };
        let kv = kv.trim();
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        match k.trim() {
            "expect" => s.expect.push(v.to_owned()),
            "args" => s.args.extend(v.split_whitespace().map(str::to_owned)),
            "libs" => s.libs.extend(
                v.split(',')
                    .map(|l| l.trim().to_owned())
                    .filter(|l| !l.is_empty()),
            ),
            "nvcc" => s.nvcc.extend(v.split_whitespace().map(str::to_owned)),
            "arch" => s.arch = v.trim().to_owned(),
            "srcs" => s.srcs.extend(
                v.split(',')
                    .map(|l| l.trim().to_owned())
                    .filter(|l| !l.is_empty()),
            ),
            other => panic!("{}: unknown vcuda-test key {other}", src.display()),
        }
    }
    s
}

/// The source of test program `name`.
pub fn source(name: &str) -> PathBuf {
    repo_root().join("tests/cuda").join(format!("{name}.cu"))
}

/// Every test program in `tests/cuda/`, by name.
pub fn all_programs() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(repo_root().join("tests/cuda"))
        .expect("tests/cuda")
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".cu")
                .map(str::to_owned)
        })
        .collect();
    v.sort();
    v
}

/// Compiles test program `name` with toolkit `v` (if its binary is older than its sources)
/// and returns the binary, or `None` if the toolkit is unavailable.
pub fn build(name: &str, v: Cuda) -> Option<PathBuf> {
    build_source(&source(name), v)
}

/// As [`build`], linking the runtime as `link` says.
pub fn build_linked(name: &str, v: Cuda, link: Link) -> Option<PathBuf> {
    build_source_linked(&source(name), v, link)
}

/// Compiles the CUDA program `src` (a `NAME.cu` anywhere, including `tests/cuda/*.h`)
/// with toolkit `v` if its binary is older than its sources, and returns the binary, or
/// `None` if the toolkit is unavailable.
pub fn build_source(src: &Path, v: Cuda) -> Option<PathBuf> {
    build_source_linked(src, v, Link::Shared)
}

/// As [`build_source`], linking the runtime as `link` says.
pub fn build_source_linked(src: &Path, v: Cuda, link: Link) -> Option<PathBuf> {
    let root = toolkit(v)?;
    let name = src
        .file_stem()
        .and_then(|s| s.to_str())
        .expect("a NAME.cu source");
    let src = src.to_path_buf();
    let (cudart, dir) = match link {
        Link::Shared => ("-cudart=shared", format!("cuda{}-tests", v.tag())),
        Link::Static => ("-cudart=static", format!("cuda{}-static-tests", v.tag())),
    };
    let out_dir = bin_dir().join(dir);
    std::fs::create_dir_all(&out_dir).expect("create cuda-tests dir");
    let exe = out_dir.join(name);
    // The shared headers (common.h, cu_check.h, ...).
    let headers: Vec<PathBuf> = std::fs::read_dir(repo_root().join("tests/cuda"))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "h"))
        .collect();
    let s = spec(&src);
    let extra: Vec<PathBuf> = s
        .srcs
        .iter()
        .map(|f| repo_root().join("tests/cuda").join(f))
        .collect();
    let newest = [&src]
        .into_iter()
        .chain(&headers)
        .chain(&extra)
        .filter_map(|p| p.metadata().ok()?.modified().ok())
        .max();
    let fresh = exe
        .metadata()
        .and_then(|m| m.modified())
        .ok()
        .zip(newest)
        .is_some_and(|(b, s)| b >= s);
    if !fresh {
        // Unique per build: tests in one process (one pid) may build the same program at
        // once, and each renames its own finished binary into place.
        static BUILDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = out_dir.join(format!(".{name}.{}.{n}", std::process::id()));
        let mut cmd = Command::new(root.join("bin/nvcc"));
        let arch = &s.arch;
        cmd.args([cudart, "-O2", "-std=c++17", "-gencode"])
            .arg(format!(
                "arch=compute_{arch},code=[sm_{arch},compute_{arch}]"
            ))
            .arg(format!("-I{}", repo_root().join("tests/cuda").display()))
            .arg(format!("-L{}", root.join("lib").display()))
            .args(&s.nvcc)
            .arg(&src)
            .args(&extra)
            .arg("-o")
            .arg(&tmp);
        for l in &s.libs {
            cmd.arg(format!("-l{l}"));
        }
        let o = cmd.output().expect("run nvcc");
        assert!(
            o.status.success(),
            "nvcc failed for {name}:\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        std::fs::rename(&tmp, &exe).expect("rename test binary");
    }
    Some(exe)
}

/// Runs `program args` through `vcuda run --executor EXECUTOR`.
pub fn vcuda_run(executor: &str, program: &Path, args: &[String]) -> Output {
    Command::new(bin("vcuda"))
        .args(["run", "--executor", executor, "--"])
        .arg(program)
        .args(args)
        .env_remove("VCUDA_SOCKET")
        .env("VCUDA_BACKEND", bin("vcuda-backend"))
        .env("VCUDA_LIB_DIR", bin_dir())
        .output()
        .expect("run vcuda")
}

/// Builds test program `name` with toolkit `v` and runs it on `executor`, checking its exit
/// status, its `PASS` line and its expected output. Skips (returns) when the toolkit is
/// unavailable.
pub fn check_program(name: &str, v: Cuda, executor: &str) {
    check_program_linked(name, v, executor, Link::Shared);
}

/// As [`check_program`], with the program linking the runtime as `link` says.
pub fn check_program_linked(name: &str, v: Cuda, executor: &str, link: Link) {
    let s = spec(&source(name));
    let Some(exe) = build_linked(name, v, link) else {
        return;
    };
    let o = vcuda_run(executor, &exe, &s.args);
    check_output(name, &s, &o);
}

/// Checks what test program `name` (with header `s`) printed and how it exited: status 0,
/// a `PASS` line, no `FAIL`, and every expected line.
pub fn check_output(name: &str, s: &Spec, o: &Output) {
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let show = || format!("--- stdout\n{stdout}--- stderr\n{stderr}");
    assert!(
        o.status.success(),
        "{name} exited with {}\n{}",
        o.status,
        show()
    );
    assert!(
        stdout.lines().any(|l| l == "PASS"),
        "{name}: no PASS line\n{}",
        show()
    );
    assert!(
        !stdout.contains("FAIL"),
        "{name}: FAIL in output\n{}",
        show()
    );
    for e in &s.expect {
        assert!(
            stdout.lines().any(|l| l == e),
            "{name}: expected line {e:?}\n{}",
            show()
        );
    }
}

/// A child process (a backend, a plugin, a program) killed and reaped when dropped, so a
/// failing test leaves nothing running.
#[derive(Debug)]
pub struct Kill(pub std::process::Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
