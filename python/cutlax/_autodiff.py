"""Derivatives for the elementwise ops.

The forward value runs through the cutlax kernel; the derivative is given as
a JAX expression linear in the tangents (a custom_jvp). JAX can transpose such
an expression, so one rule yields ``jax.jvp``, ``jax.grad`` and
``jax.grad(jax.grad(...))``. The tangent math is left to XLA, which fuses it
(relu's mask, bias_relu's masked sum). Dedicated backward kernels that produce
dx and dbias in one pass are not written yet.
"""

from __future__ import annotations

from typing import Callable

import jax


def differentiable(primal: Callable, tangent: Callable) -> Callable:
    """``primal(*args)``, differentiated as ``tangent(out, args, tangents)``."""
    fn = jax.custom_jvp(primal)

    @fn.defjvp
    def _jvp(args, tangents):
        out = fn(*args)
        return out, tangent(out, args, tangents)

    return fn
