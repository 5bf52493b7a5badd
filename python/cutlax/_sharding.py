"""Running ops on local shards under plain jax.jit.

When an op's inputs are sharded over *Explicit* mesh axes (``jax.make_mesh``
gives those by default), the sharding is part of their type at trace time. The
op then wraps its kernel call in ``jax.shard_map`` itself: each device runs the
kernel on its local shard, and nothing is all-gathered. The function stays an
ordinary JAX program, so it also exports (unlike ``custom_partitioning``, whose
lowering holds a Python callback).

Inputs over Auto mesh axes carry no sharding at trace time; for them the
kernel runs on the whole array as XLA gathers it (use ``jax.shard_map``
directly to keep such data sharded).
"""

from __future__ import annotations

from typing import Callable, Sequence

import jax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def _axes(entry) -> tuple:
    if entry is None:
        return ()
    return entry if isinstance(entry, tuple) else (entry,)


Spec = tuple  # one entry per dimension: None, a mesh axis name, or a tuple of them
Plan = tuple  # (in_specs, out_spec, reduce_axes)


def used_axes(*specs: Spec) -> set:
    return {a for spec in specs for entry in spec for a in _axes(entry)}


def explicit_spec(x) -> tuple[jax.sharding.Mesh, tuple] | None:
    """(mesh, per-dimension spec) when ``x`` is sharded over Explicit axes, else None."""
    sharding = getattr(jax.typeof(x), "sharding", None)
    if not isinstance(sharding, NamedSharding) or sharding.mesh.empty:
        return None
    mesh = sharding.mesh
    spec = tuple(sharding.spec) + (None,) * (x.ndim - len(sharding.spec))
    explicit = {n for n, t in zip(mesh.axis_names, mesh.axis_types) if t == AxisType.Explicit}
    used = used_axes(spec)
    if not used or not used <= explicit:
        return None
    return mesh, spec


def run(local: Callable, args: Sequence[jax.Array], plan: Callable[[list[Spec]], Plan]):
    """Calls ``local(*args)`` on local shards when any argument is sharded over
    Explicit mesh axes, else on the whole arrays.

    ``plan`` gets each argument's spec (all None when unsharded) and returns
    the specs to run with (arguments are resharded to them, a no-op when they
    match), the result's spec, and the mesh axes whose partial results are
    summed (gemm with K sharded).
    """
    found = [explicit_spec(a) for a in args]
    meshes = [f[0] for f in found if f is not None]
    if not meshes:
        return local(*args)
    mesh = meshes[0]
    specs = [f[1] if f is not None else (None,) * a.ndim for f, a in zip(found, args)]
    in_specs, out_spec, reduce_axes = plan(specs)
    args = [jax.sharding.reshard(a, NamedSharding(mesh, P(*s))) for a, s in zip(args, in_specs)]

    def on_shard(*shards):
        out = local(*shards)
        return jax.lax.psum(out, tuple(reduce_axes)) if reduce_axes else out

    return jax.shard_map(on_shard, mesh=mesh, in_specs=tuple(P(*s) for s in in_specs),
                         out_specs=P(*out_spec))(*args)


def elementwise(specs: list[Spec]) -> Plan:
    """Same-shape operands share the first sharded one's spec (any axis);
    lower-rank operands (saxpy's dynamic alpha) stay whole."""
    rank = max(len(spec) for spec in specs)
    full = [spec for spec in specs if len(spec) == rank]
    spec = next((spec for spec in full if used_axes(spec)), full[0])
    return [spec if len(s) == rank else (None,) * len(s) for s in specs], spec, ()


def bias_last_axis(specs: list[Spec]) -> Plan:
    """x keeps its spec; bias follows x's last axis (a sharded bias alone
    shards x's last axis alike)."""
    x, bias = specs
    spec = x if used_axes(x) else x[:-1] + bias
    return [spec, spec[-1:]], spec, ()


def matmul(specs: list[Spec]) -> Plan:
    """Rows of a, columns of b, and K: a K shard computes a partial product
    and the partial products are summed across K's mesh axes."""
    (m, k_a), (k_b, n) = specs
    k = k_a if k_a is not None else k_b
    if used_axes((k,)) & used_axes((m,)):
        k = None
    if used_axes((n,)) & used_axes((m, k)):
        n = None
    return [(m, k), (k, n)], (m, n), _axes(k)
