// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The entry-point macros.
//!
//! Every exported function goes through one of them:
//! - `entry!` for functions returning `cudaError_t`: the body returns [`Result<()>`]; an
//!   error is recorded as the thread's last error (except `cudaErrorNotReady`, which CUDA
//!   does not treat as an error) and returned.
//! - `entry_lib!` for cuBLAS and cuRAND functions returning their status: the body returns
//!   `Result<(), E>` for the library's error type `E` (see [`crate::error`]), which
//!   converts into the status.
//! - `entry_raw!` for everything else: the body returns the C return value.
//! - `entry_stub!` for names the library exports but does not implement: they return a
//!   not-supported status and log one line (when `VCUDA_LOG` asks).
//!
//! All of them catch panics: no unwind ever crosses into C.

use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;

use vcuda_protocol::status;

use crate::error::Result;
use crate::ffi::cudaError_t;
use crate::state;

/// Runs an entry point's body behind a panic boundary and does the last-error bookkeeping.
pub fn api(name: &'static str, f: impl FnOnce() -> Result<()>) -> cudaError_t {
    log::trace!("{name}");
    let code = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => status::SUCCESS,
        Ok(Err(e)) => e.into(),
        Err(_) => {
            log::error!("{name}: internal error (panic); returning cudaErrorUnknown");
            status::UNKNOWN
        }
    };
    if code != status::SUCCESS {
        log::debug!("{name} -> {}", status::describe(code).map_or("?", |d| d.0));
        if code != status::NOT_READY {
            state::set_last_error(code);
        }
    }
    code
}

/// A C return value, with what to return if the body panics.
pub trait FfiReturn {
    /// The value returned after a panic.
    fn on_panic() -> Self;
}

impl FfiReturn for () {
    fn on_panic() -> Self {}
}
impl FfiReturn for u32 {
    fn on_panic() -> Self {
        status::UNKNOWN
    }
}
impl FfiReturn for usize {
    fn on_panic() -> Self {
        0
    }
}
impl FfiReturn for i32 {
    fn on_panic() -> Self {
        -1
    }
}
impl FfiReturn for std::ffi::c_char {
    fn on_panic() -> Self {
        0
    }
}
impl<T> FfiReturn for *const T {
    fn on_panic() -> Self {
        std::ptr::null()
    }
}
impl<T> FfiReturn for *mut T {
    fn on_panic() -> Self {
        std::ptr::null_mut()
    }
}

/// Runs a non-`cudaError_t` entry point's body behind a panic boundary.
pub fn raw<R: FfiReturn>(name: &'static str, f: impl FnOnce() -> R) -> R {
    log::trace!("{name}");
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        log::error!("{name}: internal error (panic)");
        R::on_panic()
    })
}

/// Runs a cuBLAS or cuRAND entry point's body behind a panic boundary and converts its error
/// into the library's status (0 on success). A panic returns what [`raw`] returns for a
/// `u32`.
pub fn lib<E>(name: &'static str, f: impl FnOnce() -> std::result::Result<(), E>) -> u32
where
    u32: From<E>,
{
    raw(name, || f().map_or_else(u32::from, |()| 0))
}

static STUB_LOGGED: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);

/// What a stub does: log once per name, record and return `code`.
pub fn stub(name: &'static str, code: u32, set_last_error: bool) -> u32 {
    let mut g = STUB_LOGGED.lock().unwrap_or_else(|e| e.into_inner());
    if g.get_or_insert_with(HashSet::new).insert(name) {
        log::warn!("{name} is not supported by vcuda yet");
    }
    drop(g);
    if set_last_error {
        state::set_last_error(code);
    }
    code
}

/// Defines exported `cudaError_t` functions. The body is a block returning [`Result<()>`].
#[macro_export]
macro_rules! entry {
    ($(
        $(#[$m:meta])*
        fn $name:ident($($arg:ident : $ty:ty),* $(,)?) $body:block
    )*) => {$(
        $(#[$m])*
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $crate::ffi::cudaError_t {
            $crate::entry::api(stringify!($name), move || -> $crate::Result<()> { $body })
        }
    )*};
}

/// Defines exported cuBLAS or cuRAND functions returning their status. Each body is a block
/// returning `Result<(), E>`, written `fn NAME(ARGS) -> Result<(), E> { ... }`, where the
/// status type (`cublasStatus_t`, `curandStatus_t`: `u32`) converts from `E`.
#[macro_export]
macro_rules! entry_lib {
    ($(
        $(#[$m:meta])*
        fn $name:ident($($arg:ident : $ty:ty),* $(,)?) -> Result<(), $err:ty> $body:block
    )*) => {$(
        $(#[$m])*
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> u32 {
            $crate::entry::lib(stringify!($name), move || -> ::std::result::Result<(), $err> { $body })
        }
    )*};
}

/// Defines exported functions with other return types.
#[macro_export]
macro_rules! entry_raw {
    ($(
        $(#[$m:meta])*
        fn $name:ident($($arg:ident : $ty:ty),* $(,)?) -> $ret:ty $body:block
    )*) => {$(
        $(#[$m])*
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            $crate::entry::raw(stringify!($name), move || -> $ret { $body })
        }
    )*};
}

/// Defines an exported function that is not implemented.
#[macro_export]
macro_rules! entry_stub {
    (cudart, $name:ident) => {
        #[doc = concat!("`", stringify!($name), "`: not supported; returns `cudaErrorNotSupported`.")]
        #[unsafe(no_mangle)]
        pub extern "C" fn $name() -> u32 {
            $crate::entry::stub(
                stringify!($name),
                vcuda_protocol::status::NOT_SUPPORTED,
                true,
            )
        }
    };
    (cublas, $name:ident) => {
        #[doc = concat!("`", stringify!($name), "`: not supported; returns `CUBLAS_STATUS_NOT_SUPPORTED`.")]
        #[unsafe(no_mangle)]
        pub extern "C" fn $name() -> u32 {
            $crate::entry::stub(
                stringify!($name),
                vcuda_protocol::lib::BLAS_NOT_SUPPORTED,
                false,
            )
        }
    };
    (cuda, $name:ident) => {
        #[doc = concat!("`", stringify!($name), "`: not supported; returns `CUDA_ERROR_NOT_SUPPORTED`.")]
        #[unsafe(no_mangle)]
        pub extern "C" fn $name() -> u32 {
            $crate::entry::stub(stringify!($name), vcuda_protocol::status::NOT_SUPPORTED, false)
        }
    };
    // nvJitLink has no "not supported" status either; `NVJITLINK_ERROR_INTERNAL`.
    (nvjitlink, $name:ident) => {
        #[doc = concat!("`", stringify!($name), "`: not supported; returns `NVJITLINK_ERROR_INTERNAL`.")]
        #[unsafe(no_mangle)]
        pub extern "C" fn $name() -> u32 {
            $crate::entry::stub(stringify!($name), 6, false)
        }
    };
    // cuRAND has no "not supported" status; `CURAND_STATUS_INTERNAL_ERROR` says the library
    // cannot do it without blaming the caller's arguments or generator.
    (curand, $name:ident) => {
        #[doc = concat!("`", stringify!($name), "`: not supported; returns `CURAND_STATUS_INTERNAL_ERROR`.")]
        #[unsafe(no_mangle)]
        pub extern "C" fn $name() -> u32 {
            $crate::entry::stub(
                stringify!($name),
                vcuda_protocol::lib::RAND_INTERNAL_ERROR,
                false,
            )
        }
    };
}
