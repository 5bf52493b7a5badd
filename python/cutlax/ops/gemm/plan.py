"""The kernel plan: the one place that decides what ``cutlax.gemm`` runs
(docs/gemm.md, "Routes"). For a product, its dtype, precision and impl it
picks the route (cutlax's kernels or XLA's own product), the arithmetic
(precision.py), and on cutlax's route the kernel, its configuration, the
operand form (which operand the kernel reads transposed, and which are
copied to the other layout) and the zero padding. ``cutlax.gemm`` runs
exactly the plan (api.py); ``cutlax.gemm_plan`` returns it.
"""

from __future__ import annotations

import dataclasses
import types

import jax.numpy as jnp
import numpy as np

from cutlax.ops.gemm import facts, precision as precisions

# impl="auto"'s route rule, as thresholds (bench/RESULTS.md has the
# measurements; docs/gemm.md the table). A product goes to XLA's
# jax.lax.dot_general where cutlax's kernels measured slower than it:
ROUTE = types.MappingProxyType({
    # M at most this (decode: few rows): every arithmetic.
    "max_decode_rows": 256,
    # The thresholds below apply to one-pass products (16-bit, TF32), where
    # cutlax and cuBLAS are close; 3xTF32 runs far ahead of XLA's "highest".
    # K at most this.
    "max_short_k": 1024,
    # M N K below this (2048-scale products).
    "min_volume": 4096**3,
    # M or N not a multiple of this (partial tiles).
    "tile": 128,
})
ONE_PASS = ("16-bit", "tf32")
# The rules in the order they are tried, with their route.
RULES = types.MappingProxyType({
    "forced": None,             # impl= names a route or a kernel
    "empty": "xla",             # M, N or K is 0
    "symbolic": "xla",          # a dimension unknown at trace time (jax.export's symbolic shapes)
    "decode": "xla",            # M <= max_decode_rows
    "unaligned": "xla",         # a row not a multiple of ROW_BYTES: cutlax would pad (copies)
    "partial_tiles": "xla",     # one-pass, M or N not a multiple of tile
    "short_k": "xla",           # one-pass, K <= max_short_k
    "small": "xla",             # one-pass, M N K < min_volume
    "measured": "cutlax",       # the rest: large products, where cutlax measured >= 0.94-1.0x XLA, 3xTF32 2.2-2.8x
})
IMPLS = ("auto", "cutlax", "xla", "tiled") + facts.CONFIGS[1:]


@dataclasses.dataclass(frozen=True)
class GemmPlan:
    """What cutlax.gemm runs on one platform.

    route: "cutlax" (the op's kernels; the CPU twin on the CPU) or "xla"
      (``jnp.matmul`` with the bias and activation as jax.numpy).
    rule: the rule of RULES that chose the route.
    platform: "cpu" or "cuda".
    arithmetic: precision.ARITHMETICS' name.
    kernel: the op ("gemm", "gemm_aux" for gelu, "gemm_tiled"), or
      "dot_general" on XLA's route. For 3xTF32 the big x big product; the
      cross products are one float16 "gemm" on "auto" (docs/gemm.md).
    config: the configuration asked of the op ("auto": the C++ heuristic
      chooses at launch, by shape and SM count), None off the Hopper op.
    form: the op's "transpose" attribute (facts.TRANSPOSES), None off it.
    copies: the operands copied to the other layout first ("a", "b").
    padding: zeros added to (M, N, K) for the row rule.
    precision: on XLA's route, what jnp.matmul gets.
    tf32_operands: on XLA's route, the operands cut to TF32 first.
    """

    route: str
    rule: str
    platform: str = dataclasses.field(compare=False)
    arithmetic: str
    kernel: str
    config: str | None = None
    form: str | None = None
    copies: tuple[str, ...] = ()
    padding: tuple[int, int, int] = (0, 0, 0)
    precision: object = None
    tf32_operands: bool = False

    def runs_as(self, other: GemmPlan) -> bool:
        """Whether both plans lower to the same program (XLA's route at the
        default precision is one program for TF32 on the GPU, FP32 on the CPU)."""
        if self.route == other.route == "xla":
            return (self.precision, self.tf32_operands) == (other.precision, other.tf32_operands)
        return self == other


def _round_up(n, multiple):
    return -(-n // multiple) * multiple


def kernel_form(dtype, x_transposed: bool, y_transposed: bool, config: int):
    """The form a built kernel reads the operands in, with the fewest
    transposing copies: each operand as stored, or copied to the other
    layout (the same matrix); in the configuration asked for where some form
    has it (else 0, the heuristic's). Returns (copy x, copy y, transpose,
    config)."""
    forms = []
    for flip_x, flip_y in ((False, False), (True, False), (False, True), (True, True)):
        fx, fy = x_transposed != flip_x, y_transposed != flip_y
        if not (fx and fy):
            forms.append((flip_x, flip_y, facts.A_TRANSPOSED if fx else facts.B_TRANSPOSED if fy else facts.PLAIN))
    for wanted in dict.fromkeys((config, 0)):
        for flip_x, flip_y, transpose in forms:
            if facts.built(dtype, transpose, wanted):
                return flip_x, flip_y, transpose, wanted
    raise TypeError(f"no kernel is built for {jnp.dtype(dtype).name}")


def padding(dtype, m, n, k, x_transposed: bool) -> tuple[int, int, int]:
    """Zeros added to (M, N, K) so that every array's rows are multiples of
    ROW_BYTES: K (a's rows) unless a is transposed, then M; N always (b's or
    the result's rows). K is at least 1."""
    align = facts.row_elements(dtype)
    m_pad = _round_up(m, align) - m if x_transposed else 0
    k_pad = max(k, 1) - k if x_transposed else max(_round_up(k, align), align) - k
    return m_pad, _round_up(n, align) - n, k_pad


def _known(*dims) -> bool:
    return all(isinstance(d, (int, np.integer)) for d in dims)


def route(m, n, k, dtype, arithmetic: str, impl: str) -> tuple[str, str]:
    """(route, rule) by RULES for a product of a[M, K] b[K, N]; arithmetic
    is the GPU's (the rule comes from GPU measurements, and one rule serves
    every platform so that a CPU test sees the GPU's choice)."""
    if impl != "auto":
        return ("xla" if impl == "xla" else "cutlax"), "forced"
    if not _known(m, n, k):
        return "xla", "symbolic"
    if 0 in (m, n, k):
        return "xla", "empty"
    if m <= ROUTE["max_decode_rows"]:
        return "xla", "decode"
    if any(padding(dtype, m, n, k, False)):
        return "xla", "unaligned"
    if arithmetic in ONE_PASS:
        if m % ROUTE["tile"] or n % ROUTE["tile"]:
            return "xla", "partial_tiles"
        if k <= ROUTE["max_short_k"]:
            return "xla", "short_k"
        if m * n * k < ROUTE["min_volume"]:
            return "xla", "small"
    return "cutlax", "measured"


def plan(m, n, k, dtype, activation, precision, impl: str, platform: str) -> GemmPlan:
    """The plan for act(a[M, K] @ b[K, N] + bias) on the platform; the
    arguments already checked (api.py)."""
    arithmetics = precisions.resolve(dtype, precision, impl)
    arithmetic = arithmetics[platform]
    chosen, rule = route(m, n, k, dtype, arithmetics["cuda"], impl)
    if chosen == "xla":
        prec, cut = precisions.xla(dtype, precision, platform)
        return GemmPlan("xla", rule, platform, arithmetic, "dot_general", precision=prec, tf32_operands=cut)
    if arithmetic == "fp32":
        return GemmPlan("cutlax", rule, platform, arithmetic, "gemm_tiled")
    config = impl if impl in facts.CONFIGS else "auto"
    if arithmetic == "3xtf32_promoted":
        config = facts.PROMOTED
    # 3xTF32's big x big reads b's big part as (N, K), which its split writes.
    y_transposed = arithmetic in ("3xtf32", "3xtf32_promoted")
    copy_x, copy_y, transpose, config_index = kernel_form(dtype, False, y_transposed, facts.CONFIGS.index(config))
    kernel_dtype = jnp.float32 if arithmetic != "16-bit" else dtype
    pads = padding(kernel_dtype, m, n, k, copy_x)
    one_pass = arithmetic in ONE_PASS
    return GemmPlan("cutlax", rule, platform, arithmetic,
                    "gemm_aux" if one_pass and activation == "gelu" else "gemm",
                    config=facts.CONFIGS[config_index], form=facts.TRANSPOSES[transpose],
                    copies=tuple(name for name, c in (("a", copy_x), ("b", copy_y)) if c), padding=pads)
