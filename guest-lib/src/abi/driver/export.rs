// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `cuGetExportTable`: the driver's private tables.
//!
//! NVIDIA's static runtime (what plain `nvcc` and CMake link by default, and what CuPy's
//! extension modules carry) reaches the driver through a few documented calls and a set of
//! undocumented tables of function pointers, each named by a UUID. This module serves the
//! tables that runtime asks for (CUDA 12 and 13), with the semantics it relies on, from
//! public facts (the ZLUDA project documents each table and slot); the functions are this
//! library's own:
//!
//! | table | what it does here |
//! |---|---|
//! | runtime interface | modules from fat binaries, the primary context, compiler loading |
//! | tools TLS, tools callback hooks | inert (the profiler hooks are valid and do nothing) |
//! | context-local storage | the runtime's per-context state, kept with each context |
//! | context creation bypass | `cuCtxCreate` |
//! | integrity check | the digest the runtime checks the driver by (`core::integrity`) |
//! | context checks | "nothing unusual about this context" |
//! | heap access, extended device attributes | known, not served: each slot logs and refuses |
//!
//! Every slot vcuda does not implement is a function that logs its table and index once
//! (`VCUDA_LOG=warn`) and returns `CUDA_ERROR_NOT_SUPPORTED`; an unknown UUID is logged
//! once and refused the same way, so the next gap is one log line to find.

use std::collections::HashSet;
use std::ffi::{c_int, c_uint, c_void};
use std::sync::Mutex;

use super::out;
use crate::core::context::{self, CUcontext, StorageDtor, Stored};
use crate::core::integrity;
use crate::core::module::Module;
use crate::error::CuError;

/// A table entry: a function's address, or (slot 0 of most tables) the table's size.
type Slot = *const c_void;

/// A table as the runtime reads it: an array of slots.
#[repr(C)]
struct Table<const N: usize>([Slot; N]);

// SAFETY: the tables are immutable after construction and hold only function addresses and
// sizes, which any thread may read.
unsafe impl<const N: usize> Sync for Table<N> {}

/// Slot 0 of most tables: the table's size in bytes.
const fn size<const N: usize>() -> Slot {
    (N * size_of::<Slot>()) as Slot
}

/// The known tables: UUID, name, and the table's address and length.
struct Known {
    uuid: [u8; 16],
    name: &'static str,
    table: fn() -> (Slot, usize),
}

macro_rules! uuid {
    ($($b:literal)*) => { [$($b),*] };
}

/// Every table vcuda serves, in the order the runtime asks for them.
static KNOWN: [Known; 9] = [
    Known {
        uuid: uuid!(0x6b 0xd5 0xfb 0x6c 0x5b 0xf4 0xe7 0x4a 0x89 0x87 0xd9 0x39 0x12 0xfd 0x9d 0xf9),
        name: "runtime interface",
        table: || (CUDART_INTERFACE.0.as_ptr().cast(), CUDART_INTERFACE.0.len()),
    },
    Known {
        uuid: uuid!(0xa0 0x94 0x79 0x8c 0x2e 0x74 0x2e 0x74 0x93 0xf2 0x08 0x00 0x20 0x0c 0x0a 0x66),
        name: "tools runtime callback hooks",
        table: || (TOOLS_HOOKS.0.as_ptr().cast(), TOOLS_HOOKS.0.len()),
    },
    Known {
        uuid: uuid!(0x42 0xd8 0x5a 0x81 0x23 0xf6 0xcb 0x47 0x82 0x98 0xf6 0xe7 0x8a 0x3a 0xec 0xdc),
        name: "tools TLS",
        table: || (TOOLS_TLS.0.as_ptr().cast(), TOOLS_TLS.0.len()),
    },
    Known {
        uuid: uuid!(0xc6 0x93 0x33 0x6e 0x11 0x21 0xdf 0x11 0xa8 0xc3 0x68 0xf3 0x55 0xd8 0x95 0x93),
        name: "context-local storage",
        table: || (CONTEXT_STORAGE.0.as_ptr().cast(), CONTEXT_STORAGE.0.len()),
    },
    Known {
        uuid: uuid!(0x26 0x3e 0x88 0x60 0x7c 0xd2 0x61 0x43 0x92 0xf6 0xbb 0xd5 0x00 0x6d 0xfa 0x7e),
        name: "context checks",
        table: || (CONTEXT_CHECKS.0.as_ptr().cast(), CONTEXT_CHECKS.0.len()),
    },
    Known {
        uuid: uuid!(0xd4 0x08 0x20 0x55 0xbd 0xe6 0x70 0x4b 0x8d 0x34 0xba 0x12 0x3c 0x66 0xe1 0xf2),
        name: "integrity check",
        table: || (INTEGRITY_CHECK.0.as_ptr().cast(), INTEGRITY_CHECK.0.len()),
    },
    Known {
        uuid: uuid!(0x0c 0xa5 0x0b 0x8c 0x10 0x04 0x92 0x9a 0x89 0xa7 0xd0 0xdf 0x10 0xe7 0x72 0x86),
        name: "context creation bypass",
        table: || (CTX_CREATE.0.as_ptr().cast(), CTX_CREATE.0.len()),
    },
    Known {
        uuid: uuid!(0x19 0x5b 0xcb 0xf4 0xd6 0x7d 0x02 0x4a 0xac 0xc5 0x1d 0x29 0xce 0xa6 0x31 0xae),
        name: "heap access",
        table: || (HEAP_ACCESS.0.as_ptr().cast(), HEAP_ACCESS.0.len()),
    },
    Known {
        uuid: uuid!(0xb1 0x05 0x41 0xe1 0xf7 0xc7 0xc7 0x4a 0x9f 0x64 0xf2 0x23 0xbe 0x99 0xf1 0xe2),
        name: "extended device attributes",
        table: || (DEVICE_EXTENDED.0.as_ptr().cast(), DEVICE_EXTENDED.0.len()),
    },
];

/// A table the runtime asks for first, and which the driver may lack: without it the runtime
/// takes its ordinary start-up path, which is the one vcuda serves. Refused with
/// `CUDA_ERROR_NOT_FOUND`, quietly.
const ABSENT: [u8; 16] =
    uuid!(0xf8 0xcf 0xf9 0x51 0x21 0x46 0x8b 0x4e 0xb9 0xe2 0xfb 0x46 0x9e 0x7c 0x0d 0xd9);

fn uuid_text(u: &[u8; 16]) -> String {
    let h: Vec<String> = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        h[0..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..16].concat()
    )
}

/// A table's UUID and a slot index (`usize::MAX`: the table itself).
type SlotKey = ([u8; 16], usize);

/// Logs `what` once per key.
fn log_once(key: SlotKey, what: impl FnOnce() -> String) {
    static SEEN: Mutex<Option<HashSet<SlotKey>>> = Mutex::new(None);
    let mut g = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if g.get_or_insert_with(HashSet::new).insert(key) {
        log::warn!("{}", what());
    }
}

/// A slot vcuda does not implement: logs table `T`'s slot `S` once and refuses.
unsafe extern "C" fn unknown<const T: usize, const S: usize>() -> u32 {
    crate::entry::raw("export table slot", || {
        let k = &KNOWN[T];
        log_once((k.uuid, S), || {
            format!(
                "export table {{{}}} ({}) slot {S} is not supported by vcuda; \
                 returning CUDA_ERROR_NOT_SUPPORTED",
                uuid_text(&k.uuid),
                k.name
            )
        });
        CuError::NOT_SUPPORTED.0
    })
}

/// Table `T`'s slots, each one [`unknown`] until the table's definition replaces it.
macro_rules! unknown_slots {
    ($t:literal; $($s:literal)*) => {
        [$(unknown::<$t, $s> as Slot),*]
    };
}

/// Runs a slot's body behind the panic boundary, returning its `CUresult`.
fn slot(name: &'static str, f: impl FnOnce() -> Result<(), CuError>) -> u32 {
    crate::entry::raw(name, || f().map_or_else(|e| e.0, |()| 0))
}

// ---- Runtime interface -------------------------------------------------------------------

static CUDART_INTERFACE: Table<13> = {
    let mut t = unknown_slots!(0; 0 1 2 3 4 5 6 7 8 9 10 11 12);
    t[0] = size::<13>();
    t[1] = module_from_wrapper as Slot;
    t[2] = primary_context as Slot;
    t[6] = module_from_wrapper_ext as Slot;
    t[7] = runtime_notice as Slot;
    t[8] = module_from_fatbin_ext as Slot;
    t[12] = load_compilers as Slot;
    Table(t)
};

/// Loads the module of the fat binary a `__fatBinC_Wrapper_t` points to.
unsafe extern "C" fn module_from_wrapper(pmod: *mut *mut Module, wrapper: *const c_void) -> u32 {
    // SAFETY: the runtime passes the wrapper nvcc's registration code gave it.
    slot("runtime interface: module from wrapper", || {
        // SAFETY: as above.
        let m = unsafe { crate::abi::module_args::load_wrapper(wrapper, false) }?;
        // SAFETY: the runtime's output pointer.
        unsafe { out(pmod, m) }
    })
}

/// As [`module_from_wrapper`], with options vcuda has no use for (logged).
unsafe extern "C" fn module_from_wrapper_ext(
    pmod: *mut *mut Module,
    wrapper: *const c_void,
    a: *mut c_void,
    b: *mut c_void,
    n: c_uint,
) -> u32 {
    log::debug!("module from wrapper, options {a:?} {b:?} {n}");
    // SAFETY: the same arguments, under the same contract.
    unsafe { module_from_wrapper(pmod, wrapper) }
}

/// Loads the module of a fat binary (its header first).
unsafe extern "C" fn module_from_fatbin_ext(
    fatbin: *const c_void,
    pmod: *mut *mut Module,
    a: *mut c_void,
    b: *mut c_void,
    n: c_uint,
) -> u32 {
    log::debug!("module from fat binary, options {a:?} {b:?} {n}");
    slot("runtime interface: module from fat binary", || {
        // SAFETY: the runtime passes a fat binary (its header first).
        let m = unsafe { crate::abi::module_args::load(fatbin, false) }?;
        // SAFETY: the runtime's output pointer.
        unsafe { out(pmod, m) }
    })
}

/// The device's primary context (it is always active here).
unsafe extern "C" fn primary_context(pctx: *mut CUcontext, dev: c_int) -> u32 {
    slot("runtime interface: primary context", || {
        context::check_device(dev)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(pctx, context::primary() as CUcontext) }
    })
}

/// A notice from the runtime with nothing for the driver to do.
unsafe extern "C" fn runtime_notice(_arg: usize) {}

/// Loads the JIT compilers: the backend has its own.
unsafe extern "C" fn load_compilers() -> u32 {
    0
}

// ---- Tools: TLS and runtime callback hooks (inert) ---------------------------------------

static TOOLS_TLS: Table<4> = {
    let mut t = unknown_slots!(2; 0 1 2 3);
    t[0] = size::<4>();
    Table(t)
};

static TOOLS_HOOKS: Table<7> = {
    let mut t = unknown_slots!(1; 0 1 2 3 4 5 6);
    t[0] = size::<7>();
    t[2] = hooks_buffer_a as Slot;
    t[6] = hooks_buffer_b as Slot;
    Table(t)
};

/// Zeroed memory the runtime keeps its tool-callback state in (no tool is attached).
struct HookBuffer<const N: usize>(std::cell::UnsafeCell<[u32; N]>);

// SAFETY: the library never reads or writes the buffer; it only hands out its address, and
// the runtime synchronizes its own use of it.
unsafe impl<const N: usize> Sync for HookBuffer<N> {}

static HOOKS_A: HookBuffer<1024> = HookBuffer(std::cell::UnsafeCell::new([0; 1024]));
static HOOKS_B: HookBuffer<14> = HookBuffer(std::cell::UnsafeCell::new([0; 14]));

unsafe extern "C" fn hooks_buffer_a(ptr: *mut *mut c_void, len: *mut usize) {
    // SAFETY: the runtime's output pointers (null ones are skipped).
    unsafe { hand_out(&HOOKS_A, ptr, len) }
}

unsafe extern "C" fn hooks_buffer_b(ptr: *mut *mut c_void, len: *mut usize) {
    // SAFETY: as above.
    unsafe { hand_out(&HOOKS_B, ptr, len) }
}

/// Writes a hook buffer's address and length (in 32-bit words).
///
/// # Safety
///
/// `ptr` and `len` are null or valid for writes.
unsafe fn hand_out<const N: usize>(
    b: &'static HookBuffer<N>,
    ptr: *mut *mut c_void,
    len: *mut usize,
) {
    // SAFETY: the caller's contract; each pointer is checked for null by `out`.
    unsafe {
        let _ = out(ptr, b.0.get().cast());
        let _ = out(len, N);
    }
}

// ---- Context-local storage ---------------------------------------------------------------

static CONTEXT_STORAGE: Table<4> = {
    let mut t = unknown_slots!(3; 0 1 2 3);
    t[0] = storage_put as Slot;
    t[1] = storage_delete as Slot;
    t[2] = storage_get as Slot;
    Table(t)
};

unsafe extern "C" fn storage_put(
    ctx: CUcontext,
    key: *mut c_void,
    value: *mut c_void,
    dtor: Option<StorageDtor>,
) -> u32 {
    slot("context-local storage: put", || {
        let stored = Stored {
            value: value as usize,
            dtor,
        };
        context::storage_put(ctx as usize, key as usize, stored)
    })
}

unsafe extern "C" fn storage_delete(ctx: CUcontext, key: *mut c_void) -> u32 {
    slot("context-local storage: delete", || {
        context::storage_delete(ctx as usize, key as usize)
    })
}

unsafe extern "C" fn storage_get(value: *mut *mut c_void, ctx: CUcontext, key: *mut c_void) -> u32 {
    slot("context-local storage: get", || {
        let v = context::storage_get(ctx as usize, key as usize)?;
        // SAFETY: the caller's output pointer.
        unsafe { out(value, v as *mut c_void) }
    })
}

// ---- Context checks ----------------------------------------------------------------------

static CONTEXT_CHECKS: Table<4> = {
    let mut t = unknown_slots!(4; 0 1 2 3);
    t[0] = size::<4>();
    t[2] = context_check as Slot;
    t[3] = context_flags as Slot;
    Table(t)
};

/// Whether anything is unusual about a context: never, here.
unsafe extern "C" fn context_check(
    _ctx: CUcontext,
    unusual: *mut u32,
    _detail: *mut *const c_void,
) -> u32 {
    slot("context checks", || {
        // SAFETY: the caller's output pointer.
        unsafe { out(unusual, 0) }
    })
}

unsafe extern "C" fn context_flags() -> u32 {
    0
}

// ---- Integrity check ---------------------------------------------------------------------

static INTEGRITY_CHECK: Table<3> = {
    let mut t = unknown_slots!(5; 0 1 2);
    t[0] = size::<3>();
    t[1] = integrity_check as Slot;
    Table(t)
};

unsafe extern "C" fn integrity_check(
    version: c_uint,
    unix_seconds: u64,
    result: *mut [u64; 2],
) -> u32 {
    slot("integrity check", || {
        let c = context::connected()?;
        let mut devices = Vec::new();
        for d in 0..c.device_count() {
            let info = c.device_info(d)?;
            // CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, _PCI_BUS_ID, _PCI_DEVICE_ID.
            let pci = [50, 33, 34].map(|a| info.attr(a).unwrap_or(0));
            devices.push(integrity::Device {
                uuid: info.uuid,
                pci,
            });
        }
        let facts = integrity::Facts {
            version,
            unix_seconds,
            driver_version: c.hello.driver_version,
            pid: std::process::id(),
            // SAFETY: no preconditions.
            thread: unsafe { libc::pthread_self() } as u32,
            cudart_table: CUDART_INTERFACE.0.as_ptr() as u64,
            check_table: INTEGRITY_CHECK.0.as_ptr() as u64,
            check_fn: INTEGRITY_CHECK.0[1] as u64,
        };
        // SAFETY: the caller's output pointer.
        unsafe { out(result, integrity::digest(&facts, &devices)) }
    })
}

// ---- Context creation, heap, extended device attributes ----------------------------------

static CTX_CREATE: Table<2> = {
    let mut t = unknown_slots!(6; 0 1);
    t[0] = size::<2>();
    t[1] = ctx_create as Slot;
    Table(t)
};

unsafe extern "C" fn ctx_create(pctx: *mut CUcontext, flags: c_uint, dev: c_int) -> u32 {
    slot("context creation bypass", || {
        super::context::create(pctx, flags, dev)
    })
}

static HEAP_ACCESS: Table<3> = {
    let mut t = unknown_slots!(7; 0 1 2);
    t[0] = size::<3>();
    Table(t)
};

static DEVICE_EXTENDED: Table<26> = {
    let mut t =
        unknown_slots!(8; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25);
    t[0] = size::<26>();
    Table(t)
};

entry_lib! {
    fn cuGetExportTable(table: *mut Slot, id: *const [u8; 16]) -> Result<(), CuError> {
        if table.is_null() || id.is_null() {
            return Err(CuError::INVALID_VALUE);
        }
        // SAFETY: a non-null pointer to the caller's 16-byte UUID.
        let id = unsafe { id.read_unaligned() };
        if let Some(k) = KNOWN.iter().find(|k| k.uuid == id) {
            let (t, len) = (k.table)();
            log::debug!("cuGetExportTable: {} ({len} slots)", k.name);
            // SAFETY: checked non-null; the caller's output pointer.
            return unsafe { out(table, t) };
        }
        if id == ABSENT {
            return Err(CuError::NOT_FOUND);
        }
        log_once((id, usize::MAX), || {
            format!(
                "cuGetExportTable: table {{{}}} is not supported by vcuda; \
                 returning CUDA_ERROR_NOT_SUPPORTED",
                uuid_text(&id)
            )
        });
        Err(CuError::NOT_SUPPORTED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_print_as_cuda_does() {
        assert_eq!(
            uuid_text(&KNOWN[0].uuid),
            "6bd5fb6c-5bf4-e74a-8987-d93912fd9df9"
        );
        assert_eq!(uuid_text(&ABSENT), "f8cff951-2146-8b4e-b9e2-fb469e7c0dd9");
    }

    #[test]
    fn sized_tables_say_their_size() {
        for k in &KNOWN {
            let (t, len) = (k.table)();
            // SAFETY: `t` points to `len` slots of a static table.
            let first = unsafe { *t.cast::<Slot>() } as usize;
            if k.name != "context-local storage" {
                assert_eq!(first, len * size_of::<Slot>(), "{}", k.name);
            }
        }
    }
}
