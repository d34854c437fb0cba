// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Translation of one kernel's decoded instructions into a Cranelift function that runs one
//! round of a block: `fn(tc: *mut ThreadCtx) -> u32`.
//!
//! The function loops over the block's threads; each runnable one starts at the kernel's
//! entry or at the resume point after the barrier it waited on, and runs until it exits or
//! reaches a `bar.sync`. There it stores the registers live after the barrier (see
//! `live::live_in`) to its slot of the saved-register array, records the barrier id and resume
//! point, and the loop goes on with the next thread. The block runner
//! ([`super::run_block`]) releases barriers between rounds (the function itself, where every
//! thread waits on barrier 0 at one point: `sched::next_round`), so a block needs no stacks
//! or coroutines. PTX registers become Cranelift variables (all 64 bits wide, as in the
//! interpreter). Loads and stores check the region inline (shared, local and parameter
//! buffers, and the last global region used, kept in registers) and call `rt::h_ptr`
//! otherwise. ALU instructions with a `Native` form are inline (`alu.rs`); the others call
//! their interpreter function.
//!
//! This module holds [`Lower`], the translation's state, with its core helpers (the current
//! lane's variables, blocks, register spills and reloads, value conversions); the other
//! modules extend it with `impl Lower` blocks: [`super::build`] lays the function out and
//! emits the round's prologue, [`super::sched`] picks the threads and groups that run,
//! [`super::body`] emits the instructions in order and the ways out of the group code,
//! [`super::inst`] lowers one instruction, [`super::operand`], [`super::alu`] and
//! [`super::mem`] its operands, inline ALU forms and memory accesses, [`super::group`] and
//! [`super::vector`] the vector group code.

#![allow(clippy::needless_range_loop)] // operand arrays indexed by position, as in the IR

use std::collections::HashMap;

pub(super) use super::rt::REGION_SLOTS;

/// The cached global regions held in variables (registers); the others of the
/// [`REGION_SLOTS`] are read from the `ThreadCtx` when these miss.
pub(super) const REGISTER_SLOTS: usize = 4;

use cranelift_codegen::ir::{
    AbiParam, Block, InstBuilder, MemFlagsData, Signature, StackSlotData, StackSlotKind, Type,
    Value,
    types::{F32, F64, I8, I16, I32, I64},
};
use cranelift_frontend::{FunctionBuilder, Variable};

use super::{
    forms::Form,
    rt::{FAULTED, off},
};
use crate::ir::{Inst, SINK, Space};

/// Why a kernel is not compiled (it then runs interpreted).
pub(crate) type Reject = String;

/// Helper signatures, imported once per function.
#[derive(Clone, Copy)]
pub(super) struct Inv {
    pub(super) shared: Value,
    pub(super) shared_len: Value,
    pub(super) params: Value,
    pub(super) params_len: Value,
    pub(super) syms: Value,
}

pub(super) struct Helpers {
    pub(super) ptr: cranelift_codegen::ir::SigRef,
    pub(super) lanes: cranelift_codegen::ir::SigRef,
    pub(super) atom: cranelift_codegen::ir::SigRef,
    pub(super) alu: cranelift_codegen::ir::SigRef,
    pub(super) sreg: cranelift_codegen::ir::SigRef,
    pub(super) poll: cranelift_codegen::ir::SigRef,
    pub(super) intrinsic: cranelift_codegen::ir::SigRef,
    pub(super) tex: cranelift_codegen::ir::SigRef,
}

pub(super) struct Lower<'a, 'b> {
    pub b: FunctionBuilder<'b>,
    /// The kernel's instructions (`code[0]` is its entry).
    pub code: &'a [Inst],
    pub vars: Vec<Variable>,
    pub tc: Value,
    pub ic: Variable,
    pub(super) tmp: Variable,
    /// The thread being run (its index in the block), its saved registers, its local
    /// memory, its `%tid`: the current lane's (see [`Lane`]).
    pub(super) t: Variable,
    pub(super) regs_t: Variable,
    pub(super) local_t: Variable,
    pub(super) tid: [Variable; 3],
    /// The other lanes' variables: `lanes[k]` for the group's lane `k`, `lanes[LANES]` the
    /// scalar code's; the current lane's live in the fields above (swapped in by `set_lane`).
    /// In vector group code a uniform register's variable is shared by the group's lanes.
    pub(super) lanes: Vec<Lane>,
    pub(super) lane: usize,
    /// Lanes per group (1: the kernel has no group code).
    pub(super) width: usize,
    /// The group code keeps registers in their [`Form`]s (else every register per lane).
    pub(super) vector: bool,
    pub(super) forms: Vec<Form>,
    /// Each register's stride from lane to lane, where it has one (see `forms::strides`).
    pub(super) strides: Vec<Option<i64>>,
    /// A vector register's variables in the group code: `I32X4` values, lanes `4h..4h+3`
    /// in the `h`-th.
    pub(super) vvars: Vec<Option<[Variable; HALVES]>>,
    /// Scratch vector variables.
    pub(super) vtmp: [Variable; HALVES],
    /// Shared memory's limit for the group's vector accesses (see `vector::span_limit`).
    pub(super) span_lim: Value,
    /// In the group code, the instruction whose failed memory check leaves the group for
    /// the scalar code (instead of calling `h_ptr`), and the blocks that do so by index.
    pub(super) bail: Option<usize>,
    pub(super) bails: Vec<(usize, Block)>,
    /// Emitting the group code.
    pub(super) group: bool,
    /// The round's thread counter, and the first thread a group may start at again (threads
    /// below it run one at a time after a group diverged).
    pub(super) t_loop: Variable,
    pub(super) scalar_until: Variable,
    /// The block's per-thread arrays, loaded once per call.
    pub(super) arr: Arrays,
    /// The scalar code's check of thread `t_loop`, and the group code's move to the next group.
    pub(super) check: Block,
    pub(super) gnext: Block,
    /// Guarded branches, exits and barriers: where a group whose lanes disagree hands its
    /// threads to the scalar code, and the registers live there.
    pub(super) divs: Vec<usize>,
    pub(super) divsaved: Vec<Vec<u32>>,
    /// The group code's blocks (swapped with `blocks` while it is emitted).
    pub(super) gblocks: HashMap<usize, Block>,
    /// Where `pin_float` stores.
    pub(super) pin_slot: Option<cranelift_codegen::ir::StackSlot>,
    /// The global region cache (`ThreadCtx::g_base`), in registers: its first
    /// [`REGISTER_SLOTS`] regions (device base, length, host address), newest first, so a
    /// kernel that reaches a few buffers in turn (a vector add's three) finds each of them
    /// inline.
    pub(super) gb: [Variable; REGISTER_SLOTS],
    pub(super) gl: [Variable; REGISTER_SLOTS],
    pub(super) gh: [Variable; REGISTER_SLOTS],
    pub(super) poll_at: Variable,
    /// Block-invariant values loaded once per call.
    pub(super) inv: Inv,
    /// Register values made from floats by `float_bits`, and the floats.
    pub(super) floats: HashMap<Value, (Value, bool)>,
    /// Precomputed access limits (see `mem.rs`) of shared memory and parameters by size.
    pub(super) lims: Vec<(Space, u32, Value)>,
    /// Marks the current thread done / waiting and moves to the next one.
    pub(super) next_thread: Block,
    pub(super) frame: u32,
    pub(super) nregs: u32,
    pub(super) blocks: HashMap<usize, Block>,
    pub(super) leaders: Vec<usize>,
    pub(super) helpers: Helpers,
    /// Resume points: instruction index after each barrier.
    pub resumes: Vec<usize>,
    /// Registers live at each resume point: what a barrier saves and a resume reloads.
    pub(super) saved: Vec<Vec<u32>>,
    /// What the group code may have changed since it loaded the registers, by instruction
    /// (see [`dirty_in`]).
    pub(super) dirty: Vec<Vec<u64>>,
    /// The registers live at each instruction (see `live::live_in`).
    pub(super) live: Vec<Vec<u64>>,
    /// In a masked region (see [`super::masked`]), its lanes: an all-ones `I32X4` lane for
    /// each lane in it, by half.
    pub(super) mask: Option<Vec<Value>>,
    /// Whether the group's threads reached their resume point together (an `i8`), for the
    /// group code's reload blocks.
    pub(super) together: Variable,
    /// The group code's reload block of each resume point (see `sched::group_dispatch`).
    pub(super) greload: Vec<Block>,
    /// By barrier instruction, the resume points the group code reaches it from (without
    /// passing another barrier): where the next group may go straight on (`group_stops`).
    pub(super) chain_from: HashMap<usize, Vec<usize>>,
}

/// The most threads a vector group runs in lockstep (a kernel's group is [`NARROW`] or this,
/// see `build::vector_width`): the round's bookkeeping is paid once per group, and a vector
/// register is `width / 4` SIMD values of four lanes. Group code that keeps every register
/// per lane (each instruction emitted once per lane) runs 4 or 2.
pub(super) const LANES: usize = super::rt::LANES;
/// Threads of the narrower vector group, and the saved-register layout's group where the
/// group code is not vector code.
pub(super) const NARROW: usize = 8;
/// The most `I32X4` values a vector register has (the first [`Lower::halves`] are used).
pub(super) const HALVES: usize = LANES / 4;
/// One lane's variables (see [`Lower::lanes`]).
#[derive(Clone)]
pub(super) struct Lane {
    pub(super) vars: Vec<Variable>,
    pub(super) t: Variable,
    pub(super) regs_t: Variable,
    pub(super) local_t: Variable,
    pub(super) tid: [Variable; 3],
}

/// The block's arrays (see [`super::rt::ThreadCtx`]).
#[derive(Clone, Copy)]
pub(super) struct Arrays {
    pub(super) state: Value,
    pub(super) resumes: Value,
    pub(super) bars: Value,
    pub(super) regs: Value,
    pub(super) local: Value,
    pub(super) tids: [Value; 3],
    pub(super) n: Value,
}

pub(super) fn sig(
    cc: cranelift_codegen::isa::CallConv,
    params: &[Type],
    ret: Option<Type>,
) -> Signature {
    let mut s = Signature::new(cc);
    s.params.extend(params.iter().map(|t| AbiParam::new(*t)));
    if let Some(r) = ret {
        s.returns.push(AbiParam::new(r));
    }
    s
}

pub(super) const FLAGS: MemFlagsData = MemFlagsData::trusted();

/// How the states of a group of `w` threads (2 to 16) are read a word at a time: the
/// words' type, how many, and the word with a 1 in each thread's byte.
pub(super) fn state_words(w: usize) -> (Type, usize, i64) {
    match w {
        2 => (I16, 1, 0x0101),
        4 => (I32, 1, 0x0101_0101),
        _ => (I64, w / 8, 0x0101_0101_0101_0101),
    }
}

impl<'a, 'b> Lower<'a, 'b> {
    /// The threads a group of the saved-register layout holds: the vector group's, else
    /// [`NARROW`] (scalar code and per-lane group code address each thread's slots).
    pub(super) fn layout_group(&self) -> usize {
        if self.vector { self.width } else { NARROW }
    }

    /// Bytes between a thread's saved registers: each is next to its group's other copies.
    pub(super) fn reg_stride(&self) -> u32 {
        self.layout_group() as u32 * 8
    }

    /// `I32X4` values per vector register.
    pub(super) fn halves(&self) -> usize {
        self.width / 4
    }

    /// Makes lane `k`'s variables current (`LANES`: the scalar code's).
    pub(super) fn set_lane(&mut self, k: usize) {
        if k == self.lane {
            return;
        }
        // Put the current lane's variables back in its slot, then take lane `k`'s.
        self.swap_lane(self.lane);
        self.swap_lane(k);
        self.lane = k;
    }

    pub(super) fn swap_lane(&mut self, k: usize) {
        let l = &mut self.lanes[k];
        std::mem::swap(&mut self.vars, &mut l.vars);
        std::mem::swap(&mut self.t, &mut l.t);
        std::mem::swap(&mut self.regs_t, &mut l.regs_t);
        std::mem::swap(&mut self.local_t, &mut l.local_t);
        std::mem::swap(&mut self.tid, &mut l.tid);
    }

    /// Switches to `blk` without sealing it (a branch into it comes later).
    pub(super) fn enter_late(&mut self, blk: Block) {
        self.b.switch_to_block(blk);
    }

    /// Switches to `blk` and seals it: every branch into it has been emitted. Sealing early
    /// lets a variable's use in straight-line code see its definition, not a block parameter.
    pub(super) fn enter(&mut self, blk: Block) {
        self.b.switch_to_block(blk);
        self.b.seal_block(blk);
    }

    pub(super) fn block_at(&self, pc: usize) -> Block {
        self.blocks[&pc]
    }

    pub(super) fn ld_tc(&mut self, ty: Type, o: i32) -> Value {
        self.b.ins().load(ty, FLAGS, self.tc, o)
    }

    /// Slot `k` of the global region cache, `(device base, length, host address)`: from its
    /// registers for the first [`REGISTER_SLOTS`], else read from the `ThreadCtx`.
    pub(super) fn region_slot(&mut self, k: usize) -> (Value, Value, Value) {
        if k < REGISTER_SLOTS {
            return (
                self.b.use_var(self.gb[k]),
                self.b.use_var(self.gl[k]),
                self.b.use_var(self.gh[k]),
            );
        }
        let at = 8 * k as i32;
        (
            self.ld_tc(I64, off::G_BASE + at),
            self.ld_tc(I64, off::G_LEN + at),
            self.ld_tc(I64, off::G_HOST + at),
        )
    }

    /// Loads the global region cache into its registers: at entry, and after `h_ptr`
    /// refilled it.
    pub(super) fn reload_region(&mut self) {
        for k in 0..REGISTER_SLOTS {
            let at = 8 * k as i32;
            for (v, o) in [
                (self.gb[k], off::G_BASE),
                (self.gl[k], off::G_LEN),
                (self.gh[k], off::G_HOST),
            ] {
                let x = self.ld_tc(I64, o + at);
                self.b.def_var(v, x);
            }
        }
    }

    pub(super) fn zero_vars(&mut self) {
        let zero = self.b.ins().iconst(I64, 0);
        for v in self.vars.clone() {
            self.b.def_var(v, zero);
        }
    }

    /// Loads the current lane's registers `regs` from its slot (the others start at zero).
    pub(super) fn reload(&mut self, regs: &[u32]) {
        self.zero_vars();
        let regs_t = self.b.use_var(self.regs_t);
        let stride = self.reg_stride();
        for &r in regs {
            let x = self.b.ins().load(I64, FLAGS, regs_t, (r * stride) as i32);
            self.b.def_var(self.vars[r as usize], x);
        }
    }

    /// Stores the current lane's registers `regs` to its slot.
    pub(super) fn spill(&mut self, regs: &[u32]) {
        let regs_t = self.b.use_var(self.regs_t);
        let stride = self.reg_stride();
        for &r in regs {
            let x = self.b.use_var(self.vars[r as usize]);
            self.b.ins().store(FLAGS, x, regs_t, (r * stride) as i32);
        }
    }

    pub(super) fn def(&mut self, r: u32, v: Value) {
        if r != SINK
            && let Some(var) = self.vars.get(r as usize)
        {
            self.b.def_var(*var, v);
        }
    }

    pub(super) fn mask(&mut self, v: Value, m: u64) -> Value {
        if m == u64::MAX {
            v
        } else {
            self.b.ins().band_imm_u(v, m as i64)
        }
    }

    pub(super) fn tc_u32(&mut self, offset: i32) -> Value {
        let v = self.b.ins().load(I32, FLAGS, self.tc, offset);
        self.b.ins().uextend(I64, v)
    }

    /// A cold exit taken when `cond` (i32 or i8, non-zero) holds: records `line` and returns
    /// [`FAULTED`] (the helper that detected the fault filled in the rest).
    pub(super) fn fault_if(&mut self, cond: Value, line: u32) {
        let bad = self.b.create_block();
        let ok = self.b.create_block();
        self.b.ins().brif(cond, bad, &[], ok, &[]);
        self.enter(bad);
        self.b.set_cold_block(bad);
        let l = self.b.ins().iconst(I32, line as i64);
        self.b.ins().store(FLAGS, l, self.tc, off::FAULT_LINE);
        self.exit(FAULTED);
        self.enter(ok);
    }

    /// A constant of integer type `ty` (narrow constants are stored zero-extended).
    pub(super) fn iconst(&mut self, ty: Type, v: i64) -> Value {
        let bits = ty.bits();
        let v = if bits >= 64 {
            v
        } else {
            v & ((1i64 << bits) - 1)
        };
        self.b.ins().iconst(ty, v)
    }

    pub(super) fn narrow(&mut self, v: Value, bits: u8) -> Value {
        match bits {
            64 => v,
            _ => self.b.ins().ireduce(int_type(bits as u32 / 8), v),
        }
    }

    pub(super) fn widen(&mut self, v: Value, signed: bool) -> Value {
        if self.b.func.dfg.value_type(v) == I64 {
            v
        } else if signed {
            self.b.ins().sextend(I64, v)
        } else {
            self.b.ins().uextend(I64, v)
        }
    }

    pub(super) fn as_float(&mut self, v: Value, f64: bool) -> Value {
        // The float this register value was made from, if it was made here: no round trip
        // through an integer register.
        if let Some(&(f, is64)) = self.floats.get(&v)
            && is64 == f64
        {
            return f;
        }
        if f64 {
            self.b.ins().bitcast(F64, MemFlagsData::new(), v)
        } else {
            let n = self.b.ins().ireduce(I32, v);
            self.b.ins().bitcast(F32, MemFlagsData::new(), n)
        }
    }

    /// Computes a float result here, not where it is first used: the code generator places
    /// pure instructions at their first use, so a chain of floating-point operations fed by
    /// loads would run after all the loads, their values spilled meanwhile. A store of the
    /// result to a scratch slot (an effect, kept in place) pins it to this point.
    pub(super) fn pin_float(&mut self, v: Value) -> Value {
        let Some(&(f, _)) = self.floats.get(&v) else {
            return v;
        };
        let slot = match self.pin_slot {
            Some(s) => s,
            None => {
                let s = self.b.create_sized_stack_slot(StackSlotData::new(
                    StackSlotKind::ExplicitSlot,
                    8,
                    3,
                ));
                self.pin_slot = Some(s);
                s
            }
        };
        self.b.ins().stack_store(I64, f, slot, 0);
        v
    }

    pub(super) fn float_bits(&mut self, v: Value) -> Value {
        let is64 = self.b.func.dfg.value_type(v) == F64;
        let bits = if is64 {
            self.b.ins().bitcast(I64, MemFlagsData::new(), v)
        } else {
            let n = self.b.ins().bitcast(I32, MemFlagsData::new(), v);
            self.b.ins().uextend(I64, n)
        };
        self.floats.insert(bits, (v, is64));
        bits
    }
}

pub(super) fn int_type(bytes: u32) -> Type {
    match bytes {
        1 => I8,
        2 => I16,
        4 => I32,
        _ => I64,
    }
}
