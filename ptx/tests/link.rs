// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Linking the PTX of several translation units (`nvcc -rdc=true`) into one module.

mod common;
use common::*;
use vcuda_ptx::{KernelError, Module};

const HEADER: &str = ".version 9.0\n.target sm_90\n.address_size 64\n";

/// Unit A: kernel `k(out)` writes `scale(tid) + counter` after bumping `counter`, calling an
/// external function and reading an external variable, plus its own private `twice`.
fn unit_a() -> String {
    format!(
        "{HEADER}\
         .extern .func (.param .b32 r) scale(.param .b32 x);\n\
         .extern .global .align 4 .u32 counter;\n\
         .func (.param .b32 r) twice(.param .b32 x)\n{{\n.reg .b32 %r<4>;\n\
         ld.param.u32 %r1, [x];\nshl.b32 %r2, %r1, 1;\nst.param.u32 [r], %r2;\nret;\n}}\n\
         .weak .func (.param .b32 r) shared_inline(.param .b32 x)\n{{\n.reg .b32 %r<4>;\n\
         ld.param.u32 %r1, [x];\nadd.s32 %r2, %r1, 1000;\nst.param.u32 [r], %r2;\nret;\n}}\n\
         .visible .entry k(.param .u64 out)\n{{\n.reg .b32 %r<16>;\n.reg .b64 %rd<8>;\n\
         ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\n\
         atom.global.add.u32 %r2, [counter], 1;\n\
         {{\n.param .b32 p0;\n.param .b32 r0;\nst.param.b32 [p0], %r1;\n\
         call.uni (r0), scale, (p0);\nld.param.b32 %r3, [r0];\n}}\n\
         {{\n.param .b32 p0;\n.param .b32 r0;\nst.param.b32 [p0], %r3;\n\
         call.uni (r0), twice, (p0);\nld.param.b32 %r4, [r0];\n}}\n\
         {{\n.param .b32 p0;\n.param .b32 r0;\nst.param.b32 [p0], %r4;\n\
         call.uni (r0), shared_inline, (p0);\nld.param.b32 %r5, [r0];\n}}\n\
         mul.wide.u32 %rd2, %r1, 4;\nadd.s64 %rd3, %rd1, %rd2;\nst.global.u32 [%rd3], %r5;\n\
         ret;\n}}\n"
    )
}

/// Unit B: defines `scale` (x * factor, via its own private `twice` that triples: a name
/// clash with unit A's private function) and `counter`, and the same weak function.
fn unit_b() -> String {
    format!(
        "{HEADER}\
         .visible .global .align 4 .u32 counter;\n\
         .visible .global .align 4 .u32 factor = 5;\n\
         .func (.param .b32 r) twice(.param .b32 x)\n{{\n.reg .b32 %r<4>;\n\
         ld.param.u32 %r1, [x];\nmul.lo.s32 %r2, %r1, 3;\nst.param.u32 [r], %r2;\nret;\n}}\n\
         .weak .func (.param .b32 r) shared_inline(.param .b32 x)\n{{\n.reg .b32 %r<4>;\n\
         ld.param.u32 %r1, [x];\nadd.s32 %r2, %r1, 1000;\nst.param.u32 [r], %r2;\nret;\n}}\n\
         .visible .func (.param .b32 r) scale(.param .b32 x)\n{{\n.reg .b32 %r<8>;\n\
         ld.param.u32 %r1, [x];\nld.global.u32 %r2, [factor];\nmul.lo.s32 %r3, %r1, %r2;\n\
         {{\n.param .b32 p0;\n.param .b32 r0;\nst.param.b32 [p0], %r3;\n\
         call.uni (r0), twice, (p0);\nld.param.b32 %r4, [r0];\n}}\n\
         st.param.u32 [r], %r4;\nret;\n}}\n"
    )
}

#[test]
fn extern_functions_and_variables_resolve_across_units() {
    for order in [[unit_a(), unit_b()], [unit_b(), unit_a()]] {
        let units: Vec<&str> = order.iter().map(String::as_str).collect();
        let g = Gpu::from_module(Module::link(&units).unwrap_or_else(|e| panic!("{e}")));
        let n = 64;
        let out = g.zeros(n * 4);
        g.run("k", 1, n as u32, &[Arg::Ptr(out)]);
        let got = g.get::<u32>(out, n);
        // scale(t) = twice_B(t * 5) = 15 t; twice_A doubles; the weak function adds 1000.
        let want: Vec<u32> = (0..n as u32).map(|t| 30 * t + 1000).collect();
        assert_eq!(got, want);
        // One `counter`, shared: every thread bumped the definition in unit B.
        let counter = g.module.globals().iter().position(|v| v.name == "counter");
        let counter = counter.expect("counter is a global of the linked module");
        assert_eq!(g.get::<u32>(g.globals[counter], 1), vec![n as u32]);
        assert_eq!(
            g.module
                .globals()
                .iter()
                .filter(|v| v.name == "counter")
                .count(),
            1
        );
        assert!(!g.module.globals()[counter].is_extern);
    }
}

#[test]
fn one_unit_links_like_parse() {
    let a = unit_b();
    let m = Module::link(&[&a]).unwrap();
    assert_eq!(
        m.globals().len(),
        Module::parse(&a).unwrap().globals().len()
    );
}

#[test]
fn two_definitions_of_a_visible_name_fail() {
    let b = unit_b();
    let e = Module::link(&[&b, &b]).unwrap_err();
    assert!(
        e.to_string().contains("single definition of `counter`"),
        "{e}"
    );
    // Functions too.
    let f = format!(
        "{HEADER}.visible .func (.param .b32 r) f(.param .b32 x)\n{{\n.reg .b32 %r<2>;\n\
         ld.param.u32 %r1, [x];\nst.param.u32 [r], %r1;\nret;\n}}\n"
    );
    let e = Module::link(&[&f, &f]).unwrap_err();
    assert!(e.to_string().contains("single definition of `f`"), "{e}");
}

#[test]
fn a_strong_definition_wins_over_a_weak_one_in_any_order() {
    let def = |linkage: &str, k: u32| {
        format!(
            "{HEADER}{linkage} .func (.param .b32 r) pick(.param .b32 x)\n{{\n\
             .reg .b32 %r<2>;\nmov.u32 %r1, {k};\nst.param.u32 [r], %r1;\nret;\n}}\n"
        )
    };
    let kernel = format!(
        "{HEADER}.extern .func (.param .b32 r) pick(.param .b32 x);\n\
         .visible .entry k(.param .u64 out)\n{{\n.reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n\
         ld.param.u64 %rd1, [out];\n\
         {{\n.param .b32 p0;\n.param .b32 r0;\nst.param.b32 [p0], 0;\n\
         call.uni (r0), pick, (p0);\nld.param.b32 %r1, [r0];\n}}\n\
         st.global.u32 [%rd1], %r1;\nret;\n}}\n"
    );
    let (weak, strong) = (def(".weak", 1), def(".visible", 2));
    for units in [[&kernel, &weak, &strong], [&kernel, &strong, &weak]] {
        let units: Vec<&str> = units.iter().map(|s| s.as_str()).collect();
        let g = Gpu::from_module(Module::link(&units).unwrap_or_else(|e| panic!("{e}")));
        let out = g.zeros(4);
        g.run("k", 1, 1, &[Arg::Ptr(out)]);
        assert_eq!(g.get::<u32>(out, 1), vec![2]);
    }
}

#[test]
fn a_parse_error_names_its_unit() {
    let e = Module::link(&[&unit_b(), "garbage"]).unwrap_err();
    assert!(e.to_string().contains("PTX unit 1"), "{e}");
}

#[test]
fn a_call_of_a_function_no_unit_defines_fails_the_launch_naming_it() {
    let a = unit_a();
    let g = Gpu::from_module(Module::link(&[&a]).unwrap());
    let out = g.zeros(4);
    match g.run_err("k", 1, 1, &[Arg::Ptr(out)]) {
        KernelError::Unsupported { instruction, .. } => {
            assert!(instruction.contains("scale"), "{instruction}")
        }
        e => panic!("{e}"),
    }
}
