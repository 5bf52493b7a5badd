"""cutlax.gemm: ``act(a[M, K] @ b[K, N] + bias)``, and cutlax.gemm_plan, what it runs.

The package, one concern per module:

* facts.py: what the C++ side publishes (configurations, the promoted one,
  operand forms, activations, the row rule, the kernels built).
* precision.py: precision= as JAX spells it, resolved per backend.
* plan.py: the one place that decides the route (cutlax's kernels or XLA's
  product), the arithmetic, the kernel, its configuration, the operand form
  and the padding.
* kernel.py: the ops (the Hopper GEMM and its CPU twin, the tiled SGEMM),
  their checks, batching, sharding and derivatives.
* tf32.py: TF32 rounding and 3xTF32.
* this module: the public API, which checks its arguments and runs the plan.

docs/gemm.md is the reference.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from cutlax import _checks
from cutlax.ops.bias_relu import bias_relu
from cutlax.ops.gemm import facts, kernel, plan as _plan, precision as _precision, tf32  # noqa: F401
# cutlax.ops.gemm's names for callers of the op and tests (docs/gemm.md):
from cutlax.ops.gemm.facts import ACTIVATIONS, CONFIGS, KERNELS, PROMOTED, TRANSPOSES, configs  # noqa: F401
from cutlax.ops.gemm.plan import IMPLS, ROUTE, RULES, GemmPlan  # noqa: F401
from cutlax.ops.relu import relu

_DTYPES = (jnp.float32, jnp.bfloat16, jnp.float16)
_ACT = {None: lambda z: z, "relu": jax.nn.relu, "gelu": jax.nn.gelu}


def _operand(name, x, dtypes):
    """An array, or anything with a shape and dtype (jax.ShapeDtypeStruct,
    for gemm_plan), of one of the dtypes."""
    if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, jax.Array):
        if jnp.dtype(x.dtype) not in [jnp.dtype(d) for d in dtypes]:
            raise TypeError(f"{name} has dtype {jnp.dtype(x.dtype).name}; expected one of: "
                            f"{', '.join(jnp.dtype(d).name for d in dtypes)}")
        return x
    return _checks.array(name, x, dtypes=dtypes)


def _checked(a, b, bias, activation, precision, impl):
    """The arguments checked (a clear error naming the argument, at trace
    time), and the product's M, N, K."""
    with _checks.errors("cutlax.gemm"):
        if not isinstance(impl, str) or impl not in IMPLS:
            raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
        a = _operand("a", a, _DTYPES)
        b = _operand("b", b, (a.dtype,))
        if bias is not None:
            bias = _operand("bias", bias, (a.dtype,))
        kernel.check_operands(a, b, *(() if bias is None else (bias,)), bias_may_be_empty=False)
        dtype = jnp.dtype(a.dtype)
        arithmetic = _precision.resolve(dtype, precision, impl)  # raises for a precision it does not take
        if dtype != jnp.float32 and impl == "tiled":
            raise TypeError(f"impl='tiled' takes float32, got {dtype.name}")
        if impl in CONFIGS and impl not in configs(dtype):
            raise ValueError(f"impl={impl!r} has no {dtype.name} kernel for a @ b; {dtype.name} has "
                             f"{configs(dtype) + (('tiled',) if dtype == jnp.float32 else ())}")
        if "3xtf32_promoted" in arithmetic.values() and impl in CONFIGS[1:] and impl != PROMOTED:
            raise ValueError(f"precision={precision!r} runs on impl='auto' ({PROMOTED!r}) or 'tiled' (FP32 "
                             f"accuracy), not impl={impl!r}; 'cutlax' and 'xla' take it too")
    (m, k), n = a.shape, b.shape[1]
    return a, b, bias, (m, n, k)


def _platform(platform):
    if platform is None:
        platform = jax.default_backend()
    if platform not in ("cpu", "cuda", "gpu"):
        raise ValueError(f"cutlax.gemm_plan: platform must be 'cpu', 'cuda' or 'gpu', got {platform!r}")
    return "cpu" if platform == "cpu" else "cuda"


def gemm_plan(a, b, *, bias=None, activation=None, precision=None, impl: str = "auto",
              platform: str | None = None) -> GemmPlan:
    """What ``cutlax.gemm`` with these arguments runs on the platform ("cpu"
    or "cuda"/"gpu"; None: JAX's default backend): a ``GemmPlan`` with the
    route ("cutlax" or "xla"), the rule that chose it (``RULES``, thresholds
    in ``ROUTE``), the arithmetic, and on cutlax's route the kernel, its
    configuration, operand form and padding. a, b and bias may be arrays or
    jax.ShapeDtypeStructs. docs/gemm.md has the rule and the precision table.
    """
    a, b, bias, (m, n, k) = _checked(a, b, bias, activation, precision, impl)
    return _plan.plan(m, n, k, jnp.dtype(a.dtype), activation, precision, impl, _platform(platform))


def _run(p: GemmPlan, activation, precision, a, b, bias=None):
    """act(a @ b + bias) as the plan says."""
    if p.route == "xla":
        if p.tf32_operands:
            a, b = tf32.tf32_cut(a), tf32.tf32_cut(b)
        z = jnp.matmul(a, b, precision=p.precision)
        return _ACT[activation](z if bias is None else z + bias)
    if p.kernel == "gemm_tiled":
        c = kernel.tiled(a, b)
        if activation == "gelu":
            return jax.nn.gelu(c if bias is None else c + bias)
        if bias is None:
            return relu(c) if activation == "relu" else c
        return bias_relu(c, bias) if activation == "relu" else c + bias
    args = (kernel.no_bias(a.dtype) if bias is None else bias, ACTIVATIONS.index(activation), CONFIGS.index(p.config))
    if p.arithmetic in ("3xtf32", "3xtf32_promoted"):
        out = tf32.product_3xtf32(a, b, *args)
    else:
        out = kernel.product(kernel.Operand(a), kernel.Operand(b), *args)
    return out[0] if activation == "gelu" else out


def gemm(a, b, *, bias=None, activation=None, precision=None, impl: str = "auto") -> jax.Array:
    """``act(a @ b + bias)`` for a[M, K], b[K, N], bias[N] (optional), the
    result in the inputs' dtype (float32, bfloat16, float16; bias too).

    activation: None, "relu" or "gelu" (the tanh form, ``jax.nn.gelu``'s
    default: 0.5 z (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3)))).

    precision: as ``jnp.matmul`` takes it: None, a ``jax.lax.Precision`` or
    its name ("default", "high", "highest"), a pair of them (the more
    precise counts), or a ``jax.lax.DotAlgorithmPreset`` cutlax has a kernel
    for (float32: TF32_TF32_F32, TF32_TF32_F32_X3, F32_F32_F32; bfloat16:
    BF16_BF16_F32; float16: F16_F16_F32). float32 at the default precision is
    TF32 on a GPU and FP32 on the CPU, as XLA's; "high" is 3xTF32, "highest"
    3xTF32 with FP32's accuracy (docs/gemm.md, "Precision").

    impl:
      "auto"    the route ``gemm_plan`` gives: XLA's product where cutlax's
                kernels measured slower (few rows, short K, small or
                unaligned products), cutlax's kernels elsewhere.
      "cutlax"  cutlax's kernels, the configuration the C++ heuristic picks.
      "xla"     XLA's product: ``jnp.matmul`` with the bias and activation as
                jax.numpy, which XLA fuses into cuBLASLt on a GPU.
      "tiled"   float32 only: the teaching CuTe SGEMM in FP32 arithmetic
                (any precision), bias and activation as cutlax ops after it.
      a name in ``cutlax.ops.gemm.configs(dtype)[1:]`` forces that Hopper
                configuration (the backward's transposed products fall back
                on "auto" where their form lacks it; ``KERNELS`` lists what
                is built).
    On cutlax's route rows that are not multiples of 16 bytes are padded
    with zeros (a copy).
    """
    a, b, bias, (m, n, k) = _checked(a, b, bias, activation, precision, impl)
    dtype = jnp.dtype(a.dtype)
    plans = {p: _plan.plan(m, n, k, dtype, activation, precision, impl, p) for p in _precision.PLATFORMS}
    args = (a, b) if bias is None else (a, b, bias)
    if plans["cpu"].runs_as(plans["cuda"]):
        return _run(plans["cuda"], activation, precision, *args)
    # One lowering per platform (e.g. TF32 on the GPU, FP32 on the CPU), so
    # that an export for both keeps each one's meaning.
    return jax.lax.platform_dependent(*args, cpu=functools.partial(_run, plans["cpu"], activation, precision),
                                      default=functools.partial(_run, plans["cuda"], activation, precision))


__all__ = ["gemm", "gemm_plan"]
