// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The backend's own stdout, kept apart from device `printf` capture.
//!
//! With `--cuda-capture-printf`, fd 1 becomes a pipe that collects what kernels print
//! (`executor::cuda::printf`). What the backend itself says on stdout (the `ready` line
//! `vcuda run` waits for) must still reach the real stdout: the capture saves a duplicate
//! of fd 1 here before it replaces it.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::OnceLock;

static ORIGINAL: OnceLock<Option<OwnedFd>> = OnceLock::new();

/// Keeps a duplicate of fd 1 as it is now (once; later calls change nothing).
pub fn save() {
    ORIGINAL.get_or_init(|| io::stdout().as_fd().try_clone_to_owned().ok());
}

/// A handle on the backend's original stdout.
pub fn original() -> io::Result<File> {
    match ORIGINAL.get() {
        Some(Some(fd)) => fd.try_clone().map(File::from),
        _ => io::stdout().as_fd().try_clone_to_owned().map(File::from),
    }
}
