// SPDX-License-Identifier: Apache-2.0 OR MIT
//! What a session loaded in a migration shares of the guest's pages, until this backend
//! maps the guest's memory (see `state.rs`).

use std::collections::{BTreeMap, HashSet};

use vcuda_protocol::virtio::{MAX_SHARE_EXTENTS, MAX_SHARE_LEN, SHARE_PAGE};

use crate::migrate::MigrateError;
use crate::migrate::state::MappedState;
use crate::shared::{AddressHold, hold_alias_span};

/// What a loaded session shares of the guest's pages, to be shared again once this backend
/// maps the guest's memory ([`Session::restore_guest_pages`]).
pub struct Pending {
    pub(super) shared: Vec<(u64, Vec<(u64, u64)>)>,
    pub(super) next: u64,
    pub(super) mapped: Vec<MappedState>,
    /// The address space of each range in `mapped`, by its address, held since the load
    /// where the executor maps them in place ([`Pending::hold_addresses`]).
    pub(super) holds: BTreeMap<u64, AddressHold>,
}

impl Pending {
    /// The guest-physical extents of every page it shares.
    pub fn extents(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.shared.iter().flat_map(|(_, e)| e.iter().copied())
    }

    /// Checks what a saved session shares: handles its counter could have made (each once),
    /// extents of whole pages within the bounds of one `SharePages`, ranges of known
    /// regions (their bounds are checked again when mapped).
    pub fn check(
        shared: Vec<(u64, Vec<(u64, u64)>)>,
        next: u64,
        mapped: Vec<MappedState>,
    ) -> Result<Option<Self>, MigrateError> {
        if shared.is_empty() && mapped.is_empty() {
            return Ok(None);
        }
        if shared.len() > crate::shared::MAX_REGIONS || mapped.len() > crate::shared::MAX_REGIONS {
            return Err(MigrateError::invalid("too many shared regions"));
        }
        let mut seen = HashSet::new();
        for (h, extents) in &shared {
            let mut total = 0u64;
            let ok = *h != 0
                && *h <= next
                && seen.insert(*h)
                && !extents.is_empty()
                && extents.len() <= MAX_SHARE_EXTENTS as usize
                && extents.iter().all(|&(a, l)| {
                    total = total.saturating_add(l);
                    l > 0 && a.is_multiple_of(SHARE_PAGE) && l.is_multiple_of(SHARE_PAGE)
                })
                && total <= MAX_SHARE_LEN;
            if !ok {
                return Err(MigrateError::invalid(format_args!("shared region {h}")));
            }
        }
        if mapped.iter().any(|m| !seen.contains(&m.region)) {
            return Err(MigrateError::invalid("a mapped range of no region"));
        }
        let mut spans: Vec<(u64, u64)> = mapped
            .iter()
            .map(|m| (m.addr, m.addr.saturating_add(m.len)))
            .collect();
        spans.sort_unstable();
        if spans.windows(2).any(|w| w[1].0 < w[0].1) {
            return Err(MigrateError::invalid("mapped ranges overlap"));
        }
        Ok(Some(Self {
            shared,
            next,
            mapped,
            holds: BTreeMap::new(),
        }))
    }

    /// Holds, in this process, the address space of every range mapped for kernels, for
    /// an executor whose device reaches them at this process's addresses (a GPU): they
    /// are mapped again there only once this backend maps the guest's memory, after the
    /// migration has ended, and a range whose address something else took meanwhile would
    /// end its session. Held now, an address taken here fails the load instead, while the
    /// guest can still run on where it was.
    pub fn hold_addresses(&mut self) -> Result<(), MigrateError> {
        for m in &self.mapped {
            let hold = hold_alias_span(m.offset, m.len, m.addr).map_err(|s| {
                if s == crate::executor::Status::NOT_SUPPORTED {
                    MigrateError::NoRoom(format!(
                        "host addresses {:#x}+{:#x} of memory mapped for kernels are taken \
                         on this host",
                        m.addr, m.len
                    ))
                } else {
                    MigrateError::invalid(format_args!("mapped range at {:#x}", m.addr))
                }
            })?;
            self.holds.insert(m.addr, hold);
        }
        Ok(())
    }
}
