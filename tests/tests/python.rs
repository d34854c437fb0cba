// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Python GPU programs run unchanged through `vcuda run`: Numba's CUDA target (numba-cuda
//! from PyPI, in a cached virtualenv made by `images/numba-venv.sh`) JIT-compiles kernels
//! with NVVM and drives them through vcuda's `libcuda.so.1`; CuPy (`cupy-cuda13x` and
//! `cupy-cuda12x` from PyPI, `images/cupy-venv.sh`) carries NVIDIA's static runtime, which
//! drives the same library.

use std::process::Command;

use vcuda_tests::{bin, bin_dir, repo_root};

/// The python of the virtualenv `images/SCRIPT ARGS` makes, or `None` (skip) when it cannot be
/// made and the tests do not require it (`VCUDA_REQUIRE_CUDA`, which `tests/run.sh` sets).
fn venv_python(script: &str, args: &[&str]) -> Option<String> {
    let o = Command::new("bash")
        .arg(repo_root().join("images").join(script))
        .args(args)
        .output()
        .expect("run the virtualenv script");
    if o.status.success() {
        return Some(String::from_utf8_lossy(&o.stdout).trim().to_owned());
    }
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        std::env::var_os("VCUDA_REQUIRE_CUDA").is_none(),
        "cannot make the virtualenv of {script}:\n{err}"
    );
    eprintln!("skipping: cannot make the virtualenv of {script}:\n{err}");
    None
}

#[test]
fn numba_kernels_run_on_the_cpu_executor() {
    numba_basic(13);
}

/// The same with `numba-cuda[cu12]`, whose wheels keep NVVM and nvJitLink in directories
/// of their own.
#[test]
fn numba_for_cuda12_kernels_run_on_the_cpu_executor() {
    numba_basic(12);
}

/// Runs `tests/python/numba_basic.py` with numba-cuda for CUDA `major`.
fn numba_basic(major: u32) {
    // Numba's low-occupancy and linker notices are not failures.
    let env = [("PYTHONWARNINGS", "ignore"), ("VCUDA_LOG", "info")];
    let Some((_, stderr)) = passes("numba-venv.sh", major, "numba_basic.py", &env) else {
        return;
    };
    // numba-cuda as pip installs it brings nvJitLink, so Numba links LTO-IR: vcuda's
    // nvJitLink took it (NVIDIA's turned it into PTX), not the wheel's (machine code).
    assert!(
        stderr.contains("LTO-IR is linked to PTX by NVIDIA's nvJitLink"),
        "--- stderr\n{stderr}"
    );
}

/// Runs `tests/python/SCRIPT` through `vcuda run --executor cpu` with the python of
/// `images/VENV MAJOR` and `env`, and checks that it exits 0 and prints `PASS`: its stdout
/// and stderr, or `None` (skip) without the virtualenv.
fn passes(venv: &str, major: u32, script: &str, env: &[(&str, &str)]) -> Option<(String, String)> {
    let py = venv_python(venv, &[&major.to_string()])?;
    let o = Command::new(bin("vcuda"))
        .args(["run", "--executor", "cpu", "--", &py])
        .arg(repo_root().join("tests/python").join(script))
        .env_remove("VCUDA_SOCKET")
        .env_remove("CUPY_COMPILE_WITH_PTX")
        .env("VCUDA_BACKEND", bin("vcuda-backend"))
        .env("VCUDA_LIB_DIR", bin_dir())
        .envs(env.iter().copied())
        .output()
        .expect("run vcuda");
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        o.status.success() && stdout.lines().any(|l| l == "PASS"),
        "{}\n--- stdout\n{stdout}--- stderr\n{stderr}",
        o.status
    );
    Some((stdout, stderr))
}

/// CuPy's arrays, reductions (CUB), ElementwiseKernel, ReductionKernel, RawKernel (NVRTC,
/// kept as PTX: `vcuda run --executor cpu` sets `CUPY_COMPILE_WITH_PTX`), matmul through
/// vcuda's cuBLAS, `cupy.random` through vcuda's cuRAND, and cuFFT's clear absence.
#[test]
fn cupy_runs_on_the_cpu_executor() {
    cupy_basic(13);
}

/// The same with `cupy-cuda12x`: CUDA 12's static runtime, `libcublas.so.12` and
/// `libcurand.so.10`, which most CuPy installs use.
#[test]
fn cupy_for_cuda12_runs_on_the_cpu_executor() {
    cupy_basic(12);
}

/// Runs `tests/python/cupy_basic.py` with the CuPy built for CUDA `major`.
fn cupy_basic(major: u32) {
    let Some((stdout, _)) = passes("cupy-venv.sh", major, "cupy_basic.py", &[]) else {
        return;
    };
    let runtime = format!("CUDA runtime {major}");
    assert!(
        stdout.lines().any(|l| l.starts_with(&runtime)),
        "--- stdout\n{stdout}"
    );
}

/// A fixed part of CuPy's own test suite (its `arange`/`linspace`/`logspace`/`meshgrid`
/// tests, 88 of them) passes through `tests/python/cupy-suite.sh`, the script users run
/// for the rest.
#[test]
fn cupy_suite_ranges_pass() {
    if venv_python("cupy-venv.sh", &[]).is_none() {
        return;
    }
    let o = Command::new("bash")
        .arg(repo_root().join("tests/python/cupy-suite.sh"))
        .arg("cupy_tests/creation_tests/test_ranges.py")
        .env_remove("VCUDA_SOCKET")
        .env_remove("CUPY_COMPILE_WITH_PTX")
        .env("VCUDA", bin("vcuda"))
        .env("VCUDA_BACKEND", bin("vcuda-backend"))
        .env("VCUDA_LIB_DIR", bin_dir())
        .output()
        .expect("run tests/python/cupy-suite.sh");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success()
            && stdout.contains("88 passed")
            && !stdout.contains("failed")
            && !stdout.contains("error"),
        "{}\n--- stdout\n{stdout}--- stderr\n{stderr}",
        o.status
    );
}

/// A fixed part of numba-cuda's own tests (its driver-level package, `cudadrv`: contexts,
/// memory, streams, events, linking, modules, graphs, tensor maps, about 240 tests) passes
/// through `tests/python/numba-suite.sh`, the script users run for the rest.
#[test]
fn numba_suite_cudadrv_passes() {
    if venv_python("numba-venv.sh", &[]).is_none() {
        return;
    }
    let o = Command::new("bash")
        .arg(repo_root().join("tests/python/numba-suite.sh"))
        .arg("numba.cuda.tests.cudadrv")
        .env_remove("VCUDA_SOCKET")
        .env("VCUDA", bin("vcuda"))
        .env("VCUDA_BACKEND", bin("vcuda-backend"))
        .env("VCUDA_LIB_DIR", bin_dir())
        .output()
        .expect("run tests/python/numba-suite.sh");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let passed = stdout
        .lines()
        .rev()
        .find_map(|l| {
            let (n, rest) = l.trim().split_once(' ')?;
            rest.starts_with("passed").then(|| n.parse::<u32>().ok())?
        })
        .unwrap_or(0);
    assert!(
        o.status.success()
            && passed >= 230
            && !stdout.contains(" failed")
            && !stdout.contains(" error"),
        "{} ({passed} passed)\n--- stdout\n{stdout}--- stderr\n{stderr}",
        o.status
    );
}
