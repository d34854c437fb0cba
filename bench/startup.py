#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 OR MIT
"""Median wall time of whole commands, run alternately (start-up costs, BENCHMARKS.md).

    python3 bench/startup.py [--runs N] [--rounds R] -- 'CMD A' 'CMD B' ...

Each round runs every command N times in turn and prints its median in ms; output is
discarded. Commands are split with shlex. Environment is inherited (VCUDA_BACKEND,
VCUDA_LIB_DIR, ...).
"""
import argparse
import shlex
import statistics
import subprocess
import sys
import time


def median_ms(cmd, runs):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=60)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("commands", nargs="+")
    a = p.parse_args()
    for r in range(a.rounds):
        for c in a.commands:
            print(f"round {r + 1}  {median_ms(shlex.split(c), a.runs):8.2f} ms  {c}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
