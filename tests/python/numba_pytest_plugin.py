# SPDX-License-Identifier: Apache-2.0 OR MIT
"""What numba-cuda's tests expect of pytest beyond the installed package, written for
vcuda's tests/python/numba-suite.sh: numba-cuda keeps it in its repository's conftest.py,
which the wheel does not carry (and PyPI has no source release of 0.30.4). Loaded with
`-p numba_pytest_plugin`.

- `--dump-failed-filechecks` and the class fixture `initialize_from_pytest_config` that
  CUDATestCase uses, which copies that option onto the test class.
- The `requires_cc_min` / `requires_cc_exact` markers: skip where the device's compute
  capability does not fit, with numba's own check where it has one."""
import pytest


def pytest_addoption(parser):
    parser.addoption(
        "--dump-failed-filechecks",
        action="store_true",
        help="Dump reproducers for FileCheck tests that fail.",
    )


@pytest.fixture(scope="class")
def initialize_from_pytest_config(request):
    request.cls._dump_failed_filechecks = request.config.getoption("dump_failed_filechecks")


def pytest_runtest_setup(item):
    from numba.cuda import testing

    for name in ("requires_cc_min", "requires_cc_exact"):
        check = getattr(testing, "check_" + name[len("requires_"):], None)
        for marker in item.iter_markers(name):
            if check is None:
                continue
            feature = marker.args[1] if len(marker.args) > 1 else "This feature"
            skip, why = check(marker.args[0], feature)
            if skip:
                pytest.skip(why)
