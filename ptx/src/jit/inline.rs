// SPDX-License-Identifier: Apache-2.0 OR MIT
//! A kernel's code as the compiler sees it: its own instructions with every direct call of a
//! device function expanded in place, so the compiled function has no calls.
//!
//! Each expansion gets its own registers (renumbered after the caller's) and its own frame in
//! the thread's local memory, 16-byte aligned after its caller's, as the interpreter lays
//! frames out. Arguments are stored into the callee's parameter slots, a `ret` becomes a
//! branch to the copy of the return values into the caller's frame. Indirect and recursive
//! calls are not expanded (the kernel then runs interpreted).

use super::lower::Reject;
use crate::{
    ir::{Addr, ArgCopy, Inst, Op, Reg, SINK, Space, Src, SurfOp, TexLod, TexOp},
    module::Module,
};

/// Upper bounds for an expanded kernel (larger ones run interpreted): code generation and
/// liveness grow with instructions times registers, and kernels come from the guest.
const MAX_INSTS: usize = 1 << 16;
/// Most instruction-register pairs (bits of the liveness sets: 16 MiB).
const MAX_LIVENESS_BITS: u64 = 1 << 27;
const MAX_FRAME: u32 = 64 << 10;
const MAX_DEPTH: usize = 32;

/// The flattened kernel: instructions (branch targets index them), registers and the local
/// frame each thread needs.
pub(super) struct Flat {
    pub code: Vec<Inst>,
    pub nregs: u32,
    pub frame: u32,
}

struct Ctx<'m> {
    m: &'m Module,
    out: Vec<Inst>,
    nregs: u32,
    frame: u32,
    /// A scratch register for frame-to-frame copies.
    tmp: Reg,
    stack: Vec<usize>,
}

/// The instructions of function `f`: from its entry to the next function's.
fn body(m: &Module, f: usize) -> Result<(usize, usize), Reject> {
    let start = m.funcs.get(f).ok_or("no function")?.entry as usize;
    let end = m
        .funcs
        .iter()
        .map(|g| g.entry as usize)
        .filter(|&e| e > start)
        .min()
        .unwrap_or(m.code.len())
        .min(m.code.len());
    Ok((start, end))
}

pub(super) fn flatten(m: &Module, kernel: usize) -> Result<Flat, Reject> {
    let nregs = m.funcs.get(kernel).ok_or("no function")?.nregs;
    let mut cx = Ctx {
        m,
        out: Vec::new(),
        // Register `nregs` is the scratch register; callees are numbered after it.
        nregs: nregs + 1,
        frame: 0,
        tmp: nregs,
        stack: Vec::new(),
    };
    cx.expand(kernel, 0, 0, false)?;
    if cx.out.len() as u64 * u64::from(cx.nregs) > MAX_LIVENESS_BITS {
        return Err("kernel too large to compile (instructions times registers)".into());
    }
    Ok(Flat {
        code: cx.out,
        nregs: cx.nregs,
        frame: cx.frame,
    })
}

fn map_src(s: Src, rb: u32, fb: u32) -> Src {
    match s {
        Src::Reg(r) => Src::Reg(r + rb),
        Src::NotReg(r) => Src::NotReg(r + rb),
        Src::Local(o) => Src::Local(o.wrapping_add(fb)),
        s => s,
    }
}

fn map_reg(r: Reg, rb: u32) -> Reg {
    if r == SINK { r } else { r + rb }
}

fn map_addr(a: Addr, rb: u32, fb: u32) -> Addr {
    Addr {
        base: map_src(a.base, rb, fb),
        off: a.off,
    }
}

/// `op` with registers renumbered by `rb` and frame offsets moved by `fb`.
fn remap(op: &Op, rb: u32, fb: u32) -> Result<Op, Reject> {
    let s = |x: &Src| map_src(*x, rb, fb);
    let r = |x: &Reg| map_reg(*x, rb);
    Ok(match op {
        Op::Alu {
            f,
            ctx,
            native,
            src,
            nsrc,
            dst,
            ndst,
            narrow,
        } => Op::Alu {
            f: *f,
            ctx: *ctx,
            native: *native,
            src: src.map(|x| s(&x)),
            nsrc: *nsrc,
            dst: dst.map(|x| r(&x)),
            ndst: *ndst,
            narrow: *narrow,
        },
        Op::Mov { d, a, mask } => Op::Mov {
            d: r(d),
            a: s(a),
            mask: *mask,
        },
        Op::Pack { d, srcs, n, bits } => Op::Pack {
            d: r(d),
            srcs: srcs.map(|x| s(&x)),
            n: *n,
            bits: *bits,
        },
        Op::Unpack { ds, n, bits, a } => Op::Unpack {
            ds: ds.map(|x| r(&x)),
            n: *n,
            bits: *bits,
            a: s(a),
        },
        Op::Ld {
            space,
            size,
            sext,
            n,
            d,
            addr,
            volatile,
        } => Op::Ld {
            space: *space,
            size: *size,
            sext: *sext,
            n: *n,
            d: d.map(|x| r(&x)),
            addr: map_addr(*addr, rb, fb),
            volatile: *volatile,
        },
        Op::St {
            space,
            size,
            n,
            v,
            addr,
            volatile,
        } => Op::St {
            space: *space,
            size: *size,
            n: *n,
            v: v.map(|x| s(&x)),
            addr: map_addr(*addr, rb, fb),
            volatile: *volatile,
        },
        Op::Atom {
            space,
            op,
            size,
            signed,
            d,
            addr,
            b,
            c,
        } => Op::Atom {
            space: *space,
            op: *op,
            size: *size,
            signed: *signed,
            d: r(d),
            addr: map_addr(*addr, rb, fb),
            b: s(b),
            c: s(c),
        },
        Op::Cvta {
            to,
            space,
            d,
            a,
            mask,
        } => Op::Cvta {
            to: *to,
            space: *space,
            d: r(d),
            a: s(a),
            mask: *mask,
        },
        Op::Bar {
            kind,
            id,
            count,
            pred,
            d,
        } => Op::Bar {
            kind: *kind,
            id: s(id),
            count: count.as_ref().map(s),
            pred: s(pred),
            d: r(d),
        },
        Op::Intrinsic { which, args, ret } => Op::Intrinsic {
            which: *which,
            args: args
                .iter()
                .map(|a| match *a {
                    ArgCopy::Frame { from, size } => ArgCopy::Frame {
                        from: from.wrapping_add(fb),
                        size,
                    },
                    ArgCopy::Value { src, size } => ArgCopy::Value { src: s(&src), size },
                })
                .collect(),
            ret: ret.map(|o| o.wrapping_add(fb)),
        },
        Op::Tex(t) => Op::Tex(Box::new(TexOp {
            d: t.d.map(|x| r(&x)),
            p: r(&t.p),
            handle: s(&t.handle),
            coords: t.coords.map(|x| s(&x)),
            layer: t.layer.map(|x| s(&x)),
            lod: match t.lod {
                TexLod::Base => TexLod::Base,
                TexLod::Level(l) => TexLod::Level(s(&l)),
                TexLod::Grad(x, y) => TexLod::Grad(x.map(|v| s(&v)), y.map(|v| s(&v))),
            },
            ..**t
        })),
        Op::Surf(t) => Op::Surf(Box::new(SurfOp {
            d: t.d.map(|x| r(&x)),
            v: t.v.map(|x| s(&x)),
            handle: s(&t.handle),
            coords: t.coords.map(|x| s(&x)),
            ..**t
        })),
        Op::TexQuery {
            surface,
            what,
            d,
            handle,
        } => Op::TexQuery {
            surface: *surface,
            what: *what,
            d: r(d),
            handle: s(handle),
        },
        Op::Bra { .. } | Op::Call { .. } | Op::Ret => {
            return Err("internal: control flow remapped as data".into());
        }
        op => op.clone(),
    })
}

impl Ctx<'_> {
    fn push(&mut self, op: Op, guard: Option<(Reg, bool)>, line: u32) -> Result<usize, Reject> {
        if self.out.len() >= MAX_INSTS {
            return Err("kernel too large once its calls are expanded".into());
        }
        self.out.push(Inst { op, guard, line });
        Ok(self.out.len() - 1)
    }

    /// Copies `n` bytes of the thread's local memory from offset `from` to `to`, in the
    /// widest pieces their alignment allows.
    fn copy_local(&mut self, from: u32, to: u32, n: u32, line: u32) -> Result<(), Reject> {
        let mut k = 0;
        while k < n {
            let (a, b) = (from + k, to + k);
            let size = [8u32, 4, 2, 1]
                .into_iter()
                .find(|&s| k + s <= n && a % s == 0 && b % s == 0)
                .unwrap_or(1);
            let at = |o: u32| Addr {
                base: Src::Local(o),
                off: 0,
            };
            let mut d = [SINK; 4];
            d[0] = self.tmp;
            self.push(
                Op::Ld {
                    space: Space::Local,
                    size: size as u8,
                    sext: false,
                    n: 1,
                    d,
                    addr: at(a),
                    volatile: false,
                },
                None,
                line,
            )?;
            self.push(
                Op::St {
                    space: Space::Local,
                    size: size as u8,
                    n: 1,
                    v: [Src::Reg(self.tmp), Src::Imm(0), Src::Imm(0), Src::Imm(0)],
                    addr: at(b),
                    volatile: false,
                },
                None,
                line,
            )?;
            k += size;
        }
        Ok(())
    }

    /// Emits function `f` with registers from `rb` and its frame at `fb`. In a `callee`, a
    /// `ret` becomes a branch whose index is returned for the caller to patch.
    fn expand(&mut self, f: usize, rb: u32, fb: u32, callee: bool) -> Result<Vec<usize>, Reject> {
        if self.stack.contains(&f) {
            return Err("recursive call".into());
        }
        if self.stack.len() >= MAX_DEPTH {
            return Err("calls nested too deeply".into());
        }
        let func = &self.m.funcs[f];
        if func.warp_sync {
            return Err("bar.warp.sync (warp-synchronous code)".into());
        }
        self.frame = self.frame.max(fb.saturating_add(func.frame_size));
        if self.frame > MAX_FRAME {
            return Err("local memory too large once calls are expanded".into());
        }
        self.stack.push(f);
        let (start, end) = body(self.m, f)?;
        let mut pc_map = vec![0usize; end - start + 1];
        // Branches to patch: (index in `out`, target pc in the function).
        let mut fix: Vec<(usize, usize)> = Vec::new();
        let mut rets = Vec::new();
        for pc in start..end {
            pc_map[pc - start] = self.out.len();
            let i = &self.m.code[pc];
            let guard = i.guard.map(|(g, neg)| (g + rb, neg));
            match &i.op {
                Op::Bra { target } => {
                    let t = (*target as usize)
                        .checked_sub(start)
                        .filter(|&t| t < end - start)
                        .ok_or("branch out of its function")?;
                    let at = self.push(Op::Bra { target: 0 }, guard, i.line)?;
                    fix.push((at, t));
                }
                Op::Ret if callee => {
                    let at = self.push(Op::Bra { target: 0 }, guard, i.line)?;
                    rets.push(at);
                }
                Op::Ret => {
                    self.push(Op::Ret, guard, i.line)?;
                }
                Op::Call {
                    func: Some(callee),
                    args,
                    rets: ret_slots,
                    ..
                } => {
                    let ci = *callee as usize;
                    let c = self.m.funcs.get(ci).ok_or("call of an unknown function")?;
                    if !c.defined || c.is_kernel || c.intrinsic.is_some() {
                        return Err("call of an external function".into());
                    }
                    // A guarded call: skip the whole expansion when the guard fails.
                    let skip = match guard {
                        Some((g, neg)) => {
                            Some(self.push(Op::Bra { target: 0 }, Some((g, !neg)), i.line)?)
                        }
                        None => None,
                    };
                    let cb = (fb + func.frame_size).div_ceil(16) * 16;
                    for (a, &(to, fsize)) in args.iter().zip(&c.params) {
                        match *a {
                            ArgCopy::Frame { from, size } => {
                                self.copy_local(fb + from, cb + to, size.min(fsize), i.line)?
                            }
                            ArgCopy::Value { src, size } => {
                                let n = size.min(fsize).min(8);
                                let n = [8u32, 4, 2, 1].into_iter().find(|&s| s <= n).unwrap_or(1);
                                self.push(
                                    Op::St {
                                        space: Space::Local,
                                        size: n as u8,
                                        n: 1,
                                        v: [
                                            map_src(src, rb, fb),
                                            Src::Imm(0),
                                            Src::Imm(0),
                                            Src::Imm(0),
                                        ],
                                        addr: Addr {
                                            base: Src::Local(cb + to),
                                            off: 0,
                                        },
                                        volatile: false,
                                    },
                                    None,
                                    i.line,
                                )?;
                            }
                        }
                    }
                    let crb = self.nregs;
                    self.nregs = self
                        .nregs
                        .checked_add(c.nregs)
                        .filter(|&n| n < (1 << 20))
                        .ok_or("too many registers once calls are expanded")?;
                    let back = self.expand(ci, crb, cb, true)?;
                    let ret_label = self.out.len();
                    for at in back {
                        self.out[at].op = Op::Bra {
                            target: ret_label as u32,
                        };
                    }
                    for (&(to, size), &(from, fsize)) in ret_slots.iter().zip(&c.rets) {
                        self.copy_local(cb + from, fb + to, size.min(fsize), i.line)?;
                    }
                    if let Some(at) = skip {
                        // Land on a no-op after the copies (a leader for the code generator).
                        let after = self.push(Op::Nop, None, i.line)?;
                        self.out[at].op = Op::Bra {
                            target: after as u32,
                        };
                    }
                }
                Op::Call { .. } => return Err("indirect call".into()),
                op => {
                    let op = remap(op, rb, fb)?;
                    self.push(op, guard, i.line)?;
                }
            }
        }
        pc_map[end - start] = self.out.len();
        for (at, t) in fix {
            self.out[at].op = Op::Bra {
                target: pc_map[t] as u32,
            };
        }
        self.stack.pop();
        Ok(rets)
    }
}
