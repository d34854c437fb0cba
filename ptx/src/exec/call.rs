// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Calls and returns (per-lane frames in local memory, argument and return-value copies,
//! registers saved across recursion) and the `vprintf` / `__assertfail` intrinsics.

use super::{
    access::{Fault, rd, wr},
    ctx::Ctx,
    warp::{Frame, Warp, lanes},
};
use crate::{error::KernelError, ir::*, module::FUNC_WINDOW, printf};

impl<'a> Ctx<'a> {
    pub(super) fn call(
        &mut self,
        w: &mut Warp,
        mask: u32,
        target: &Src,
        args: &[ArgCopy],
        line: u32,
    ) -> Result<(), KernelError> {
        let l = self.l;
        let funcs = &l.module.funcs;
        let ret_pc = w.pc + 1;
        if mask == 0 {
            w.pc = ret_pc;
            return Ok(());
        }
        let caller_size = funcs.get(w.func as usize).map_or(0, |f| f.frame_size);
        for lane in lanes(mask) {
            // Each lane may call a different function (virtual calls).
            let fa = self.val(w, target, lane);
            let func = fa.wrapping_sub(FUNC_WINDOW);
            let callee = funcs.get(func as usize).filter(|f| {
                fa >= FUNC_WINDOW
                    && f.defined
                    && !f.is_kernel
                    && l.reg_base
                        .get(func as usize)
                        .is_some_and(|b| *b != u32::MAX)
            });
            let Some(callee) = callee else {
                return Err(KernelError::Unsupported {
                    instruction: format!("call through invalid function address {fa:#x}"),
                    loc: self.loc(w, lane, line),
                });
            };
            let func = func as u32;
            let cb = l.reg_base[func as usize] as usize;
            let base = w.frame_base[lane];
            let new_base = (base as u64 + caller_size as u64).div_ceil(16) * 16;
            let end = new_base + callee.frame_size as u64;
            if end > l.opts.max_local_bytes as u64
                || w.frames[lane].len() >= l.opts.max_call_depth as usize
            {
                return Err(self.fault(Fault::Stack, w, lane, line));
            }
            if (w.local[lane].len() as u64) < end {
                w.local[lane].resize(end as usize, 0);
            }
            for (a, &(to, fsize)) in args.iter().zip(&callee.params) {
                match *a {
                    ArgCopy::Frame { from, size } => {
                        let loc = &mut w.local[lane];
                        let n = size.min(fsize) as usize;
                        let src = base as usize + from as usize;
                        let dst = new_base as usize + to as usize;
                        if src + n <= loc.len() && dst + n <= loc.len() {
                            loc.copy_within(src..src + n, dst);
                        }
                    }
                    ArgCopy::Value { src, size } => {
                        let v = self.val(w, &src, lane);
                        wr(
                            &mut w.local[lane],
                            new_base + to as u64,
                            size.min(fsize).min(8),
                            v,
                        );
                    }
                }
            }
            let saved = if w.frames[lane].iter().any(|f| f.func == func) {
                let n = callee.nregs as usize;
                Some(
                    (0..n)
                        .map(|r| w.regs.get((cb + r) * 32 + lane).copied().unwrap_or(0))
                        .collect(),
                )
            } else {
                None
            };
            w.frames[lane].push(Frame {
                call_pc: w.pc,
                caller_base: base,
                func,
                saved,
            });
            w.frame_base[lane] = new_base as u32;
            w.lane_pc[lane] = callee.entry;
        }
        for lane in lanes(w.group & !mask) {
            w.lane_pc[lane] = ret_pc;
        }
        w.any_frames = true;
        w.group = 0;
        w.schedule(l);
        Ok(())
    }

    pub(super) fn ret(&mut self, w: &mut Warp, mask: u32) {
        let l = self.l;
        let next = w.pc + 1;
        if mask == 0 {
            w.pc = next;
            return;
        }
        for lane in lanes(w.group & !mask) {
            w.lane_pc[lane] = next;
        }
        for lane in lanes(mask) {
            let Some(fr) = w.frames[lane].pop() else {
                w.exited |= 1 << lane;
                self.live = self.live.saturating_sub(1);
                continue;
            };
            let formal = l
                .module
                .funcs
                .get(fr.func as usize)
                .map(|f| &f.rets[..])
                .unwrap_or(&[]);
            if let Some(Inst {
                op: Op::Call { rets, .. },
                ..
            }) = l.module.code.get(fr.call_pc as usize)
            {
                let loc = &mut w.local[lane];
                for (&(to, size), &(from, fsize)) in rets.iter().zip(formal) {
                    let n = size.min(fsize) as usize;
                    let src = w.frame_base[lane] as usize + from as usize;
                    let dst = fr.caller_base as usize + to as usize;
                    if src + n <= loc.len() && dst + n <= loc.len() {
                        loc.copy_within(src..src + n, dst);
                    }
                }
            }
            if let Some(saved) = fr.saved {
                let cb = l.reg_base.get(fr.func as usize).copied().unwrap_or(0) as usize;
                for (r, v) in saved.iter().enumerate() {
                    if let Some(x) = w.regs.get_mut((cb + r) * 32 + lane) {
                        *x = *v;
                    }
                }
            }
            w.frame_base[lane] = fr.caller_base;
            w.lane_pc[lane] = fr.call_pc + 1;
        }
        w.any_frames = w.frames.iter().any(|f| !f.is_empty());
        w.group = 0;
        w.schedule(l);
    }

    fn arg_val(&mut self, w: &Warp, lane: usize, a: &ArgCopy) -> u64 {
        match *a {
            ArgCopy::Frame { from, size, .. } => rd(
                &w.local[lane],
                w.frame_base[lane] as u64 + from as u64,
                size.min(8),
            )
            .unwrap_or(0),
            ArgCopy::Value { src, .. } => self.val(w, &src, lane),
        }
    }

    fn read_string(&mut self, w: &Warp, lane: usize, addr: u64, max: usize) -> Option<Vec<u8>> {
        let mut s = Vec::new();
        for k in 0..max as u64 {
            let b = self
                .load(w, lane, Space::Generic, addr.wrapping_add(k), 1)
                .ok()? as u8;
            if b == 0 {
                break;
            }
            s.push(b);
        }
        Some(s)
    }

    pub(super) fn intrinsic(
        &mut self,
        w: &mut Warp,
        lane: usize,
        which: Intrinsic,
        args: &[ArgCopy],
        ret: Option<u32>,
        line: u32,
    ) -> Result<(), KernelError> {
        let av: Vec<u64> = args.iter().map(|a| self.arg_val(w, lane, a)).collect();
        let arg = |k: usize| av.get(k).copied().unwrap_or(0);
        match which {
            Intrinsic::Vprintf => {
                let fmt = self.read_string(w, lane, arg(0), 1 << 16).ok_or_else(|| {
                    self.fault(
                        Fault::Illegal {
                            addr: arg(0),
                            size: 1,
                            write: false,
                        },
                        w,
                        lane,
                        line,
                    )
                })?;
                struct A<'c, 'a> {
                    ctx: &'c mut Ctx<'a>,
                    w: &'c Warp,
                    lane: usize,
                    base: u64,
                }
                impl printf::Args for A<'_, '_> {
                    fn arg(&mut self, offset: u64, size: u32) -> Option<u64> {
                        let a = self.base.wrapping_add(offset);
                        self.ctx
                            .load(self.w, self.lane, Space::Generic, a, size)
                            .ok()
                    }
                    fn string(&mut self, addr: u64, max: usize) -> Option<Vec<u8>> {
                        self.ctx.read_string(self.w, self.lane, addr, max)
                    }
                }
                let mut a = A {
                    ctx: self,
                    w,
                    lane,
                    base: arg(1),
                };
                let (text, n) = printf::format(&fmt, &mut a).ok_or_else(|| {
                    self.fault(
                        Fault::Illegal {
                            addr: arg(1),
                            size: 8,
                            write: false,
                        },
                        w,
                        lane,
                        line,
                    )
                })?;
                self.l.out.print(&text);
                if let Some(r) = ret {
                    let b = w.frame_base[lane] as u64 + r as u64;
                    wr(&mut w.local[lane], b, 4, n as u64);
                }
                Ok(())
            }
            Intrinsic::Malloc => {
                let p = self.l.mem.malloc(arg(0)).unwrap_or(0);
                if let Some(r) = ret {
                    let b = w.frame_base[lane] as u64 + r as u64;
                    wr(&mut w.local[lane], b, 8, p);
                }
                Ok(())
            }
            Intrinsic::Free => {
                if arg(0) != 0 {
                    self.l.mem.free(arg(0));
                }
                Ok(())
            }
            Intrinsic::AssertFail => {
                let s = |ctx: &mut Self, a: u64| {
                    ctx.read_string(w, lane, a, 4096)
                        .map(|v| String::from_utf8_lossy(&v).into_owned())
                        .unwrap_or_default()
                };
                let msg = s(self, arg(0));
                let file = s(self, arg(1));
                let func = s(self, arg(3));
                let [bx, by, bz] = self.ctaid;
                let message = format!(
                    "{file}:{}: {func}: block: [{bx},{by},{bz}], thread: [{},{},{}] Assertion `{msg}` failed.",
                    arg(2) as u32,
                    w.tid[0][lane],
                    w.tid[1][lane],
                    w.tid[2][lane]
                );
                Err(KernelError::Assert { message })
            }
        }
    }
}
