"""Linear maps whose transpose is a cutlax kernel, for ops' jvp rules.

An op declared with ``def_jvp`` (cutlax.Op) is a ``jax.custom_jvp``: the
forward value runs through the cutlax kernel, and its tangent is an
expression linear in the tangents; one rule yields ``jax.jvp``, ``jax.grad``
and ``jax.grad(jax.grad(...))``. For vector_add and saxpy the tangent is plain
JAX (an add, a scale): XLA's fusion of it is all there is to do. relu and
bias_relu mask the tangent with ``y > 0`` (y the forward result), and that
mask is a ``TangentMap``: a primitive whose forward-mode value XLA computes
(it fuses into what follows) and whose *transpose*, the reverse-mode step, is
a cutlax backward kernel (relu_backward, bias_relu_backward: dx and dbias in
one sweep). JAX's own transposition machinery then puts the kernels into
every gradient.
"""

from __future__ import annotations

from typing import Callable, Sequence

from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from cutlax._sharding import match_varying


class TangentMap:
    """``value(y, *t)``: a map linear in ``t`` for a fixed residual ``y``.

    ``value`` is the JAX expression (forward mode, lowered as XLA ops);
    ``transpose(y, ct)`` returns the cotangent of each ``t`` (reverse mode, a
    cutlax kernel); ``batched(y, *t)`` evaluates the map on operands that
    carry a leading batch axis (the unbatched ones broadcast to it, except
    those that ``value`` already broadcasts). The result has the shape and
    type of ``t[0]``.
    """

    def __init__(self, name: str, value: Callable, transpose: Callable, batched: Callable):
        self.primitive = Primitive(name)
        self.primitive.def_impl(value)
        self.primitive.def_abstract_eval(lambda y, *t: t[0])
        mlir.register_lowering(self.primitive, mlir.lower_fun(value, multiple_results=False))
        ad.primitive_jvps[self.primitive] = self._jvp
        ad.primitive_transposes[self.primitive] = self._transpose
        batching.primitive_batchers[self.primitive] = self._batch
        self._transpose_fn = transpose
        self._batched = batched

    def __call__(self, y, *t):
        return self.primitive.bind(*match_varying(y, *t))

    def _jvp(self, primals, tangents):
        # Linear in t; y only switches the mask, whose derivative is zero
        # almost everywhere.
        y, *t = primals
        return self(y, *t), self(y, *(ad.instantiate_zeros(dt) for dt in tangents[1:]))

    def _transpose(self, ct, y, *t):
        if ad.is_undefined_primal(y):
            raise ValueError(f"{self.primitive.name} is not linear in its residual")
        if type(ct) is ad.Zero:
            return [None] + [ad.Zero(x.aval) if ad.is_undefined_primal(x) else None for x in t]
        cts = self._transpose_fn(y, ct)
        return [None] + [c if ad.is_undefined_primal(x) else None for x, c in zip(t, cts)]

    def _batch(self, args: Sequence, dims: Sequence):
        size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
        moved = [a if d is None else batching.bdim_at_front(a, d, size) for a, d in zip(args, dims)]
        return self._batched(size, [d is not None for d in dims], *moved), 0

