// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Tests of the driver layer: the optional entry points' groups, and a scan of the
//! executor's source for driver and library calls that bypass `ffi` and `lib_ffi` or the
//! checks of `load`.

use super::init::MIPMAP_CALLS;
use super::*;

/// The identifier at the start of `s`.
fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// Every `.rs` file under `dir`, and its text.
fn rust_files(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, String)>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let text = std::fs::read_to_string(&p).unwrap();
            out.push((p, text));
        }
    }
}

/// cudarc's cuBLAS and cuRAND types named like their functions (the enums and handles
/// end in `_t` or `_st`).
const LIB_TYPES: &[&str] = &[
    "cublasContext",
    "cublasLogCallback",
    "curandStatus",
    "curandRngType",
    "curandOrdering",
    "curandMethod",
    "curandDirectionVectorSet",
];

/// Whether `name` (`cublas...` or `curand...`) is one of cudarc's function wrappers.
fn is_lib_fn(name: &str) -> bool {
    name.len() > 6
        && name[6..].starts_with(|c: char| c.is_ascii_uppercase())
        && !name.ends_with("_t")
        && !name.ends_with("_st")
        && !LIB_TYPES.contains(&name)
}

/// The places in `src` that reach cudarc's enum-returning cuBLAS and cuRAND wrappers:
/// a function through a `cb`, `cr` or `sys` path (or a macro's metavariable after one),
/// a glob or list import of the `sys` modules that brings functions in unqualified, and
/// cudarc's `safe`/`result` layers over them.
fn library_wrapper_uses(src: &str) -> Vec<String> {
    let mut found = Vec::new();
    for module in ["cb", "cr", "sys"] {
        for lib in ["cublas", "curand"] {
            let pat = format!("{module}::{lib}");
            for (i, _) in src.match_indices(&pat) {
                let name = ident(&src[i + module.len() + 2..]);
                if is_lib_fn(name) {
                    found.push(format!("{module}::{name}"));
                }
            }
        }
        let pat = format!("{module}::$");
        if src.contains(&pat) {
            found.push(format!("{pat} (a macro's function)"));
        }
    }
    for lib in ["cublas", "curand"] {
        let pat = format!("cudarc::{lib}::");
        for (i, _) in src.match_indices(&pat) {
            let rest = &src[i + pat.len()..];
            if let Some(list) = rest.strip_prefix("sys::{") {
                let list = &list[..list.find('}').unwrap_or(list.len())];
                let names = list.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
                found.extend(
                    names
                        .filter(|n| is_lib_fn(n))
                        .map(|n| format!("{pat}sys::{n}")),
                );
            } else if rest.starts_with("sys::*") || ident(rest) != "sys" {
                found.push(format!("{pat}{}", ident(rest)));
            }
        }
    }
    found
}

/// Every driver call in the executor goes through `ffi` (a `u32` result), is declared
/// there, and is checked by `load` (or optional); every cuBLAS and cuRAND call goes
/// through `lib_ffi` (a `u32` status) and is declared there. No file of the crate calls
/// cudarc's enum-returning wrappers (`lib_ffi.rs` only declares its own over cudarc's
/// types).
/// `load` tells groups of optional entry points by their places in `OPTIONAL`.
#[test]
fn optional_groups_are_where_load_looks() {
    assert_eq!(OPTIONAL[0], "cuFuncGetParamInfo");
    assert_eq!(
        (OPTIONAL[1], OPTIONAL[4]),
        ("cuLinkCreate_v2", "cuLinkDestroy")
    );
    assert_eq!(OPTIONAL[5], "cuLaunchCooperativeKernel");
    assert_eq!(
        (OPTIONAL[6], OPTIONAL[12]),
        ("cuArray3DCreate_v2", "cuSurfObjectDestroy")
    );
    assert_eq!(
        (OPTIONAL[13], OPTIONAL[21]),
        ("cuGraphCreate", "cuGraphDestroy")
    );
    assert_eq!(
        OPTIONAL[MIPMAP_CALLS],
        [
            "cuMipmappedArrayCreate",
            "cuMipmappedArrayGetLevel",
            "cuMipmappedArrayDestroy"
        ]
    );
    // Only looked up when called (no group depends on them), and `cuLaunchKernelEx` (looked
    // up by name: launches in clusters); the cluster occupancy calls answer
    // `CUDA_ERROR_NOT_FOUND` where they are missing.
    assert_eq!(
        OPTIONAL[MIPMAP_CALLS.end..],
        [
            "cuTensorMapEncodeTiled",
            "cuTensorMapReplaceAddress",
            "cuLaunchKernelEx",
            "cuOccupancyMaxActiveClusters",
            "cuOccupancyMaxPotentialClusterSize"
        ]
    );
}

#[test]
fn every_driver_call_is_checked_at_load() {
    let sources = [
        include_str!("mod.rs"),
        include_str!("init.rs"),
        include_str!("context.rs"),
        include_str!("memory.rs"),
        include_str!("vmm.rs"),
        include_str!("ipc.rs"),
        include_str!("stream.rs"),
        include_str!("module.rs"),
        include_str!("launch.rs"),
        include_str!("graph.rs"),
        include_str!("array.rs"),
        include_str!("../mod.rs"),
        include_str!("../device.rs"),
        include_str!("../modules.rs"),
        include_str!("../owned.rs"),
        include_str!("../staging.rs"),
        include_str!("../streams.rs"),
        include_str!("../transfer.rs"),
        include_str!("../texture.rs"),
        include_str!("../guest_mem.rs"),
        include_str!("../wait.rs"),
        include_str!("../printf.rs"),
        include_str!("../ops/arrays.rs"),
        include_str!("../ops/blas.rs"),
        include_str!("../ops/device.rs"),
        include_str!("../ops/graphs.rs"),
        include_str!("../ops/host_memory.rs"),
        include_str!("../ops/ipc.rs"),
        include_str!("../ops/memory.rs"),
        include_str!("../ops/modules.rs"),
        include_str!("../ops/rand.rs"),
        include_str!("../ops/streams.rs"),
        include_str!("../ops/vmm.rs"),
    ];
    let mut seen = 0;
    for src in sources {
        // cudarc's own wrappers return its `CUresult` enum: never called.
        for (i, _) in src.match_indices("sys::cu") {
            let name: String = src[i + 5..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            assert!(
                !name[2..].starts_with(|c: char| c.is_ascii_uppercase()),
                "{name} is called through cudarc's binding, not `ffi`"
            );
        }
        for (i, _) in src.match_indices("ffi::cu") {
            let name: String = src[i + 5..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            // `culib`, and this test's own pattern.
            if !name[2..].starts_with(|c: char| c.is_ascii_uppercase()) {
                continue;
            }
            seen += 1;
            assert!(
                REQUIRED.contains(&name.as_str()) || OPTIONAL.contains(&name.as_str()),
                "{name} is called but not checked by driver::load"
            );
            assert!(
                include_str!("../ffi.rs").contains(&format!("fn {name}(")),
                "{name} is not declared in ffi.rs"
            );
        }
    }
    assert!(seen > 40);

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    assert!(
        files
            .iter()
            .any(|(p, _)| p.ends_with("executor/cuda/blas.rs"))
    );
    let lib_ffi = include_str!("../lib_ffi.rs");
    let mut lib_calls = 0;
    for (path, src) in &files {
        if path.ends_with("executor/cuda/lib_ffi.rs") {
            continue;
        }
        let path = path.display();
        for (i, _) in src.match_indices("sys::cu") {
            let name = ident(&src[i + 5..]);
            assert!(
                !name[2..].starts_with(|c: char| c.is_ascii_uppercase()),
                "{path}: {name} is called through cudarc's binding, not `ffi`"
            );
        }
        let uses = library_wrapper_uses(src);
        assert!(
            uses.is_empty(),
            "{path} calls cudarc's cuBLAS/cuRAND wrappers, not `lib_ffi`: {uses:?}"
        );
        for lib in ["cublas", "curand"] {
            for (i, _) in src.match_indices(&format!("{lib}::{lib}")) {
                let name = ident(&src[i + lib.len() + 2..]);
                if !is_lib_fn(name) {
                    continue;
                }
                lib_calls += 1;
                assert!(
                    lib_ffi.contains(&format!("fn {name}(")),
                    "{path}: {name} is not declared in lib_ffi.rs"
                );
            }
        }
    }
    // Those of blas.rs's `real!` go through a macro and are not counted.
    assert!(lib_calls > 40, "{lib_calls}");
}

/// The scan finds what it must.
#[test]
fn the_source_scan_sees_cudarcs_wrappers() {
    // Written with `@` for the path separator, so that this file passes the scan.
    let bad = [
        "ok(unsafe { cb@cublasSgemm_v2(h) })",
        "cr@curandGenerate(g, p, n)",
        "cudarc@curand@sys@curandCreateGenerator(&mut g, t)",
        "unsafe { cb@$ger(h, m) }",
        "use cudarc@cublas@sys@*;",
        "use cudarc@curand@sys@{curandGenerator_t, curandSetStream};",
        "use cudarc@cublas@CudaBlas;",
        "cudarc@curand@result@create_generator()",
    ];
    for src in bad.map(|s| s.replace('@', "::")) {
        assert!(!library_wrapper_uses(&src).is_empty(), "{src}");
    }
    let fine = [
        "use cudarc::cublas::sys as cb;",
        "let h: cb::cublasHandle_t = std::ptr::null_mut();",
        "cr::curandStatus_t::CURAND_STATUS_SUCCESS",
        "use cudarc::curand::sys::{curandGenerator_t, curandRngType_t};",
        "cublas::cublasCreate_v2(&mut h)",
        "use cudarc::cublas::sys::cublasOperation_t;",
    ];
    for src in fine {
        assert!(library_wrapper_uses(src).is_empty(), "{src}");
    }
}

#[test]
fn loading_without_a_driver_is_an_error_not_a_panic() {
    match load() {
        Ok(l) => eprintln!("driver {} with {} device(s)", l.version, l.device_count),
        Err(e) => eprintln!("skipping: no GPU ({e})"),
    }
}
