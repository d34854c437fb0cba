// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Kernels the project's tests, hostile tests and fuzz seeds share.

/// A kernel `k(.param .u64 out)` that keeps `regs` registers (at least 1) live across
/// `diamonds` if/else diamonds and stores their sum at `out`: cheap to interpret, costly to
/// compile (every live register is a block parameter at every join; issue 38's compiler
/// attack). Returns the PTX and the sum it stores.
pub fn live_across_diamonds(regs: u32, diamonds: u32) -> (String, u32) {
    let regs = regs.max(1);
    let mut src = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n\
         .visible .entry k(.param .u64 out)\n{{\n.reg .pred %p<2>;\n.reg .b32 %r<{}>;\n\
         .reg .b64 %rd<2>;\n",
        regs + 2
    );
    let mut r: Vec<u32> = (0..regs).collect();
    for i in 0..regs {
        src += &format!("mov.u32 %r{i}, {i};\n");
    }
    for d in 0..diamonds {
        let (c, a, b) = (d % regs, d * 7 % regs, d * 11 % regs);
        src += &format!(
            "setp.ne.u32 %p1, %r{c}, 7;\n@%p1 bra L{d}a;\nadd.u32 %r{a}, %r{a}, 1;\n\
             bra.uni L{d}b;\nL{d}a:\nadd.u32 %r{b}, %r{b}, 2;\nL{d}b:\n"
        );
        if r[c as usize] != 7 {
            r[b as usize] = r[b as usize].wrapping_add(2);
        } else {
            r[a as usize] = r[a as usize].wrapping_add(1);
        }
    }
    src += &format!("mov.u32 %r{regs}, 0;\n");
    for i in 0..regs {
        src += &format!("add.u32 %r{regs}, %r{regs}, %r{i};\n");
    }
    src += &format!("ld.param.u64 %rd0, [out];\nst.global.u32 [%rd0], %r{regs};\nret;\n}}\n");
    (src, r.iter().fold(0u32, |s, &x| s.wrapping_add(x)))
}
