// SPDX-License-Identifier: Apache-2.0 OR MIT
//! Fuzzes the loading of saved device state (live migration), which is as hostile as a
//! guest's messages: the input is a container body (wrapped in a header with a matching
//! checksum, so that mutations reach the decoder and the loader) and, when its first byte is
//! odd, also a whole container. Every session it decodes to is loaded into a fresh CPU
//! backend: nothing may panic, and a session that loads must save again.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use vcuda_backend::Backend;
use vcuda_backend::executor::cpu::{CpuConfig, CpuFactory};
use vcuda_backend::executor::{Cancel, Tenant};
use vcuda_backend::migrate::format;

fn backend() -> &'static Arc<Backend> {
    static B: OnceLock<Arc<Backend>> = OnceLock::new();
    B.get_or_init(|| {
        Backend::new(Arc::new(CpuFactory::new(CpuConfig {
            memory: 64 << 20,
            threads: 1,
            ..Default::default()
        })))
    })
}

fuzz_target!(|data: &[u8]| {
    if data.first().is_some_and(|b| b & 1 == 1) {
        let _ = format::decode(data);
    }
    let Ok(state) = format::decode(&format::wrap(data)) else { return };
    for (_, s) in state.sessions {
        if let Ok(mut session) = backend().load_session(s, Cancel::default(), Tenant::unique())
            && session.link_state().is_ok()
        {
            // What loads is something a session can hold: it saves again.
            if let Err(e) = session.save_state() {
                panic!("a loaded session does not save: {e}");
            }
        }
    }
});
