// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Fuzzes the wire-format decoders: message and reply headers, request and record
//! splitting, every opcode's payload decoding and graph descriptions. They must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vcuda_protocol::decode::{decode_message_header, decode_reply_header, split_records, split_requests};
use vcuda_protocol::{MessageHeader, Request};

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = decode_message_header(data) {
        let ctrl = &data[size_of::<MessageHeader>()..];
        // Also try with the control length the header claims, when it fits.
        let claimed = ctrl.get(..h.ctrl_len as usize).unwrap_or(ctrl);
        for c in [ctrl, claimed] {
            if let Ok(reqs) = split_requests(&h, c) {
                for r in &reqs {
                    let _ = Request::decode(r);
                }
            }
        }
    }
    // A graph description, its node count taken from the first bytes.
    if let Some((n, rest)) = data.split_first_chunk::<2>() {
        let _ = vcuda_protocol::graph::decode(rest, u32::from(u16::from_le_bytes(*n)));
    }
    if let Ok(h) = decode_reply_header(data) {
        let _ = split_records(&h, &data[32..]);
    }
});
