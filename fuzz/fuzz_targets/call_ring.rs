// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Fuzzes the backend's end of the call ring against a guest that scribbles over the ring's
//! header and sends arbitrary bytes on the socket: every read and write either works within
//! the ring or is an error, and note parsing never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vcuda_ring::{Mapping, Notes, Ring, Side};

fuzz_target!(|data: &[u8]| {
    let Ok((g, fd)) = Mapping::create() else { return };
    let Ok(h) = Mapping::attach(&fd) else { return };
    let guest = Ring::new(g, Side::Guest);
    let mut host = Ring::new(h, Side::Host);
    let mut notes = Notes::default();
    let mut found = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut ops = data;
    while let Some((&op, rest)) = ops.split_first() {
        ops = rest;
        let Some((arg, rest)) = ops.split_first_chunk::<8>() else { break };
        ops = rest;
        let v = u64::from_le_bytes(*arg);
        match op % 5 {
            // The guest stores anything into a header word.
            0 => guest.scribble(((v >> 56) as usize % 64) * 8, v & 0x00ff_ffff_ffff_ffff),
            1 => {
                let n = (v as usize) % buf.len();
                if let Ok(got) = host.read(&mut buf[..n]) {
                    assert!(got <= n);
                }
            }
            2 => {
                let n = (v as usize) % buf.len();
                if let Ok(put) = host.write(&buf[..n]) {
                    assert!(put <= n);
                }
            }
            3 => {
                let _ = notes.feed(&arg[..], &mut found);
            }
            _ => {
                let _ = (host.readable(), host.writable(), host.peer_wants_wake());
                host.sleep_begin();
                host.sleep_end();
            }
        }
    }
});
