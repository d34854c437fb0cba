// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Memory access in compiled code: the inline region and alignment check with its slow path
//! through [`rt::h_ptr`], and the call of an ALU instruction's interpreter function.
//!
//! The inline check of an access of `size` bytes (alignment `2^k`, the next power of two) at
//! offset `o` into a buffer of `len` bytes is one comparison: `o.rotate_right(k) < lim` with
//! `lim = (len - size) >> k + 1` (0 when `len < size`). A misaligned offset rotates its low
//! bits to the top and fails, an aligned one compares `o / 2^k` with the last aligned start.
//! Shared memory and kernel parameters have their limits computed once per call, local
//! memory at compile time, the cached global region per access.

use cranelift_codegen::ir::{
    Block, InstBuilder, StackSlotData, StackSlotKind, Value,
    condcodes::IntCC,
    types::{I32, I64},
};

use super::{
    lower::{FLAGS, Lower, REGION_SLOTS},
    rt::{self, FAULTED, off},
};
use crate::{
    ir::{Inst, Space},
    module::PARAM_WINDOW,
};

/// Access sizes whose limits are precomputed (vector accesses included).
pub(super) const SIZES: [u32; 8] = [1, 2, 4, 8, 12, 16, 24, 32];

/// `log2` of the alignment an access of `size` bytes needs.
fn align_shift(size: u32) -> u32 {
    size.next_power_of_two().trailing_zeros()
}

/// The limit for `size`-byte accesses into a buffer of `len` bytes (see the module docs).
pub(super) fn limit_of(len: u64, size: u32) -> u64 {
    match len.checked_sub(size as u64) {
        Some(x) => (x >> align_shift(size)) + 1,
        None => 0,
    }
}

impl Lower<'_, '_> {
    /// The precomputed limit of `space` for `size`-byte accesses, or one computed here.
    fn lim(&mut self, space: Space, size: u32) -> Value {
        if let Some(&(_, _, v)) = self.lims.iter().find(|l| l.0 == space && l.1 == size) {
            return v;
        }
        let len = match space {
            Space::Shared => self.inv.shared_len,
            _ => self.inv.params_len,
        };
        self.limit(len, size)
    }

    /// Emits the limit for `size`-byte accesses into a buffer of `len` bytes.
    pub(super) fn limit(&mut self, len: Value, size: u32) -> Value {
        self.limit_aligned(len, size, align_shift(size))
    }

    /// Emits the limit for `size`-byte accesses aligned to `2^shift` into a buffer of
    /// `len` bytes (offsets rotated right by `shift` compare below it).
    pub(super) fn limit_aligned(&mut self, len: Value, size: u32, shift: u32) -> Value {
        if size == 1 << shift {
            // `(len - size) >> shift + 1` is `len >> shift` when the size is the alignment
            // (`len < size` included): one instruction where most accesses check their
            // region.
            return match shift {
                0 => len,
                _ => self.b.ins().ushr_imm_u(len, shift as i64),
            };
        }
        let big = self
            .b
            .ins()
            .icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, len, size as i64);
        let x = self.b.ins().iadd_imm_s(len, -(size as i64));
        let x = self.b.ins().ushr_imm_u(x, shift as i64);
        let x = self.b.ins().iadd_imm_s(x, 1);
        let zero = self.b.ins().iconst(I64, 0);
        self.b.ins().select(big, x, zero)
    }

    /// The host address of `size` bytes at `a` in `space`: inline when it lies in the
    /// buffer the space's fast path knows, else through [`rt::h_ptr`] (a fault exits).
    pub(super) fn ptr(
        &mut self,
        space: Space,
        a: Value,
        size: u32,
        write: bool,
        line: u32,
    ) -> Value {
        let global = !matches!(space, Space::Shared | Space::Local | Space::Param);
        // Shared and local addresses are 32 bits wide: arithmetic on them wraps.
        let a = if matches!(space, Space::Shared | Space::Local) {
            let a = self.b.ins().ireduce(I32, a);
            self.b.ins().uextend(I64, a)
        } else {
            a
        };
        let (base, o, lim) = match space {
            Space::Shared => (self.inv.shared, a, self.lim(Space::Shared, size)),
            Space::Param if !write => {
                let o = self
                    .b
                    .ins()
                    .iadd_imm_s(a, (PARAM_WINDOW as i64).wrapping_neg());
                (self.inv.params, o, self.lim(Space::Param, size))
            }
            Space::Local | Space::Param => {
                let lim = self
                    .b
                    .ins()
                    .iconst(I64, limit_of(self.frame as u64, size) as i64);
                (self.b.use_var(self.local_t), a, lim)
            }
            _ => {
                // The cached regions' bases are 32-byte aligned (see `h_ptr`), so an
                // offset's alignment is the address's. The newest region is tried first,
                // then the others in turn (each test its own well-predicted branch).
                let join = self.b.create_block();
                let mut next = None;
                for k in 0..REGION_SLOTS {
                    let (gb, gl, gh) = self.region_slot(k);
                    let o = self.b.ins().isub(a, gb);
                    let lim = self.limit(gl, size);
                    let blk = self.fast_or_next(gh, o, lim, size, join);
                    self.enter(blk);
                    next = Some(blk);
                }
                let slow = next.unwrap_or(join);
                return self.slow_ptr(slow, space, a, size, write, line, join, global);
            }
        };
        let join = self.b.create_block();
        let slow = self.fast_or_next(base, o, lim, size, join);
        self.enter(slow);
        self.slow_ptr(slow, space, a, size, write, line, join, global)
    }

    /// Emits the test of offset `o` against limit `lim`: inside, the host address
    /// `base + o` goes to `join` (in `tmp`); else the block returned runs, not yet entered.
    fn fast_or_next(&mut self, base: Value, o: Value, lim: Value, size: u32, join: Block) -> Block {
        let r = self.b.ins().rotr_imm_u(o, align_shift(size) as i64);
        let c = self.b.ins().icmp(IntCC::UnsignedLessThan, r, lim);
        let fast = self.b.create_block();
        let next = self.b.create_block();
        self.b.ins().brif(c, fast, &[], next, &[]);
        self.enter(fast);
        let p = self.b.ins().iadd(base, o);
        self.b.def_var(self.tmp, p);
        self.b.ins().jump(join, &[]);
        next
    }

    /// The slow path of [`Self::ptr`] in block `slow` (cold, entered): the group code bails to
    /// the scalar code; the scalar code asks [`rt::h_ptr`] (which refills the global cache)
    /// and exits on a fault. Continues in `join`, whose `tmp` is the host address.
    #[allow(clippy::too_many_arguments)]
    fn slow_ptr(
        &mut self,
        slow: Block,
        space: Space,
        a: Value,
        size: u32,
        write: bool,
        line: u32,
        join: Block,
        global: bool,
    ) -> Value {
        self.b.set_cold_block(slow);
        if let Some(pc) = self.bail.filter(|_| self.group) {
            // The group code leaves for the scalar code, which makes the call.
            let out = self.bail_block(pc);
            self.b.ins().jump(out, &[]);
            self.enter(join);
            return self.b.use_var(self.tmp);
        }
        self.sync_cur();
        let p = self.call_ptr(rt::h_ptr, space, a, size, write);
        self.b.def_var(self.tmp, p);
        if global {
            self.reload_region();
        }
        let null = self.b.ins().icmp_imm_u(IntCC::Equal, p, 0);
        let bad = self.b.create_block();
        self.b.ins().brif(null, bad, &[], join, &[]);
        self.enter(bad);
        self.b.set_cold_block(bad);
        let l = self.b.ins().iconst(I32, line as i64);
        self.b.ins().store(FLAGS, l, self.tc, off::FAULT_LINE);
        self.exit(FAULTED);
        self.enter(join);
        self.b.use_var(self.tmp)
    }

    /// Calls `f` (`h_ptr` or `h_span`: where `size` bytes at `a` in `space` lie) and returns
    /// its host pointer, null where it found none.
    pub(super) fn call_ptr(
        &mut self,
        f: extern "C" fn(*mut rt::ThreadCtx, u32, u64, u32, u32) -> *mut u8,
        space: Space,
        a: Value,
        size: u32,
        write: bool,
    ) -> Value {
        let sc = self.b.ins().iconst(I32, rt::space_code(space) as i64);
        let sz = self.b.ins().iconst(I32, size as i64);
        let wr = self.b.ins().iconst(I32, write as i64);
        let f = self.b.ins().iconst(I64, f as usize as i64);
        let call = self
            .b
            .ins()
            .call_indirect(self.helpers.ptr, f, &[self.tc, sc, a, sz, wr]);
        self.b.inst_results(call)[0]
    }

    /// Calls the instruction's interpreter function for one lane.
    pub(super) fn alu_call(&mut self, inst: &Inst, vals: &[Value]) -> (Value, Option<Value>) {
        let slot =
            self.b
                .create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 16, 3));
        let out = self.b.ins().stack_addr(I64, slot, 0);
        let zero = self.b.ins().iconst(I64, 0);
        let mut args = vec![
            self.b
                .ins()
                .iconst(I64, inst as *const Inst as usize as i64),
        ];
        for k in 0..4 {
            args.push(vals.get(k).copied().unwrap_or(zero));
        }
        args.push(out);
        let f = self
            .b
            .ins()
            .iconst(I64, rt::h_alu as *const () as usize as i64);
        self.b.ins().call_indirect(self.helpers.alu, f, &args);
        let r0 = self.b.ins().stack_load(I64, I64, slot, 0);
        let r1 = self.b.ins().stack_load(I64, I64, slot, 8);
        (r0, Some(r1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-instruction limit of `Lower::limit_aligned` is `limit_of`'s wherever the
    /// size is its alignment.
    #[test]
    fn a_power_of_two_sizes_limit_is_the_shifted_length() {
        for size in [1u32, 2, 4, 8, 16, 32] {
            for len in (0..200u64).chain([u64::MAX - 40, u64::MAX - 1, u64::MAX]) {
                assert_eq!(
                    limit_of(len, size),
                    len >> align_shift(size),
                    "{len} {size}"
                );
            }
        }
    }
}
