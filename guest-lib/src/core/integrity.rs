// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The driver's answer to the static runtime's integrity check.
//!
//! NVIDIA's static runtime (what plain `nvcc` links) asks the driver, through a private
//! export table, for a 16-byte digest of facts both sides know: the driver and runtime
//! versions, the calling process and thread, where the driver's tables live and the
//! devices it sees. It computes the same digest itself and refuses to run
//! (`cudaErrorSoftwareValidityNotEstablished`) when the two differ. The digest is HMAC-MD2
//! under a fixed key over those facts, laid out as the C structures below (public facts,
//! documented by the ZLUDA project); for check versions ending in 0 or 1 it is a constant.

use hmac::{Hmac, Mac};
use md2::Md2;

/// The HMAC key.
const KEY: [u8; 16] = [
    0x14, 0x6A, 0xDD, 0xAE, 0x53, 0xA9, 0xA7, 0x52, 0xAA, 0x08, 0x41, 0x36, 0x0B, 0xF5, 0x5A, 0x9F,
];

/// One device as the check sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Device {
    /// `cuDeviceGetUuid_v2`.
    pub uuid: [u8; 16],
    /// `CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID`, `_PCI_BUS_ID`, `_PCI_DEVICE_ID`.
    pub pci: [i32; 3],
}

/// What the digest covers besides the devices.
#[derive(Clone, Copy, Debug, Default)]
pub struct Facts {
    /// The check's version (the runtime's argument).
    pub version: u32,
    /// The runtime's clock (seconds since 1970, its argument).
    pub unix_seconds: u64,
    /// What `cuDriverGetVersion` reports.
    pub driver_version: u32,
    /// The process id.
    pub pid: u32,
    /// The calling thread (`pthread_self`, low 32 bits).
    pub thread: u32,
    /// The address of the runtime-interface table.
    pub cudart_table: u64,
    /// The address of the integrity-check table.
    pub check_table: u64,
    /// The address of the check function itself.
    pub check_fn: u64,
}

/// The digest the runtime expects, as two native-endian words.
pub fn digest(f: &Facts, devices: &[Device]) -> [u64; 2] {
    match f.version % 10 {
        0 => return [0x3341_181C_03CB_675C, 0x8ED3_83AA_1F4C_D1E8],
        1 => return [0x1841_181C_03CB_675C, 0x8ED3_83AA_1F4C_D1E8],
        _ => {}
    }
    // The C structure's fields in order: four u32, three pointers, one u64 (48 bytes, no
    // padding); then per device its UUID and three i32 (28 bytes).
    let mut msg = Vec::with_capacity(48 + 28 * devices.len());
    for w in [f.driver_version, f.version, f.pid, f.thread] {
        msg.extend_from_slice(&w.to_le_bytes());
    }
    for w in [f.cudart_table, f.check_table, f.check_fn, f.unix_seconds] {
        msg.extend_from_slice(&w.to_le_bytes());
    }
    for d in devices {
        msg.extend_from_slice(&d.uuid);
        for v in d.pci {
            msg.extend_from_slice(&v.to_le_bytes());
        }
    }
    let Ok(mut mac) = Hmac::<Md2>::new_from_slice(&KEY) else {
        // HMAC takes keys of any length; this cannot happen.
        return [0; 2];
    };
    mac.update(&msg);
    let out = mac.finalize().into_bytes();
    let mut words = [0u64; 2];
    for (w, c) in words.iter_mut().zip(out.chunks_exact(8)) {
        let mut b = [0u8; 8];
        b.copy_from_slice(c);
        *w = u64::from_le_bytes(b);
    }
    words
}

#[cfg(test)]
mod tests {
    use md2::Digest;

    use super::*;

    #[test]
    fn md2_is_rfc1319s() {
        let d = Md2::digest(b"abc");
        assert_eq!(
            d.as_slice(),
            [
                0xda, 0x85, 0x3b, 0x0d, 0x3f, 0x88, 0xd9, 0x9b, 0x30, 0x28, 0x3a, 0x69, 0xe6, 0xde,
                0xd6, 0xbb
            ]
        );
    }

    #[test]
    fn versions_ending_in_0_or_1_are_constants() {
        let f = Facts {
            version: 13000,
            ..Facts::default()
        };
        assert_eq!(digest(&f, &[])[0], 0x3341_181C_03CB_675C);
        let f = Facts {
            version: 12081,
            ..Facts::default()
        };
        assert_eq!(digest(&f, &[])[0], 0x1841_181C_03CB_675C);
    }

    #[test]
    fn every_fact_changes_the_digest() {
        let base = Facts {
            version: 13002,
            unix_seconds: 1_790_000_000,
            driver_version: 13000,
            pid: 4242,
            thread: 0xf79c_1000,
            cudart_table: 0x7fff_0000_1000,
            check_table: 0x7fff_0000_2000,
            check_fn: 0x7fff_0000_3000,
        };
        let dev = Device {
            uuid: [7; 16],
            pci: [0, 2, 0],
        };
        let d0 = digest(&base, &[dev]);
        assert_ne!(d0, digest(&base, &[]));
        assert_ne!(d0, digest(&Facts { pid: 4243, ..base }, &[dev]));
        assert_ne!(
            d0,
            digest(
                &base,
                &[Device {
                    pci: [0, 3, 0],
                    ..dev
                }]
            )
        );
        assert_eq!(d0, digest(&base, &[dev]));
    }
}
