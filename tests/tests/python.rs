// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Python GPU programs run unchanged through `vcuda run`: Numba's CUDA target (numba-cuda
//! from PyPI, in a cached virtualenv made by `images/numba-venv.sh`) JIT-compiles kernels
//! with NVVM and drives them through vcuda's `libcuda.so.1`.

use std::process::Command;

use vcuda_tests::{bin, bin_dir, repo_root};

/// The virtualenv's python, or `None` (skip) when it cannot be made and the tests do not
/// require it (`VCUDA_REQUIRE_CUDA`, which `tests/run.sh` sets).
fn numba_python() -> Option<String> {
    let o = Command::new("bash")
        .arg(repo_root().join("images/numba-venv.sh"))
        .output()
        .expect("run images/numba-venv.sh");
    if o.status.success() {
        return Some(String::from_utf8_lossy(&o.stdout).trim().to_owned());
    }
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        std::env::var_os("VCUDA_REQUIRE_CUDA").is_none(),
        "cannot make the Numba virtualenv:\n{err}"
    );
    eprintln!("skipping: cannot make the Numba virtualenv:\n{err}");
    None
}

#[test]
fn numba_kernels_run_on_the_cpu_executor() {
    let Some(py) = numba_python() else { return };
    let o = Command::new(bin("vcuda"))
        .args(["run", "--executor", "cpu", "--", &py])
        .arg(repo_root().join("tests/python/numba_basic.py"))
        .env_remove("VCUDA_SOCKET")
        .env("VCUDA_BACKEND", bin("vcuda-backend"))
        .env("VCUDA_LIB_DIR", bin_dir())
        // Numba's low-occupancy and linker notices are not failures.
        .env("PYTHONWARNINGS", "ignore")
        .output()
        .expect("run vcuda");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() && stdout.lines().any(|l| l == "PASS"),
        "{}\n--- stdout\n{stdout}--- stderr\n{stderr}",
        o.status
    );
}
