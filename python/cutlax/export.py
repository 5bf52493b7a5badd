"""Ahead-of-time export of functions that use cutlax ops.

``jax.export`` refuses custom calls whose targets carry no compatibility
guarantee unless each is named in ``disabled_checks``. cutlax's targets carry
one: their names are versioned (``cutlax_<op>_v1``), and a change to a
handler's operands, attributes or meaning ships under a new name, so an
artifact keeps calling the kernel it was exported with (docs/export.md).

    exp = cutlax.export.export(f, jax.ShapeDtypeStruct(jax.export.symbolic_shape("b, 1024"), jnp.float32),
                               platforms=("cpu", "cuda"))
    blob = exp.serialize()
    # later, in any process:  import cutlax; jax.export.deserialize(blob).call(x)

The process that calls a deserialized artifact must ``import cutlax`` first:
that registers the handlers; without it XLA reports that no FFI handler is
registered for the target.
"""

from __future__ import annotations

from typing import Any, Sequence

import jax

from cutlax._library import registered_targets
from cutlax._sharding import exportable

__all__ = ["disabled_checks", "export"]


def disabled_checks() -> list[jax.export.DisabledSafetyCheck]:
    """The ``DisabledSafetyCheck`` list for every registered cutlax FFI target, and only those.

    Covers the built-in ops and the targets of every op library loaded into
    this process.
    """
    return [jax.export.DisabledSafetyCheck.custom_call(name) for name in sorted(registered_targets())]


# export() takes a keyword of the same name, as jax.export.export does.
_cutlax_checks = disabled_checks


def export(
    fun,
    *arg_specs: Any,
    platforms: Sequence[str] | None = None,
    disabled_checks: Sequence[jax.export.DisabledSafetyCheck] = (),
    **kwargs: Any,
) -> jax.export.Exported:
    """``jax.export.export(fun, ...)(*arg_specs)`` with cutlax's targets allowed.

    ``fun`` may be a plain function or a ``jax.jit`` one; ``arg_specs`` are
    arrays or ``jax.ShapeDtypeStruct``s, with symbolic dimensions from
    ``jax.export.symbolic_shape`` where the artifact should accept any size.
    ``platforms=("cpu", "cuda")`` makes one artifact that runs on either.
    Extra ``disabled_checks`` are added to cutlax's; other keyword arguments
    go to ``jax.export.export``. Returns the ordinary ``jax.export.Exported``.
    """
    if not hasattr(fun, "trace"):  # not yet a jax.jit-wrapped function
        fun = jax.jit(fun)
    checks = list(disabled_checks) + _cutlax_checks()
    with exportable():
        return jax.export.export(fun, platforms=platforms, disabled_checks=checks, **kwargs)(*arg_specs)
