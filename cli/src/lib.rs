// SPDX-License-Identifier: Apache-2.0 OR MIT
//! vcuda: the user's command-line tool
