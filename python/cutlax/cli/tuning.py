"""Tuning knobs, for bench/gemm_tune.py.

The Hopper GEMM's tile order and promotion interval exist only in a tuning
build of the extension (the CMake option ``CUTLAX_GEMM_TUNING=ON``, which
scripts/gpu_check.sh's tune step sets: ``pip install . -C
cmake.define.CUTLAX_GEMM_TUNING=ON``); a default build has no process-wide
tuning state, and these functions raise there. Each setting holds for every
later GEMM launch in the process on the GPU (the CPU twin computes the same
product whatever the order or interval). dbias_blocks changes how
bias_relu_backward splits its sums, in any build.
"""
from __future__ import annotations

import contextlib

from cutlax import _cutlax


def available() -> bool:
    """Whether this extension is a tuning build."""
    return bool(_cutlax.build_info().get("gemm_tuning", False))


def _need():
    if not available():
        raise RuntimeError("the GEMM tuning knobs need a tuning build of cutlax: "
                           "pip install . -C cmake.define.CUTLAX_GEMM_TUNING=ON")


def set_tile_order(swizzle: int, raster: int) -> None:
    """The order in which the SM90 GEMMs walk their output tiles, in place of
    the heuristic's: strips ``swizzle`` tiles wide (1, 2, 4 or 8), along
    ``raster`` (0: CUTLASS's heuristic, 1: along M, 2: along N); (0, 0)
    restores the heuristic's order."""
    _need()
    _cutlax.set_gemm_tile_order(swizzle, raster)


def set_promotion_interval(interval: int) -> None:
    """How many WGMMAs the promoted float32 kernel runs between adding its
    partial sums into its float32 accumulators (a positive multiple of 4),
    in place of the default; 0 restores the default."""
    _need()
    _cutlax.set_gemm_promotion_interval(interval)


@contextlib.contextmanager
def tile_order(swizzle: int, raster: int):
    """set_tile_order for the block, the heuristic's order after it."""
    set_tile_order(swizzle, raster)
    try:
        yield
    finally:
        set_tile_order(0, 0)


@contextlib.contextmanager
def promotion_interval(interval: int):
    """set_promotion_interval for the block, the default after it."""
    set_promotion_interval(interval)
    try:
        yield
    finally:
        set_promotion_interval(0)


@contextlib.contextmanager
def dbias_blocks(target: int):
    """bias_relu_backward's aim for the thread blocks of its dbias partials
    (about ``target``; the default 512) while the block runs, for calls
    traced in it; yields the function that gives the row chunks a shape and
    dtype get. Any count gives the same sums."""
    from cutlax.ops import bias_relu_backward as module

    saved = module._TARGET_BLOCKS
    module._TARGET_BLOCKS = target
    try:
        yield module._row_chunks
    finally:
        module._TARGET_BLOCKS = saved
