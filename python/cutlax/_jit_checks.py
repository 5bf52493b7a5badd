"""Trace-time checks of ``cutlax.jit`` kernels, on any machine (no GPU).

- The kernel's parameters against the call's arrays: the entry's lowered
  (mangled) name, demangled by the extension (src/jit/signature.*), gives each
  parameter's type: ``cutlax::jit::Tensor<const T, R>`` (an input),
  ``Tensor<T, R>`` (an output), a TMA descriptor (one per ``tma=`` entry,
  after the tensors), or a type of the user's own, which is not checked.
- Constant launch sizes (``grid=``, ``block=``) against CUDA's limits, and the
  errors of launch functions, named after the argument.
- ``out=`` against what ``cpu=`` returns (``jax.eval_shape``).

Messages carry no kernel name: the callers raise them inside
``cutlax._checks.errors(kernel.name)``, which puts ``cutlax.jit <entry>: `` in
front.
"""

from __future__ import annotations

from typing import Callable, Sequence

import jax
import numpy as np

from cutlax import _cutlax

# The element types a Tensor parameter may name (as the demangler spells
# them) and the dtypes whose arrays they take.
_ELEMENT_DTYPES = {
    "float": ("float32",),
    "double": ("float64",),
    "cutlass::half_t": ("float16",),
    "__half": ("float16",),
    "cutlass::bfloat16_t": ("bfloat16",),
    "__nv_bfloat16": ("bfloat16",),
    "cutlass::tfloat32_t": ("float32",),
    "cutlass::float_e4m3_t": ("float8_e4m3fn",),
    "cutlass::float_e5m2_t": ("float8_e5m2",),
    "bool": ("bool",),
    "char": ("int8", "uint8"),
    "signed char": ("int8",),
    "unsigned char": ("uint8",),
    "short": ("int16",),
    "unsigned short": ("uint16",),
    "int": ("int32",),
    "unsigned int": ("uint32",),
    "long": ("int64",),
    "long long": ("int64",),
    "unsigned long": ("uint64",),
    "unsigned long long": ("uint64",),
}


class Parameter:
    """One kernel parameter as the extension reads it from the lowered name."""

    def __init__(self, kind: str, text: str, element: str, is_const: bool, rank: int):
        self.kind, self.text, self.element, self.is_const, self.rank = kind, text, element, is_const, rank

    def dtypes(self) -> tuple[str, ...] | None:
        """The dtypes this Tensor parameter takes; None when its element type is not known here."""
        return _ELEMENT_DTYPES.get(self.element)


def kernel_parameters(lowered_name: str) -> list[Parameter] | None:
    """The parameters of the kernel whose lowered name is ``lowered_name``;
    None when the name is not a mangled one (an ``extern "C"`` kernel)."""
    params = _cutlax.jit.kernel_parameters(lowered_name)
    return None if params is None else [Parameter(*p) for p in params]


def _array_name(index: int, inputs: int) -> str:
    return f"x{index}" if index < inputs else f"out{index - inputs} (x{index})"


def check_parameters(entry: str, params: list[Parameter] | None, operands: Sequence, results: Sequence,
                     tma_count: int = 0) -> None:
    """Raises TypeError or ValueError when the kernel's parameters cannot take
    the call's arrays: one Tensor<const T, R> per input, one Tensor<T, R> per
    output, then ``tma_count`` TMA descriptors."""
    if params is None:
        return
    arrays = list(operands) + list(results)
    inputs = len(operands)
    passed = len(arrays) + tma_count
    if len(params) != passed:
        parts = [f"{inputs} input{'s' * (inputs != 1)}", f"{len(results)} output{'s' * (len(results) != 1)}"]
        if tma_count:
            parts.append(f"{tma_count} TMA descriptor{'s' * (tma_count != 1)} (tma=)")
        listed = ", ".join(p.text for p in params) or "none"
        raise TypeError(f"{entry} takes {len(params)} parameter{'s' * (len(params) != 1)} ({listed}) but the "
                        f"call passes {passed}: {', '.join(parts)}")
    for i, p in enumerate(params):
        where = f"parameter {i} of {entry} is {p.text}"
        if i >= len(arrays):
            if p.kind == "tensor":
                raise TypeError(f"{where}, but the TMA descriptor of tma[{i - len(arrays)}] goes there "
                                "(descriptors come after the arrays' Tensor parameters)")
            continue
        x = arrays[i]
        name = _array_name(i, inputs)
        if p.kind == "tma":
            raise TypeError(f"{where}, but {name} goes there: one Tensor parameter per array (inputs, then "
                            "outputs), then one TMA descriptor per tma= entry")
        if p.kind != "tensor":
            continue  # a type of the user's own: not checked
        dtypes = p.dtypes()
        dtype = np.dtype(x.dtype).name
        if dtypes is not None and dtype not in dtypes:
            raise TypeError(f"{name} is {dtype} but {where}")
        if len(x.shape) != p.rank:
            raise ValueError(f"{name} has rank {len(x.shape)} (shape {tuple(x.shape)}) but {where}")
        if i < inputs and not p.is_const:
            raise TypeError(f"{name} is an input but {where}: inputs are Tensor<const T, R>")
        if i >= inputs and p.is_const:
            raise TypeError(f"{name} is an output but {where}: outputs are Tensor<T, R>, without const")


# Launch sizes ----------------------------------------------------------------

# CUDA's limits, as the handler applies them (src/jit/launch_program.hpp).
_MAX_GRID = (2**31 - 1, 65535, 65535)
_MAX_BLOCK = (1024, 1024, 64)
_MAX_THREADS = 1024


def _shown(value, exprs) -> str:
    if callable(value):
        return "(" + ", ".join(e.text for e in exprs) + ")"
    return repr(value)


def check_launch_sizes(what: str, value, exprs, constant: Callable) -> None:
    """Raises ValueError for constant sizes of ``grid`` or ``block``
    (``what``) that CUDA cannot launch. ``exprs`` are the three sizes as
    expressions; ``constant(expr)`` is the value of a constant one, else None."""
    values = [constant(e) for e in exprs]
    axes = "xyz"

    def fail(problem):
        raise ValueError(f"{what}={_shown(value, exprs)}: {problem}")

    if what == "grid":
        for axis, v in enumerate(values):
            if v is not None and not 0 <= v <= _MAX_GRID[axis]:
                fail(f"grid.{axes[axis]} is {v}; CUDA allows 0 to {_MAX_GRID[axis]}")
    elif what == "block":
        for axis, v in enumerate(values):
            if v is not None and not 1 <= v <= _MAX_BLOCK[axis]:
                fail(f"block.{axes[axis]} is {v}; CUDA allows 1 to {_MAX_BLOCK[axis]}")
        if all(v is not None for v in values) and int(np.prod(values)) > _MAX_THREADS:
            fail(f"{int(np.prod(values))} threads per block; CUDA allows at most {_MAX_THREADS}")


# What a launch function may raise that is the caller's mistake; each is
# raised again naming the argument (TypeError as itself, the rest as ValueError).
_USER_ERRORS = (TypeError, ValueError, ArithmeticError, LookupError, AttributeError)


def call_launch_function(what: str, fn: Callable, operands: Sequence):
    """``fn(*operands)``, its errors naming the argument ``what``."""
    try:
        return fn(*operands)
    except _USER_ERRORS as e:
        kind = TypeError if isinstance(e, TypeError) else ValueError
        detail = str(e) if type(e) in (TypeError, ValueError) else f"{type(e).__name__}: {e}"
        raise kind(f"{what}= (a function of the inputs {', '.join(f'x{i}' for i in range(len(operands)))}) "
                   f"raised: {detail}") from e


TRUEDIV_MESSAGE = ("`/` is not a launch-size operation (sizes are integers): use `//` (floor) or "
                   "cutlax.jit.cdiv(a, b) (ceiling)")


# out= against cpu= ------------------------------------------------------------


def _describe(structs) -> str:
    return ", ".join(f"{np.dtype(s.dtype).name}{list(s.shape)}" for s in structs)


def check_out_against_cpu(cpu: Callable, arrays: Sequence, outs: Sequence) -> None:
    """Raises when ``cpu(*arrays)`` returns other shapes or dtypes than
    ``out=`` (the op would fail later with JAX's "switch branches must have
    equal output types")."""
    specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in arrays]
    try:
        returned = jax.eval_shape(cpu, *specs)
    except Exception:  # noqa: BLE001 - cpu= fails on these inputs: the call's own checks, or the
        return  # lowering of cpu=, report it with its own message
    got = list(returned) if isinstance(returned, (tuple, list)) else [returned]
    if not all(hasattr(r, "shape") and hasattr(r, "dtype") for r in got):
        raise TypeError(f"cpu= must return an array or a tuple of arrays; it returns {returned!r}")
    same_shapes = len(got) == len(outs) and all(tuple(g.shape) == tuple(o.shape) for g, o in zip(got, outs))
    same = same_shapes and all(np.dtype(g.dtype) == np.dtype(o.dtype) for g, o in zip(got, outs))
    if not same:
        kind = TypeError if same_shapes else ValueError
        raise kind(f"out= says {_describe(outs)} but cpu= returns {_describe(got)} for these inputs; "
                   "they must agree (on CPU the kernel's result is cpu='s)")
