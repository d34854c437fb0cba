// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Tests of the CUDA executor on a real GPU. Each one skips (with a message) where no
//! usable GPU exists, so they never fail for lack of one; the GPU-free parts are tested in
//! their own modules.

use vcuda_protocol::{
    COPY_ASYNC, LaunchReq, MemcpyDtoDReq, MemcpyDtoHReq, MemcpyHtoDReq, MemsetReq, ParamInfo,
    STREAM_LEGACY, attr,
};
use vm_memory::VolatileSlice;

use super::*;
use crate::data::DataSegs;
use crate::executor::testing::{PTX, ptx_fatbin};
use crate::executor::{
    ExecutorFactory, GraphOps, HostMemoryOps, MemoryOps, ModuleOps, StateOps, StreamOps, VmmOps,
};

fn factory() -> Option<CudaFactory> {
    match CudaFactory::new(CudaConfig {
        // Small windows, so modest copies exercise the pipeline.
        staging_chunk: 64 << 10,
        staging_depth: 3,
        register_guest_memory: true,
        ..CudaConfig::default()
    }) {
        Ok(f) => Some(f),
        Err(e) => {
            eprintln!("skipping: no GPU ({e})");
            None
        }
    }
}

/// The GPU tests take turns. Run side by side on an H100 (driver 580, four test threads:
/// contexts created next to endless kernels and kernel timeouts), four of them were still
/// running after a minute.
static GPU_TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `gpu!(f)`: the factory as `f`, holding the GPU's turn to the end of the test; returns
/// from the test (skips it) where no GPU is usable.
macro_rules! gpu {
    ($f:ident) => {
        let _turn = GPU_TURN.lock().unwrap_or_else(|e| e.into_inner());
        let $f = match factory() {
            Some(f) => f,
            None => return,
        };
    };
}

/// Runs test `name` in a child process of this test binary, for at most `secs` seconds: for
/// tests that leave the process's GPU state unusable. On an H100 (driver 580) a kernel fault
/// breaks every context of the process, new ones included, and a context running an endless
/// kernel cannot be destroyed; the worker processes of `--isolation process` are what
/// contains both, so tests of them get a process of their own too. Returns `true` in the
/// child, which runs the test's body; the parent holds the GPU's turn, waits, and fails if
/// the child failed or did not end.
fn isolated(name: &str, secs: u64) -> bool {
    const CHILD: &str = "VCUDA_GPU_TEST_CHILD";
    if std::env::var(CHILD).as_deref() == Ok(name) {
        return true;
    }
    let _turn = GPU_TURN.lock().unwrap_or_else(|e| e.into_inner());
    let path = module_path!().split_once("::").map_or("", |(_, p)| p);
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &format!("{path}::{name}"),
            "--test-threads=1",
            "--nocapture",
        ])
        .env(CHILD, name)
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(
                status.success(),
                "{name} failed in its own process: {status}"
            );
            return false;
        }
        if start.elapsed() > std::time::Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{name} did not end within {secs} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn without_a_gpu_the_factory_says_what_is_missing() {
    let _turn = GPU_TURN.lock().unwrap_or_else(|e| e.into_inner());
    match CudaFactory::new(CudaConfig::default()) {
        Ok(f) => eprintln!(
            "GPU present: {:?}",
            f.device_info().attr(attr::MULTI_PROCESSOR_COUNT)
        ),
        Err(e) => {
            let m = e.to_string();
            eprintln!("skipping: no GPU ({m})");
            assert!(m.starts_with("CUDA executor unavailable: "), "{m}");
        }
    }
}

fn htod(dst: u64, width: u64, height: u64, dpitch: u64, flags: u32) -> MemcpyHtoDReq {
    MemcpyHtoDReq {
        dst,
        dpitch,
        width,
        height,
        stream: 0,
        flags,
        reserved: 0,
    }
}

fn dtoh(src: u64, width: u64, height: u64, spitch: u64) -> MemcpyDtoHReq {
    MemcpyDtoHReq {
        src,
        spitch,
        width,
        height,
        stream: 0,
        flags: 0,
        reserved: 0,
    }
}

/// Bytes that never repeat with a short period (so a stale staging window shows).
fn pattern(n: usize, seed: u8) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ u64::from(seed);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

#[test]
fn device_info_is_real() {
    gpu!(f);
    let i = f.device_info();
    assert_ne!(i.name[0], 0);
    assert!(i.total_global_mem > 1 << 30);
    assert!(i.attr(attr::COMPUTE_CAPABILITY_MAJOR).unwrap() >= 5);
    assert_eq!(i.attr(attr::WARP_SIZE), Some(32));
    assert!(i.attr(attr::MAX_THREADS_PER_BLOCK).unwrap() >= 1024);
    assert_eq!(i.attr(attr::CAN_MAP_HOST_MEMORY), Some(0));
}

#[test]
fn copies_round_trip_through_every_path() {
    gpu!(f);
    let mut e = f.new_executor().unwrap();
    // Small (driver staging), several windows (pipelined staging), not a window multiple.
    for &n in &[
        1usize,
        4096,
        SMALL_COPY as usize,
        1 << 20,
        (1 << 20) + 12345,
    ] {
        let p = e.malloc(0, n as u64).unwrap();
        let mut data = pattern(n, n as u8);
        for flags in [0, COPY_ASYNC] {
            e.memcpy_htod(
                &htod(p, n as u64, 1, 0, flags),
                &DataSegs::from_slice(&mut data),
            )
            .unwrap();
            let mut back = vec![0u8; n];
            e.memcpy_dtoh(&dtoh(p, n as u64, 1, 0), &DataSegs::from_slice(&mut back))
                .unwrap();
            assert!(back == data, "{n} bytes, flags {flags}");
        }
        e.free(p).unwrap();
    }
}

#[test]
fn pieces_and_pitches() {
    gpu!(f);
    let mut e = f.new_executor().unwrap();
    let (w, h, pitch) = (1000u64, 300u64, 1024u64);
    let p = e.malloc(0, pitch * h).unwrap();
    e.memset(&MemsetReq {
        dst: p,
        pitch: 0,
        width: pitch * h,
        height: 1,
        stream: 0,
        value: 0xee,
        elem_size: 1,
        flags: 0,
    })
    .unwrap();
    // Packed source in three uneven pieces.
    let data = pattern((w * h) as usize, 7);
    let (mut a, mut b, mut c) = (
        data[..777].to_vec(),
        data[777..200_001].to_vec(),
        data[200_001..].to_vec(),
    );
    let src = DataSegs::new(vec![
        VolatileSlice::from(&mut a[..]),
        VolatileSlice::from(&mut b[..]),
        VolatileSlice::from(&mut c[..]),
    ]);
    e.memcpy_htod(&htod(p, w, h, pitch, 0), &src).unwrap();
    // The whole pitched allocation: rows in place, padding untouched.
    let mut all = vec![0u8; (pitch * h) as usize];
    e.memcpy_dtoh(&dtoh(p, pitch * h, 1, 0), &DataSegs::from_slice(&mut all))
        .unwrap();
    for row in 0..h as usize {
        let r = &all[row * pitch as usize..(row + 1) * pitch as usize];
        assert_eq!(
            &r[..w as usize],
            &data[row * w as usize..(row + 1) * w as usize]
        );
        assert!(r[w as usize..].iter().all(|&x| x == 0xee));
    }
    // And back out pitched, into two pieces.
    let mut x = [0u8; 5];
    let mut y = vec![0u8; (w * h - 5) as usize];
    let dst = DataSegs::new(vec![
        VolatileSlice::from(&mut x[..]),
        VolatileSlice::from(&mut y[..]),
    ]);
    e.memcpy_dtoh(&dtoh(p, w, h, pitch), &dst).unwrap();
    assert_eq!(&x[..], &data[..5]);
    assert!(y[..] == data[5..]);
    // Device to device, pitched to packed.
    let q = e.malloc(0, w * h).unwrap();
    e.memcpy_dtod(&MemcpyDtoDReq {
        dst: q,
        dpitch: w,
        src: p,
        spitch: pitch,
        width: w,
        height: h,
        stream: 0,
        flags: 0,
        reserved: 0,
    })
    .unwrap();
    let mut back = vec![0u8; (w * h) as usize];
    e.memcpy_dtoh(&dtoh(q, w * h, 1, 0), &DataSegs::from_slice(&mut back))
        .unwrap();
    assert!(back == data);
}

#[test]
fn memsets() {
    gpu!(f);
    let mut e = f.new_executor().unwrap();
    let p = e.malloc(0, 4096).unwrap();
    for (es, value) in [(1u16, 0xabu32), (2, 0xbeef), (4, 0xdead_beef)] {
        e.memset(&MemsetReq {
            dst: p,
            pitch: 0,
            width: 4096 / u64::from(es),
            height: 1,
            stream: 0,
            value,
            elem_size: es,
            flags: 0,
        })
        .unwrap();
        let mut b = vec![0u8; 4096];
        e.memcpy_dtoh(&dtoh(p, 4096, 1, 0), &DataSegs::from_slice(&mut b))
            .unwrap();
        let want = &value.to_le_bytes()[..es as usize];
        assert!(b.chunks(es as usize).all(|c| c == want), "{es}");
    }
    // Misaligned 32-bit memset, and one past the end.
    let bad = MemsetReq {
        dst: p + 2,
        pitch: 0,
        width: 4,
        height: 1,
        stream: 0,
        value: 0,
        elem_size: 4,
        flags: 0,
    };
    assert_eq!(e.memset(&bad), Err(Status::INVALID_VALUE));
    let past = MemsetReq {
        dst: p,
        width: 4097,
        elem_size: 1,
        ..bad
    };
    assert_eq!(e.memset(&past), Err(Status::INVALID_VALUE));
}

#[test]
fn virtual_memory_is_checked_then_mapped() {
    use crate::executor::vmm::GRANULARITY as G;
    gpu!(f);
    let mut e = f.new_executor().unwrap();
    let h = match e.vmm_create(0, G) {
        Ok(h) => h,
        Err(Status::NOT_SUPPORTED) => {
            eprintln!("skipping: the driver has no cuMemCreate");
            return;
        }
        Err(s) => panic!("cuMemCreate: {s:?}"),
    };
    assert_eq!(e.vmm_create(0, G + 1).unwrap_err(), Status::INVALID_VALUE);
    assert_eq!(e.vmm_create(1, G).unwrap_err(), Status::INVALID_DEVICE);
    let va = e.vmm_reserve(2 * G, 0, 0).unwrap();
    // Outside the reservation, or an unknown handle: refused before the driver sees it.
    assert_eq!(
        e.vmm_map(va + 2 * G, G, 0, h).unwrap_err(),
        Status::INVALID_VALUE
    );
    assert_eq!(
        e.vmm_map(va, G, 0, h + 99).unwrap_err(),
        Status::INVALID_VALUE
    );
    e.vmm_map(va, G, 0, h).unwrap();
    // Not device memory of the session until accessible.
    let set = |dst| MemsetReq {
        dst,
        pitch: 0,
        width: 4096,
        height: 1,
        stream: 0,
        value: 0x5a,
        elem_size: 1,
        flags: 0,
    };
    assert!(e.memset(&set(va)).is_err());
    e.vmm_set_access(va, G, 0, 3).unwrap();
    e.memset(&set(va)).unwrap();
    let mut b = vec![0u8; 4096];
    e.memcpy_dtoh(&dtoh(va, 4096, 1, 0), &DataSegs::from_slice(&mut b))
        .unwrap();
    assert!(b.iter().all(|&x| x == 0x5a));
    e.vmm_release(h).unwrap();
    assert_eq!(e.vmm_free(va, 2 * G).unwrap_err(), Status::INVALID_VALUE);
    e.vmm_unmap(va, G).unwrap();
    assert!(e.memset(&set(va)).is_err());
    e.vmm_free(va, 2 * G).unwrap();
    // Left behind at the session's end: freed with it.
    let h2 = e.vmm_create(0, G).unwrap();
    let va2 = e.vmm_reserve(G, 0, 0).unwrap();
    e.vmm_map(va2, G, 0, h2).unwrap();
    drop(e);
}

#[test]
fn sessions_cannot_touch_each_others_memory() {
    gpu!(f);
    let mut a = f.new_executor().unwrap();
    let mut b = f.new_executor().unwrap();
    let pa = a.malloc(0, 4096).unwrap();
    let mut buf = vec![0u8; 16];
    assert_eq!(
        b.memcpy_dtoh(&dtoh(pa, 16, 1, 0), &DataSegs::from_slice(&mut buf)),
        Err(Status::INVALID_VALUE)
    );
    assert_eq!(
        b.memcpy_htod(&htod(pa, 16, 1, 0, 0), &DataSegs::from_slice(&mut buf)),
        Err(Status::INVALID_VALUE)
    );
    assert_eq!(b.free(pa), Err(Status::INVALID_VALUE));
    assert_eq!(a.free(pa + 1), Err(Status::INVALID_VALUE));
    // Past the end of one's own allocation.
    assert_eq!(
        a.memcpy_dtoh(&dtoh(pa + 4090, 16, 1, 0), &DataSegs::from_slice(&mut buf)),
        Err(Status::INVALID_VALUE)
    );
    a.free(pa).unwrap();
    assert_eq!(a.free(pa), Err(Status::INVALID_VALUE));
}

#[test]
fn streams_and_events() {
    gpu!(f);
    let mut e = f.new_executor().unwrap();
    let s = e.stream_create(0, 1, 0).unwrap();
    let (t0, t1) = (e.event_create(0, 0).unwrap(), e.event_create(0, 0).unwrap());
    let n = 64u64 << 20;
    let p = e.malloc(0, n).unwrap();
    e.event_record(t0, s, 0).unwrap();
    e.memset(&MemsetReq {
        dst: p,
        pitch: 0,
        width: n / 4,
        height: 1,
        stream: s,
        value: 1,
        elem_size: 4,
        flags: COPY_ASYNC as u16,
    })
    .unwrap();
    e.event_record(t1, s, 0).unwrap();
    // Elapsed time before completion is NOT_READY or a number; after, a number.
    e.event_synchronize(t1).unwrap();
    assert_eq!(e.event_query(t1), Ok(()));
    assert_eq!(e.stream_query(s), Ok(()));
    let ms = e.event_elapsed(t0, t1).unwrap().ms;
    assert!(ms >= 0.0, "{ms}");
    e.stream_wait_event(STREAM_LEGACY, t1, 0).unwrap();
    e.stream_synchronize(STREAM_LEGACY).unwrap();
    // Handles are checked.
    assert_eq!(e.stream_query(t0), Err(Status::INVALID_HANDLE));
    assert_eq!(e.event_query(s), Err(Status::INVALID_HANDLE));
    e.stream_destroy(s).unwrap();
    assert_eq!(e.stream_destroy(s), Err(Status::INVALID_HANDLE));
    let untimed = e.event_create(0, 2).unwrap();
    e.event_record(untimed, STREAM_LEGACY, 0).unwrap();
    e.event_synchronize(untimed).unwrap();
    assert!(e.event_elapsed(t0, untimed).is_err());
}

#[test]
fn modules_launches_and_sticky_errors() {
    gpu!(f);
    let mut e = f.new_executor().unwrap();
    let img = ptx_fatbin(PTX);
    let m = e.module_load(img.clone()).unwrap();
    let m2 = e.module_load(img).unwrap();
    assert_ne!(m, m2);
    let k = e.function_get(m, "add1").unwrap();
    assert_eq!(
        k.params.as_deref(),
        Some(
            &[
                ParamInfo { offset: 0, size: 8 },
                ParamInfo { offset: 8, size: 4 }
            ][..]
        )
    );
    assert_eq!(k.param_size, 12);
    assert!(k.attrs.max_threads_per_block > 0);
    assert_eq!(e.function_get(m, "add1").unwrap().handle, k.handle);
    assert_eq!(
        e.function_get(m, "nope").unwrap_err(),
        Status::INVALID_DEVICE_FUNCTION
    );
    // (A driver without cuModuleEnumerateFunctions, such as the mock, cannot list.)
    match e.module_function(m, 0) {
        Ok((count, _)) => {
            let names: Vec<_> = (0..count)
                .filter_map(|i| e.module_function(m, i).unwrap().1)
                .collect();
            assert!(names.iter().any(|n| n == "add1"), "{names:?}");
            assert_eq!(e.module_function(m, count).unwrap().1, None);
        }
        Err(s) => assert_eq!(s, Status::NOT_SUPPORTED),
    }
    assert_eq!(
        e.module_function(u64::MAX, 0).unwrap_err(),
        Status::INVALID_HANDLE
    );
    let (sym, size) = e.symbol_get(m, "counter").unwrap();
    assert_eq!(size, 4);
    assert_eq!(e.symbol_get(m, "nope"), Err(Status::INVALID_SYMBOL));
    // Module variables can be copied to, not freed.
    let mut four = 7u32.to_le_bytes();
    e.memcpy_htod(&htod(sym, 4, 1, 0, 0), &DataSegs::from_slice(&mut four))
        .unwrap();
    assert_eq!(e.free(sym), Err(Status::INVALID_VALUE));

    let n = 1000u32;
    let p = upload_ramp(&mut e, n);
    let (launch, params) = add1_launch(k.handle, p, n);
    e.launch(&launch, &params).unwrap();
    // Too short a parameter buffer, zero-sized grid, unknown function.
    assert_eq!(
        e.launch(
            &LaunchReq {
                param_len: 8,
                ..launch
            },
            &params[..8]
        ),
        Err(Status::INVALID_VALUE)
    );
    assert_eq!(
        e.launch(
            &LaunchReq {
                grid: [0, 1, 1],
                ..launch
            },
            &params
        ),
        Err(Status::INVALID_CONFIGURATION)
    );
    assert_eq!(
        e.launch(
            &LaunchReq {
                function: m,
                ..launch
            },
            &params
        ),
        Err(Status::INVALID_DEVICE_FUNCTION)
    );
    assert_ramp_plus_one(&mut e, p, n);
    e.module_unload(m2).unwrap();
    // Still loaded through `m`.
    e.launch(&launch, &params).unwrap();
    e.device_synchronize(0).unwrap();
}

/// A faulting kernel makes its session's error sticky; a reset recovers where the driver
/// allows it. NVIDIA's driver reports the fault to every context of the process and fails
/// their resets too (H100, driver 580, measured), so this test has a process of its own.
#[test]
fn a_fault_is_sticky() {
    if !isolated("a_fault_is_sticky", 30) {
        return;
    }
    gpu!(f);
    let mut e = f.new_executor().unwrap();
    let m = e.module_load(ptx_fatbin(PTX)).unwrap();
    let mut other = f.new_executor().unwrap();
    let q = other.malloc(0, 64).unwrap();
    let crash = e.function_get(m, "crash").unwrap();
    let launch = LaunchReq {
        function: crash.handle,
        stream: 0,
        grid: [1, 1, 1],
        block: [1, 1, 1],
        shared_mem: 0,
        param_len: 0,
    };
    e.launch(&launch, &[]).unwrap();
    let err = e.device_synchronize(0).unwrap_err();
    assert!(vcuda_protocol::status::is_sticky(err.code()), "{err:?}");
    // The other session: unharmed (the mock driver), or failing with a sticky error too.
    match other.device_synchronize(0) {
        Ok(()) => other.free(q).unwrap(),
        Err(r) => assert!(vcuda_protocol::status::is_sticky(r.code()), "{r:?}"),
    }
    match e.device_reset(0) {
        Ok(()) => {
            assert_eq!(
                e.function_get(m, "add1").unwrap_err(),
                Status::INVALID_HANDLE
            );
            let p = e.malloc(0, 64).unwrap();
            e.free(p).unwrap();
        }
        Err(r) => assert!(vcuda_protocol::status::is_sticky(r.code()), "{r:?}"),
    }
}

/// A graph of a memset, two launches and a copy becomes a CUDA graph (where the driver has
/// the graph calls) that runs whole; its ranges are checked again at each launch.
#[test]
fn graphs_run_whole_on_the_device() {
    use vcuda_protocol::graph::{Node, NodeWork};
    gpu!(f);
    let mut e = f.new_executor().unwrap();
    let m = e.module_load(ptx_fatbin(PTX)).unwrap();
    let k = e.function_get(m, "add1").unwrap();
    let n = 4096u32;
    let len = u64::from(n) * 4;
    let (p, q) = (e.malloc(0, len).unwrap(), e.malloc(0, len).unwrap());
    let (launch, params) = add1_launch(k.handle, p, n);
    let node = |work, deps: &[u32]| Node {
        work,
        deps: deps.to_vec(),
    };
    let nodes = [
        node(
            NodeWork::Memset(MemsetReq {
                dst: p,
                pitch: len,
                width: u64::from(n),
                height: 1,
                stream: 0,
                value: 0,
                elem_size: 4,
                flags: 0,
            }),
            &[],
        ),
        node(NodeWork::Kernel(launch, params.clone(), false), &[0]),
        node(NodeWork::Kernel(launch, params.clone(), false), &[1]),
        node(NodeWork::Empty, &[2]),
        node(
            NodeWork::Copy(MemcpyDtoDReq {
                dst: q,
                dpitch: len,
                src: p,
                spitch: len,
                width: len,
                height: 1,
                stream: 0,
                flags: 0,
                reserved: 0,
            }),
            &[3],
        ),
    ];
    let Some(g) = e.graph_instantiate(&nodes).unwrap() else {
        assert!(!e.shared.driver.graphs, "a driver with graphs made none");
        eprintln!("skipping: the driver has no graph calls");
        return;
    };
    let s = e.stream_create(0, 0, 0).unwrap();
    for _ in 0..3 {
        e.graph_launch(g, s).unwrap();
    }
    e.stream_synchronize(s).unwrap();
    let mut back = vec![0u8; len as usize];
    e.memcpy_dtoh(&dtoh(q, len, 1, 0), &DataSegs::from_slice(&mut back))
        .unwrap();
    assert!(
        back.chunks(4)
            .all(|c| f32::from_le_bytes(c.try_into().unwrap()) == 2.0)
    );
    // A node naming memory the session does not own is refused when the graph is made;
    // memory freed since is refused at launch.
    let mut far = nodes.clone();
    if let NodeWork::Copy(c) = &mut far[4].work {
        c.dst = q + len;
    }
    assert!(e.graph_instantiate(&far).is_err());
    e.free(q).unwrap();
    assert_eq!(e.graph_launch(g, s), Err(Status::INVALID_VALUE));
    e.graph_destroy(g).unwrap();
    assert!(e.graph_launch(g, s).is_err());
}

#[test]
fn shared_host_memory_is_pinned_in_the_session_context() {
    gpu!(f);
    // Stand-in for memory a program shares over the Unix socket (a memfd mapping), every
    // page populated (only such memory is pinned; a zeroed vector may be fresh pages).
    let len = 4 << 20;
    let mut mem = vec![1u8; len + 4096];
    let off = mem.as_ptr().align_offset(4096);
    let base = mem[off..].as_mut_ptr() as usize;
    let mut e = f.new_executor().unwrap();
    e.host_memory_shared(base, len);
    assert!(e.host_pinned.contains(base, len), "pinned on sharing");
    let p = e.malloc(0, len as u64).unwrap();
    let shared = &mut mem[off..off + len];
    shared.copy_from_slice(&pattern(len, 5));
    let want = shared.to_vec();
    for flags in [0, COPY_ASYNC] {
        e.memcpy_htod(
            &htod(p, len as u64, 1, 0, flags),
            &DataSegs::from_slice(shared),
        )
        .unwrap();
        shared.fill(0);
        e.memcpy_dtoh(&dtoh(p, len as u64, 1, 0), &DataSegs::from_slice(shared))
            .unwrap();
        assert!(*shared == want[..]);
    }
    // A reset makes a new context: the memory is pinned in it again.
    e.device_reset(0).unwrap();
    assert!(
        e.host_pinned.contains(base, len),
        "pinned again after a reset"
    );
    let p = e.malloc(0, len as u64).unwrap();
    e.memcpy_htod(&htod(p, len as u64, 1, 0, 0), &DataSegs::from_slice(shared))
        .unwrap();
    e.host_memory_unshared(base);
    assert!(e.host_pinned.ranges().is_empty(), "unpinned on unsharing");
    assert!(e.host_shared.is_empty());
    // Copies through it are still right (now staged).
    shared.fill(0);
    e.memcpy_dtoh(&dtoh(p, len as u64, 1, 0), &DataSegs::from_slice(shared))
        .unwrap();
    assert!(*shared == want[..]);
}

/// Shared memory mapped for kernels at the guest's address (`MapHostMemory`): the session
/// maps the region there a second time, the executor registers it, and a kernel then
/// reads and writes the region's pages in place, again after a reset.
/// `n` floats 0, 1, 2, ... in new device memory (for `add1`): its address.
fn upload_ramp(e: &mut CudaExecutor, n: u32) -> u64 {
    let p = e.malloc(0, u64::from(n) * 4).unwrap();
    let mut data: Vec<u8> = (0..n).flat_map(|i| (i as f32).to_le_bytes()).collect();
    e.memcpy_htod(
        &htod(p, data.len() as u64, 1, 0, 0),
        &DataSegs::from_slice(&mut data),
    )
    .unwrap();
    p
}

/// Checks that the `n` floats at `p` are [`upload_ramp`]'s plus one (one `add1`).
fn assert_ramp_plus_one(e: &mut CudaExecutor, p: u64, n: u32) {
    let mut back = vec![0u8; n as usize * 4];
    e.memcpy_dtoh(
        &dtoh(p, back.len() as u64, 1, 0),
        &DataSegs::from_slice(&mut back),
    )
    .unwrap();
    for (i, c) in back.chunks(4).enumerate() {
        assert_eq!(f32::from_le_bytes(c.try_into().unwrap()), i as f32 + 1.0);
    }
}

/// A launch of the test module's `add1` (kernel `k`) over `n` floats at `p`, a thread each:
/// the request and its parameters.
fn add1_launch(k: u64, p: u64, n: u32) -> (LaunchReq, Vec<u8>) {
    let mut params = p.to_le_bytes().to_vec();
    params.extend_from_slice(&n.to_le_bytes());
    let launch = LaunchReq {
        function: k,
        stream: 0,
        grid: [n.div_ceil(128), 1, 1],
        block: [128, 1, 1],
        shared_mem: 0,
        param_len: params.len() as u32,
    };
    (launch, params)
}

#[test]
fn shared_memory_is_mapped_for_kernels_in_place() {
    gpu!(f);
    let mut e = f.new_executor().unwrap();
    if !e.can_map_host_memory() {
        eprintln!("skipping: the driver does not map host memory at its own address");
        return;
    }
    let n = 4096u32;
    let len = n as usize * 4;
    let fd = nix::sys::memfd::memfd_create(
        "vcuda-test",
        nix::sys::memfd::MFdFlags::MFD_CLOEXEC | nix::sys::memfd::MFdFlags::MFD_ALLOW_SEALING,
    )
    .unwrap();
    nix::unistd::ftruncate(&fd, len as i64).unwrap();
    nix::fcntl::fcntl(
        &fd,
        nix::fcntl::FcntlArg::F_ADD_SEALS(nix::fcntl::SealFlag::F_SEAL_SHRINK),
    )
    .unwrap();
    let mut regions = crate::shared::SharedRegions::default();
    regions.offer(vec![fd]);
    let h = regions.share(len as u64).unwrap();
    let (base, _) = regions.range(h).unwrap();
    // SAFETY: the region's own mapping, `len` bytes, alive while `regions` is.
    let host = unsafe { std::slice::from_raw_parts_mut(base as *mut f32, n as usize) };
    host.fill(1.0);
    e.host_memory_shared(base, len);
    // The guest's address: free here (a reservation, given back).
    let mut free = vec![0u8; 2 << 20];
    let addr = (free.as_mut_ptr() as u64).next_multiple_of(1 << 20);
    drop(free);
    let alias = regions
        .alias(h, 0, len as u64, addr, None)
        .or_else(|_| {
            // The allocator kept that memory: any free address will do.
            regions.alias(
                h,
                0,
                len as u64,
                crate::executor::testing::free_address(len),
                None,
            )
        })
        .unwrap();
    let addr = alias.addr();
    e.host_memory_map(addr, addr as usize, len).unwrap();
    assert_eq!(
        e.host_memory_map(addr + 4096, base, 4096),
        Err(Status::INVALID_VALUE),
        "not in place"
    );
    let m = e.module_load(ptx_fatbin(PTX)).unwrap();
    let k = e.function_get(m, "add1").unwrap();
    let (launch, params) = add1_launch(k.handle, addr, n);
    e.launch(&launch, &params).unwrap();
    e.device_synchronize(0).unwrap();
    assert!(host.iter().all(|&v| v == 2.0), "{:?}", &host[..4]);
    // Device-side copies take the mapped range as device memory.
    let d = e.malloc(0, 16).unwrap();
    e.memcpy_dtod(&MemcpyDtoDReq {
        dst: d,
        dpitch: 0,
        src: addr,
        spitch: 0,
        width: 16,
        height: 1,
        stream: 0,
        flags: 0,
        reserved: 0,
    })
    .unwrap();
    let mut back = [0u8; 16];
    e.memcpy_dtoh(&dtoh(d, 16, 1, 0), &DataSegs::from_slice(&mut back))
        .unwrap();
    assert_eq!(back[..4], 2.0f32.to_le_bytes());
    // After a reset the new context maps it too.
    e.device_reset(0).unwrap();
    let m = e.module_load(ptx_fatbin(PTX)).unwrap();
    let k = e.function_get(m, "add1").unwrap();
    e.launch(
        &LaunchReq {
            function: k.handle,
            ..launch
        },
        &params,
    )
    .unwrap();
    e.device_synchronize(0).unwrap();
    assert!(host.iter().all(|&v| v == 3.0), "{:?}", &host[..4]);
    e.host_memory_unmap(addr).unwrap();
    assert_eq!(e.host_memory_unmap(addr), Err(Status::INVALID_VALUE));
    drop(alias);
    e.host_memory_unshared(base);
}

/// Host memory mapped for kernels in a VM's session moves with it: the load holds the
/// guest's address of it until the destination maps the guest's memory, where it is mapped
/// and registered again, and kernels reach the same pages there (see
/// `crate::session::mapped_memory_moves`).
#[test]
fn host_memory_mapped_for_kernels_moves_with_the_session() {
    gpu!(f);
    crate::session::mapped_memory_moves(&crate::Backend::new(std::sync::Arc::new(f)));
}

/// A session whose context maps the guest's own pages (a VM) never lets go of it while a
/// kernel may still write them: a cancelled wait fails but the context stays, and the
/// session's end waits for the kernel (forever, for this one), so the guest keeps the pages
/// pinned. (Unregistering them would wait too: H100, driver 580, measured.)
#[test]
fn a_session_mapping_guest_pages_waits_for_its_kernels_at_its_end() {
    if !isolated(
        "a_session_mapping_guest_pages_waits_for_its_kernels_at_its_end",
        30,
    ) {
        return;
    }
    gpu!(f);
    let mut e = f.new_executor().unwrap();
    if !e.can_map_host_memory() {
        eprintln!("skipping: the driver does not map host memory at its own address");
        return;
    }
    e.mapped_memory_is_guest_pages();
    let cancel = crate::executor::Cancel::default();
    e.set_cancel(cancel.clone());
    // Stand-in for guest pages mapped at the guest's address.
    let len = 1 << 16;
    // SAFETY: a fresh shared anonymous mapping, kept for the process's life (the kernel
    // below may write it to the end).
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    } as u64;
    e.host_memory_map(addr, addr as usize, len).unwrap();
    launch_endless(&mut e);
    let t = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        cancel.cancel();
    });
    assert!(e.device_synchronize(0).is_err());
    t.join().unwrap();
    assert!(
        e.ctx.is_some(),
        "the context stays while it maps guest pages"
    );
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        drop(e);
        let _ = tx.send(());
    });
    assert!(
        rx.recv_timeout(std::time::Duration::from_millis(500))
            .is_err(),
        "the session's end did not wait for its kernel"
    );
}

/// With the mock driver (tests/gpu/mock), the cluster shape of its last `cuLaunchKernelEx`.
fn mock_last_cluster() -> Option<[u32; 3]> {
    // SAFETY: the driver library is already loaded (RTLD_NOLOAD); the mock's function
    // writes three unsigned ints. A real driver lacks the symbol.
    unsafe {
        let lib = libloading::os::unix::Library::open(
            Some("libcuda.so.1"),
            libc::RTLD_NOLOAD | libloading::os::unix::RTLD_NOW,
        )
        .ok()?;
        let f = lib
            .get::<unsafe extern "C" fn(*mut u32)>(b"vcuda_mock_last_cluster\0")
            .ok()?;
        let mut out = [0u32; 3];
        f(out.as_mut_ptr());
        Some(out)
    }
}

#[test]
fn launches_in_clusters_carry_their_shape() {
    gpu!(f);
    let mut e = f.new_executor().unwrap();
    let m = e.module_load(ptx_fatbin(PTX)).unwrap();
    let k = e.function_get(m, "add1").unwrap();
    let n = 1024u32;
    let p = upload_ramp(&mut e, n);
    // Eight blocks in clusters of two, on a GPU that has them (the mock does).
    let (launch, params) = add1_launch(k.handle, p, n);
    e.launch_cluster(&launch, [2, 1, 1], &params).unwrap();
    e.device_synchronize(0).unwrap();
    if let Some(shape) = mock_last_cluster() {
        assert_eq!(shape, [2, 1, 1]);
    }
    assert_ramp_plus_one(&mut e, p, n);
    // A shape the grid does not divide into is the driver's error, the context lives on.
    assert_eq!(
        e.launch_cluster(&launch, [3, 1, 1], &params),
        Err(Status(vcuda_protocol::status::INVALID_CLUSTER_SIZE))
    );
    e.launch(&launch, &params).unwrap();
    e.device_synchronize(0).unwrap();
}

#[test]
fn cluster_occupancy_is_the_drivers() {
    gpu!(f);
    let mut e = f.new_executor().unwrap();
    let m = e.module_load(ptx_fatbin(PTX)).unwrap();
    let k = e.function_get(m, "add1").unwrap();
    let mut req = vcuda_protocol::OccupancyClusterReq {
        function: k.handle,
        grid: [8, 1, 1],
        block: [128, 1, 1],
        cluster: [2, 1, 1],
        shared_mem: 0,
        query: vcuda_protocol::OCCUPANCY_MAX_ACTIVE_CLUSTERS,
        // Not the driver's input: it computes its own.
        blocks_per_sm: 1_000_000,
    };
    let mock = mock_last_cluster().is_some();
    let active = e.occupancy_cluster(&req).unwrap().value;
    assert!(active > 0);
    req.query = vcuda_protocol::OCCUPANCY_MAX_CLUSTER_SIZE;
    let size = e.occupancy_cluster(&req).unwrap().value;
    assert!((1..=16).contains(&size), "{size}");
    if mock {
        // The mock's figures for its 132 multiprocessors, not a formula of the executor's.
        assert_eq!((active, size), (66, 8));
        req.query = vcuda_protocol::OCCUPANCY_MAX_ACTIVE_CLUSTERS;
        req.cluster = [0; 3];
        assert_eq!(
            e.occupancy_cluster(&req).map(|r| r.value),
            Err(Status(vcuda_protocol::status::INVALID_CLUSTER_SIZE))
        );
    }
    req.query = 7;
    assert_eq!(
        e.occupancy_cluster(&req).map(|r| r.value),
        Err(Status::INVALID_VALUE)
    );
    req.query = vcuda_protocol::OCCUPANCY_MAX_ACTIVE_CLUSTERS;
    req.function = 12345;
    assert_eq!(
        e.occupancy_cluster(&req).map(|r| r.value),
        Err(Status::INVALID_DEVICE_FUNCTION)
    );
}

/// With the mock driver (tests/gpu/mock), how many DMA copies it has seen.
fn mock_dma_copies() -> Option<u64> {
    // SAFETY: the driver library is already loaded (RTLD_NOLOAD); the mock's counter takes
    // no arguments and returns an unsigned long. A real driver lacks the symbol.
    unsafe {
        let lib = libloading::os::unix::Library::open(
            Some("libcuda.so.1"),
            libc::RTLD_NOLOAD | libloading::os::unix::RTLD_NOW,
        )
        .ok()?;
        let f = lib
            .get::<unsafe extern "C" fn() -> u64>(b"vcuda_mock_dma_copies\0")
            .ok()?;
        Some(f())
    }
}

#[test]
fn pinned_guest_memory_is_used_directly() {
    gpu!(f);
    // Stand-in for guest RAM: a page-aligned anonymous mapping.
    let len = 8 << 20;
    let mut ram = vec![0u8; len + 4096];
    let off = ram.as_ptr().align_offset(4096);
    let base = ram[off..].as_mut_ptr() as usize;
    f.guest_memory_changed(&[(base, len)]);
    assert!(f.shared.pinned.read().unwrap().contains(base, len));
    let mut e = f.new_executor().unwrap();
    let p = e.malloc(0, len as u64).unwrap();
    let guest = &mut ram[off..off + len];
    guest.copy_from_slice(&pattern(len, 3));
    let want = guest.to_vec();
    for flags in [0, COPY_ASYNC] {
        e.memcpy_htod(
            &htod(p, len as u64, 1, 0, flags),
            &DataSegs::from_slice(guest),
        )
        .unwrap();
        guest.fill(0);
        e.memcpy_dtoh(&dtoh(p, len as u64, 1, 0), &DataSegs::from_slice(guest))
            .unwrap();
        assert!(*guest == want[..]);
    }
    // Scattered 4 KiB guest pages (in reverse order), as a descriptor chain brings them:
    // staged rather than a DMA per page, with the same result.
    let pages = || -> Vec<VolatileSlice<'_>> {
        let base = base as *mut u8;
        (0..len / 4096)
            .rev()
            // SAFETY: each page lies inside `ram`, which outlives the slices; the slices
            // are disjoint and used one copy at a time.
            .map(|i| unsafe { VolatileSlice::new(base.add(i * 4096), 4096) })
            .collect()
    };
    let dmas = mock_dma_copies();
    e.memcpy_htod(&htod(p, len as u64, 1, 0, 0), &DataSegs::new(pages()))
        .unwrap();
    if let (Some(before), Some(after)) = (dmas, mock_dma_copies()) {
        // Through the 64 KiB staging buffers: 128 DMAs, not one per page (2048).
        eprintln!("{} DMAs for 2048 scattered pages", after - before);
        assert!(
            after - before <= (len / (64 << 10)) as u64 + 4,
            "{}",
            after - before
        );
    }
    let mut back = vec![0u8; len];
    e.memcpy_dtoh(&dtoh(p, len as u64, 1, 0), &DataSegs::from_slice(&mut back))
        .unwrap();
    let reversed: Vec<u8> = want.chunks(4096).rev().flatten().copied().collect();
    assert!(back == reversed);
    guest.fill(0);
    e.memcpy_dtoh(&dtoh(p, len as u64, 1, 0), &DataSegs::new(pages()))
        .unwrap();
    assert!(ram[off..off + len] == want[..]);
    drop(e);
    // A region added: the first stays pinned, the second joins; then both go.
    let mut more = vec![0u8; 2 * 4096];
    let off2 = more.as_ptr().align_offset(4096);
    let base2 = more[off2..].as_mut_ptr() as usize;
    f.guest_memory_changed(&[(base, len), (base2, 4096)]);
    assert!(f.shared.pinned.read().unwrap().contains(base2, 4096));
    assert!(f.shared.pinned.read().unwrap().contains(base, len));
    f.guest_memory_changed(&[]);
    assert!(f.shared.pinned.read().unwrap().ranges().is_empty());
}

/// Guest RAM is registered only with `--register-guest-memory`: otherwise copies from it
/// are staged and nothing is pinned.
#[test]
fn guest_memory_is_registered_only_on_request() {
    let _turn = GPU_TURN.lock().unwrap_or_else(|e| e.into_inner());
    let Ok(f) = CudaFactory::new(CudaConfig::default()) else {
        eprintln!("skipping: no GPU");
        return;
    };
    let ram = vec![0u8; 2 * 4096];
    let off = ram.as_ptr().align_offset(4096);
    let base = ram[off..].as_ptr() as usize;
    f.guest_memory_changed(&[(base, 4096)]);
    assert!(f.shared.pinned.read().unwrap().ranges().is_empty());
    f.guest_memory_changed(&[]);
}

#[test]
fn limits_and_reset() {
    gpu!(f);
    let mut e = f.new_executor().unwrap();
    e.set_limit(0, 1, 4 << 20).unwrap();
    assert_eq!(e.get_limit(0, 1), Ok(4 << 20));
    assert_eq!(e.get_limit(0, 99), Err(Status::UNSUPPORTED_LIMIT));
    assert_eq!(e.malloc(1, 16), Err(Status::INVALID_DEVICE));
    assert_eq!(e.malloc(0, 0), Ok(0));
    let (free, total) = e.mem_get_info(0).unwrap();
    assert!(free <= total && total > 0);
    let s = e.stream_create(0, 0, 0).unwrap();
    e.device_reset(0).unwrap();
    assert_eq!(e.stream_query(s), Err(Status::INVALID_HANDLE));
}

/// Launches the test module's `endless` kernel (one thread) on the legacy stream of `e`.
fn launch_endless(e: &mut CudaExecutor) {
    let m = e.module_load(ptx_fatbin(PTX)).unwrap();
    let k = e.function_get(m, "endless").unwrap();
    let launch = LaunchReq {
        function: k.handle,
        stream: STREAM_LEGACY,
        grid: [1, 1, 1],
        block: [1, 1, 1],
        shared_mem: 0,
        param_len: 0,
    };
    e.launch(&launch, &[]).unwrap();
}

/// Launches `endless` on the legacy stream of a fresh session, which then gets cancelled
/// `after` it started `wait`ing; returns how long the wait took and its result, and checks
/// that the session lost its context and drops at once.
fn cancel_while(
    f: &CudaFactory,
    wait: impl FnOnce(&mut CudaExecutor) -> ExecResult<()>,
) -> ExecResult<()> {
    let mut e = f.new_executor().unwrap();
    let cancel = crate::executor::Cancel::default();
    e.set_cancel(cancel.clone());
    launch_endless(&mut e);
    let t = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        cancel.cancel();
    });
    let start = std::time::Instant::now();
    let r = wait(&mut e);
    let took = start.elapsed();
    t.join().unwrap();
    // 200 ms to the cancel, then at most a millisecond of polling; the mock driver's
    // blocking waits take 5 s behind an endless kernel, so a blocking wait shows.
    assert!(took < std::time::Duration::from_secs(3), "took {took:?}");
    // The context is gone: nothing more runs in this session.
    assert_eq!(
        e.malloc(0, 16),
        Err(Status(vcuda_protocol::status::DEVICE_UNINITIALIZED))
    );
    let start = std::time::Instant::now();
    drop(e);
    assert!(start.elapsed() < std::time::Duration::from_secs(3));
    r
}

#[test]
fn a_session_that_ends_stops_waiting_for_its_endless_kernel() {
    if !isolated(
        "a_session_that_ends_stops_waiting_for_its_endless_kernel",
        30,
    ) {
        return;
    }
    gpu!(f);
    let failed = Err(Status(vcuda_protocol::status::LAUNCH_FAILURE));
    assert_eq!(cancel_while(&f, |e| e.device_synchronize(0)), failed);
    assert_eq!(
        cancel_while(&f, |e| e.stream_synchronize(STREAM_LEGACY)),
        failed
    );
    // A copy queued behind the kernel, into pageable memory (the direct path) and through
    // the staging buffers.
    for n in [4096usize, 256 << 10] {
        let r = cancel_while(&f, |e| {
            let p = e.malloc(0, n as u64)?;
            let mut back = vec![0u8; n];
            e.memcpy_dtoh(&dtoh(p, n as u64, 1, 0), &DataSegs::from_slice(&mut back))
        });
        assert_eq!(r, failed, "{n} bytes");
    }
    let r = cancel_while(&f, |e| {
        let ev = e.event_create(0, 0)?;
        e.event_record(ev, STREAM_LEGACY, 0)?;
        e.event_synchronize(ev)
    });
    assert_eq!(r, failed);
    // Other sessions are unaffected.
    let mut other = f.new_executor().unwrap();
    let q = other.malloc(0, 64).unwrap();
    other.device_synchronize(0).unwrap();
    other.free(q).unwrap();
}

/// A copy from pinned guest RAM queued behind an endless kernel waits without the
/// guest-memory lock: the frontend's memory table update (and every other session's copy)
/// goes through meanwhile.
#[test]
fn an_endless_kernel_does_not_hold_the_guest_memory_lock() {
    if !isolated("an_endless_kernel_does_not_hold_the_guest_memory_lock", 30) {
        return;
    }
    // One contiguous pinned page (a direct DMA), then 64 scattered pages (staged).
    for pages in [1, 64] {
        gpu!(f);
        let len = 1 << 20;
        let mut ram = vec![0u8; len + 4096];
        let off = ram.as_ptr().align_offset(4096);
        let base = ram[off..].as_mut_ptr() as usize;
        f.guest_memory_changed(&[(base, len)]);
        let mut e = f.new_executor().unwrap();
        let cancel = crate::executor::Cancel::default();
        e.set_cancel(cancel.clone());
        launch_endless(&mut e);
        let n = pages * 4096;
        let p = e.malloc(0, n as u64).unwrap();
        let copy = std::thread::spawn(move || {
            let guest = &mut ram[off..off + len];
            let segs = if pages == 1 {
                DataSegs::from_slice(&mut guest[..4096])
            } else {
                // Every other page, backwards: scattered pieces, as a descriptor chain.
                let base = guest.as_mut_ptr();
                let slices = (0..pages)
                    .rev()
                    // SAFETY: each page lies inside `guest`, which outlives the slices; the
                    // slices are disjoint.
                    .map(|i| unsafe { VolatileSlice::new(base.add(i * 2 * 4096), 4096) })
                    .collect();
                DataSegs::new(slices)
            };
            let r = e.memcpy_htod(&htod(p, n as u64, 1, 0, 0), &segs);
            drop(e);
            r
        });
        // Ends the session after 2 s whatever happens, so a lock held across the wait
        // makes this test fail instead of hang.
        let watchdog = {
            let cancel = cancel.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_secs(2));
                cancel.cancel();
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(200));
        let start = std::time::Instant::now();
        f.guest_memory_changed(&[]);
        let took = start.elapsed();
        cancel.cancel();
        let r = copy.join().unwrap();
        watchdog.join().unwrap();
        assert!(
            took < std::time::Duration::from_secs(1),
            "{pages} pages: took {took:?}"
        );
        assert!(r.is_err());
    }
}

#[test]
fn a_wait_past_the_kernel_timeout_fails_and_reset_recovers() {
    if !isolated(
        "a_wait_past_the_kernel_timeout_fails_and_reset_recovers",
        30,
    ) {
        return;
    }
    let _turn = GPU_TURN.lock().unwrap_or_else(|e| e.into_inner());
    let Ok(f) = CudaFactory::new(CudaConfig {
        kernel_timeout: Some(std::time::Duration::from_millis(300)),
        ..CudaConfig::default()
    }) else {
        eprintln!("skipping: no GPU");
        return;
    };
    let mut e = f.new_executor().unwrap();
    launch_endless(&mut e);
    let start = std::time::Instant::now();
    let err = e.device_synchronize(0).unwrap_err();
    assert_eq!(err, Status(vcuda_protocol::status::LAUNCH_TIMEOUT));
    assert!(vcuda_protocol::status::is_sticky(err.code()));
    let took = start.elapsed();
    assert!(took >= std::time::Duration::from_millis(300), "{took:?}");
    assert!(took < std::time::Duration::from_secs(3), "{took:?}");
    // The context is gone until the guest resets the device.
    assert_eq!(
        e.malloc(0, 16),
        Err(Status(vcuda_protocol::status::DEVICE_UNINITIALIZED))
    );
    e.device_reset(0).unwrap();
    let p = e.malloc(0, 16).unwrap();
    e.device_synchronize(0).unwrap();
    e.free(p).unwrap();
}

#[test]
fn a_module_that_does_not_compile_fails_to_load() {
    gpu!(f);
    let mut e = f.new_executor().unwrap();
    let bad = ptx_fatbin(".version 7.0\n.target sm_50\n.address_size 64\ndoes_not_compile\n");
    let err = e.module_load(bad).unwrap_err();
    assert_eq!(err, Status(vcuda_protocol::status::INVALID_PTX), "{err:?}");
    // The session goes on.
    e.module_load(ptx_fatbin(PTX)).unwrap();
}

/// Where kernels can reach pageable host memory (HMM; `VCUDA_MOCK_HMM=1` on the mock), one
/// session at a time unless allowed; elsewhere, sessions run side by side.
#[test]
fn pageable_access_makes_sessions_exclusive_unless_allowed() {
    gpu!(f);
    let a = f.new_executor().unwrap();
    if f.is_exclusive() {
        eprintln!("the device reports pageable memory access: sessions are exclusive");
        assert_eq!(
            f.new_executor().map(drop),
            Err(Status(vcuda_protocol::status::DEVICES_UNAVAILABLE))
        );
        drop(a);
        let b = f.new_executor().unwrap();
        drop(b);
        let allowed = CudaFactory::new(CudaConfig {
            allow_pageable_access: true,
            ..CudaConfig::default()
        })
        .unwrap();
        assert!(!allowed.is_exclusive());
        let (_x, _y) = (
            allowed.new_executor().unwrap(),
            allowed.new_executor().unwrap(),
        );
    } else {
        let _b = f.new_executor().unwrap();
    }
}

#[test]
fn a_session_is_held_to_its_memory_limit() {
    let _turn = GPU_TURN.lock().unwrap_or_else(|e| e.into_inner());
    let Ok(f) = CudaFactory::new(CudaConfig {
        session_mem_limit: crate::memsize::MemSize::Bytes(8 << 20),
        ..CudaConfig::default()
    }) else {
        eprintln!("skipping: no GPU");
        return;
    };
    let mut e = f.new_executor().unwrap();
    assert_eq!(e.mem_get_info(0).unwrap(), (8 << 20, 8 << 20));
    let a = e.malloc(0, 3 << 20).unwrap(); // charged 4 MiB (2 MiB pages)
    let b = e.malloc(0, 4 << 20).unwrap();
    assert_eq!(e.malloc(0, 1), Err(Status::MEMORY_ALLOCATION));
    assert_eq!(e.mem_get_info(0).unwrap(), (0, 8 << 20));
    // Another session has its own limit.
    let mut other = f.new_executor().unwrap();
    let c = other.malloc(0, 8 << 20).unwrap();
    e.free(a).unwrap();
    assert_eq!(e.mem_get_info(0).unwrap().0, 4 << 20);
    let small = e.malloc(0, 100).unwrap(); // charged 512 bytes
    assert_eq!(e.mem_get_info(0).unwrap().0, (4 << 20) - 512);
    for p in [b, small] {
        e.free(p).unwrap();
    }
    other.free(c).unwrap();
    assert_eq!(charge(1), Some(512));
    assert_eq!(charge((2 << 20) + 1), Some(4 << 20));
}

/// `--warm-context`: a session takes the context made before it asked (at start, then, with
/// `always`, made again behind each session), and works in it; `first` keeps only the one
/// made at start, `off` none.
#[test]
fn sessions_take_warm_contexts() {
    let _turn = GPU_TURN.lock().unwrap_or_else(|e| e.into_inner());
    for (mode, sessions, hits) in [
        (WarmMode::Always, 3, 3),
        (WarmMode::First, 3, 1),
        (WarmMode::Off, 2, 0),
    ] {
        let Ok(f) = CudaFactory::new(CudaConfig {
            warm: mode,
            ..CudaConfig::default()
        }) else {
            eprintln!("skipping: no GPU");
            return;
        };
        for _ in 0..sessions {
            let mut e = f.new_executor().unwrap();
            let p = e.malloc(0, 256).unwrap();
            let data = [7u8; 256];
            let mut src = data;
            e.memcpy_htod(&htod(p, 256, 1, 0, 0), &DataSegs::from_slice(&mut src))
                .unwrap();
            let mut back = [0u8; 256];
            e.memcpy_dtoh(&dtoh(p, 256, 1, 0), &DataSegs::from_slice(&mut back))
                .unwrap();
            assert_eq!(back, data, "{mode:?}");
        }
        assert_eq!(f.warm_hits(), hits, "{mode:?}");
    }
}

/// A module variable and a kernel that counts in it.
const COUNTER_PTX: &str = r#"
.version 7.0
.target sm_50
.address_size 64

.visible .global .align 4 .u32 counter = 7;

.visible .entry tick()
{
    .reg .b32 %r<2>;
    ld.global.u32 %r1, [counter];
    add.u32 %r1, %r1, 1;
    st.global.u32 [counter], %r1;
    ret;
}
"#;

/// A factory of a backend started with `--cuda-migratable`, or `None` (said) without a GPU.
fn migratable_factory() -> Option<CudaFactory> {
    let f = CudaFactory::new(CudaConfig {
        migratable: true,
        ..CudaConfig::default()
    });
    if f.is_err() {
        eprintln!("skipping: no GPU");
    }
    f.ok()
}

/// A session of `--cuda-migratable` saved and loaded into a new one (as a migration's
/// destination would): device memory at the same addresses with the same contents (holes
/// left by frees included), the module variable with its address and value, function,
/// stream and event handles usable under their numbers, new allocations placed around the
/// loaded ones.
#[test]
fn a_migratable_session_moves_with_its_state() {
    let _turn = GPU_TURN.lock().unwrap_or_else(|e| e.into_inner());
    let Some(f) = migratable_factory() else {
        return;
    };
    let mut e = f.new_executor().unwrap();
    let a = e.malloc(0, 1000).unwrap();
    let hole = e.malloc(0, 3 << 20).unwrap();
    let b = e.malloc(0, (5 << 20) + 3).unwrap();
    e.free(hole).unwrap();
    let (mut da, mut db) = (pattern(1000, 1), pattern((5 << 20) + 3, 2));
    e.memcpy_htod(&htod(a, 1000, 1, 0, 0), &DataSegs::from_slice(&mut da))
        .unwrap();
    e.memcpy_htod(
        &htod(b, db.len() as u64, 1, 0, 0),
        &DataSegs::from_slice(&mut db),
    )
    .unwrap();
    let m = e.module_load(ptx_fatbin(COUNTER_PTX)).unwrap();
    let k = e.function_get(m, "tick").unwrap().handle;
    let tick = LaunchReq {
        function: k,
        stream: 0,
        grid: [1, 1, 1],
        block: [1, 1, 1],
        shared_mem: 0,
        param_len: 0,
    };
    e.launch(&tick, &[]).unwrap();
    let s = e.stream_create(0, 1, 0).unwrap();
    let ev = e.event_create(0, 0).unwrap();
    let (state, images) = e.save_state(None).unwrap();
    let images = images.into_iter().map(|i| (i.hash, i)).collect();
    drop(e);

    let mut e = f.new_executor().unwrap();
    e.load_state(state, &images).unwrap();
    let mut back = vec![0u8; 1000];
    e.memcpy_dtoh(&dtoh(a, 1000, 1, 0), &DataSegs::from_slice(&mut back))
        .unwrap();
    assert!(back == da);
    let mut back = vec![0u8; db.len()];
    e.memcpy_dtoh(
        &dtoh(b, db.len() as u64, 1, 0),
        &DataSegs::from_slice(&mut back),
    )
    .unwrap();
    assert!(back == db);
    // The guest never asked where the variable is: it may be anywhere now, with its value.
    let (counter, len) = e.symbol_get(m, "counter").unwrap();
    assert_eq!(len, 4);
    e.launch(&tick, &[]).unwrap();
    let mut c = [0u8; 4];
    e.memcpy_dtoh(&dtoh(counter, 4, 1, 0), &DataSegs::from_slice(&mut c))
        .unwrap();
    assert_eq!(
        u32::from_le_bytes(c),
        9,
        "7, a tick before the move and one after"
    );
    e.stream_synchronize(s).unwrap();
    e.event_query(ev).unwrap();
    // The hole is free again, the loaded allocations are not.
    let n = e.malloc(0, 3 << 20).unwrap();
    assert!(n + (3 << 20) <= b || n >= b + db.len() as u64);
    assert!(n >= a + 1000 || n + (3 << 20) <= a);
    e.free(a).unwrap();
    e.free(b).unwrap();
}

/// A module variable whose address the guest knows loads at that address, or the load
/// fails naming it (the driver places module variables; on vcuda's own driver, in one
/// process, it places them anew).
#[test]
fn a_known_module_variable_keeps_its_address_or_the_load_fails() {
    let _turn = GPU_TURN.lock().unwrap_or_else(|e| e.into_inner());
    let Some(f) = migratable_factory() else {
        return;
    };
    let mut e = f.new_executor().unwrap();
    let m = e.module_load(ptx_fatbin(COUNTER_PTX)).unwrap();
    let (counter, _) = e.symbol_get(m, "counter").unwrap();
    let (state, images) = e.save_state(None).unwrap();
    let images = images.into_iter().map(|i| (i.hash, i)).collect();
    drop(e);
    let mut e = f.new_executor().unwrap();
    match e.load_state(state, &images) {
        Ok(()) => assert_eq!(e.symbol_get(m, "counter").unwrap(), (counter, 4)),
        Err(err) => {
            let err = err.to_string();
            assert!(err.contains("module variable counter loads at"), "{err}");
            eprintln!("loaded elsewhere: {err}");
        }
    }
}

/// Without `--cuda-migratable`, a session holding device memory refuses to save, naming
/// why.
#[test]
fn device_memory_of_a_plain_session_does_not_move() {
    gpu!(f);
    let mut e = f.new_executor().unwrap();
    let p = e.malloc(0, 4096).unwrap();
    let err = e.save_state(None).unwrap_err().to_string();
    assert!(err.contains("--cuda-migratable"), "{err}");
    e.free(p).unwrap();
}

/// cuRAND generators move with a session: a device XORWOW, a host Philox with an offset and
/// a Sobol generator in four dimensions go on after the move where they were, drawing what
/// fresh generators draw in one go (this is what checks, on a GPU, that the offsets the
/// executor counts are cuRAND's); a device MT19937, which takes no offset, goes on as a
/// fresh one that took the same calls.
#[test]
fn curand_generators_move_with_the_session() {
    use vcuda_protocol::RandGenerateReq;
    use vcuda_protocol::lib::{RAND_TO_HOST, dist, set};

    let _turn = GPU_TURN.lock().unwrap_or_else(|e| e.into_inner());
    let Some(f) = migratable_factory() else {
        return;
    };
    if !super::curand_result::present() {
        eprintln!("skipping: no libcurand.so.10");
        return;
    }
    const N: u64 = 1000;
    const DIMS: u64 = 4;
    const POINTS: u64 = 64;
    let set_ = |e: &mut CudaExecutor, handle, what, value| {
        e.rand_set_impl(&vcuda_protocol::RandSetReq {
            handle,
            what,
            reserved: 0,
            value,
        })
        .unwrap()
    };
    let draw = |e: &mut CudaExecutor, handle, dist, n: u64, dst: u64| -> Vec<u8> {
        let host = dst == 0;
        let req = RandGenerateReq {
            handle,
            stream: 0,
            dst,
            n,
            dist,
            flags: if host { RAND_TO_HOST } else { 0 },
            mean: 1.0,
            stddev: 2.0,
        };
        let mut out = vec![0u8; (n * 4) as usize];
        let wrote = e
            .rand_generate_impl(&req, &DataSegs::from_slice(&mut out))
            .unwrap();
        if !host {
            assert_eq!(wrote, 0);
            e.memcpy_dtoh(&dtoh(dst, n * 4, 1, 0), &DataSegs::from_slice(&mut out))
                .unwrap();
        }
        out
    };
    // The generators (0: XORWOW, 1: Philox on the host, 2: Sobol32) as a session makes them.
    let make = |e: &mut CudaExecutor| -> [u64; 3] {
        let x = e.rand_create_impl(100, false).unwrap();
        set_(e, x, set::SEED, 1234);
        let p = e.rand_create_impl(161, true).unwrap();
        set_(e, p, set::SEED, 99);
        set_(e, p, set::OFFSET, 7);
        let s = e.rand_create_impl(201, false).unwrap();
        set_(e, s, set::DIMENSIONS, DIMS);
        [x, p, s]
    };

    let mut e = f.new_executor().unwrap();
    let buf = e.malloc(0, N * 8).unwrap();
    let g = make(&mut e);
    let mut before = [
        draw(&mut e, g[0], dist::BITS32, N, buf),
        draw(&mut e, g[1], dist::NORMAL_F32, N, 0),
        draw(&mut e, g[2], dist::UNIFORM_F32, POINTS * DIMS, buf),
    ];
    let mt = e.rand_create_impl(141, false).unwrap();
    set_(&mut e, mt, set::SEED, 5);
    let mut mt_words = draw(&mut e, mt, dist::BITS32, 256, buf);
    mt_words.extend(draw(&mut e, mt, dist::BITS32, 256, buf));
    mt_words.extend(draw(&mut e, mt, dist::UNIFORM_F32, 256, buf));
    let (state, images) = e.save_state(None).unwrap();
    let images = images.into_iter().map(|i| (i.hash, i)).collect();
    drop(e);

    let mut e = f.new_executor().unwrap();
    e.load_state(state, &images).unwrap();
    let after = [
        draw(&mut e, g[0], dist::BITS32, N, buf),
        draw(&mut e, g[1], dist::NORMAL_F32, N, 0),
        draw(&mut e, g[2], dist::UNIFORM_F32, POINTS * DIMS, buf),
    ];
    mt_words.extend(draw(&mut e, mt, dist::BITS32, 256, buf));
    // A new generator gets a handle of its own.
    let next = e.rand_create_impl(100, false).unwrap();
    assert!(!g.contains(&next) && next != mt);
    for (b, a) in before.iter_mut().zip(&after) {
        b.extend_from_slice(a);
    }
    let big = e.malloc(0, 2 * N * 8).unwrap();
    let fresh = make(&mut e);
    let all_x = draw(&mut e, fresh[0], dist::BITS32, 2 * N, big);
    let all_p = draw(&mut e, fresh[1], dist::NORMAL_F32, 2 * N, 0);
    let all_s = draw(&mut e, fresh[2], dist::UNIFORM_F32, 2 * POINTS * DIMS, big);
    assert!(before[0] == all_x, "XORWOW goes on where it was");
    assert!(before[1] == all_p, "Philox goes on where it was");
    // Sobol output is dimension-major: draw k's dimension d lies at d * POINTS, the whole
    // draw's at d * 2 * POINTS, and the second draw's points after the first's.
    let word = |v: &[u8], i: u64| v[(i * 4) as usize..(i * 4 + 4) as usize].to_vec();
    for d in 0..DIMS {
        for i in 0..2 * POINTS {
            let moved = word(
                &before[2],
                (i / POINTS) * POINTS * DIMS + d * POINTS + i % POINTS,
            );
            assert_eq!(
                moved,
                word(&all_s, d * 2 * POINTS + i),
                "Sobol dim {d} point {i}"
            );
        }
    }
    let fresh_mt = e.rand_create_impl(141, false).unwrap();
    set_(&mut e, fresh_mt, set::SEED, 5);
    let mut want = Vec::new();
    for d in [dist::BITS32, dist::BITS32, dist::UNIFORM_F32, dist::BITS32] {
        want.extend(draw(&mut e, fresh_mt, d, 256, buf));
    }
    assert!(mt_words == want, "MT19937 goes on where it was");
    e.free(buf).unwrap();
    e.free(big).unwrap();
}

/// One 32-bit float channel.
const FLOAT: vcuda_protocol::ChannelFormat = vcuda_protocol::ChannelFormat {
    bits: [32, 0, 0, 0],
    kind: vcuda_protocol::CHANNEL_FLOAT,
};

/// Makes an array, or `None` (with a message) where the driver has no arrays (the mock).
fn array_or_skip(e: &mut CudaExecutor, r: &vcuda_protocol::ArrayCreateReq) -> Option<u64> {
    match e.array_create_impl(r) {
        Err(Status::NOT_SUPPORTED) => {
            eprintln!("skipping: the driver has no arrays");
            None
        }
        r => Some(r.unwrap()),
    }
}

/// A session's arrays move with their texels and handles, a mipmapped array with every
/// level (a level given out keeps its handle), and texture and surface objects with their
/// numbers (a hole a destroyed object left included) over arrays, a mipmapped array and
/// linear memory; an object over memory freed since stops the save, named.
#[test]
fn arrays_and_texture_objects_move_with_the_session() {
    use vcuda_protocol::{
        ARRAY_COPY_TO_ARRAY, ARRAY_SURFACE_LOAD_STORE, ArrayCreateReq, MemcpyArrayReq,
        MipmappedArrayCreateReq, RESOURCE_ARRAY, RESOURCE_LINEAR, RESOURCE_MIPMAPPED_ARRAY,
        TEX_SURFACE, TexObjectCreateReq,
    };

    use crate::migrate::MigrateError;

    let _turn = GPU_TURN.lock().unwrap_or_else(|e| e.into_inner());
    let Some(f) = migratable_factory() else {
        return;
    };
    let mut e = f.new_executor().unwrap();
    let format = FLOAT;
    let array = ArrayCreateReq {
        format,
        width: 8,
        height: 4,
        flags: ARRAY_SURFACE_LOAD_STORE,
        ..Default::default()
    };
    let Some(a) = array_or_skip(&mut e, &array) else {
        return;
    };
    let lin = e.malloc(0, 128).unwrap();
    let scratch = e.malloc(0, 128).unwrap();
    let mut texels = pattern(128, 3);
    e.memcpy_htod(
        &htod(lin, 128, 1, 128, 0),
        &DataSegs::from_slice(&mut texels),
    )
    .unwrap();
    // Copies a box of `w` bytes by `h` rows between an array and `ptr`.
    let copy = |e: &mut CudaExecutor, array, ptr, w, h, to_array: bool| {
        e.memcpy_array_impl(&MemcpyArrayReq {
            array,
            ptr,
            pitch: w,
            width: w,
            height: h,
            depth: 1,
            flags: if to_array { ARRAY_COPY_TO_ARRAY } else { 0 },
            ..Default::default()
        })
        .unwrap()
    };
    let read = |e: &mut CudaExecutor, ptr, n| {
        let mut out = vec![0u8; n as usize];
        e.memcpy_dtoh(&dtoh(ptr, n, 1, n), &DataSegs::from_slice(&mut out))
            .unwrap();
        out
    };
    copy(&mut e, a, lin, 32, 4, true);
    let mip = MipmappedArrayCreateReq {
        array: ArrayCreateReq {
            width: 8,
            height: 8,
            ..array
        },
        levels: 3,
        reserved: 0,
    };
    let m = e.mipmapped_create_impl(&mip).unwrap();
    let level = e.mipmapped_level_impl(m, 1).unwrap();
    copy(&mut e, level, lin, 16, 4, true);
    let tex = TexObjectCreateReq {
        resource: RESOURCE_ARRAY,
        array: a,
        ..Default::default()
    };
    let t = e.tex_object_create_impl(&tex).unwrap();
    let gone = e.tex_object_create_impl(&tex).unwrap();
    let surf = TexObjectCreateReq {
        flags: TEX_SURFACE,
        ..tex
    };
    let s = e.tex_object_create_impl(&surf).unwrap();
    let mtex = TexObjectCreateReq {
        resource: RESOURCE_MIPMAPPED_ARRAY,
        array: m,
        mip_max_clamp: 2.0,
        ..Default::default()
    };
    let tm = e.tex_object_create_impl(&mtex).unwrap();
    let ltex = TexObjectCreateReq {
        resource: RESOURCE_LINEAR,
        ptr: lin,
        format,
        size: 128,
        ..Default::default()
    };
    let tl = e.tex_object_create_impl(&ltex).unwrap();
    e.tex_object_destroy_impl(gone, false).unwrap();
    let mut objects: Vec<(bool, u64)> = e.textures.objects.keys().copied().collect();
    objects.sort_unstable();
    let (state, images) = e.save_state(None).unwrap();
    let images = images.into_iter().map(|i| (i.hash, i)).collect();
    drop(e);

    let mut e = f.new_executor().unwrap();
    e.load_state(state, &images).unwrap();
    let mut loaded: Vec<(bool, u64)> = e.textures.objects.keys().copied().collect();
    loaded.sort_unstable();
    assert_eq!(
        loaded, objects,
        "the objects keep their numbers, the hole stays"
    );
    copy(&mut e, a, scratch, 32, 4, false);
    assert!(read(&mut e, scratch, 128) == texels, "the array's texels");
    assert_eq!(
        e.mipmapped_level_impl(m, 1),
        Ok(level),
        "a level keeps its handle"
    );
    copy(&mut e, level, scratch, 16, 4, false);
    assert!(
        read(&mut e, scratch, 64) == texels[..64],
        "the level's texels"
    );
    let other = e.mipmapped_level_impl(m, 2).unwrap();
    let b = e.array_create_impl(&array).unwrap();
    assert!(
        ![a, level, other].contains(&b),
        "a new array gets a handle of its own"
    );
    for (surface, h) in [(false, t), (true, s), (false, tm), (false, tl)] {
        assert!(e.textures.objects.contains_key(&(surface, h)));
    }
    // An object over memory freed since cannot be made again: the save names it.
    e.free(lin).unwrap();
    match e.save_state(None) {
        Err(MigrateError::Unsupported(what)) => assert!(what.contains("texture"), "{what}"),
        other => panic!("{:?}", other.map(|_| ())),
    }
    e.tex_object_destroy_impl(tl, false).unwrap();
    assert!(e.save_state(None).is_ok());
}

/// A saved state is hostile input: arrays and objects that do not add up load nothing
/// (an error, never a panic), and an intact copy of the same state still loads.
#[test]
fn damaged_arrays_and_texture_objects_do_not_load() {
    use vcuda_protocol::{ArrayCreateReq, RESOURCE_ARRAY, TexObjectCreateReq};

    use crate::migrate::state::{ExecState, TexelsState};

    let _turn = GPU_TURN.lock().unwrap_or_else(|e| e.into_inner());
    let Some(f) = migratable_factory() else {
        return;
    };
    let mut e = f.new_executor().unwrap();
    let array = ArrayCreateReq {
        format: FLOAT,
        width: 16,
        height: 2,
        ..Default::default()
    };
    let Some(a) = array_or_skip(&mut e, &array) else {
        return;
    };
    let tex = TexObjectCreateReq {
        resource: RESOURCE_ARRAY,
        array: a,
        ..Default::default()
    };
    e.tex_object_create_impl(&tex).unwrap();
    let (saved, _) = e.save_state(None).unwrap();
    drop(e);
    let ExecState::Cuda(saved) = saved else {
        panic!("a CUDA executor saves a CUDA state");
    };
    let damages: [(&str, Damage); 10] = [
        ("no texels", |s| s.texels.clear()),
        ("short texels", |s| s.texels[0].data.clear()),
        ("texels of no array", |s| {
            let data = s.texels[0].data.clone();
            s.texels.push(TexelsState {
                handle: 7,
                level: 0,
                data,
            })
        }),
        ("array handle past the counter", |s| {
            s.textures.arrays[0].handle += 5
        }),
        ("short array request", |s| {
            s.textures.arrays[0].req.truncate(4)
        }),
        ("object twice", |s| {
            let o = s.textures.objects[0].clone();
            s.textures.objects.push(o)
        }),
        ("object over no array", |s| {
            // `array`, at offset 8 of the request.
            s.textures.objects[0].req[8..16].copy_from_slice(&0x11u64.to_le_bytes())
        }),
        ("array counter", |s| s.texture_next = [0, 0]),
        ("no order", |s| s.modules_before.clear()),
        ("made after the last module", |s| {
            s.modules_before[0].1 = 1 << 40
        }),
    ];
    refuses_every_damage(&f, &saved, &damages);
}

/// A session's VMM objects with their contents, for the two tests below: an allocation
/// mapped and accessible, then released (it lives on in its mapping); one mapped without
/// access; one mapped nowhere (written through a mapping since unmapped); a handle gone
/// before the move; two reservations. `None` (said) where the driver has no VMM API.
fn vmm_session(e: &mut CudaExecutor) -> Option<VmmSession> {
    use crate::executor::vmm::GRANULARITY as G;
    let h1 = match e.vmm_create(0, G) {
        Ok(h) => h,
        Err(Status::NOT_SUPPORTED) => {
            eprintln!("skipping: the driver has no cuMemCreate");
            return None;
        }
        Err(s) => panic!("cuMemCreate: {s:?}"),
    };
    let h2 = e.vmm_create(0, 2 * G).unwrap();
    let h3 = e.vmm_create(0, G).unwrap();
    let gone = e.vmm_create(0, G).unwrap();
    e.vmm_release(gone).unwrap();
    let va = e.vmm_reserve(4 * G, 0, 0).unwrap();
    let vb = e.vmm_reserve(G, 0, 0).unwrap();
    let data = [
        pattern(G as usize, 11),
        pattern(2 * G as usize, 12),
        pattern(G as usize, 13),
    ];
    for (at, h, d) in [
        (va, h1, &data[0]),
        (va + 2 * G, h2, &data[1]),
        (vb, h3, &data[2]),
    ] {
        let len = d.len() as u64;
        e.vmm_map(at, len, 0, h).unwrap();
        e.vmm_set_access(at, len, 0, 3).unwrap();
        let mut d = d.clone();
        e.memcpy_htod(&htod(at, len, 1, 0, 0), &DataSegs::from_slice(&mut d))
            .unwrap();
    }
    e.vmm_release(h1).unwrap();
    e.vmm_set_access(va + 2 * G, 2 * G, 0, 0).unwrap();
    e.vmm_unmap(vb, G).unwrap();
    Some(VmmSession {
        va,
        vb,
        handles: [h1, h2, h3, gone],
        data,
    })
}

/// What [`vmm_session`] made.
struct VmmSession {
    va: u64,
    vb: u64,
    /// Released and mapped, mapped without access, mapped nowhere, gone.
    handles: [u64; 4],
    data: [Vec<u8>; 3],
}

/// The VMM API's objects move with a session (on a backend started with
/// `--cuda-migratable`): after the load the reservations lie at their addresses, every
/// allocation answers to its handle with its contents and its mappings' access as it was,
/// a released one lives on only in its mapping, a handle gone before the move stays gone,
/// and new objects get new handles and addresses.
#[test]
fn vmm_objects_move_with_the_session() {
    use crate::executor::vmm::GRANULARITY as G;

    let _turn = GPU_TURN.lock().unwrap_or_else(|e| e.into_inner());
    let Some(f) = migratable_factory() else {
        return;
    };
    let mut e = f.new_executor().unwrap();
    let Some(v) = vmm_session(&mut e) else {
        return;
    };
    let (state, _) = e.save_state(None).unwrap();
    drop(e);
    let mut e = f.new_executor().unwrap();
    e.load_state(state, &Default::default()).unwrap();
    let [h1, h2, h3, gone] = v.handles;
    let read = |e: &mut CudaExecutor, at: u64, len: usize| {
        let mut b = vec![0u8; len];
        e.memcpy_dtoh(&dtoh(at, len as u64, 1, 0), &DataSegs::from_slice(&mut b))
            .map(|()| b)
    };
    assert!(read(&mut e, v.va, G as usize).unwrap() == v.data[0]);
    // Released before the move: its mapping holds it, its handle is gone.
    assert_eq!(e.vmm_release(h1).unwrap_err(), Status::INVALID_VALUE);
    // Mapped without access: not device memory until the guest sets it.
    assert!(read(&mut e, v.va + 2 * G, 4096).is_err());
    e.vmm_set_access(v.va + 2 * G, 2 * G, 0, 3).unwrap();
    assert!(read(&mut e, v.va + 2 * G, 2 * G as usize).unwrap() == v.data[1]);
    // Mapped nowhere: its contents come back where the guest maps it.
    e.vmm_map(v.vb, G, 0, h3).unwrap();
    e.vmm_set_access(v.vb, G, 0, 3).unwrap();
    assert!(read(&mut e, v.vb, G as usize).unwrap() == v.data[2]);
    assert_eq!(
        e.vmm_map(v.va + G, G, 0, gone).unwrap_err(),
        Status::INVALID_VALUE
    );
    let h4 = e.vmm_create(0, G).unwrap();
    assert!(h4 > gone, "a new handle, {h4} after {gone}");
    let vc = e.vmm_reserve(G, 0, 0).unwrap();
    assert!(vc + G <= v.vb || vc >= v.vb + G);
    assert!(vc + G <= v.va || vc >= v.va + 4 * G);
    // All of it goes as the guest lets it go.
    e.vmm_unmap(v.va, G).unwrap();
    e.vmm_unmap(v.va + 2 * G, 2 * G).unwrap();
    e.vmm_unmap(v.vb, G).unwrap();
    for h in [h2, h3, h4] {
        e.vmm_release(h).unwrap();
    }
    for (at, len) in [(v.va, 4 * G), (v.vb, G), (vc, G)] {
        e.vmm_free(at, len).unwrap();
    }
}

/// A saved state is hostile input: VMM objects that do not add up load nothing (an error,
/// never a panic), and an intact copy of the same state still loads.
#[test]
fn damaged_vmm_objects_do_not_load() {
    use crate::executor::vmm::{GRANULARITY as G, MAX_HANDLE};
    use crate::migrate::state::{ExecState, MapState};

    let _turn = GPU_TURN.lock().unwrap_or_else(|e| e.into_inner());
    let Some(f) = migratable_factory() else {
        return;
    };
    let mut e = f.new_executor().unwrap();
    if vmm_session(&mut e).is_none() {
        return;
    }
    let (saved, _) = e.save_state(None).unwrap();
    drop(e);
    let ExecState::Cuda(saved) = saved else {
        panic!("a CUDA executor saves a CUDA state");
    };
    let damages: [(&str, Damage); 11] = [
        ("short contents", |s| {
            s.vmm.phys[0].data.pop();
        }),
        ("handle 0", |s| s.vmm.phys[0].handle = 0),
        ("handle past the counter", |s| s.vmm.phys[0].handle += 9),
        ("counter past its bound", |s| {
            s.vmm.next_handle = MAX_HANDLE + 1
        }),
        ("an allocation twice", |s| {
            let p = s.vmm.phys[1].clone();
            s.vmm.phys.push(p)
        }),
        ("not granular", |s| s.vmm.phys[2].len = G + 4096),
        ("a mapping of no allocation", |s| {
            s.vmm.maps[0].handle = 3 << 20
        }),
        ("a mapping in no reservation", |s| {
            let h = s.vmm.maps[0].handle;
            s.vmm.maps.push(MapState {
                addr: 1 << 40,
                handle: h,
                accessible: true,
            })
        }),
        ("overlapping reservations", |s| {
            // Inside the reservation of four granules.
            let &(b, l) = s.vmm.reserved.iter().max_by_key(|r| r.1).unwrap();
            s.vmm.reserved.push((b + G, l))
        }),
        ("released and mapped nowhere", |s| {
            s.vmm.maps.retain(|m| {
                !s.vmm
                    .phys
                    .iter()
                    .any(|p| p.released && p.handle == m.handle)
            })
        }),
        ("a CPU session's range", |s| s.vmm.top = Some(1 << 40)),
    ];
    refuses_every_damage(&f, &saved, &damages);
}

/// An array made before its program's module loaded (lazily, at its first use) is made
/// before it again: over vcuda's own driver the two take device addresses from one place,
/// so otherwise a module variable whose address the guest knows would land elsewhere (on a
/// GPU the driver places both; the load either keeps the variable's address or fails
/// naming it).
#[test]
fn arrays_and_modules_load_in_the_order_they_were_made() {
    use vcuda_protocol::ArrayCreateReq;

    use crate::migrate::state::ExecState;

    let _turn = GPU_TURN.lock().unwrap_or_else(|e| e.into_inner());
    let Some(f) = migratable_factory() else {
        return;
    };
    let mut e = f.new_executor().unwrap();
    let req = ArrayCreateReq {
        format: FLOAT,
        width: 64,
        height: 4,
        ..Default::default()
    };
    let Some(before) = array_or_skip(&mut e, &req) else {
        return;
    };
    let m = e.module_load(ptx_fatbin(COUNTER_PTX)).unwrap();
    let (counter, _) = e.symbol_get(m, "counter").unwrap();
    let after = e.array_create_impl(&req).unwrap();
    let (state, images) = e.save_state(None).unwrap();
    let images = images.into_iter().map(|i| (i.hash, i)).collect();
    drop(e);
    let ExecState::Cuda(s) = &state else {
        panic!("a CUDA executor saves a CUDA state");
    };
    let module = super::handles::counter(m);
    let mut order = s.modules_before.clone();
    order.sort_unstable();
    assert_eq!(order, [(before, module), (after, module + 1)]);
    let mut e = f.new_executor().unwrap();
    match e.load_state(state, &images) {
        Ok(()) => assert_eq!(e.symbol_get(m, "counter").unwrap(), (counter, 4)),
        Err(err) => {
            let err = err.to_string();
            assert!(err.contains("module variable counter loads at"), "{err}");
            eprintln!("loaded elsewhere: {err}");
        }
    }
}

/// A way a saved state is damaged.
type Damage = fn(&mut crate::migrate::state::CudaState);

/// Loads `saved` once per damage, each into a new session: none loads; an intact copy does.
fn refuses_every_damage(
    f: &CudaFactory,
    saved: &crate::migrate::state::CudaState,
    damages: &[(&str, Damage)],
) {
    use crate::migrate::state::{CudaState, ExecState};
    let reload = |s: CudaState| {
        let mut e = f.new_executor().unwrap();
        e.load_state(ExecState::Cuda(s), &Default::default())
    };
    let encoded = postcard::to_allocvec(saved).unwrap();
    for (what, damage) in damages {
        let mut s: CudaState = postcard::from_bytes(&encoded).unwrap();
        damage(&mut s);
        assert!(reload(s).is_err(), "{what} loaded");
    }
    reload(postcard::from_bytes(&encoded).unwrap()).unwrap();
}
