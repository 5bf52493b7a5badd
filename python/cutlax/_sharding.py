"""Running ops on local shards under plain jax.jit, and the per-device typing
of results inside shard_map.

An op's kernel call goes through ``run``, with the op's ``Rule``: how its
operands split across a mesh. Three cases:

- Inputs sharded over *Explicit* mesh axes (the ``jax.make_mesh`` default)
  carry their sharding in their type at trace time. The op wraps its kernel
  call in ``jax.shard_map`` itself. The program stays ordinary JAX, so it
  exports.
- Anything else (unsharded inputs, or *Auto* mesh axes, whose sharding is only
  decided by XLA's partitioner after tracing) goes through
  ``jax.experimental.custom_partitioning`` with a Shardy sharding rule: the
  partitioner asks the rule's ``plan`` for the shards to run on. On one device,
  and inside shard_map, JAX inlines the plain call, so this costs nothing there.
- Under ``cutlax.export`` (see ``exportable``) the custom_partitioning wrapper
  is left out: its lowering refers to a Python object and cannot be
  serialized. An exported program over Auto axes therefore runs each op on
  gathered inputs; over Explicit axes it stays sharded.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from typing import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.custom_partitioning import custom_partitioning
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

Spec = tuple  # one entry per dimension: None, a mesh axis name, or a tuple of them
# (in_specs, out_spec, reduce_axes); for an op with several results, out_spec
# and reduce_axes are lists with one entry per result.
Plan = tuple


def _axes(entry) -> tuple:
    if entry is None:
        return ()
    return entry if isinstance(entry, tuple) else (entry,)


def used_axes(*specs: Spec) -> set:
    return {a for spec in specs for entry in spec for a in _axes(entry)}


@dataclasses.dataclass(frozen=True)
class Rule:
    """How one op splits over a mesh.

    ``plan`` gets each operand's spec (all None when unsharded) and returns the
    specs to run with (operands are resharded to them, a no-op when they
    match), the result's spec, and the mesh axes whose partial results are
    summed (gemm with K sharded, bias_relu_backward's dbias over rows). ``einsum`` gives, for the operands' ranks,
    the Shardy rule that lets the partitioner propagate shardings through the
    op (``jax.experimental.custom_partitioning`` syntax).
    """

    plan: Callable[[list[Spec]], Plan]
    einsum: Callable[[Sequence[int]], str]
    reduction_factors: tuple[str, ...] = ()
    need_replication_factors: tuple[str, ...] = ()


def _dims(rank: int) -> str:
    return " ".join(f"d{i}" for i in range(rank))


def _elementwise_plan(specs: list[Spec]) -> Plan:
    """Same-shape operands share the first sharded one's spec (any axis);
    lower-rank operands (saxpy's dynamic alpha) stay whole."""
    rank = max(len(spec) for spec in specs)
    full = [spec for spec in specs if len(spec) == rank]
    spec = next((spec for spec in full if used_axes(spec)), full[0])
    return [spec if len(s) == rank else (None,) * len(s) for s in specs], spec, ()


def _elementwise_einsum(ranks: Sequence[int]) -> str:
    # Full-rank operands share every factor; a 0-d operand (alpha) has none.
    full = _dims(max(ranks))
    return ", ".join(full if r else "" for r in ranks) + " -> " + full


def _column_sum_plan(specs: list[Spec]) -> Plan:
    """Elementwise for the same-shape result; the column sums follow the last
    axis and are summed over the mesh axes that split the rows."""
    _, spec, _ = _elementwise_plan(specs)
    return [spec] * len(specs), [spec, spec[-1:]], [(), tuple(used_axes(spec[:-1]))]


def _rows_plan(specs: list[Spec]) -> Plan:
    """Row-wise ops (a norm, a softmax): full-rank operands split their
    leading axes like the first sharded one and keep the last axis whole;
    lower-rank operands (a weight over the last axis) stay whole."""
    _, spec, _ = _elementwise_plan(specs)
    spec = spec[:-1] + (None,)
    return [spec if len(s) == len(spec) else (None,) * len(s) for s in specs], spec, ()


def _rows_einsum(ranks: Sequence[int]) -> str:
    full = max(ranks)
    lead = _dims(full - 1)
    return ", ".join(f"{lead} w" if r == full else "w" if r == 1 else "" for r in ranks) + f" -> {lead} w"


def _bias_last_axis_plan(specs: list[Spec]) -> Plan:
    """x keeps its spec; bias follows x's last axis (a sharded bias alone
    shards x's last axis alike)."""
    x, bias = specs
    spec = x if used_axes(x) else x[:-1] + bias
    return [spec, spec[-1:]], spec, ()


def _matmul_plan(specs: list[Spec]) -> Plan:
    """Rows of a, columns of b, and K: a K shard computes a partial product
    and the partial products are summed across K's mesh axes."""
    (m, k_a), (k_b, n) = specs
    k = k_a if k_a is not None else k_b
    if used_axes((k,)) & used_axes((m,)):
        k = None
    if used_axes((n,)) & used_axes((m, k)):
        n = None
    return [(m, k), (k, n)], (m, n), _axes(k)


def fused_matmul(a_dims: str = "m k", b_dims: str = "k n", results: int = 1) -> Rule:
    """A GEMM with an epilogue (bias, activation) whose operands hold the
    dimensions ``a_dims`` and ``b_dims`` (the transposed forms: "k m", "n k"):
    rows of a and columns of b and the bias split; K stays whole, since the
    activation of a partial product is not a partial of the activation."""
    a_names, b_names = a_dims.split(), b_dims.split()

    def plan(specs: list[Spec]) -> Plan:
        a, b, (bias_n,) = specs
        m, n = a[a_names.index("m")], b[b_names.index("n")]
        n = n if n is not None else bias_n
        if used_axes((n,)) & used_axes((m,)):
            n = None
        split = {"m": m, "n": n}
        ins = [tuple(split.get(d) for d in a_names), tuple(split.get(d) for d in b_names), (n,)]
        out = [(m, n)] * results
        return ins, out if results > 1 else out[0], [()] * results if results > 1 else ()

    outs = ", ".join(["m n"] * results)
    return Rule(plan, lambda ranks: f"{a_dims}, {b_dims}, n -> {outs}", need_replication_factors=("k",))


ELEMENTWISE = Rule(_elementwise_plan, _elementwise_einsum)
BIAS_LAST_AXIS = Rule(_bias_last_axis_plan,
                      lambda ranks: f"{_dims(ranks[0] - 1)} w, w -> {_dims(ranks[0] - 1)} w")
COLUMN_SUM = Rule(_column_sum_plan,
                  lambda ranks: f"{_dims(ranks[0] - 1)} w, {_dims(ranks[0] - 1)} w -> {_dims(ranks[0] - 1)} w, w")
ROWS = Rule(_rows_plan, _rows_einsum, need_replication_factors=("w",))
MATMUL = Rule(_matmul_plan, lambda ranks: "m k, k n -> m n", reduction_factors=("k",))
FUSED_MATMUL = fused_matmul()
FUSED_MATMUL_AUX = fused_matmul(results=2)


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


def result_type(shape, dtype, *inputs):
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


def explicit_spec(x) -> tuple[jax.sharding.Mesh, tuple] | None:
    """(mesh, per-dimension spec) when ``x`` is sharded over Explicit axes, else None."""
    sharding = getattr(jax.typeof(x), "sharding", None)
    if not isinstance(sharding, NamedSharding) or sharding.mesh.empty:
        return None
    mesh = sharding.mesh
    spec = _padded(sharding.spec, x.ndim)
    explicit = {n for n, t in zip(mesh.axis_names, mesh.axis_types) if t == AxisType.Explicit}
    used = used_axes(spec)
    if not used or not used <= explicit:
        return None
    return mesh, spec


def _padded(spec, ndim: int) -> Spec:
    return tuple(spec) + (None,) * (ndim - len(spec))


def _each_result(fn: Callable, out_spec, *per_result):
    """``fn`` applied per result: to each entry of the lists of a
    several-result plan, or once for a single result."""
    if isinstance(out_spec, list):
        return tuple(fn(*entry) for entry in zip(out_spec, *per_result))
    return fn(out_spec, *per_result)


def _on_shards(local: Callable, out_spec, reduce_axes) -> Callable:
    def reduced(spec, out, axes):
        return jax.lax.psum(out, tuple(axes)) if axes else out

    return lambda *shards: _each_result(reduced, out_spec, local(*shards), reduce_axes)


_exporting = contextvars.ContextVar("cutlax_exporting", default=False)


@contextlib.contextmanager
def exportable():
    """Traces ops without custom_partitioning, which cannot be serialized."""
    token = _exporting.set(True)
    try:
        yield
    finally:
        _exporting.reset(token)


# An operand with no elements (gemm's bias of length 0, its "no bias") has
# nothing to split, and it is kept out of the partitioned call: the shards
# make their own (zeros of its shape) and the rule is asked about the other
# operands alone. As an operand of the partitioned call it crashed jaxlib
# 0.11.2's CPU compiler (a segfault in the GEMM's sharded tests),
# whether or not its factors were its own; kept out, those tests pass there.

def _without_empty(rule: Rule, ranks: Sequence[int], empty: dict) -> Rule:
    """``rule`` for the operands that are not in ``empty`` (index: type)."""
    def plan(specs: list[Spec]) -> Plan:
        given = iter(specs)
        full = [(None,) * rank if i in empty else next(given) for i, rank in enumerate(ranks)]
        in_specs, out_spec, reduce_axes = rule.plan(full)
        return [spec for i, spec in enumerate(in_specs) if i not in empty], out_spec, reduce_axes

    operands, results = rule.einsum(ranks).split("->")
    kept = ", ".join(dims.strip() for i, dims in enumerate(operands.split(",")) if i not in empty)
    present = set(kept.split()) | set(results.split())
    return Rule(plan, lambda _: f"{kept} ->{results}",
                tuple(f for f in rule.reduction_factors if f in present),
                tuple(f for f in rule.need_replication_factors if f in present))


def _with_empty(local: Callable, empty: dict, count: int) -> Callable:
    """``local`` over the non-empty operands, the empty ones made in place."""
    def full(*given):
        given = iter(given)
        return local(*(jnp.zeros(empty[i].shape, empty[i].dtype) if i in empty else next(given)
                       for i in range(count)))
    return full


def run(local: Callable, args: Sequence[jax.Array], rule: Rule, whole: Callable | None = None):
    """``local(*args)``, run on local shards wherever the arguments are
    sharded. ``whole`` (default ``local``) is what runs on the arguments
    themselves: unsharded, under ``exportable``, or as the partitioner's
    unsplit call, so it may keep the result types of the whole call."""
    whole = local if whole is None else whole
    empty = {i: jax.ShapeDtypeStruct(a.shape, a.dtype) for i, a in enumerate(args) if 0 in a.shape}
    if empty:
        rule = _without_empty(rule, [a.ndim for a in args], empty)
        local = _with_empty(local, empty, len(args))
        whole = _with_empty(whole, empty, len(args))
        args = [a for i, a in enumerate(args) if i not in empty]
        if not args:
            return whole()
    found = [explicit_spec(a) for a in args]
    meshes = [f[0] for f in found if f is not None]
    if meshes:
        mesh = meshes[0]
        specs = [f[1] if f is not None else (None,) * a.ndim for f, a in zip(found, args)]
        in_specs, out_spec, reduce_axes = rule.plan(specs)
        args = [jax.sharding.reshard(a, NamedSharding(mesh, P(*s))) for a, s in zip(args, in_specs)]
        return jax.shard_map(_on_shards(local, out_spec, reduce_axes), mesh=mesh,
                             in_specs=tuple(P(*s) for s in in_specs),
                             out_specs=_each_result(lambda s: P(*s), out_spec))(*args)
    if _exporting.get():
        return whole(*args)
    return _partitioned(local, rule, [a.ndim for a in args], whole)(*args)


def _partitioned(local: Callable, rule: Rule, ranks: list[int], whole: Callable) -> Callable:
    """``whole`` as one op that XLA's partitioner splits by ``rule`` into
    ``local`` calls on the shards."""
    fn = custom_partitioning(whole)

    def planned(mesh, arg_shapes):
        specs = [_padded(a.sharding.spec, len(a.shape)) for a in arg_shapes]
        in_specs, out_spec, reduce_axes = rule.plan(specs)
        named = lambda spec: NamedSharding(mesh, P(*spec))  # noqa: E731
        return [named(s) for s in in_specs], out_spec, _each_result(named, out_spec), reduce_axes

    def partition(mesh, arg_shapes, result_shape):
        in_shardings, out_spec, out_sharding, reduce_axes = planned(mesh, arg_shapes)
        return mesh, _on_shards(local, out_spec, reduce_axes), out_sharding, tuple(in_shardings)

    def infer_sharding_from_operands(mesh, arg_shapes, result_shape):
        return planned(mesh, arg_shapes)[2]

    fn.def_partition(partition=partition, infer_sharding_from_operands=infer_sharding_from_operands,
                     sharding_rule=rule.einsum(ranks), reduction_factors=rule.reduction_factors,
                     need_replication_factors=rule.need_replication_factors)
    return fn
