// SPDX-License-Identifier: Apache-2.0 OR MIT
//! The vcuda host backend: serves guest CUDA calls over a socket or vhost-user
