// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Generates the export table of libvcuda.so.
//!
//! - `symbols/*.names` list every function the real libraries export, one per line.
//! - Functions implemented in `src/abi/` (and its subdirectories) are found by their
//!   `fn NAME(` lines inside `entry!` blocks; every other listed name gets a generated stub
//!   that returns a not-supported error.
//! - Each export gets GNU symbol versions with `.symver`: the CUDA 13 names under the
//!   default node `libcudart.so.13`, the CUDA 12 names under `libcudart.so.12` (see
//!   ../shared/facts/cuda-abi.md), so apps built against either runtime load this file.
//! - SONAME `libcudart.so.13`; the version nodes are defined by `vcuda.map`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::{env, fs};

/// One exported library: its symbol list file, its version node, whether it is the default
/// version of a name, and the stub's return value.
struct Lib {
    file: &'static str,
    node: &'static str,
    stub: &'static str,
}

const LIBS: &[Lib] = &[
    Lib {
        file: "cudart13.names",
        node: "libcudart.so.13",
        stub: "cudart",
    },
    Lib {
        file: "cudart12.names",
        node: "libcudart.so.12",
        stub: "cudart",
    },
    // cuBLAS and cuRAND are whole libraries of their own (apps link them directly, and they
    // do not call libcudart): the same file exports them under their own nodes.
    Lib {
        file: "cublas13.names",
        node: "libcublas.so.13",
        stub: "cublas",
    },
    Lib {
        file: "cublas12.names",
        node: "libcublas.so.12",
        stub: "cublas",
    },
    Lib {
        file: "curand10.names",
        node: "libcurand.so.10",
        stub: "curand",
    },
    // The driver API (libcuda.so.1): every name of CUDA 13.0's cuda.h (and cudaProfiler.h),
    // the versioned `_v2`/`_ptsz` names and the legacy ones, as NVIDIA's file exports.
    Lib {
        file: "cuda1.names",
        node: "libcuda.so.1",
        stub: "cuda",
    },
    // nvJitLink (libnvJitLink.so.13): the plain names, and the versioned ones its header's
    // inline wrappers call, which are aliases of the plain ones (see `alias_of`).
    Lib {
        file: "nvjitlink13.names",
        node: "libnvJitLink.so.13",
        stub: "nvjitlink",
    },
];

/// The implemented name a versioned nvJitLink name stands for: `__nvJitLinkCreate_13_2` ->
/// `nvJitLinkCreate`.
fn alias_of(name: &str) -> Option<String> {
    let rest = name.strip_prefix("__nvJitLink")?;
    let (base, version) = rest.rsplit_once("_13_")?;
    version
        .chars()
        .all(|c| c.is_ascii_digit())
        .then(|| format!("nvJitLink{base}"))
}

fn read_names(dir: &Path, file: &str) -> BTreeSet<String> {
    let p = dir.join(file);
    println!("cargo:rerun-if-changed={}", p.display());
    fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// The `.rs` files under `dir`, recursively, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut out = Vec::new();
    for e in fs::read_dir(dir).expect("read src/abi").flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Names of the functions `src/abi/**.rs` implement, with the file (relative to `src/abi`)
/// that defines each.
fn implemented(api: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for f in rust_files(api) {
        println!("cargo:rerun-if-changed={}", f.display());
        let text = fs::read_to_string(&f).expect("read api file");
        let file = f.strip_prefix(api).unwrap().to_string_lossy().into_owned();
        for line in text.lines() {
            let t = line.trim_start();
            if let Some(rest) = t.strip_prefix("fn ") {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                // cuda*, cublas*, curand*, and the driver API's cuXxx.
                let driver = name.starts_with("cu")
                    && name[2..].starts_with(|c: char| c.is_ascii_uppercase());
                if driver
                    || name.starts_with("cuda")
                    || name.starts_with("__cuda")
                    || name.starts_with("__v12_")
                    || name.starts_with("cublas")
                    || name.starts_with("curand")
                    || name.starts_with("nvJitLink")
                {
                    out.insert(name, file.clone());
                }
            }
        }
    }
    out
}

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let symdir = manifest.join("symbols");
    let implemented = implemented(&manifest.join("src/abi"));

    // name -> nodes it is exported under; the first LIBS entry that lists a name is its
    // default (@@) version.
    let mut exports: BTreeMap<String, Vec<&'static Lib>> = BTreeMap::new();
    for lib in LIBS {
        for n in read_names(&symdir, lib.file) {
            exports.entry(n).or_default().push(lib);
        }
    }

    // Implementations that exist for one CUDA version only are named `__v12_NAME`
    // (`fn __v12_cudaGetDeviceProperties(`) and exported as NAME@libcudart.so.12.
    let v12_impls: BTreeSet<String> = implemented
        .keys()
        .filter_map(|n| n.strip_prefix("__v12_").map(str::to_owned))
        .collect();

    let mut stubs = String::new();
    let mut asm = String::new();
    let mut coverage = String::from("symbol\tversions\timplemented\n");
    for (name, libs) in &exports {
        let alias = alias_of(name).filter(|a| implemented.contains_key(a));
        if let Some(target) = &alias {
            // One codegen unit (see Cargo.toml) puts the target in the same object.
            writeln!(
                asm,
                ".globl {name}\n.type {name},@function\n.set {name}, {target}"
            )
            .unwrap();
        }
        let is_impl = implemented.contains_key(name) || alias.is_some();
        if !is_impl {
            let kind = libs[0].stub;
            writeln!(stubs, "entry_stub!({kind}, {name});").unwrap();
        }
        let mut default_done = false;
        for lib in libs {
            if lib.node == "libcudart.so.12" && v12_impls.contains(name) {
                writeln!(asm, ".symver __v12_{name}, {name}@{}, remove", lib.node).unwrap();
                continue;
            }
            if !default_done {
                writeln!(asm, ".symver {name}, {name}@@{}", lib.node).unwrap();
                default_done = true;
            } else {
                writeln!(asm, ".symver {name}, {name}@{}", lib.node).unwrap();
            }
        }
        let nodes: Vec<_> = libs.iter().map(|l| l.node).collect();
        let how = match (&alias, implemented.get(name)) {
            (Some(_), _) => "alias",
            (None, Some(f)) => f.as_str(),
            (None, None) => "stub",
        };
        writeln!(coverage, "{name}\t{}\t{how}", nodes.join(",")).unwrap();
    }
    for n in &v12_impls {
        if !exports.contains_key(n) {
            panic!("__v12_{n} implements a name no symbol list has");
        }
    }
    for n in implemented.keys() {
        if !n.starts_with("__v12_") && !exports.contains_key(n) {
            panic!("{n} is implemented but in no symbol list (add it or rename it)");
        }
    }
    fs::write(out.join("stubs.rs"), stubs).unwrap();
    // global_asm! takes the directives as one string literal.
    let lit = format!("{asm:?}");
    fs::write(
        out.join("symver.rs"),
        format!("::core::arch::global_asm!({lit});\n"),
    )
    .unwrap();
    fs::write(out.join("coverage.tsv"), coverage).unwrap();

    // The version nodes, in dependency order. rust-lld merges this with rustc's own
    // anonymous version script.
    let map = out.join("vcuda.map");
    fs::write(
        &map,
        "libcudart.so.12 { };\nlibcudart.so.13 { } libcudart.so.12;\n\
         libcublas.so.12 { };\nlibcublas.so.13 { } libcublas.so.12;\nlibcurand.so.10 { };\n\
         libcuda.so.1 { };\nlibnvJitLink.so.13 { };\n",
    )
    .unwrap();
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        map.display()
    );
    println!("cargo:rustc-cdylib-link-arg=-Wl,--undefined-version");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcudart.so.13");
    // Never unmapped by dlclose (Python's ctypes, a plugin host): the library runs threads
    // of its own (the batch flusher) and registers an exit handler.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
    println!("cargo:rerun-if-changed=build.rs");
}
