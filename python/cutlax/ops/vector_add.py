"""vector_add: ``a + b`` through the classic CuTe 3-D view kernel."""

from __future__ import annotations

import jax

from cutlax import _checks
from cutlax._targets import VECTOR_ADD


def vector_add(a, b) -> jax.Array:
    """Returns ``a + b`` for arrays of one shape and one dtype (f32, f16, bf16).

    Runs src/ops/vector_add.cu on CUDA devices and its C++ twin on CPU.
    """
    a = _checks.array("vector_add", "a", a)
    b = _checks.array("vector_add", "b", b)
    _checks.same_dtype("vector_add", "b", b, "a", a)
    _checks.same_shape("vector_add", "b", b, "a", a)
    call = jax.ffi.ffi_call(
        VECTOR_ADD, jax.ShapeDtypeStruct(a.shape, a.dtype), vmap_method="broadcast_all"
    )
    return call(a, b)
