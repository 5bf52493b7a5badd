"""saxpy: ``alpha * x + y``, with a static or a dynamic alpha (two targets)."""

import numbers

import jax
import jax.numpy as jnp
import numpy as np

from cutlax import _checks, batching, sharding
from cutlax.library import builtin
from cutlax.op import same_as

# alpha an attribute: a constant of the compiled program.
_static = builtin("saxpy")
_static.def_checks(lambda x, y, alpha: _checks.like("y", y, "x", x))
_static.def_shape(same_as(0))
_static.def_jvp(lambda out, args, t, alpha: (alpha * t[0].astype(jnp.float32) + t[1]).astype(out.dtype))
_static.def_vmap(batching.BROADCAST)
_static.def_sharding(sharding.ELEMENTWISE)


def _dynamic_tangent(out, args, t):
    alpha, x, _ = args
    t_alpha, tx, ty = t
    return (alpha * tx.astype(jnp.float32) + t_alpha * x.astype(jnp.float32) + ty).astype(out.dtype)


# alpha a 0-d float32 operand: one program serves every value.
_dynamic = builtin("saxpy_dynamic", public_name="cutlax.saxpy")
_dynamic.def_checks(lambda alpha, x, y: _checks.like("y", y, "x", x))
_dynamic.def_shape(same_as(1))
_dynamic.def_jvp(_dynamic_tangent)
_dynamic.def_vmap(batching.broadcast(shared=(0,)))  # a 0-d alpha has no room for a batch
_dynamic.def_sharding(sharding.ELEMENTWISE)


def saxpy(alpha, x, y) -> jax.Array:
    """``alpha * x + y`` (arithmetic in float32, rounded once to x's dtype).

    ``alpha`` as a Python or NumPy number is *static*: it becomes an FFI
    attribute, a constant of the compiled program, so each new value compiles
    a new program (as with ``static_argnums``). A JAX array ``alpha`` (0-d,
    traced or not) is *dynamic*: it is passed to the kernel as an operand, so
    one compiled program serves every value.
    """
    with _checks.errors("cutlax.saxpy"):
        if isinstance(alpha, (bool, np.bool_, str, bytes)):
            raise TypeError(f"alpha must be a number or a 0-d array, got {alpha!r}")
        if isinstance(alpha, (numbers.Real, np.floating, np.integer)):
            return _static(x, y, alpha=np.float32(alpha))
        alpha = _checks.array("alpha", alpha, dtypes=_checks.REAL_DTYPES)
        if alpha.shape != ():
            raise ValueError(f"alpha must be a scalar (shape ()), got shape {tuple(alpha.shape)}")
    return _dynamic(alpha.astype(jnp.float32), x, y)


__all__ = ["saxpy"]
