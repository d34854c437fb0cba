// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Mutation fuzzing: the parser, and launches of whatever still parses, never panic.

mod common;
use common::*;
use proptest::prelude::*;
use vcuda_ptx::{LaunchConfig, LaunchOptions, Module};

const TOKENS: &[&str] = &[
    "{",
    "}",
    ";",
    ",",
    "[",
    "]",
    "(",
    ")",
    "<",
    ">",
    "|",
    "!",
    "@",
    "-",
    "+",
    ".reg",
    ".b32",
    ".u64",
    ".f32",
    ".pred",
    ".v4",
    ".param",
    ".local",
    ".shared",
    ".global",
    ".align",
    "%r1",
    "%rd1",
    "%p1",
    "%f1",
    "%tid.x",
    "%laneid",
    "0f7F800000",
    "0d7FF0000000000000",
    "4294967295",
    "-1",
    "99999999999999999999",
    "0x",
    "1e400",
    "bra",
    "call",
    "ret",
    "exit",
    "bar.sync",
    "ld.global.u32",
    "st.shared.u64",
    "atom.global.add.u32",
    "shfl.sync.idx.b32",
    "tex.2d.v4.f32.f32",
    "tex.1d.v4.s32.s32",
    "tld4.g.2d.v4.f32.f32",
    "suld.b.2d.v4.b8.clamp",
    "sust.b.3d.b64.zero",
    "txq.width.b32",
    "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
    "mma.sync.aligned.m8n8k4.col.row.f32.f16.f16.f16",
    "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
    "stmatrix.sync.aligned.m8n8.x2.shared.b16",
    "movmatrix.sync.aligned.m8n8.trans.b16",
    "{%r1, %r2}",
    "suq.depth.b32",
    "$L__BB0_1",
    "$L__BB0_1:",
    "\n",
    " ",
    "\"",
    "/*",
    "//",
    ".loc",
    ".entry",
    ".func",
    "_",
    "\u{0}",
    "é",
];

fn sources() -> Vec<String> {
    let mut v: Vec<String> = [
        "basic", "reduce", "warp", "atomics", "params", "printf", "textures", "tensor",
    ]
    .iter()
    .map(|f| fixture(f))
    .collect();
    // Keep each case fast: the big math fixture is cut to its first kernels.
    let math = fixture("math");
    v.push(math.lines().take(400).collect::<Vec<_>>().join("\n"));
    v
}

#[derive(Debug, Clone)]
enum Mutation {
    Replace(usize, u8),
    Delete(usize, usize),
    Insert(usize, usize),
    Truncate(usize),
    SwapLines(usize, usize),
}

fn apply(src: &str, muts: &[Mutation]) -> String {
    let mut b = src.as_bytes().to_vec();
    for m in muts {
        let n = b.len().max(1);
        match *m {
            Mutation::Replace(i, c) => {
                let i = i % n;
                if i < b.len() {
                    b[i] = c;
                }
            }
            Mutation::Delete(i, len) => {
                let i = i % n;
                let e = (i + len % 64).min(b.len());
                b.drain(i.min(e)..e);
            }
            Mutation::Insert(i, t) => {
                let i = (i % n).min(b.len());
                let tok = TOKENS[t % TOKENS.len()].as_bytes();
                b.splice(i..i, tok.iter().copied());
            }
            Mutation::Truncate(i) => b.truncate(i % n),
            Mutation::SwapLines(x, y) => {
                let s = String::from_utf8_lossy(&b).into_owned();
                let mut lines: Vec<&str> = s.lines().collect();
                if !lines.is_empty() {
                    let (x, y) = (x % lines.len(), y % lines.len());
                    lines.swap(x, y);
                }
                b = lines.join("\n").into_bytes();
            }
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, c)| Mutation::Replace(i, c)),
        (any::<usize>(), any::<usize>()).prop_map(|(i, l)| Mutation::Delete(i, l)),
        (any::<usize>(), any::<usize>()).prop_map(|(i, t)| Mutation::Insert(i, t)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), any::<usize>()).prop_map(|(x, y)| Mutation::SwapLines(x, y)),
    ]
}

/// Launches every kernel of a module that parsed, with garbage parameters and a small budget.
fn try_all_kernels(m: &Module) {
    let mem = Mem::default();
    let buf = mem.alloc(4096);
    // Pointer parameters double as a handle: a texture over the same buffer.
    mem.set_texture(
        buf,
        vcuda_ptx::TexObject {
            surface: false,
            base: buf,
            dims: 2,
            width: 16,
            height: 16,
            depth: 1,
            pitch: 256,
            slice_pitch: 4096,
            kind: vcuda_ptx::ChannelKind::Float,
            bits: [32, 32, 32, 32],
            address: [vcuda_ptx::AddressMode::Wrap; 3],
            filter: vcuda_ptx::FilterMode::Linear,
            normalized_float: false,
            normalized_coords: true,
            srgb: false,
            border: [0.0; 4],
            layered: false,
            cube: false,
            mip: vcuda_ptx::Mipmap::NONE,
        },
    );
    let out = std::sync::Mutex::new(Vec::new());
    let opts = LaunchOptions {
        threads: 1,
        instruction_limit: Some(20_000),
        max_local_bytes: 1 << 16,
        ..LaunchOptions::default()
    };
    for (i, k) in m.kernels().iter().enumerate().take(4) {
        let mut params = vec![0u8; k.param_size as usize];
        for p in &k.params {
            if p.size == 8 {
                params[p.offset as usize..][..8].copy_from_slice(&buf.to_le_bytes());
            } else if let Some(b) = params.get_mut(p.offset as usize) {
                *b = 3;
            }
        }
        let block = k.reqntid.unwrap_or([40, 1, 1]);
        let cfg = LaunchConfig {
            grid: [2, 1, 1],
            block,
            dynamic_shared: 256,
            grid_workspace: 0,
            cluster: [0; 3],
        };
        // Interpreted, then compiled from the same memory: neither may panic or crash on
        // mutated PTX. (Their memory is not compared: garbage parameters make threads race on
        // one buffer, so results legitimately depend on the order threads run in.)
        let run = |jit: bool| {
            let before = mem.snapshot();
            let r = vcuda_ptx::launch(
                m,
                vcuda_ptx::KernelId(i as u32),
                &cfg,
                &params,
                &|_| buf,
                &mem,
                &out,
                &LaunchOptions {
                    jit,
                    ..opts.clone()
                },
            );
            mem.restore(&before);
            r
        };
        let _ = run(false);
        let _ = run(true);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn mutated_ptx_never_panics(which in 0usize..8, muts in prop::collection::vec(mutation(), 1..4)) {
        let srcs = sources();
        let src = apply(&srcs[which % srcs.len()], &muts);
        if let Ok(m) = Module::parse(&src) {
            try_all_kernels(&m);
        }
    }

    #[test]
    fn linking_mutated_units_never_panics(
        a in 0usize..8,
        b in 0usize..8,
        muts in prop::collection::vec(mutation(), 1..4),
    ) {
        // Two units, one mutated: names clash, declarations disagree, definitions repeat.
        let srcs = sources();
        let x = apply(&srcs[a % srcs.len()], &muts);
        let y = srcs[b % srcs.len()].replace(".visible", ".weak");
        if let Ok(m) = Module::link(&[&x, &y]) {
            try_all_kernels(&m);
        }
        let _ = Module::link(&[&y, &x, &y]);
    }

    #[test]
    fn random_text_never_panics(s in "\\PC{0,200}") {
        let _ = Module::parse(&s);
        let _ = Module::parse(&format!(".version 9.0\n.entry k() {{\n{s}\n}}"));
    }

    #[test]
    fn random_token_soup_never_panics(toks in prop::collection::vec(0usize..TOKENS.len(), 0..80)) {
        let body: String = toks.iter().map(|&t| TOKENS[t]).collect::<Vec<_>>().join(" ");
        let src = format!(".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 a)\n{{\n.reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n.reg .pred %p<4>;\n.reg .f32 %f<4>;\n{body}\n}}\n");
        if let Ok(m) = Module::parse(&src) {
            try_all_kernels(&m);
        }
    }
}

/// Many single small edits (most still parse), deterministic.
#[test]
fn single_edits_never_panic() {
    let srcs = sources();
    let mut parsed = 0;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed as usize
    };
    for _ in 0..1500 {
        let which = rnd() % srcs.len();
        let m = match rnd() % 3 {
            0 => Mutation::Replace(rnd(), b"0123456789abcdefxyz%.,;[]{}"[rnd() % 27]),
            1 => Mutation::Delete(rnd(), rnd() % 4),
            _ => Mutation::Insert(rnd(), rnd()),
        };
        if let Ok(m) = Module::parse(&apply(&srcs[which], &[m])) {
            parsed += 1;
            try_all_kernels(&m);
        }
    }
    assert!(parsed > 300, "only {parsed} mutants parsed");
}
