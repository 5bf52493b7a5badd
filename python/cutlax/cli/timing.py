"""Timing for the demo, the benchmark and the scripts in bench/: the same
method everywhere.

A function is jit-compiled and warmed up (compilation and first-run costs stay
out), then timed in batches: each batch enqueues `calls` invocations and waits
for the last one, so the host's dispatch overlaps device work, as in a real
program. The figure is the median over batches of (batch time / calls).

A batch also pays once for what is not the op: the first dispatch before the
device starts and the wake-up after the last result. `calls` grows until a
batch lasts at least `min_batch_seconds`, so that this share stays small
next to the batch (bench/README.md has the figures).

Functions that are compared (cutlax against XLA) are timed together, their
batches taken in turn, so that a slow spell of a shared machine falls on both
rather than on whichever ran during it.
"""

from __future__ import annotations

import math
import statistics
import time

import jax


def _batch_seconds(fn, args, calls: int) -> float:
    start = time.perf_counter()
    out = None
    for _ in range(calls):
        out = fn(*args)
    jax.block_until_ready(out)
    return time.perf_counter() - start


def median_seconds_each(fns, *args, calls: int = 10, batches: int = 5, warmup: int = 2,
                        min_batch_seconds: float = 0.05) -> list[float]:
    """The median seconds per call of each of ``fns`` on the same ``args``."""
    sized = []
    for fn in fns:
        for _ in range(warmup):
            jax.block_until_ready(fn(*args))
        single = _batch_seconds(fn, args, 1)
        sized.append((fn, max(calls, math.ceil(min_batch_seconds / max(single, 1e-7)))))
    samples = [[] for _ in fns]
    for _ in range(batches):
        for (fn, n), per_call in zip(sized, samples):
            per_call.append(_batch_seconds(fn, args, n) / n)
    return [statistics.median(per_call) for per_call in samples]


def median_seconds(fn, *args, **options) -> float:
    return median_seconds_each([fn], *args, **options)[0]
