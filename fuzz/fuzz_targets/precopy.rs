// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Fuzzes the destination's side of a migration's pre-copy (`migrate::precopy`), whose
//! stream comes from another backend and is treated as hostile: the input is the stream.
//! Nothing may panic, the blocks kept stay under the cap, and a stream that ends properly
//! is answered with one byte that says whether every block was kept.
#![no_main]

use std::io::{self, Cursor, Read, Write};
use std::sync::Mutex;

use libfuzzer_sys::fuzz_target;
use vcuda_backend::migrate::precopy::{Received, receive};

/// The input to read, the answer written.
struct Duplex<'a>(Cursor<&'a [u8]>, Vec<u8>);

impl Read for Duplex<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for Duplex<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.1.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

const CAP: u64 = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let into = Mutex::new(Received::default());
    let mut d = Duplex(Cursor::new(data), Vec::new());
    let r = receive(&mut d, &into, CAP);
    let got = into.into_inner().unwrap();
    assert!(got.bytes() <= CAP);
    match r {
        Ok(()) => assert!(d.1.len() == 1 && (d.1[0] == 1) == got.complete),
        Err(_) => assert!(d.1.is_empty() && !got.complete),
    }
});
