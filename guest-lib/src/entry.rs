// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The entry-point macros.
//!
//! Every exported function goes through one of them:
//! - `entry!` for functions returning `cudaError_t`: the body returns [`Result<()>`]; an
//!   error is recorded as the thread's last error (except `cudaErrorNotReady`, which CUDA
//!   does not treat as an error) and returned.
//! - `entry_raw!` for everything else: the body returns the C return value.
//! - `entry_stub!` for names the library exports but does not implement: they return a
//!   not-supported status and log one line (when `VCUDA_LOG` asks).
//!
//! All of them catch panics: no unwind ever crosses into C.

use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;

use vcuda_protocol::status;

use crate::ffi::cudaError_t;
use crate::state;

/// A CUDA runtime error (a non-zero `cudaError_t`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Error(pub cudaError_t);

impl Error {
    /// `cudaErrorInvalidValue`.
    pub const INVALID_VALUE: Error = Error(status::INVALID_VALUE);
    /// `cudaErrorInvalidDevice`.
    pub const INVALID_DEVICE: Error = Error(status::INVALID_DEVICE);
    /// `cudaErrorInvalidResourceHandle`.
    pub const INVALID_HANDLE: Error = Error(status::INVALID_RESOURCE_HANDLE);
    /// `cudaErrorInvalidDeviceFunction`.
    pub const INVALID_DEVICE_FUNCTION: Error = Error(status::INVALID_DEVICE_FUNCTION);
    /// `cudaErrorInvalidConfiguration`.
    pub const INVALID_CONFIGURATION: Error = Error(status::INVALID_CONFIGURATION);
    /// `cudaErrorInvalidSymbol`.
    pub const INVALID_SYMBOL: Error = Error(status::INVALID_SYMBOL);
    /// `cudaErrorInvalidMemcpyDirection`.
    pub const INVALID_MEMCPY_DIRECTION: Error = Error(status::INVALID_MEMCPY_DIRECTION);
    /// `cudaErrorInvalidPitchValue`.
    pub const INVALID_PITCH: Error = Error(status::INVALID_PITCH_VALUE);
    /// `cudaErrorMemoryAllocation`.
    pub const MEMORY_ALLOCATION: Error = Error(status::MEMORY_ALLOCATION);
    /// `cudaErrorNotSupported`.
    pub const NOT_SUPPORTED: Error = Error(status::NOT_SUPPORTED);
    /// `cudaErrorNoDevice`.
    pub const NO_DEVICE: Error = Error(status::NO_DEVICE);
    /// `cudaErrorMissingConfiguration`.
    pub const MISSING_CONFIGURATION: Error = Error(status::MISSING_CONFIGURATION);
    /// `cudaErrorUnknown`.
    pub const UNKNOWN: Error = Error(status::UNKNOWN);
}

/// Results of the library's internals.
pub type Result<T> = std::result::Result<T, Error>;

/// Runs an entry point's body behind a panic boundary and does the last-error bookkeeping.
pub fn api(name: &'static str, f: impl FnOnce() -> Result<()>) -> cudaError_t {
    log::trace!("{name}");
    let code = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => status::SUCCESS,
        Ok(Err(Error(code))) => code,
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
