// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Every program in `tests/cuda/`, built with CUDA 13.0 (libcudart.so.13) and with CUDA
//! 12.4 (libcudart.so.12), each with the shared runtime (`-cudart=shared`) and with nvcc's
//! default static runtime (which reaches vcuda through `libcuda.so.1`), runs unchanged
//! through `vcuda run --executor cpu` and checks its own results.

use vcuda_tests::{Cuda, Link, all_programs, check_program, check_program_linked};

macro_rules! programs {
    ($($name:ident),* $(,)?) => {
        $(
            #[allow(non_snake_case)]
            mod $name {
                use super::*;

                #[test]
                fn cuda13() {
                    check_program(stringify!($name), Cuda::V13, "cpu");
                }

                #[test]
                fn cuda12() {
                    check_program(stringify!($name), Cuda::V12, "cpu");
                }

                #[test]
                fn cuda13_static() {
                    check_static(stringify!($name), Cuda::V13);
                }

                #[test]
                fn cuda12_static() {
                    check_static(stringify!($name), Cuda::V12);
                }
            }
        )*

        #[test]
        fn every_program_has_a_test() {
            let listed = [$(stringify!($name)),*];
            let missing: Vec<_> = all_programs().into_iter().filter(|p| !listed.contains(&p.as_str())).collect();
            assert!(missing.is_empty(), "add these to tests/tests/e2e.rs: {missing:?}");
        }
    };
}

programs!(
    api_device,
    api_memory,
    api_misc,
    api_streams,
    api_sweep,
    cluster,
    cooperative,
    cublas_basic,
    cublas_extra,
    cublas_half,
    device_malloc,
    curand_basic,
    curand_device,
    dmath,
    driver_api,
    driver_link,
    errors,
    fork,
    graphs,
    graph_launch,
    graph_memory,
    graph_nodes,
    graph_queries,
    ipc,
    launch_ex,
    layered,
    layered_surfaces,
    library,
    managed,
    managed_coherence,
    managed_vars,
    mapped,
    memcpy_batch,
    memory3d,
    matmul,
    mma,
    mipmap,
    mbarrier,
    tma,
    mempool,
    mempool_ipc,
    neighbours,
    params,
    per_thread,
    pageable,
    pinned,
    rdc,
    reduce,
    saxpy,
    scan_hist,
    settled_sync,
    stream_attrs,
    sumArray,
    symbols,
    templates,
    textures,
    thrust,
    driver_graphs,
    driver_textures,
    threads,
    vectorAdd,
    vmm,
    wmma,
    zero_copy,
);

/// Programs whose static-runtime build cannot pass yet with one toolkit, and why. Each
/// still runs, and must fail: one that passes has to leave this list.
const STATIC_KNOWN: &[(&str, Cuda, &str)] = &[];

/// A program built with nvcc's default static runtime, on the CPU executor.
fn check_static(name: &str, v: Cuda) {
    let Some((_, _, why)) = STATIC_KNOWN.iter().find(|(n, t, _)| *n == name && *t == v) else {
        check_program_linked(name, v, "cpu", Link::Static);
        return;
    };
    if vcuda_tests::toolkit(v).is_none() {
        return;
    }
    let r = std::panic::catch_unwind(|| check_program_linked(name, v, "cpu", Link::Static));
    assert!(
        r.is_err(),
        "{name} passes with the static runtime now: drop it from STATIC_KNOWN ({why})"
    );
    eprintln!("known failure: {name}: {why}");
}

/// Runs `exe` through `vcuda run --executor cpu` (this build's backend and library) with
/// `env` set.
fn run_cpu(exe: &std::path::Path, env: &[(&str, &str)]) -> std::process::Output {
    use vcuda_tests::{bin, bin_dir};
    std::process::Command::new(bin("vcuda"))
        .args(["run", "--executor", "cpu", "--"])
        .arg(exe)
        .env_remove("VCUDA_SOCKET")
        .env("VCUDA_BACKEND", bin("vcuda-backend"))
        .env("VCUDA_LIB_DIR", bin_dir())
        .envs(env.iter().copied())
        .output()
        .expect("run vcuda")
}

/// Posted calls (launches, asynchronous copies and memsets) travel with the program's next
/// call (`VCUDA_BATCH_US`, the library's batch); with `VCUDA_BATCH_US=0` each goes alone.
/// Both give the programs' results; `mapped` also waits for a kernel's write to host memory
/// with no CUDA call behind the launch, which only the batch's flusher can send.
#[test]
fn posted_calls_travel_with_the_next_call() {
    use vcuda_tests::{build, check_output, source, spec};
    for name in ["vectorAdd", "mapped", "graphs"] {
        let Some(exe) = build(name, Cuda::V13) else {
            return;
        };
        let s = spec(&source(name));
        for (setting, batched) in [("1000", true), ("0", false)] {
            let o = run_cpu(&exe, &[("VCUDA_LOG", "trace"), ("VCUDA_BATCH_US", setting)]);
            check_output(name, &s, &o);
            let stderr = String::from_utf8_lossy(&o.stderr);
            let carried = stderr
                .lines()
                .filter(|l| l.contains(" carries ") && l.contains(" posted calls"))
                .count();
            assert_eq!(
                carried > 0,
                batched,
                "{name} with VCUDA_BATCH_US={setting}: {carried} calls carried posted ones"
            );
        }
    }
}

/// Graphs of device work go to the backend whole and a launch is one message: the
/// explicit graph of `graph_launch` once, again after each change (the launch right after a
/// change replays it), its second executable graph at upload, the captured graph, and the
/// graph that copies from and to page-locked memory where that memory is shared with the
/// backend (not with `VCUDA_SHARED_MEMORY=0`); `graphs`, whose graphs copy from and to
/// pageable memory and run host functions, is replayed, and so is every graph with
/// `VCUDA_GRAPH_WHOLE=0`.
#[test]
fn device_graphs_go_to_the_backend_whole() {
    use vcuda_tests::{build, check_output, source, spec};
    for (name, sharing, sent, whole) in [
        ("graph_launch", "1", "1", 7),
        ("graph_launch", "0", "1", 6),
        ("graph_launch", "1", "0", 0),
        ("graphs", "1", "1", 0),
    ] {
        let Some(exe) = build(name, Cuda::V13) else {
            return;
        };
        let o = run_cpu(
            &exe,
            &[
                ("VCUDA_LOG", "debug"),
                ("VCUDA_SHARED_MEMORY", sharing),
                ("VCUDA_GRAPH_WHOLE", sent),
            ],
        );
        check_output(name, &spec(&source(name)), &o);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(
            stderr.matches(" sent whole as backend graph ").count(),
            whole,
            "{name} with VCUDA_SHARED_MEMORY={sharing} VCUDA_GRAPH_WHOLE={sent}\n{stderr}"
        );
    }
}

/// Over the Unix socket, page-locked memory is shared with the backend and copies name it
/// instead of carrying it, and large pageable copies go through one shared staging region;
/// with `VCUDA_SHARED_MEMORY=0` the same programs copy inline. Both must give the programs'
/// results.
#[test]
fn host_memory_is_shared_over_the_unix_socket() {
    use vcuda_tests::{build, check_output, source, spec};
    // (program, debug line of each region shared, how many regions)
    let cases = [
        (
            "pinned",
            "bytes of page-locked memory shared with the backend",
            2 + 1 + 64,
        ),
        (
            "pageable",
            "bytes of staging memory shared with the backend",
            1,
        ),
    ];
    for (name, line, regions) in cases {
        let Some(exe) = build(name, Cuda::V13) else {
            return;
        };
        let s = spec(&source(name));
        for (setting, shared) in [("1", true), ("0", false)] {
            let o = run_cpu(
                &exe,
                &[("VCUDA_LOG", "debug"), ("VCUDA_SHARED_MEMORY", setting)],
            );
            check_output(name, &s, &o);
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert_eq!(
                stderr.matches(line).count(),
                if shared { regions } else { 0 },
                "{name} with VCUDA_SHARED_MEMORY={setting}: regions shared\n{stderr}"
            );
        }
    }
}

/// Mapped and managed memory where the backend cannot map the program's memory (here
/// `VCUDA_SHARED_MEMORY=0`; likewise over TCP, in a VM and on the CUDA executor): the
/// library keeps a cache of the device copy coherent (`coherent.rs`). `cudaHostAllocMapped`
/// memory is mapped, other page-locked memory is not, and `cudaHostRegister` with
/// `cudaHostRegisterMapped` is not supported; with shared memory all of it is mapped.
#[test]
fn mapped_and_managed_memory_work_without_shared_memory() {
    use vcuda_tests::{bin, bin_dir, build, check_output, source, spec};
    let only_flagged = "only cudaHostAllocMapped memory is mapped here";
    let no_register = "cudaHostRegister(cudaHostRegisterMapped) not supported here";
    for name in ["mapped", "managed", "managed_vars", "managed_coherence"] {
        let Some(exe) = build(name, Cuda::V13) else {
            return;
        };
        for shared in ["1", "0"] {
            let o = std::process::Command::new(bin("vcuda"))
                .args(["run", "--executor", "cpu", "--"])
                .arg(&exe)
                .env_remove("VCUDA_SOCKET")
                .env("VCUDA_BACKEND", bin("vcuda-backend"))
                .env("VCUDA_LIB_DIR", bin_dir())
                .env("VCUDA_SHARED_MEMORY", shared)
                .env("VCUDA_LOG", "debug")
                .output()
                .expect("run vcuda");
            check_output(name, &spec(&source(name)), &o);
            let (out, err) = (
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr),
            );
            let coherent = err.contains("kept coherent by the library");
            assert_eq!(
                coherent,
                shared == "0",
                "{name}, shared {shared}: coherent\n{err}"
            );
            if name == "mapped" {
                assert_eq!(
                    out.contains(only_flagged),
                    shared == "0",
                    "{name}, shared {shared}\n{out}"
                );
                assert_eq!(
                    out.contains(no_register),
                    shared == "0",
                    "{name}, shared {shared}\n{out}"
                );
            }
        }
    }
}

/// Mapped memory shared in place (the CPU executor over a Unix socket): a running kernel
/// and the program see each other's writes, in `cudaHostAlloc` and in registered memory.
/// With the library's coherent cache (`VCUDA_SHARED_MEMORY=0`) they see them only at
/// synchronization, and the program says so. (`tests/vm/cuda/zero_copy_vm.cu` checks the
/// same in a VM.)
#[test]
fn running_kernels_see_host_writes_to_memory_shared_in_place() {
    use vcuda_tests::{build, check_output, source, spec};
    let Some(exe) = build("zero_copy", Cuda::V13) else {
        return;
    };
    let saw = "the kernel saw the host's write while it ran";
    let saw_registered = "the kernel saw the host's write to registered memory while it ran";
    for shared in ["1", "0"] {
        let o = run_cpu(&exe, &[("VCUDA_SHARED_MEMORY", shared)]);
        check_output("zero_copy", &spec(&source("zero_copy")), &o);
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(out.contains(saw), shared == "1", "shared {shared}\n{out}");
        assert_eq!(
            out.contains(saw_registered),
            shared == "1",
            "shared {shared}\n{out}"
        );
    }
}

/// Mapped and managed memory over TCP (loopback, no TLS): the same programs pass with the
/// library's coherent cache, the backend on the CPU executor in its own process.
#[test]
fn mapped_and_managed_memory_work_over_tcp() {
    use std::io::{BufRead, BufReader};
    use vcuda_tests::{bin, bin_dir, build, check_output, source, spec};
    let mut backend = std::process::Command::new(bin("vcuda-backend"))
        .args(["serve", "--executor", "cpu", "--socket", "tcp:127.0.0.1:0"])
        .env_remove("VCUDA_SOCKET")
        .env("VCUDA_LOG", "info")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start vcuda-backend");
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let stderr = backend.stderr.take().expect("stderr");
    let backend = Kill(backend);
    // The log names the port the backend bound.
    let mut port = None;
    let mut lines = BufReader::new(stderr).lines();
    for line in lines.by_ref() {
        let line = line.expect("backend log");
        if let Some(rest) = line.split("127.0.0.1:").nth(1) {
            port = rest
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|p| p.parse::<u16>().ok())
                .filter(|&p| p != 0);
            if port.is_some() {
                break;
            }
        }
    }
    let port = port.expect("the backend's port in its log");
    // Keep draining the log so the backend never blocks on it.
    std::thread::spawn(move || lines.for_each(drop));
    for name in ["mapped", "managed", "managed_vars", "managed_coherence"] {
        let Some(exe) = build(name, Cuda::V13) else {
            return;
        };
        let o = std::process::Command::new(bin("vcuda"))
            .args(["run", "--"])
            .arg(&exe)
            .env("VCUDA_SOCKET", format!("tcp:127.0.0.1:{port}"))
            .env("VCUDA_LIB_DIR", bin_dir())
            .env("VCUDA_LOG", "debug")
            .output()
            .expect("run vcuda");
        check_output(name, &spec(&source(name)), &o);
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("kept coherent by the library"),
            "{name}: managed memory kept coherent by the library expected"
        );
    }
    drop(backend);
}

/// `vcuda run` starts the program while its backend starts (the socket is bound first and
/// handed over). A backend that never starts fails the program's CUDA calls cleanly (as
/// where there is no driver), and `vcuda run` says that the backend did not start.
#[test]
fn a_backend_that_does_not_start_fails_the_program_cleanly() {
    use vcuda_tests::{bin, bin_dir, build};
    let Some(exe) = build("api_device", Cuda::V13) else {
        return;
    };
    let o = std::process::Command::new(bin("vcuda"))
        .args(["run", "--executor", "cpu", "--"])
        .arg(&exe)
        .env_remove("VCUDA_SOCKET")
        .env("VCUDA_BACKEND", "/bin/false")
        .env("VCUDA_LIB_DIR", bin_dir())
        .output()
        .expect("run vcuda");
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(!o.status.success(), "{out}{err}");
    assert!(err.contains("the backend did not start"), "{err}");
    // As where CUDA finds no driver: the first call fails with cudaErrorNoDevice.
    assert!(out.contains("cudaErrorNoDevice"), "{out}{err}");
    assert!(err.contains("cannot reach the vcuda backend"), "{err}");
}

/// The memory checker: an access a few bytes past an allocation's end, which a GPU (and
/// vcuda by default) lets a kernel make, fails with `vcuda run --memcheck`, and the backend
/// reports the nearest allocation.
#[test]
fn the_memory_checker_faults_where_a_gpu_reads_padding() {
    use vcuda_tests::{bin, bin_dir, build};
    let Some(exe) = build("neighbours", Cuda::V13) else {
        return;
    };
    let o = std::process::Command::new(bin("vcuda"))
        .args(["run", "--executor", "cpu", "--memcheck", "--"])
        .arg(&exe)
        .arg("memcheck")
        .env_remove("VCUDA_SOCKET")
        .env("VCUDA_BACKEND", bin("vcuda-backend"))
        .env("VCUDA_LIB_DIR", bin_dir())
        .output()
        .expect("run vcuda");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("memcheck: cudaErrorIllegalAddress"),
        "{stdout}"
    );
    assert!(
        stderr.contains("nearest allocation") && stderr.contains("bytes after the end of it"),
        "{stderr}"
    );
}

/// On a Unix socket, messages and replies go through the call ring the library offers with
/// its `Hello` (`vcuda-ring`); with `VCUDA_CALL_RING=0` they stay on the socket. Both give
/// the programs' results: page-locked memory (whose descriptors travel beside the ring),
/// several threads calling at once, a forked child, and copies larger than the ring.
#[test]
fn calls_go_through_the_call_ring_on_a_unix_socket() {
    use vcuda_tests::{build, check_output, source, spec};
    for name in ["pinned", "threads", "fork", "pageable", "per_thread"] {
        let Some(exe) = build(name, Cuda::V13) else {
            return;
        };
        let s = spec(&source(name));
        // Without shared memory, large copies carry their bytes through the ring.
        for (setting, ring, shared) in [("1", true, "1"), ("1", true, "0"), ("0", false, "1")] {
            let o = run_cpu(
                &exe,
                &[
                    ("VCUDA_LOG", "debug"),
                    ("VCUDA_CALL_RING", setting),
                    ("VCUDA_SHARED_MEMORY", shared),
                ],
            );
            check_output(name, &s, &o);
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert_eq!(
                stderr.contains("calls go through the call ring"),
                ring,
                "{name} with VCUDA_CALL_RING={setting} VCUDA_SHARED_MEMORY={shared}\n{stderr}"
            );
        }
    }
}
