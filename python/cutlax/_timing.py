"""Timing for the demo and the benchmark: the same method everywhere.

A function is jit-compiled and warmed up (compilation and first-run costs stay
out), then timed in batches: each batch enqueues `calls` invocations and waits
for the last one, so the host's dispatch overlaps device work, as in a real
program. The figure is the median over batches of (batch time / calls).
"""

from __future__ import annotations

import statistics
import time

import jax


def median_seconds(fn, *args, calls: int = 10, batches: int = 5, warmup: int = 2) -> float:
    for _ in range(warmup):
        jax.block_until_ready(fn(*args))
    samples = []
    for _ in range(batches):
        start = time.perf_counter()
        out = None
        for _ in range(calls):
            out = fn(*args)
        jax.block_until_ready(out)
        samples.append((time.perf_counter() - start) / calls)
    return statistics.median(samples)
