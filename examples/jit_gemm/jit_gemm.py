"""A Hopper GEMM with your own fused epilogue, as a ``cutlax.jit`` kernel.

    import jit_gemm
    c = jit_gemm.matmul(a, b)                                   # a @ b
    c = jit_gemm.matmul(a, b, bias, gate, epilogue=jit_gemm.SWIGLU)

    gated = jit_gemm.Epilogue(
        "gated",                                    # a C++ identifier: names the kernel
        "return silu(acc + bias) * gate;",          # the body: f32 in, f32 out
        operands=(("bias", "col"), ("gate", "matrix")),
        reference=lambda acc, bias, gate: jax.nn.silu(acc + bias) * gate,
    )

``c = epilogue(a @ b, extras...)`` for ``a`` (M, K) and ``b`` (K, N) in bf16
or f16 (the same dtype), f32 accumulation, ``c`` (M, N) in that dtype. The
epilogue's C++ body sees ``float acc`` (the f32 sum at (m, n)), ``int64_t m,
n``, and one ``float`` per operand, named as declared, holding that
operand's value at the element: a ``"col"`` operand is a vector of N (read
at n), a ``"row"`` one a vector of M (read at m), a ``"matrix"`` one an
(M, N) array (read at (m, n)); extra operands may be f16, bf16 or f32. It
may call ``silu``, ``sigmoid``, ``relu``, ``gelu`` (tanh form) and CUDA's
math functions (``__expf``, ``tanhf``, ...). The result is rounded once to
the output dtype.

``reference`` is the same math in jax.numpy on f32 arrays: ``acc`` (M, N),
a col operand as (N,), a row operand as (M, 1), a matrix as (M, N), so that
broadcasting reads like the C++. It is what runs on CPU (``cpu=``), the
tests' yardstick, and what the gradient differentiates.

Each epilogue is its own source (and NVRTC compile, cached); each dtype
and schedule its own entry of it. gemm.cuh holds the kernel and explains
it; the README the design and the figures.
"""

from __future__ import annotations

import dataclasses
import functools
import keyword
import os
import re
from typing import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

import cutlax
from cutlax import jit

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "gemm.cuh"), encoding="utf-8") as _f:
    KERNEL_SOURCE = _f.read()

KINDS = ("col", "row", "matrix")
DTYPES = ("bfloat16", "float16")
EXTRA_DTYPES = ("bfloat16", "float16", "float32")


@dataclasses.dataclass(frozen=True)
class Schedule:
    """One kernel configuration (gemm.cuh's Config)."""

    name: str
    bn: int
    stages: int
    cooperative: bool
    bm: int = 128
    bk: int = 64

    @property
    def shared_mem(self) -> int:
        """Config::kSharedMem: the stages (1024-byte aligned), the pipeline's
        barriers padded to 1024, and 1024 bytes to align the base. The kernel
        static_asserts that it asked for no less than it needs."""
        return (self.bm + self.bn) * self.bk * 2 * self.stages + 1024 + 1024


SCHEDULES = {
    "cooperative": Schedule("cooperative", bn=256, stages=4, cooperative=True),
    "pingpong": Schedule("pingpong", bn=128, stages=6, cooperative=False),
}
# Long K and many tiles: the cooperative kernel's larger tiles (half the L2
# traffic per product) win; otherwise ping-pong hides the epilogue under a
# mainloop. The thresholds are cutlax.gemm's (docs/gemm.md), measured on
# CUTLASS's kernels of the same two shapes: 708 against 577 TFLOP/s at
# 8192^3, 633 against 675 at 4096^3, 491 against 613 at 4096x4096x1024 (H100).
COOPERATIVE_MIN_K = 8192
COOPERATIVE_MIN_TILES = 4 * 132  # four waves of 128 x 256 tiles on an H100


def choose_schedule(m, n, k) -> str:
    """A symbolic M counts as large."""
    many_tiles = not _static(m) or -(-m // 128) * -(-n // 256) >= COOPERATIVE_MIN_TILES
    return "cooperative" if k >= COOPERATIVE_MIN_K and many_tiles else "pingpong"


@dataclasses.dataclass(frozen=True)
class Epilogue:
    """A fused epilogue: its C++ body over f32 values, its operands
    ((name, kind) with kind "col", "row" or "matrix"), and its jax.numpy
    reference (module docstring)."""

    name: str
    cpp: str
    operands: tuple[tuple[str, str], ...] = ()
    reference: Callable | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.name):
            raise ValueError(f"jit_gemm.Epilogue: name must be a C++ identifier, got {self.name!r}")
        if not isinstance(self.cpp, str) or not self.cpp.strip():
            raise ValueError(f"jit_gemm.Epilogue {self.name}: cpp must be the body of a function, e.g. "
                             "'return acc;'")
        operands = tuple(tuple(op) for op in self.operands)
        seen = {"acc", "m", "n"}
        for op in operands:
            if len(op) != 2:
                raise ValueError(f"jit_gemm.Epilogue {self.name}: operands are (name, kind) pairs, got {op!r}")
            name, kind = op
            if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) \
                    or keyword.iskeyword(name) or name in seen:
                raise ValueError(f"jit_gemm.Epilogue {self.name}: operand name {name!r} must be a new C++ "
                                 "identifier (not acc, m or n)")
            if kind not in KINDS:
                raise ValueError(f"jit_gemm.Epilogue {self.name}: operand {name!r} has kind {kind!r}; "
                                 f"kinds are {', '.join(KINDS)}")
            seen.add(name)
        object.__setattr__(self, "operands", operands)
        if self.reference is not None and not callable(self.reference):
            raise TypeError(f"jit_gemm.Epilogue {self.name}: reference must be a function of (acc, *operands)")

    # The C++ -----------------------------------------------------------------

    def source(self) -> str:
        """gemm.cuh, then this epilogue's function, functor and entry."""
        header = KERNEL_SOURCE.rstrip("\n") + "\n\nusing cutlax::jit::Tensor;\n\n"
        first_line = header.count("\n") + 1
        params = "".join(f", float {name}" for name, _ in self.operands)
        types = "".join(f", class E{i}" for i in range(len(self.operands)))
        members = "".join(f"  Tensor<const E{i}, {1 if kind != 'matrix' else 2}> {name};\n"
                          for i, (name, kind) in enumerate(self.operands))
        loads, first, second = [], [], []
        for name, kind in self.operands:
            if kind == "row":
                loads.append(f"    const float {name}_v = jit_gemm::row_value({name}, m);\n")
                first.append(f"{name}_v")
                second.append(f"{name}_v")
            else:
                read = f"jit_gemm::col_pair({name}, n)" if kind == "col" else f"jit_gemm::matrix_pair({name}, m, n)"
                loads.append(f"    const float2 {name}_v = {read};\n")
                first.append(f"{name}_v.x")
                second.append(f"{name}_v.y")
        args0 = "".join(f", {v}" for v in first)
        args1 = "".join(f", {v}" for v in second)
        tensor_params = "".join(f"    Tensor<const E{i}, {1 if kind != 'matrix' else 2}> {name},\n"
                                for i, (name, kind) in enumerate(self.operands))
        members_init = ", ".join(name for name, _ in self.operands)
        body_line = first_line + 4  # the line of the body, below
        return header + (
            f"namespace jit_gemm_epilogue {{\n"
            f"using namespace jit_gemm::math;\n"
            f"CUTE_DEVICE float {self.name}(float acc, int64_t m, int64_t n{params}) {{\n"
            f"#line 1 \"epilogue {self.name}\"\n"
            f"{self.cpp.strip()}\n"
            f"#line {body_line + self.cpp.strip().count(chr(10)) + 2} \"kernel.cu\"\n"
            f"}}\n"
            f"}}  // namespace jit_gemm_epilogue\n\n"
            f"template <class Unused{types}>\n"
            f"struct Epilogue_{self.name} {{\n"
            f"{members}"
            f"  CUTE_DEVICE float2 operator()(float acc0, float acc1, int64_t m, int64_t n) const {{\n"
            f"{''.join(loads)}"
            f"    return make_float2(jit_gemm_epilogue::{self.name}(acc0, m, n{args0}),\n"
            f"                       jit_gemm_epilogue::{self.name}(acc1, m, n + 1{args1}));\n"
            f"  }}\n"
            f"}};\n\n"
            f"template <class T, int BN, int Stages, int Cooperative, int SharedMem{types}>\n"
            f"__global__ void __launch_bounds__(384, 1) gemm_{self.name}(\n"
            f"    Tensor<const T, 2> a, Tensor<const T, 2> b,\n"
            f"{tensor_params}"
            f"    Tensor<T, 2> c,\n"
            f"    const __grid_constant__ cutlax::jit::TmaDescriptor tma_a,\n"
            f"    const __grid_constant__ cutlax::jit::TmaDescriptor tma_b) {{\n"
            f"  using Cfg = jit_gemm::Config<T, BN, Stages, Cooperative != 0>;\n"
            f"  static_assert(Cfg::kSharedMem <= SharedMem, \"jit_gemm.py's Schedule.shared_mem is too small\");\n"
            f"  jit_gemm::run<Cfg>(a, b, c, &tma_a, &tma_b,\n"
            f"                     Epilogue_{self.name}<void{''.join(f', E{i}' for i in range(len(self.operands)))}>"
            f"{{{members_init}}});\n"
            f"}}\n")

    def entry(self, dtype, extra_dtypes: Sequence, schedule: Schedule) -> str:
        types = "".join(f", {jit.cpp_type(d)}" for d in extra_dtypes)
        return (f"gemm_{self.name}<{jit.cpp_type(dtype)}, {schedule.bn}, {schedule.stages}, "
                f"{int(schedule.cooperative)}, {schedule.shared_mem}{types}>")

    # The jax.numpy side ------------------------------------------------------

    def shaped(self, extras, m):
        """The extra operands as f32, shaped for broadcasting against (M, N)."""
        out = []
        for (_, kind), x in zip(self.operands, extras):
            x = x.astype(jnp.float32)
            out.append(x.reshape(m, 1) if kind == "row" else x)
        return out

    def apply(self, acc, extras):
        """The reference on an f32 accumulator (M, N) and the extras as given."""
        if self.reference is None:
            raise TypeError(f"jit_gemm.Epilogue {self.name} has no reference= (jax.numpy) version")
        return self.reference(acc, *self.shaped(extras, acc.shape[0]))

    def forward(self, a, b, *extras):
        """What the kernel computes, in jax.numpy: f32-accumulated a @ b, the
        epilogue in f32, one rounding to a's dtype."""
        acc = jnp.matmul(a, b, preferred_element_type=jnp.float32)
        return self.apply(acc, extras).astype(a.dtype)


PLAIN = Epilogue("plain", "return acc;", (), lambda acc: acc)
SWIGLU = Epilogue(
    "silu_gate", "return silu(acc + bias) * gate;", (("bias", "col"), ("gate", "matrix")),
    lambda acc, bias, gate: jax.nn.silu(acc + bias) * gate)
DEQUANT_RESIDUAL = Epilogue(
    "dequant_residual", "return acc * row_scale * col_scale + residual;",
    (("row_scale", "row"), ("col_scale", "col"), ("residual", "matrix")),
    lambda acc, row_scale, col_scale, residual: acc * row_scale * col_scale + residual)
EPILOGUES = {e.name: e for e in (PLAIN, SWIGLU, DEQUANT_RESIDUAL)}


# Checks ----------------------------------------------------------------------


def _static(d) -> bool:
    return isinstance(d, (int, np.integer))


def check(epilogue: Epilogue, a, b, *extras, where: str = "jit_gemm.matmul") -> None:
    """Raises TypeError/ValueError naming the argument, for what the kernel
    cannot take: trace-time shapes and dtypes."""
    for name, x in (("a", a), ("b", b)):
        if not hasattr(x, "shape") or not hasattr(x, "dtype"):
            raise TypeError(f"{where}: {name} must be an array, got {type(x).__name__}")
        if len(x.shape) != 2:
            raise ValueError(f"{where}: {name} must have rank 2, got shape {tuple(x.shape)}")
        if jnp.dtype(x.dtype).name not in DTYPES:
            raise TypeError(f"{where}: {name} has dtype {jnp.dtype(x.dtype).name}; the kernel takes "
                            f"{' or '.join(DTYPES)}")
    if a.dtype != b.dtype:
        raise TypeError(f"{where}: a and b must have one dtype, got {jnp.dtype(a.dtype).name} and "
                        f"{jnp.dtype(b.dtype).name}")
    (m, k), (k2, n) = a.shape, b.shape
    if not (_static(k) and _static(k2) and _static(n)):
        raise ValueError(f"{where}: K and N must be static (a symbolic M is fine), got a {a.shape}, b {b.shape}")
    if k != k2:
        raise ValueError(f"{where}: a is {tuple(a.shape)} and b is {tuple(b.shape)}: a's columns (K = {k}) "
                         f"must equal b's rows ({k2})")
    if k % 8:
        raise ValueError(f"{where}: K = {k} (a's columns) must be a multiple of 8: TMA reads rows of a "
                         "multiple of 16 bytes (pad a and b with zeros)")
    if n % 8:
        raise ValueError(f"{where}: N = {n} (b's columns) must be a multiple of 8: TMA reads rows of a "
                         "multiple of 16 bytes (pad b with zeros and slice the result)")
    if len(extras) != len(epilogue.operands):
        names = ", ".join(name for name, _ in epilogue.operands) or "none"
        raise TypeError(f"{where}: epilogue {epilogue.name} takes {len(epilogue.operands)} extra operands "
                        f"({names}), got {len(extras)}")
    for (name, kind), x in zip(epilogue.operands, extras):
        if not hasattr(x, "shape") or not hasattr(x, "dtype"):
            raise TypeError(f"{where}: {name} must be an array, got {type(x).__name__}")
        want = {"col": (n,), "row": (m,), "matrix": (m, n)}[kind]
        if tuple(x.shape) != want:
            raise ValueError(f"{where}: {name} (a {kind} operand of epilogue {epilogue.name}) must have shape "
                             f"{want}, got {tuple(x.shape)}")
        if jnp.dtype(x.dtype).name not in EXTRA_DTYPES:
            raise TypeError(f"{where}: {name} has dtype {jnp.dtype(x.dtype).name}; extra operands are "
                            f"{', '.join(EXTRA_DTYPES)}")


# The op ----------------------------------------------------------------------


def _grid(bn):
    def grid(a, b, *extras):
        return jit.min(jit.cdiv(a.shape[0], 128) * jit.cdiv(b.shape[1], bn), jit.sm_count())
    return grid


@functools.lru_cache(maxsize=None)
def kernel(epilogue: Epilogue, dtype: str, extra_dtypes: tuple[str, ...], schedule: str) -> jit.Kernel:
    """The cutlax.jit kernel (a cutlax.Op) for one epilogue, dtype, extra
    operand dtypes and schedule, with its shape, checks, gradient and
    batching rules."""
    sched = SCHEDULES[schedule]
    k = jit.kernel(
        epilogue.source(), epilogue.entry(dtype, extra_dtypes, sched),
        grid=_grid(sched.bn), block=384, shared_mem=sched.shared_mem,
        # a: (128 rows, 64 K) per stage; b: (64 K, 64 N), BN / 64 per stage. 256-byte
        # L2 promotion, as CUTLASS's own TMA descriptors ask.
        tma=[jit.tma(0, (sched.bm, sched.bk), swizzle=128, l2_promotion=256),
             jit.tma(1, (sched.bk, 64), swizzle=128, l2_promotion=256)],
        cpu=epilogue.forward)
    k.def_shape(lambda a, b, *extras: jax.ShapeDtypeStruct((a.shape[0], b.shape[1]), a.dtype))
    k.def_checks(lambda a, b, *extras: check(epilogue, a, b, *extras, where=f"cutlax.jit {k.entry}"))
    k.def_vjp(lambda args, out, g: _vjp(epilogue, args, g))
    k.def_vmap(_vmap_rule(epilogue))
    return k


def matmul(a, b, *extras, epilogue: Epilogue = PLAIN, schedule: str = "auto"):
    """``epilogue(a @ b, *extras)`` (module docstring) in one kernel.
    ``schedule``: "auto", "cooperative" or "pingpong"."""
    if not isinstance(epilogue, Epilogue):
        raise TypeError(f"jit_gemm.matmul: epilogue must be a jit_gemm.Epilogue, got {epilogue!r}")
    if schedule != "auto" and schedule not in SCHEDULES:
        raise ValueError(f"jit_gemm.matmul: schedule must be 'auto' or one of {', '.join(SCHEDULES)}, "
                         f"got {schedule!r}")
    check(epilogue, a, b, *extras)
    m, k = a.shape
    n = b.shape[1]
    if k == 0 or (_static(m) and m == 0) or n == 0:
        # Nothing to multiply (the TMA descriptors need non-empty arrays).
        return epilogue.forward(a, b, *extras)
    if schedule == "auto":
        schedule = choose_schedule(m, n, k)
    extra_dtypes = tuple(jnp.dtype(x.dtype).name for x in extras)
    return kernel(epilogue, jnp.dtype(a.dtype).name, extra_dtypes, schedule)(a, b, *extras)


# Gradient: the epilogue's through jax.vjp of its reference, the product's
# through this kernel (plain epilogue) where its shapes allow -----------------


def _product(x, y):
    """x @ y in x's dtype, f32-accumulated: on the kernel when its shapes fit
    (the inner dimension and y's columns multiples of 8), else XLA's."""
    if _static(x.shape[1]) and x.shape[1] % 8 == 0 and y.shape[1] % 8 == 0 and x.shape[1] > 0:
        return matmul(x, y)
    return jnp.matmul(x, y, preferred_element_type=jnp.float32).astype(x.dtype)


def _vjp(epilogue: Epilogue, args, g):
    a, b, *extras = args
    if epilogue is PLAIN:
        dacc = g
    else:
        acc = jnp.matmul(a, b, preferred_element_type=jnp.float32)
        _, pull = jax.vjp(lambda acc, *ex: epilogue.reference(acc, *ex), acc, *epilogue.shaped(extras, a.shape[0]))
        dacc, *dextras = pull(g.astype(jnp.float32))
        dacc = dacc.astype(a.dtype)
    da = _product(dacc, b.T)
    db = _product(a.T, dacc)
    if epilogue is PLAIN:
        return da, db
    return (da, db, *(d.reshape(x.shape).astype(x.dtype) for d, x in zip(dextras, extras)))


# vmap: a batch of a (with the row and matrix operands) folds into M: one
# launch; anything else runs one launch per batch element. ------------------


def _vmap_rule(epilogue: Epilogue):
    kinds = ("a", "b") + tuple(kind for _, kind in epilogue.operands)

    def rule(call, axis_size, in_batched, *args):
        along_m = {"a", "row", "matrix"}
        if in_batched[0] and not any(bat and kind not in along_m for bat, kind in zip(in_batched, kinds)):
            full = cutlax.batching.broadcast_batch(axis_size, in_batched, args)
            a, b = full[0], args[1]
            folded = [a.reshape(-1, a.shape[-1]), b]
            for (_, kind), x in zip(epilogue.operands, full[2:]):
                folded.append(x.reshape(-1) if kind == "row" else x.reshape(-1, x.shape[-1])
                              if kind == "matrix" else x)
            # col operands are unbatched here: broadcast_batch gave them a batch axis; take the original
            folded = [f if kind != "col" else orig for f, kind, orig in zip(folded, kinds, args)]
            out = call(*folded)
            return out.reshape(axis_size, -1, out.shape[-1]), True
        return cutlax.batching.SEQUENTIAL(call, axis_size, in_batched, *args)

    return rule


__all__ = ["DEQUANT_RESIDUAL", "EPILOGUES", "Epilogue", "PLAIN", "SCHEDULES", "SWIGLU", "check", "choose_schedule",
           "kernel", "matmul"]
