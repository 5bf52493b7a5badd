"""The GEMM's facts as the C++ side publishes them (the extension's
``build_info()``, src/ops/gemm_module.cpp): configuration names, the
promoted configuration, the operand forms, the activations, the row rule and
the kernels that are built. Python repeats none of them."""

from __future__ import annotations

import jax.numpy as jnp

from cutlax import _cutlax

_INFO = _cutlax.build_info()

# The kernel configurations, in GemmConfig's order (src/ops/gemm_configs.hpp);
# index 0, "auto", lets the C++ heuristic choose per shape at launch.
CONFIGS: tuple[str, ...] = tuple(_INFO["gemm_configs"])
# The configuration whose partial sums are promoted every K tile: 3xTF32 on it
# has FP32's accuracy (precision="highest").
PROMOTED: str = _INFO["gemm_promoted_config"]
# The op's attribute "transpose", in GemmTranspose's order: which operand the
# kernel reads transposed.
TRANSPOSES: tuple[str, ...] = tuple(_INFO["gemm_transposes"])
PLAIN, B_TRANSPOSED, A_TRANSPOSED = (TRANSPOSES.index(t) for t in ("none", "b", "a"))
# The op's attribute "activation", in GemmActivation's order (src/ops/gemm.hpp),
# with Python's None for "none".
ACTIVATIONS: tuple[str | None, ...] = tuple(None if a == "none" else a for a in _INFO["gemm_activations"])
NO_ACTIVATION, RELU, GELU = (ACTIVATIONS.index(a) for a in (None, "relu", "gelu"))
# TMA moves rows of this many bytes: each array's rows must be multiples of it.
ROW_BYTES: int = _INFO["gemm_row_bytes"]
# The SM90 kernels that are built (src/ops/gemm_kernels.def), as (dtype name,
# transpose name, config name): not every configuration for every dtype and form.
KERNELS: frozenset[tuple[str, str, str]] = frozenset(map(tuple, _INFO["gemm_kernels"]))


def built(dtype, transpose: int, config: int = 0) -> bool:
    """Whether a kernel is built for the dtype and form (in the configuration,
    unless it is 0, auto)."""
    name = jnp.dtype(dtype).name
    return any(k[:2] == (name, TRANSPOSES[transpose]) and (config == 0 or k[2] == CONFIGS[config])
               for k in KERNELS)


def configs(dtype) -> tuple[str, ...]:
    """The configurations that impl= can force for this dtype, in CONFIGS'
    order, "auto" first: those built for a form that reads a as it is
    stored, with b as stored or copied to (N, K) (float32: the promoted
    kernel takes b as (N, K)). The backward's a-transposed form may have more,
    e.g. the 64x128 kernel that auto picks for the weight gradient."""
    name = jnp.dtype(dtype).name
    return tuple(c for c in CONFIGS if c == "auto" or any((name, f, c) in KERNELS for f in ("none", "b")))


def row_elements(dtype) -> int:
    """The row rule in elements of the dtype."""
    return ROW_BYTES // jnp.dtype(dtype).itemsize
