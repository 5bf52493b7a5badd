"""Trace-time argument checks shared by every op.

Each raises TypeError (wrong dtype or kind) or ValueError (wrong shape or
value) with the op, the argument and what was expected, before anything
reaches XLA.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

FLOAT_DTYPES = (jnp.float32, jnp.float16, jnp.bfloat16)
# Scalars that convert to float32 without surprise (saxpy's dynamic alpha).
REAL_DTYPES = FLOAT_DTYPES + (jnp.float64, jnp.int32, jnp.int64)


def _names(dtypes) -> str:
    return ", ".join(np.dtype(d).name for d in dtypes)


def array(op: str, name: str, x, dtypes=FLOAT_DTYPES) -> jax.Array:
    """``x`` as a JAX array whose dtype is one of ``dtypes``."""
    try:
        x = jnp.asarray(x)
    except TypeError as e:
        raise TypeError(f"cutlax.{op}: {name} must be an array, got {type(x).__name__}") from e
    if x.dtype not in [np.dtype(d) for d in dtypes]:
        raise TypeError(
            f"cutlax.{op}: {name} has dtype {x.dtype.name}; expected one of: {_names(dtypes)}"
        )
    return x


def same_dtype(op: str, name: str, x, ref_name: str, ref) -> None:
    if x.dtype != ref.dtype:
        raise TypeError(
            f"cutlax.{op}: {name} has dtype {x.dtype.name} but {ref_name} has dtype "
            f"{ref.dtype.name}; they must match"
        )


def same_shape(op: str, name: str, x, ref_name: str, ref) -> None:
    if x.shape != ref.shape:
        raise ValueError(
            f"cutlax.{op}: {name} has shape {tuple(x.shape)} but {ref_name} has shape "
            f"{tuple(ref.shape)}; they must match"
        )


def rank(op: str, name: str, x, expected: int) -> None:
    if x.ndim != expected:
        raise ValueError(
            f"cutlax.{op}: {name} must have rank {expected}, got shape {tuple(x.shape)}"
        )


def min_rank(op: str, name: str, x, expected: int) -> None:
    if x.ndim < expected:
        raise ValueError(
            f"cutlax.{op}: {name} must have rank >= {expected}, got shape {tuple(x.shape)}"
        )


def _varying(aval) -> frozenset:
    """The mesh axes a value varies over inside shard_map (jax's "vma")."""
    manual = getattr(aval, "mat", None) or getattr(aval, "manual_axis_type", None)
    return manual.varying if manual is not None else getattr(aval, "vma", frozenset())


def match_varying(*xs) -> list:
    """``xs`` cast to vary over the union of their mesh axes inside shard_map,
    as JAX's own primitives do; the transpose of that cast is the psum that
    turns a per-shard cotangent of a replicated operand back into one value."""
    union = frozenset().union(*(_varying(jax.typeof(x)) for x in xs))
    out = []
    for x in xs:
        missing = tuple(sorted(union - _varying(jax.typeof(x))))
        out.append(jax.lax.pcast(x, missing, to="varying") if missing else x)
    return out


def result(shape, dtype, *inputs):
    """The output type for ffi_call: ``shape`` and ``dtype`` with the type
    information of the inputs, above all the mesh axes they vary over.

    Inside jax.shard_map a result computed from values that differ per device
    differs per device too. ffi_call takes result types as given, so a plain
    ShapeDtypeStruct would claim the result is the same everywhere, and
    out_specs=P() would silently return device 0's shard. The type of the
    input that varies over the most axes is kept (within one op the inputs'
    varying axes agree once JAX has broadcast them).
    """
    base = max((jax.typeof(x) for x in inputs), key=lambda a: len(_varying(a)))
    return base.update(shape=tuple(shape), dtype=np.dtype(dtype))
