"""Batching rules an op declares with ``op.def_vmap(rule)``: how it runs under
``jax.vmap``.

A rule is called as ``rule(call, axis_size, in_batched, *args)`` with the
operands (each batched one carries the batch as its leading axis) and
returns ``(out, out_batched)``; ``call(*arrays)`` is the op itself, with the
same attributes (``call.attrs``, a dict, for rules that depend on them), so a
rule may run it on a whole batch at once. Any function
of that form is a rule (the built-in bias_relu, bias_relu_backward and gemm
have their own); these are the common ones:

  BROADCAST    unbatched operands are broadcast along the batch and the op
               runs once on the whole batch: for ops that take any leading
               axes (elementwise, row-wise)
  broadcast(shared=(i, ...))
               the same, but operands ``i`` have no room for a batch (saxpy's
               0-d alpha): when one of them is batched, SEQUENTIAL runs instead
  FLATTEN      elementwise ops whose kernel takes flat (rank-1) arrays, as
               jit kernels often do: the operands, broadcast to one shape,
               run as one flat array, and the result takes the batch's shape
  SEQUENTIAL   ``jax.lax.map``: one call per batch element, for any op
"""

from __future__ import annotations

from typing import Callable, Sequence

import jax
import jax.numpy as jnp

Rule = Callable  # (call, axis_size, in_batched, *args) -> (out, out_batched)


def broadcast_batch(size: int, batched: Sequence[bool], args: Sequence) -> list:
    """Gives every unbatched operand a leading batch axis of ``size``."""
    return [a if b else jnp.broadcast_to(a, (size, *a.shape)) for a, b in zip(args, batched)]


def _all_batched(out):
    return jax.tree.map(lambda _: True, out)


def _sequential(call, axis_size, in_batched, *args):
    out = jax.lax.map(lambda xs: call(*xs), tuple(broadcast_batch(axis_size, in_batched, args)))
    return out, _all_batched(out)


def broadcast(*, shared: tuple[int, ...] = ()) -> Rule:
    """BROADCAST, except that operands ``shared`` keep their shape; a batch
    along one of them runs the op once per batch element."""

    def rule(call, axis_size, in_batched, *args):
        if any(in_batched[i] for i in shared):
            return _sequential(call, axis_size, in_batched, *args)
        out = call(*(a if b or i in shared else jnp.broadcast_to(a, (axis_size, *a.shape))
                     for i, (a, b) in enumerate(zip(args, in_batched))))
        return out, _all_batched(out)

    return rule


def _flatten(call, axis_size, in_batched, *args):
    full = broadcast_batch(axis_size, in_batched, args)
    shape = full[0].shape
    if any(a.shape != shape for a in full):
        raise ValueError(f"cutlax.batching.FLATTEN needs operands of one shape; got {[a.shape for a in full]}")
    out = call(*(a.reshape(-1) for a in full))
    out = jax.tree.map(lambda o: o.reshape(shape), out)
    return out, _all_batched(out)


BROADCAST = broadcast()
FLATTEN = _flatten
SEQUENTIAL = _sequential

__all__ = ["BROADCAST", "FLATTEN", "SEQUENTIAL", "Rule", "broadcast", "broadcast_batch"]
