// SPDX-License-Identifier: Apache-2.0 OR MIT
//! What compiled kernels see at run time: [`ThreadCtx`], one thread's view of its block, and
//! the helpers they call for what is not inline (region look-ups, atomics, ALU operations
//! without a native form, clocks, polling). The JIT's `unsafe` code lives here and in
//! [`super::Code`].

use std::sync::atomic::Ordering;

use crate::{
    alu::Lanes,
    error::KernelError,
    grid::Launch,
    ir::{AtomOp, Inst, Op, Space},
    memory::{GlobalMem, MemFault, atomic_apply},
    module::{FUNC_WINDOW, PARAM_WINDOW, SHARED_WINDOW, WINDOW_SIZE},
};

/// Threads a vector group runs in lockstep (see `lower::LANES`, which is this).
pub(crate) const LANES: usize = 16;

/// Thread-instructions between two polls of the launch's stop conditions.
pub(crate) const POLL_INTERVAL: u64 = 1 << 20;

/// The same in a cooperative launch, whose blocks (each on a thread of its own) may spin at a
/// grid barrier waiting for each other: each poll there gives the core away ([`h_poll`]), so
/// a spinning block lets the others run instead of spending its time slice.
const COOPERATIVE_POLL_INTERVAL: u64 = 1 << 12;

/// Thread-instructions between polls in launch `l`.
pub(crate) fn poll_interval(l: &Launch<'_>) -> u64 {
    if l.cooperative() {
        COOPERATIVE_POLL_INTERVAL
    } else {
        POLL_INTERVAL
    }
}

/// Per-worker state the helpers reach through [`ThreadCtx::env`].
pub(crate) struct Env<'a> {
    pub(crate) l: &'a Launch<'a>,
    pub(crate) gmem: GlobalMem<'a>,
    pub(crate) stop: Option<KernelError>,
    pub(crate) block_insts: u64,
    /// Instructions of this worker's finished blocks not yet added to the launch's shared
    /// counters (thread, warp): adding them at every block made the two workers' cores
    /// trade the counters' cache line (8% of a tree reduction's time on two cores).
    pub(crate) pending_insts: (u64, u64),
    /// The texture object `tex` last resolved (handles are nearly always uniform).
    pub(crate) tex: Option<(u64, crate::texture::TexObject)>,
}

/// A thread's state between rounds: 0 runnable (from its start or its resume point), or one
/// of these. Waiting states are odd.
pub(crate) const WAIT: u8 = 1;
pub(crate) const DONE: u8 = 2;
/// Waiting, having reached the barrier with its whole group in the group code (its
/// uniform registers then agree).
pub(crate) const WAIT_GROUP: u8 = 3;

/// Status a compiled kernel returns: every runnable thread ran to its exit or a barrier.
pub(crate) const ROUND: u32 = 0;
/// Not returned: what a thread's `exit` means inside the generated code.
pub(crate) const EXITED: u32 = 1;
/// The thread [`ThreadCtx::cur`] faulted (details in the fault fields).
pub(crate) const FAULTED: u32 = 2;
/// [`h_poll`] asked the launch to stop.
pub(crate) const STOPPED: u32 = 3;

/// Resume points whose barrier arrivals [`ThreadCtx::arrivals`] counts (the first is the
/// entry, never counted).
pub(crate) const ARRIVAL_POINTS: usize = 32;

/// Fault kinds in [`ThreadCtx::fault`].
pub(crate) const FAULT_ILLEGAL: u32 = 1;
pub(crate) const FAULT_MISALIGNED: u32 = 2;

/// Space codes the compiled code passes to [`h_ptr`] and [`h_atom`].
pub(crate) fn space_code(s: Space) -> u32 {
    match s {
        Space::Generic => 0,
        Space::Global => 1,
        Space::Shared => 2,
        Space::Local => 3,
        Space::Const => 4,
        Space::Param => 5,
    }
}

fn space_of(code: u32) -> Space {
    match code {
        1 => Space::Global,
        2 => Space::Shared,
        3 => Space::Local,
        4 => Space::Const,
        5 => Space::Param,
        _ => Space::Generic,
    }
}

pub(crate) const ATOM_OPS: [AtomOp; 11] = [
    AtomOp::Add,
    AtomOp::FAdd,
    AtomOp::Min,
    AtomOp::Max,
    AtomOp::Exch,
    AtomOp::Cas,
    AtomOp::And,
    AtomOp::Or,
    AtomOp::Xor,
    AtomOp::Inc,
    AtomOp::Dec,
];

/// A block's state as compiled code reads it (field offsets are baked into the code); the
/// per-thread parts are arrays indexed by the thread's index in the block.
#[repr(C)]
pub(crate) struct ThreadCtx {
    pub shared: *mut u8,
    pub shared_len: u64,
    /// The current thread's local memory (set by the code as it switches threads).
    pub local: *mut u8,
    pub local_len: u64,
    pub local_base: *mut u8,
    /// Per thread: run state (0 runnable, 1 or 3 at a barrier, 2 exited), resume point,
    /// barrier id, saved registers (a group of `LANES` = 8 threads at a time: register r of
    /// thread t at `(t / 8 * nregs + r) * 8 + t % 8`), and `%tid.x/y/z`.
    pub state: *mut u8,
    pub resumes: *mut u32,
    pub bars: *mut u32,
    pub regs: *mut u64,
    pub tids: [*const u32; 3],
    /// Threads in the block, and the one running.
    pub n: u32,
    pub cur: u32,
    pub params: *const u8,
    pub params_len: u64,
    pub syms: *const u64,
    /// The global regions [`h_ptr`] resolved last, newest first: device base, length, host
    /// address each (length 0: empty). The compiled code keeps a copy in registers and tests
    /// an access against each before it calls `h_ptr`; the cache lives on across the calls
    /// that run a worker's blocks.
    pub g_base: [u64; REGION_SLOTS],
    pub g_len: [u64; REGION_SLOTS],
    pub g_host: [*mut u8; REGION_SLOTS],
    pub ntid: [u32; 3],
    pub ctaid: [u32; 3],
    pub nctaid: [u32; 3],
    pub smid: u32,
    pub nsmid: u32,
    pub dyn_smem: u32,
    pub total_smem: u32,
    pub fault: u32,
    pub fault_size: u32,
    pub fault_write: u32,
    pub fault_line: u32,
    pub fault_addr: u64,
    /// Thread-instructions executed so far (stored at every return).
    pub icount: u64,
    /// The compiled code calls [`h_poll`] at a loop's back edge once `icount` reaches this.
    pub poll_at: u64,
    pub env: *mut Env<'static>,
    /// Barrier ids (a bit each) the runner released for this round: a thread waiting on one
    /// runs again.
    pub released: u32,
    /// Threads that exited, and threads waiting on each barrier id since its last release
    /// (the compiled code counts them; the runner releases a barrier all live threads wait on).
    pub done: u32,
    pub waiting: [u32; 16],
    /// This round's barrier arrivals by resume point (index + 1; points from
    /// [`ARRIVAL_POINTS`] on are not counted), threads at a time.
    pub arrivals: [u32; ARRIVAL_POINTS],
    /// Set by the runner for a round (0: not set): every thread of the block is runnable at
    /// resume value `all_at - 1` (0: the entry, in a block's first round; else a barrier's
    /// resume point, index + 1, that every thread reached and whose barrier is released),
    /// so the group code takes each group as runnable there without reading the per-thread
    /// resume points and barriers. Whether a group's threads reached it together in the
    /// group code still comes from their states.
    pub all_at: u32,
}

/// Byte offsets of [`ThreadCtx`] fields, for the code generator.
pub(crate) mod off {
    use std::mem::offset_of;

    use crate::jit::rt::ThreadCtx;
    pub const SHARED: i32 = offset_of!(ThreadCtx, shared) as i32;
    pub const SHARED_LEN: i32 = offset_of!(ThreadCtx, shared_len) as i32;
    pub const LOCAL: i32 = offset_of!(ThreadCtx, local) as i32;
    pub const PARAMS: i32 = offset_of!(ThreadCtx, params) as i32;
    pub const PARAMS_LEN: i32 = offset_of!(ThreadCtx, params_len) as i32;
    pub const SYMS: i32 = offset_of!(ThreadCtx, syms) as i32;
    pub const G_BASE: i32 = offset_of!(ThreadCtx, g_base) as i32;
    pub const G_LEN: i32 = offset_of!(ThreadCtx, g_len) as i32;
    pub const G_HOST: i32 = offset_of!(ThreadCtx, g_host) as i32;
    pub const LOCAL_BASE: i32 = offset_of!(ThreadCtx, local_base) as i32;
    pub const STATE: i32 = offset_of!(ThreadCtx, state) as i32;
    pub const RESUMES: i32 = offset_of!(ThreadCtx, resumes) as i32;
    pub const BARS: i32 = offset_of!(ThreadCtx, bars) as i32;
    pub const REGS: i32 = offset_of!(ThreadCtx, regs) as i32;
    pub const TIDS: i32 = offset_of!(ThreadCtx, tids) as i32;
    pub const N: i32 = offset_of!(ThreadCtx, n) as i32;
    pub const CUR: i32 = offset_of!(ThreadCtx, cur) as i32;
    pub const NTID: i32 = offset_of!(ThreadCtx, ntid) as i32;
    pub const CTAID: i32 = offset_of!(ThreadCtx, ctaid) as i32;
    pub const NCTAID: i32 = offset_of!(ThreadCtx, nctaid) as i32;
    pub const SMID: i32 = offset_of!(ThreadCtx, smid) as i32;
    pub const NSMID: i32 = offset_of!(ThreadCtx, nsmid) as i32;
    pub const DYN_SMEM: i32 = offset_of!(ThreadCtx, dyn_smem) as i32;
    pub const TOTAL_SMEM: i32 = offset_of!(ThreadCtx, total_smem) as i32;
    pub const FAULT: i32 = offset_of!(ThreadCtx, fault) as i32;
    pub const FAULT_LINE: i32 = offset_of!(ThreadCtx, fault_line) as i32;
    pub const ICOUNT: i32 = offset_of!(ThreadCtx, icount) as i32;
    pub const POLL_AT: i32 = offset_of!(ThreadCtx, poll_at) as i32;
    pub const RELEASED: i32 = offset_of!(ThreadCtx, released) as i32;
    pub const DONE: i32 = offset_of!(ThreadCtx, done) as i32;
    pub const WAITING: i32 = offset_of!(ThreadCtx, waiting) as i32;
    pub const ARRIVALS: i32 = offset_of!(ThreadCtx, arrivals) as i32;
    pub const ALL_AT: i32 = offset_of!(ThreadCtx, all_at) as i32;
}

/// Global regions the compiled code's cache holds (see [`ThreadCtx::g_base`]): the first
/// `REGISTER_SLOTS` (`lower.rs`) in registers, the rest read from here when those miss, so
/// that a kernel reaching six buffers in turn (SRAD's) finds every one of them inline
/// without holding them all in registers.
pub(crate) const REGION_SLOTS: usize = 8;

impl ThreadCtx {
    /// Makes `(base, len, host)` the newest cached region: the others move down one (the
    /// oldest leaves), or, if it was cached already, it moves to the front.
    fn fill_region(&mut self, base: u64, len: u64, host: *mut u8) {
        let at = (0..REGION_SLOTS)
            .find(|&k| self.g_base[k] == base && self.g_len[k] == len)
            .unwrap_or(REGION_SLOTS - 1);
        for k in (1..=at).rev() {
            self.g_base[k] = self.g_base[k - 1];
            self.g_len[k] = self.g_len[k - 1];
            self.g_host[k] = self.g_host[k - 1];
        }
        self.g_base[0] = base;
        self.g_len[0] = len;
        self.g_host[0] = host;
    }

    /// Where the `size` bytes at `addr` lie in one of the cached global regions (the newest
    /// first), if one holds them all.
    fn cached(&self, addr: u64, size: u64) -> Option<*mut u8> {
        (0..REGION_SLOTS).find_map(|k| {
            let off = addr.wrapping_sub(self.g_base[k]);
            (self.g_len[k] >= size && off <= self.g_len[k] - size)
                .then(|| self.g_host[k].wrapping_add(off as usize))
        })
    }

    pub(crate) fn new() -> ThreadCtx {
        ThreadCtx {
            shared: std::ptr::null_mut(),
            shared_len: 0,
            local: std::ptr::null_mut(),
            local_len: 0,
            local_base: std::ptr::null_mut(),
            state: std::ptr::null_mut(),
            resumes: std::ptr::null_mut(),
            bars: std::ptr::null_mut(),
            regs: std::ptr::null_mut(),
            tids: [std::ptr::null(); 3],
            n: 0,
            cur: 0,
            params: std::ptr::null(),
            params_len: 0,
            syms: std::ptr::null(),
            g_base: [0; REGION_SLOTS],
            g_len: [0; REGION_SLOTS],
            g_host: [std::ptr::null_mut(); REGION_SLOTS],
            ntid: [0; 3],
            ctaid: [0; 3],
            nctaid: [0; 3],
            smid: 0,
            nsmid: 0,
            dyn_smem: 0,
            total_smem: 0,
            fault: 0,
            fault_size: 0,
            fault_write: 0,
            fault_line: 0,
            fault_addr: 0,
            icount: 0,
            poll_at: 0,
            env: std::ptr::null_mut(),
            released: 0,
            done: 0,
            waiting: [0; 16],
            arrivals: [0; ARRIVAL_POINTS],
            all_at: 0,
        }
    }

    /// `%tid` of the thread running (`cur`).
    fn cur_tid(&self) -> [u32; 3] {
        let t = self.cur as usize;
        self.tids.map(|p| {
            if t < self.n as usize {
                // SAFETY: `tids` point at arrays of `n` entries, and `t < n`.
                unsafe { *p.add(t) }
            } else {
                0
            }
        })
    }

    fn set_fault(&mut self, kind: u32, addr: u64, size: u32, write: bool) {
        self.fault = kind;
        self.fault_addr = addr;
        self.fault_size = size;
        self.fault_write = write as u32;
    }
}

/// `buf[off..off + size]` as a pointer, if inside.
fn inside(buf: *mut u8, len: u64, off: u64, size: u64) -> Option<*mut u8> {
    (off < len && size <= len - off && !buf.is_null()).then(|| buf.wrapping_add(off as usize))
}

/// Where `size` bytes at `addr` in `space` live, or null after recording the fault. Fills the
/// global region cache.
pub(crate) extern "C" fn h_ptr(
    tc: *mut ThreadCtx,
    space: u32,
    addr: u64,
    size: u32,
    write: u32,
) -> *mut u8 {
    // SAFETY: compiled code passes the ThreadCtx the runner lent it for this call; nothing
    // else references it while the thread runs.
    let tc = unsafe { &mut *tc };
    let write = write != 0;
    let align = (size as u64).next_power_of_two();
    if addr & (align - 1) != 0 {
        tc.set_fault(FAULT_MISALIGNED, addr, size, write);
        return std::ptr::null_mut();
    }
    match resolve(tc, space, addr, size, write) {
        Some(p) => p,
        None => {
            tc.set_fault(FAULT_ILLEGAL, addr, size, write);
            std::ptr::null_mut()
        }
    }
}

/// Where the `size` bytes at `addr` (4-byte aligned) lie in one of the cached global regions,
/// or null (nothing recorded, the region cache unchanged): a vector group's span whose
/// region is not among those the compiled code holds in registers.
pub(crate) extern "C" fn h_span(
    tc: *mut ThreadCtx,
    _space: u32,
    addr: u64,
    size: u32,
    _write: u32,
) -> *mut u8 {
    // SAFETY: as in `h_ptr`.
    let tc = unsafe { &*tc };
    if addr & 3 != 0 {
        return std::ptr::null_mut();
    }
    tc.cached(addr, size as u64).unwrap_or(std::ptr::null_mut())
}

/// The host addresses of a vector group's `LANES` 4-byte accesses in space `space` (global,
/// generic or constant memory) at the addresses `addrs` points at, written where `out`
/// points: 1, or 0 (no fault recorded: the scalar code redoes the access and reports it)
/// where a lane's access is misaligned or outside the session's memory. Looks at the
/// cached regions first, then refills the cache as [`h_ptr`] does.
pub(crate) extern "C" fn h_lanes(
    tc: *mut ThreadCtx,
    space: u32,
    addrs: *const u64,
    write: u32,
    out: *mut u64,
) -> u32 {
    // SAFETY: as in `h_ptr`.
    let tc = unsafe { &mut *tc };
    // The group's lanes (at most `LANES`) above the write flag.
    let n = ((write >> 8) as usize).min(LANES);
    let write = write & 1;
    // SAFETY: the compiled code passes a stack slot of `n` addresses followed by room for
    // `n` results (`Lower::lane_ptrs`), distinct from the ThreadCtx.
    let (addrs, out) = unsafe {
        (
            std::slice::from_raw_parts(addrs, n),
            std::slice::from_raw_parts_mut(out, n),
        )
    };
    for (&a, o) in addrs.iter().zip(out.iter_mut()) {
        if a & 3 != 0 {
            return 0;
        }
        match tc
            .cached(a, 4)
            .or_else(|| resolve(tc, space, a, 4, write != 0))
        {
            Some(p) => *o = p as u64,
            None => return 0,
        }
    }
    1
}

/// The host address of `size` bytes at `addr` (aligned) in `space`, refilling the global
/// region cache; `None` outside what the launch may reach.
fn resolve(tc: &mut ThreadCtx, space: u32, addr: u64, size: u32, write: bool) -> Option<*mut u8> {
    let (space, a) = match space_of(space) {
        Space::Generic => crate::access::classify(addr),
        s => (s, crate::access::window_addr(s, addr)),
    };
    let size64 = size as u64;
    match space {
        Space::Global | Space::Generic | Space::Const if !(write && space == Space::Const) => {
            // SAFETY: the runner sets `env` to its live Env before running compiled code.
            let env = unsafe { &mut *tc.env };
            env.gmem.region_of(a, size64).map(|(base, len, host)| {
                let end = base.saturating_add(len);
                // The compiled check needs a 32-byte aligned base (see `mem.rs`).
                if (end <= SHARED_WINDOW || base >= FUNC_WINDOW + WINDOW_SIZE)
                    && base.is_multiple_of(32)
                {
                    tc.fill_region(base, len, host);
                }
                host.wrapping_add(a.wrapping_sub(base) as usize)
            })
        }
        Space::Shared => inside(tc.shared, tc.shared_len, a, size64),
        Space::Local => inside(tc.local, tc.local_len, a, size64),
        Space::Param if a >= PARAM_WINDOW && !write => inside(
            tc.params as *mut u8,
            tc.params_len,
            a - PARAM_WINDOW,
            size64,
        ),
        Space::Param if a < PARAM_WINDOW => inside(tc.local, tc.local_len, a, size64),
        _ => None,
    }
}

/// An atomic read-modify-write; returns the old value (0 after recording a fault).
/// `packed`: space code | op index << 4 | size << 8 | signed << 16.
pub(crate) extern "C" fn h_atom(tc: *mut ThreadCtx, packed: u32, addr: u64, b: u64, c: u64) -> u64 {
    // SAFETY: as in `h_ptr`.
    let tc = unsafe { &mut *tc };
    let op = ATOM_OPS[((packed >> 4) & 0xf) as usize % ATOM_OPS.len()];
    let size = (packed >> 8) & 0xff;
    let signed = (packed >> 16) & 1 != 0;
    if size == 0 || !addr.is_multiple_of(size as u64) {
        tc.set_fault(FAULT_MISALIGNED, addr, size, true);
        return 0;
    }
    let (space, a) = match space_of(packed & 0xf) {
        Space::Generic => crate::access::classify(addr),
        s => (s, crate::access::window_addr(s, addr)),
    };
    let buf = match space {
        Space::Global | Space::Generic => {
            // SAFETY: as in `h_ptr`.
            let env = unsafe { &mut *tc.env };
            return match env.gmem.atomic(a, size, op, signed, b, c) {
                Ok(v) => v,
                Err(MemFault::HostMisaligned) => {
                    tc.set_fault(FAULT_MISALIGNED, addr, size, true);
                    0
                }
                Err(MemFault::Illegal) => {
                    tc.set_fault(FAULT_ILLEGAL, addr, size, true);
                    0
                }
            };
        }
        Space::Shared => inside(tc.shared, tc.shared_len, a, size as u64),
        Space::Local => inside(tc.local, tc.local_len, a, size as u64),
        _ => None,
    };
    let Some(p) = buf else {
        tc.set_fault(FAULT_ILLEGAL, addr, size, true);
        return 0;
    };
    // Shared and local memory belong to the block, whose threads run one at a time on this
    // OS thread: a plain read-modify-write is atomic.
    let mut x = [0u8; 8];
    let n = (size as usize).min(8);
    // SAFETY: `inside` checked that `p..p + size` lies in the block's buffer.
    unsafe { std::ptr::copy_nonoverlapping(p, x.as_mut_ptr(), n) };
    let old = u64::from_le_bytes(x);
    let new = atomic_apply(op, size, signed, old, b, c).to_le_bytes();
    // SAFETY: as above.
    unsafe { std::ptr::copy_nonoverlapping(new.as_ptr(), p, n) };
    old
}

/// Runs the `AluFn` of ALU instruction `inst` for one thread: `out[0..2]` gets its results.
pub(crate) extern "C" fn h_alu(inst: *const Inst, a: u64, b: u64, c: u64, d: u64, out: *mut u64) {
    // SAFETY: `inst` points into the module's code, which outlives its compiled kernels.
    let inst = unsafe { &*inst };
    let Op::Alu { f, ctx, .. } = &inst.op else {
        return;
    };
    // One lane: the function computes the first only (not the warp's 32), in buffers kept
    // per thread (lanes past the first are never read).
    let one = crate::alu::AluCtx { lanes: 1, ..*ctx };
    let (x, y) = ALU_LANES.with_borrow_mut(|(ins, o)| {
        ins[0][0] = a;
        ins[1][0] = b;
        ins[2][0] = c;
        ins[3][0] = d;
        f(&one, &[&ins[0], &ins[1], &ins[2], &ins[3]], o);
        (o[0][0], o[1][0])
    });
    // SAFETY: compiled code passes a 16-byte stack slot.
    unsafe {
        *out = x;
        *out.add(1) = y;
    }
}

thread_local! {
    /// [`h_alu`]'s operand and result lanes.
    static ALU_LANES: std::cell::RefCell<([Lanes; 4], [Lanes; 2])> =
        const { std::cell::RefCell::new(([[0; 32]; 4], [[0; 32]; 2])) };
}

/// Special registers that are not constants of the block: codes 0 %clock, 1 %clock_hi,
/// 2 %clock64, 3 %globaltimer, 4 %globaltimer_lo, 5 %globaltimer_hi.
pub(crate) extern "C" fn h_sreg(tc: *mut ThreadCtx, code: u32) -> u64 {
    // SAFETY: as in `h_ptr`.
    let env = unsafe { &*(*tc).env };
    let l = env.l;
    let el = l.start.elapsed().as_nanos() as u64;
    let t = l.timer0.wrapping_add(el);
    match code {
        0 => el & 0xffff_ffff,
        1 => (el >> 32) & 0xffff_ffff,
        2 => el,
        3 => t,
        4 => t & 0xffff_ffff,
        5 => t >> 32,
        6 => l.cfg.grid_workspace >> 32,
        _ => l.cfg.grid_workspace & 0xffff_ffff,
    }
}

/// `nanosleep`: gives the thread's core away (see [`crate::ir::Op::Yield`]); always 0.
pub(crate) extern "C" fn h_yield(_tc: *mut ThreadCtx) -> u32 {
    std::thread::yield_now();
    0
}

/// Called at loop back edges every so many instructions: 1 when the launch must stop
/// (cancelled, timed out, over its instruction limit, or another block failed).
pub(crate) extern "C" fn h_poll(tc: *mut ThreadCtx) -> u32 {
    // SAFETY: as in `h_ptr`.
    let tc = unsafe { &mut *tc };
    // SAFETY: as in `h_ptr`.
    let env = unsafe { &mut *tc.env };
    let l = env.l;
    tc.poll_at = tc.icount.saturating_add(poll_interval(l));
    if l.cooperative() {
        // Perhaps spinning at a grid barrier: let the blocks it waits for run.
        std::thread::yield_now();
    }
    if l.abort.load(Ordering::Relaxed) {
        return 1;
    }
    if let Err(e) = l.check_stop() {
        env.stop = Some(e);
        return 1;
    }
    if let Some(limit) = l.opts.instruction_limit
        && l.insts
            .load(Ordering::Relaxed)
            .saturating_add(env.pending_insts.0)
            .saturating_add(env.block_insts)
            .saturating_add(tc.icount)
            > limit
    {
        env.stop = Some(crate::error::KernelError::InstructionLimit { limit });
        return 1;
    }
    0
}

/// Fault kinds beyond memory faults.
pub(crate) const FAULT_TRAP: u32 = 3;
pub(crate) const FAULT_BRKPT: u32 = 4;

/// A `size`-byte read at generic address `addr` for the current thread, if mapped.
fn read_generic(tc: &mut ThreadCtx, addr: u64, size: u32) -> Option<u64> {
    let p = h_ptr(tc, 0, addr, size, 0);
    if p.is_null() {
        tc.fault = 0;
        return None;
    }
    let mut x = [0u8; 8];
    // SAFETY: `h_ptr` returned a pointer to `size` (at most 8) readable bytes.
    unsafe { std::ptr::copy_nonoverlapping(p, x.as_mut_ptr(), (size as usize).min(8)) };
    Some(u64::from_le_bytes(x))
}

fn read_string(tc: &mut ThreadCtx, addr: u64, max: usize) -> Option<Vec<u8>> {
    let mut s = Vec::new();
    for k in 0..max as u64 {
        let b = read_generic(tc, addr.wrapping_add(k), 1)? as u8;
        if b == 0 {
            break;
        }
        s.push(b);
    }
    Some(s)
}

/// `vprintf` and `__assertfail` for the current thread: `args` holds the values of the
/// call's arguments. Returns 0, or [`FAULTED`] / [`STOPPED`] with the fault or the
/// assertion recorded.
/// A `tex`/`tld4` of the current thread: `args` holds the handle, the three coordinate
/// values and the layer value, `out` receives the four results. 0, or [`FAULTED`] (a
/// texel outside device memory) or [`STOPPED`] (a handle that names no texture object:
/// the error is in the launch's stop slot), with the fault's line recorded.
pub(crate) extern "C" fn h_tex(
    tc: *mut ThreadCtx,
    inst: *const Inst,
    args: *const u64,
    out: *mut u64,
) -> u32 {
    // SAFETY: as in `h_ptr`; `inst` points into the compiled kernel's instructions, `args`
    // at a stack slot of 12 values and `out` at one of 4.
    let (tc, inst, av, out) = unsafe {
        (
            &mut *tc,
            &*inst,
            std::slice::from_raw_parts(args, 12),
            std::slice::from_raw_parts_mut(out, 4),
        )
    };
    let Op::Tex(op) = &inst.op else {
        return 0;
    };
    // SAFETY: as in `h_ptr`.
    let env = unsafe { &mut *tc.env };
    let handle = av[0];
    let t = match env.tex {
        Some((h, t)) if h == handle => Some(t),
        _ => env.l.mem.texture(handle).filter(|t| !t.surface),
    };
    if let Some(t) = t {
        env.tex = Some((handle, t));
    }
    let Some(t) = t else {
        let name = if op.gather.is_some() { "tld4" } else { "tex" };
        env.stop = Some(invalid_handle(tc, handle, false, name, inst.line));
        return STOPPED;
    };
    let gmem = &mut env.gmem;
    let mut load = |a: u64, s: u32| {
        gmem.load(a, s)
            .map_err(|_| crate::sampler::Unmapped { addr: a, size: s })
    };
    let mut lod = [0u64; 7];
    lod.copy_from_slice(&av[5..12]);
    match crate::access::tex_fetch(&t, op, [av[1], av[2], av[3]], av[4], lod, &mut load) {
        Ok(r) => {
            for (o, v) in out.iter_mut().zip(r) {
                *o = v as u64;
            }
            0
        }
        Err(u) => {
            tc.set_fault(FAULT_ILLEGAL, u.addr, u.size, false);
            tc.fault_line = inst.line;
            FAULTED
        }
    }
}

/// A `suld.b`/`sust.b` of the current thread: `args` holds the handle, three coordinate
/// values and four store values; a load's elements go to `out`. 0, [`FAULTED`] (outside the
/// surface in trap mode, outside device memory, or misaligned) or [`STOPPED`] (a handle that
/// names no surface object), with the fault's line recorded.
pub(crate) extern "C" fn h_surf(
    tc: *mut ThreadCtx,
    inst: *const Inst,
    args: *const u64,
    out: *mut u64,
) -> u32 {
    // SAFETY: as in `h_ptr`; `inst` points into the compiled kernel's instructions, `args`
    // at a stack slot of 8 values and `out` at one of 4.
    let (tc, inst, av, out) = unsafe {
        (
            &mut *tc,
            &*inst,
            std::slice::from_raw_parts(args, 8),
            std::slice::from_raw_parts_mut(out, 4),
        )
    };
    let Op::Surf(op) = &inst.op else {
        return 0;
    };
    // SAFETY: as in `h_ptr`.
    let env = unsafe { &mut *tc.env };
    let handle = av[0];
    let Some(t) = env.l.mem.texture(handle).filter(|t| t.surface) else {
        let name = if op.store { "sust" } else { "suld" };
        env.stop = Some(invalid_handle(tc, handle, true, name, inst.line));
        return STOPPED;
    };
    let vals = [av[4], av[5], av[6], av[7]];
    match crate::access::surf_access(&t, op, [av[1], av[2], av[3]], vals, &mut env.gmem) {
        Ok(r) => {
            out.copy_from_slice(&r);
            0
        }
        Err(e) => {
            match e {
                crate::access::SurfError::Illegal { addr, size } => {
                    tc.set_fault(FAULT_ILLEGAL, addr, size, op.store)
                }
                crate::access::SurfError::Misaligned { addr, size } => {
                    tc.set_fault(FAULT_MISALIGNED, addr, size, op.store)
                }
            }
            tc.fault_line = inst.line;
            FAULTED
        }
    }
}

/// A `txq`/`suq` of the current thread: `args` holds the handle; the queried value goes to
/// `out[0]`. 0, or [`STOPPED`] (a handle that names no object of the instruction's kind:
/// the error is in the launch's stop slot).
pub(crate) extern "C" fn h_txq(
    tc: *mut ThreadCtx,
    inst: *const Inst,
    args: *const u64,
    out: *mut u64,
) -> u32 {
    // SAFETY: as in `h_ptr`; `inst` points into the compiled kernel's instructions, `args`
    // at a stack slot of 1 value and `out` at one of 4.
    let (tc, inst, handle, out) = unsafe {
        (
            &mut *tc,
            &*inst,
            *args,
            std::slice::from_raw_parts_mut(out, 4),
        )
    };
    let Op::TexQuery { surface, what, .. } = &inst.op else {
        return 0;
    };
    // SAFETY: as in `h_ptr`.
    let env = unsafe { &mut *tc.env };
    let Some(t) = env.l.mem.texture(handle).filter(|t| t.surface == *surface) else {
        let name = if *surface { "suq" } else { "txq" };
        env.stop = Some(invalid_handle(tc, handle, *surface, name, inst.line));
        return STOPPED;
    };
    out[0] = t.query(*what) as u64;
    0
}

/// The error of a texture or surface instruction (`instruction`) at `line` whose handle
/// names no object of its kind, located at the running thread.
fn invalid_handle(
    tc: &ThreadCtx,
    handle: u64,
    surface: bool,
    instruction: &str,
    line: u32,
) -> crate::error::KernelError {
    crate::error::KernelError::InvalidHandle {
        handle,
        surface,
        instruction: instruction.into(),
        loc: crate::error::Location {
            block: tc.ctaid,
            thread: tc.cur_tid(),
            line,
        },
    }
}

pub(crate) extern "C" fn h_intrinsic(
    tc: *mut ThreadCtx,
    inst: *const Inst,
    args: *const u64,
) -> u32 {
    // SAFETY: as in `h_ptr`; `inst` points into the compiled kernel's instructions, `args`
    // at a stack slot of 8 values.
    let (tc, inst, av) = unsafe { (&mut *tc, &*inst, std::slice::from_raw_parts(args, 8)) };
    let Op::Intrinsic { which, ret, .. } = &inst.op else {
        return 0;
    };
    let arg = |k: usize| av.get(k).copied().unwrap_or(0);
    match which {
        crate::ir::Intrinsic::Vprintf => {
            let Some(fmt) = read_string(tc, arg(0), 1 << 16) else {
                tc.set_fault(FAULT_ILLEGAL, arg(0), 1, false);
                return FAULTED;
            };
            struct A<'t> {
                tc: &'t mut ThreadCtx,
                base: u64,
            }
            impl crate::printf::Args for A<'_> {
                fn arg(&mut self, offset: u64, size: u32) -> Option<u64> {
                    read_generic(self.tc, self.base.wrapping_add(offset), size)
                }
                fn string(&mut self, addr: u64, max: usize) -> Option<Vec<u8>> {
                    read_string(self.tc, addr, max)
                }
            }
            let mut a = A { tc, base: arg(1) };
            let Some((text, n)) = crate::printf::format(&fmt, &mut a) else {
                tc.set_fault(FAULT_ILLEGAL, arg(1), 8, false);
                return FAULTED;
            };
            // SAFETY: as in `h_ptr`.
            let env = unsafe { &*tc.env };
            env.l.out.print(&text);
            if let Some(r) = ret
                && let Some(p) = inside(tc.local, tc.local_len, *r as u64, 4)
            {
                // SAFETY: `inside` checked the 4 bytes lie in this thread's local memory.
                unsafe { std::ptr::copy_nonoverlapping(n.to_le_bytes().as_ptr(), p, 4) };
            }
            0
        }
        crate::ir::Intrinsic::Malloc => {
            // SAFETY: as in `h_ptr`.
            let env = unsafe { &*tc.env };
            let p = env.l.mem.malloc(arg(0)).unwrap_or(0);
            if let Some(r) = ret
                && let Some(d) = inside(tc.local, tc.local_len, *r as u64, 8)
            {
                // SAFETY: `inside` checked the 8 bytes lie in this thread's local memory.
                unsafe { std::ptr::copy_nonoverlapping(p.to_le_bytes().as_ptr(), d, 8) };
            }
            0
        }
        crate::ir::Intrinsic::Free => {
            if arg(0) != 0 {
                // SAFETY: as in `h_ptr`.
                let env = unsafe { &*tc.env };
                env.l.mem.free(arg(0));
            }
            0
        }
        crate::ir::Intrinsic::AssertFail => {
            let mut s = |a: u64| {
                read_string(tc, a, 4096)
                    .map(|v| String::from_utf8_lossy(&v).into_owned())
                    .unwrap_or_default()
            };
            let (msg, file, func) = (s(arg(0)), s(arg(1)), s(arg(3)));
            let tid = tc.cur_tid();
            let [bx, by, bz] = tc.ctaid;
            let message = format!(
                "{file}:{}: {func}: block: [{bx},{by},{bz}], thread: [{},{},{}] Assertion `{msg}` failed.",
                arg(2) as u32,
                tid[0],
                tid[1],
                tid[2]
            );
            // SAFETY: as in `h_ptr`.
            let env = unsafe { &mut *tc.env };
            env.stop = Some(crate::error::KernelError::Assert { message });
            STOPPED
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cached(tc: &ThreadCtx) -> Vec<u64> {
        tc.g_base.to_vec()
    }

    #[test]
    fn a_filled_region_goes_to_the_front_and_the_oldest_leaves() {
        let mut tc = ThreadCtx::new();
        let host = std::ptr::null_mut();
        let bases: Vec<u64> = (1..=REGION_SLOTS as u64).map(|k| k * 0x100).collect();
        for &base in &bases {
            tc.fill_region(base, 0x40, host);
        }
        let newest_first: Vec<u64> = bases.iter().rev().copied().collect();
        assert_eq!(cached(&tc), newest_first);
        // Cached already: moves to the front, nothing leaves.
        tc.fill_region(0x200, 0x40, host);
        let mut want = vec![0x200];
        want.extend(newest_first.iter().filter(|&&b| b != 0x200));
        assert_eq!(cached(&tc), want);
        // New: the oldest leaves.
        tc.fill_region(0x10000, 0x40, host);
        want.insert(0, 0x10000);
        want.pop();
        assert_eq!(cached(&tc), want);
        assert_eq!(tc.g_len, [0x40; REGION_SLOTS]);
    }
}
