// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Host memory mapped for kernels (`MapHostMemory`) in a VM's session moves with it: on
//! the CPU executor, and on the CUDA executor ([`mapped_memory_moves`] runs there on the
//! mock driver and on a GPU), whose device reaches the guest's pages at this process's
//! addresses, so the load holds them until the guest's memory is mapped.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use vcuda_protocol::LaunchReq;

use crate::executor::cpu::{CpuConfig, CpuFactory};
use crate::executor::testing::{PTX, free_address, ptx_fatbin};
use crate::executor::{Cancel, Tenant};
use crate::migrate::state::DeviceState;
use crate::migrate::{MigrateError, format};
use crate::shared::{Piece, hold_alias_span};
use crate::{Backend, Session};

/// Floats the guest's mapped memory holds: two pages.
const N: u32 = 2048;
/// Its bytes.
const LEN: u64 = N as u64 * 4;
/// Where it lies in the guest's RAM (guest-physical): after one page of something else.
const GPA: u64 = 4096;

/// Guest RAM: a memory file of four pages, the mapped memory's floats all `v`.
fn guest_ram(v: f32) -> OwnedFd {
    let fd = nix::sys::memfd::memfd_create("vcuda-test", nix::sys::memfd::MFdFlags::MFD_CLOEXEC)
        .unwrap();
    nix::unistd::ftruncate(&fd, 4 * 4096).unwrap();
    let bytes: Vec<u8> = (0..N).flat_map(|_| v.to_le_bytes()).collect();
    nix::sys::uio::pwrite(&fd, &bytes, GPA as i64).unwrap();
    fd
}

/// The mapped memory's floats, read from the guest's RAM.
fn floats(ram: &OwnedFd) -> Vec<f32> {
    let mut bytes = vec![0u8; LEN as usize];
    nix::sys::uio::pread(ram, &mut bytes, GPA as i64).unwrap();
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Runs `add1` over the mapped memory at `addr` (function handle `k`) and waits for it.
fn add1(s: &mut Session, k: u64, addr: u64) {
    let mut params = addr.to_le_bytes().to_vec();
    params.extend_from_slice(&N.to_le_bytes());
    let launch = LaunchReq {
        function: k,
        stream: 0,
        grid: [N / 128, 1, 1],
        block: [128, 1, 1],
        shared_mem: 0,
        param_len: params.len() as u32,
    };
    s.exec.launch(&launch, &params).unwrap();
    s.exec.device_synchronize(0).unwrap();
}

/// A session of `backend` in a VM maps guest memory for kernels, a kernel writes it, and
/// the session moves (saved through the container format) into another session of
/// `backend` (the source's gone first: the source is another process): there the range is
/// mapped again at the same address once the guest's memory is, and the same kernel reaches
/// the same pages. Where the executor's device reaches them at this process's addresses,
/// the load holds the address until then, and a load where it is taken fails, naming it.
/// Skips (said) where the executor does not map host memory for kernels.
pub(crate) fn mapped_memory_moves(backend: &Arc<Backend>) {
    let mut s = backend.new_session().unwrap();
    if !s.exec.can_map_host_memory() {
        eprintln!("skipping: the executor does not map host memory for kernels");
        return;
    }
    let in_place = s.exec.maps_host_memory_in_place();
    s.share_guest_pages();
    let ram = guest_ram(1.0);
    let extents = [(GPA, LEN)];
    let h = s
        .share_pieces(&[(ram.as_fd(), GPA, LEN as usize)], &extents)
        .unwrap();
    // The guest's address of it: one free in this process where the executor maps it
    // there, else one outside the CPU executor's device ranges.
    let addr = if in_place {
        free_address(LEN as usize)
    } else {
        0x5000_0000_0000
    };
    s.map_host(h, 0, LEN, addr, None).unwrap();
    let m = s.exec.module_load(ptx_fatbin(PTX)).unwrap();
    let k = s.exec.function_get(m, "add1").unwrap().handle;
    add1(&mut s, k, addr);
    assert!(floats(&ram).iter().all(|&v| v == 2.0));
    let saved = s.save_state().unwrap();
    assert_eq!(saved.mapped.len(), 1);
    let bytes = format::encode(&DeviceState {
        sessions: vec![(1, saved)],
        next_session: 2,
    })
    .unwrap();
    let saved = || format::decode(&bytes).unwrap().sessions.pop().unwrap().1;
    drop(s);
    let load = || backend.load_session(saved(), Cancel::default(), Tenant::unique());
    if in_place {
        let squatter = hold_alias_span(0, LEN, addr).unwrap();
        match load() {
            Err(MigrateError::NoRoom(what)) => {
                assert!(what.contains(&format!("{addr:#x}")), "{what}")
            }
            other => panic!("{other:?}"),
        }
        drop(squatter);
    }
    // A hostile state: two ranges over one another.
    let mut twice = saved();
    let mut again = twice.mapped.pop().unwrap();
    twice
        .mapped
        .push(crate::migrate::state::MappedState { ..again });
    again.addr += 8;
    twice.mapped.push(again);
    assert!(matches!(
        backend.load_session(twice, Cancel::default(), Tenant::unique()),
        Err(MigrateError::Invalid(_))
    ));
    let mut moved = load().unwrap();
    if in_place {
        assert!(
            hold_alias_span(0, LEN, addr).is_err(),
            "held from the load until the guest's memory is mapped"
        );
    }
    // As the vhost-user device does once QEMU hands it the guest's memory.
    moved.share_guest_pages();
    let fd = ram.as_fd();
    let resolve = |e: &[(u64, u64)]| {
        Ok::<_, String>(
            e.iter()
                .map(|&(a, l)| (fd, a, l as usize))
                .collect::<Vec<Piece<'_>>>(),
        )
    };
    moved.restore_guest_pages(&resolve).unwrap();
    add1(&mut moved, k, addr);
    assert!(floats(&ram).iter().all(|&v| v == 3.0));
    drop(moved);
    assert!(
        hold_alias_span(0, LEN, addr).is_ok(),
        "given back with the session"
    );
}

#[test]
fn host_memory_mapped_for_kernels_moves_with_the_session() {
    mapped_memory_moves(&Backend::new(Arc::new(CpuFactory::new(CpuConfig {
        memory: 64 << 20,
        threads: 1,
        ..Default::default()
    }))));
}
