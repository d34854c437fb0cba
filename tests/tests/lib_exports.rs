// SPDX-License-Identifier: Apache-2.0 OR MIT
//! libvcuda.so exports every libcublas.so.13 name under `libcublas.so.13` (default) and
//! `libcublas.so.12`, every libcurand.so.10 name under `libcurand.so.10` and every driver
//! API name (cuda.h) under `libcuda.so.1`; `vcuda lib-dir` provides `libcublas.so.13`,
//! `libcublas.so.12`, `libcurand.so.10` and `libcuda.so.1` shims whose SONAME is their name
//! and which export every name under their own version node.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use vcuda_tests::{bin, bin_dir, repo_root};

fn exports(lib: &Path) -> BTreeSet<String> {
    let o = Command::new("nm")
        .args(["-D", "--with-symbol-versions", "--defined-only"])
        .arg(lib)
        .output()
        .expect("nm");
    assert!(o.status.success(), "nm {}", lib.display());
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .map(str::to_owned)
        .collect()
}

fn names(file: &str) -> Vec<String> {
    std::fs::read_to_string(repo_root().join("guest-lib/symbols").join(file))
        .expect("symbol list")
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

fn missing(ex: &BTreeSet<String>, list: &str, version: &str) -> Vec<String> {
    names(list)
        .into_iter()
        .filter(|n| !ex.contains(&format!("{n}{version}")))
        .collect()
}

fn lib_dir() -> PathBuf {
    let o = Command::new(bin("vcuda"))
        .arg("lib-dir")
        .env("VCUDA_LIB_DIR", bin_dir())
        .output()
        .expect("vcuda lib-dir");
    assert!(o.status.success());
    PathBuf::from(String::from_utf8_lossy(&o.stdout).trim())
}

#[test]
fn libvcuda_exports_cublas_and_curand() {
    let ex = exports(&bin_dir().join("libvcuda.so"));
    for (list, version) in [
        ("cublas13.names", "@@libcublas.so.13"),
        ("cublas12.names", "@libcublas.so.12"),
        ("curand10.names", "@@libcurand.so.10"),
        ("cuda1.names", "@@libcuda.so.1"),
    ] {
        let m = missing(&ex, list, version);
        assert!(m.is_empty(), "missing {version}: {m:?}");
    }
    assert_eq!(names("cublas13.names").len(), 746);
    assert_eq!(names("curand10.names").len(), 27);
}

#[test]
fn lib_dir_shims_have_the_real_sonames() {
    let dir = lib_dir();
    for (file, list) in [
        ("libcublas.so.13", "cublas13.names"),
        ("libcublas.so.12", "cublas12.names"),
        ("libcurand.so.10", "curand10.names"),
        ("libcuda.so.1", "cuda1.names"),
    ] {
        let lib = dir.join(file);
        let o = Command::new("readelf")
            .arg("-d")
            .arg(&lib)
            .output()
            .expect("readelf");
        assert!(
            String::from_utf8_lossy(&o.stdout).contains(&format!("Library soname: [{file}]")),
            "{file}: wrong SONAME"
        );
        let m = missing(&exports(&lib), list, &format!("@@{file}"));
        assert!(m.is_empty(), "{file} lacks {m:?}");
    }
}
