// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Every program in `tests/cuda/`, built with CUDA 13.0 (libcudart.so.13) and with CUDA
//! 12.4 (libcudart.so.12), runs unchanged through `vcuda run --executor cpu` and checks its
//! own results.

use vcuda_tests::{Cuda, all_programs, check_program};

macro_rules! programs {
    ($($name:ident),* $(,)?) => {
        $(
            #[allow(non_snake_case)]
            mod $name {
                use super::*;

                #[test]
                fn cuda13() {
                    check_program(stringify!($name), Cuda::V13, "cpu");
                }

                #[test]
                fn cuda12() {
                    check_program(stringify!($name), Cuda::V12, "cpu");
                }
            }
        )*

        #[test]
        fn every_program_has_a_test() {
            let listed = [$(stringify!($name)),*];
            let missing: Vec<_> = all_programs().into_iter().filter(|p| !listed.contains(&p.as_str())).collect();
            assert!(missing.is_empty(), "add these to tests/tests/e2e.rs: {missing:?}");
        }
    };
}

programs!(
    api_device,
    api_memory,
    api_misc,
    api_streams,
    cublas_basic,
    cublas_extra,
    curand_basic,
    curand_device,
    dmath,
    driver_api,
    errors,
    launch_ex,
    matmul,
    mempool,
    params,
    per_thread,
    reduce,
    saxpy,
    scan_hist,
    sumArray,
    symbols,
    templates,
    threads,
    vectorAdd,
);
