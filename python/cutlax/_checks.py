"""Trace-time argument checks shared by every op.

Each raises TypeError (wrong dtype or kind) or ValueError (wrong shape or
value) naming the argument and what was expected, before anything reaches
XLA. The messages carry no op name: ``errors`` prefixes them with the op's,
so every op reports in one form (``cutlax.relu: x has dtype ...``).
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
import numpy as np

FLOAT_DTYPES = (jnp.float32, jnp.float16, jnp.bfloat16)
# Scalars that convert to float32 without surprise (saxpy's dynamic alpha).
REAL_DTYPES = FLOAT_DTYPES + (jnp.float64, jnp.int32, jnp.int64)


@contextlib.contextmanager
def errors(op_name: str):
    """Prefixes the TypeError and ValueError messages raised inside with
    ``op_name``: (``cutlax.relu: ...``), once."""
    try:
        yield
    except (TypeError, ValueError) as e:
        if type(e) not in (TypeError, ValueError) or str(e).startswith(f"{op_name}:"):
            raise
        raise type(e)(f"{op_name}: {e}").with_traceback(e.__traceback__) from None


def _names(dtypes) -> str:
    return ", ".join(np.dtype(d).name for d in dtypes)


def array(name: str, x, dtypes=FLOAT_DTYPES) -> jax.Array:
    """``x`` as a JAX array whose dtype is one of ``dtypes``."""
    try:
        x = jnp.asarray(x)
    except TypeError as e:
        raise TypeError(f"{name} must be an array, got {type(x).__name__}") from e
    if x.dtype not in [np.dtype(d) for d in dtypes]:
        raise TypeError(f"{name} has dtype {x.dtype.name}; expected one of: {_names(dtypes)}")
    return x


def same_dtype(name: str, x, ref_name: str, ref) -> None:
    if x.dtype != ref.dtype:
        raise TypeError(
            f"{name} has dtype {x.dtype.name} but {ref_name} has dtype {ref.dtype.name}; they must match")


def same_shape(name: str, x, ref_name: str, ref) -> None:
    if x.shape != ref.shape:
        raise ValueError(
            f"{name} has shape {tuple(x.shape)} but {ref_name} has shape {tuple(ref.shape)}; they must match")


def like(name: str, x, ref_name: str, ref) -> None:
    """Same dtype and shape (elementwise operands)."""
    same_dtype(name, x, ref_name, ref)
    same_shape(name, x, ref_name, ref)


def rank(name: str, x, expected: int) -> None:
    if x.ndim != expected:
        raise ValueError(f"{name} must have rank {expected}, got shape {tuple(x.shape)}")


def min_rank(name: str, x, expected: int) -> None:
    if x.ndim < expected:
        raise ValueError(f"{name} must have rank >= {expected}, got shape {tuple(x.shape)}")
