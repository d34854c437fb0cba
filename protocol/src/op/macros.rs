// SPDX-License-Identifier: Apache-2.0 OR MIT
//! `wire_struct!`: declares a request or reply struct of the wire (`#[repr(C)]`, zerocopy,
//! zero by default) and asserts its size.

macro_rules! wire_struct {
    ($(#[$doc:meta])* $name:ident, $size:literal { $($(#[$fdoc:meta])* $field:ident : $ty:ty,)* }) => {
        $(#[$doc])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, PartialEq, FromBytes, IntoBytes, KnownLayout, Immutable)]
        pub struct $name {
            $($(#[$fdoc])* pub $field: $ty,)*
        }
        const _: () = assert!(size_of::<$name>() == $size);

        impl Default for $name {
            fn default() -> Self {
                <Self as zerocopy::FromZeros>::new_zeroed()
            }
        }
    };
}
