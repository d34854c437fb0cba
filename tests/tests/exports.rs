// SPDX-License-Identifier: Apache-2.0 OR MIT
//! libvcuda.so exports every libcudart 13 name under `libcudart.so.13`, every CUDA 12 name
//! under `libcudart.so.12`, with SONAME `libcudart.so.13`; `vcuda lib-dir` has the links.

use std::collections::BTreeSet;
use std::process::Command;

use vcuda_tests::{bin, bin_dir, repo_root};

fn exports() -> BTreeSet<String> {
    let o = Command::new("nm")
        .args(["-D", "--with-symbol-versions", "--defined-only"])
        .arg(bin_dir().join("libvcuda.so"))
        .output()
        .expect("nm");
    assert!(o.status.success());
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

#[test]
fn every_cudart_name_is_exported_with_its_version() {
    let ex = exports();
    let missing13: Vec<_> = names("cudart13.names")
        .into_iter()
        .filter(|n| !ex.contains(&format!("{n}@@libcudart.so.13")))
        .collect();
    assert!(
        missing13.is_empty(),
        "missing @@libcudart.so.13: {missing13:?}"
    );
    let missing12: Vec<_> = names("cudart12.names")
        .into_iter()
        .filter(|n| {
            !ex.contains(&format!("{n}@libcudart.so.12"))
                && !ex.contains(&format!("{n}@@libcudart.so.12"))
        })
        .collect();
    assert!(
        missing12.is_empty(),
        "missing @libcudart.so.12: {missing12:?}"
    );
    // Nothing leaks out unversioned.
    let bare: Vec<_> = ex.iter().filter(|s| !s.contains('@')).collect();
    assert!(bare.is_empty(), "unversioned exports: {bare:?}");
}

#[test]
fn soname_and_lib_dir() {
    let o = Command::new("readelf")
        .arg("-d")
        .arg(bin_dir().join("libvcuda.so"))
        .output()
        .expect("readelf");
    assert!(String::from_utf8_lossy(&o.stdout).contains("Library soname: [libcudart.so.13]"));
    let o = Command::new(bin("vcuda"))
        .arg("lib-dir")
        .env("VCUDA_LIB_DIR", bin_dir())
        .output()
        .expect("vcuda lib-dir");
    assert!(o.status.success());
    let dir = std::path::PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
    for name in ["libcudart.so.13", "libcudart.so.12", "libvcuda.so"] {
        assert!(
            dir.join(name).exists(),
            "{name} missing in {}",
            dir.display()
        );
    }
}
