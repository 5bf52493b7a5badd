"""``cutlax.jit``: CuTe C++ kernels compiled at run time with NVRTC into JAX ops.

    relu = cutlax.jit.kernel(
        SOURCE,                                       # CUDA C++ (the prelude below comes first)
        "relu<float>",                                # a __global__ function or template-id
        grid=lambda x: cutlax.jit.cdiv(x.size, 256),  # int, tuple, or a function of the inputs
        block=256,
        cpu=lambda x: jnp.maximum(x, 0),              # optional jax.numpy version for CPU
    )
    y = relu(x, out=jax.ShapeDtypeStruct(x.shape, x.dtype))

The kernel takes one ``cutlax::jit::Tensor<const T, Rank>`` per input and
one ``cutlax::jit::Tensor<T, Rank>`` per output, in order
(include/cutlax/jit/tensor.hpp). Static parameters are template arguments of
the entry (``f"bias_relu<float, {width}>"``); dynamic ones are arrays (0-d
for a scalar, read as ``x(0)``).

``grid`` and ``block`` as functions receive the inputs as objects with
``.shape``, ``.size`` and ``.ndim`` and may use ``+ - * //``, ``cdiv``,
``min``, ``max`` (this module's) and integers. The expression is recorded,
not evaluated: the handler evaluates it in C++ from the real buffer
dimensions at every launch, so an artifact exported with symbolic shapes
launches the right grid at every size.

A kernel is a ``cutlax.Op``, with every hook: ``def_shape`` (then ``out=``
may be left out), ``def_checks``, ``def_jvp``/``def_vjp``, ``def_vmap``,
``def_sharding``. The CUBIN travels in the program (compressed, with a
checksum), so an exported artifact runs where only ``import cutlax`` was done:
no source, no NVRTC. Compiles are cached in the process and on disk
(``CUTLAX_CACHE_DIR``, default ``~/.cache/cutlax/jit``); the target
architecture is the GPU's, or ``sm_90a`` (``CUTLAX_JIT_ARCH``) where there is
none, so lowering and export for CUDA work on a machine without a GPU.
"""

from __future__ import annotations

import builtins
import functools
import glob
import importlib.util
import logging
import os
import threading
from typing import Callable, Sequence

import jax
import numpy as np

from cutlax import _checks, _cutlax, _jit_checks, _library
from cutlax._tma import Tma, tma, tma_words
from cutlax.op import Op, Signature

TARGET = _cutlax.jit.TARGET  # cutlax_jit_v2; cutlax_jit_v1 stays registered for older artifacts
_log = logging.getLogger("cutlax.jit")
_MAX_RANK = 8


class CompileError(RuntimeError):
    """NVRTC rejected a kernel's source; ``log`` holds NVRTC's messages, with
    line numbers of the kernel's own source."""

    def __init__(self, kernel: str, log: str):
        super().__init__(f"cutlax.jit: {kernel} does not compile:\n{log}")
        self.kernel, self.log = kernel, log


# Launch expressions ---------------------------------------------------------

_CONST, _DIM, _SIZE, _ADD, _SUB, _MUL, _FLOORDIV, _CDIV, _MIN, _MAX, _SM_COUNT = range(11)


class Expr:
    """A launch-size expression over the inputs' dimensions, in reverse Polish
    notation (``tokens``) for the C++ evaluator (src/jit/launch_program.*)."""

    def __init__(self, tokens: tuple[int, ...], text: str):
        self.tokens, self.text = tokens, text

    @staticmethod
    def of(value) -> "Expr":
        if isinstance(value, Expr):
            return value
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"a launch size must be an integer or an expression of the inputs' sizes, "
                            f"got {value!r}")
        return Expr((_CONST, int(value)), str(int(value)))

    def _binary(self, other, opcode, symbol, swap=False):
        a, b = (Expr.of(other), self) if swap else (self, Expr.of(other))
        return Expr(a.tokens + b.tokens + (opcode,), f"({a.text} {symbol} {b.text})")

    def __add__(self, other):
        return self._binary(other, _ADD, "+")

    def __radd__(self, other):
        return self._binary(other, _ADD, "+", swap=True)

    def __sub__(self, other):
        return self._binary(other, _SUB, "-")

    def __rsub__(self, other):
        return self._binary(other, _SUB, "-", swap=True)

    def __mul__(self, other):
        return self._binary(other, _MUL, "*")

    def __rmul__(self, other):
        return self._binary(other, _MUL, "*", swap=True)

    def __floordiv__(self, other):
        return self._binary(other, _FLOORDIV, "//")

    def __rfloordiv__(self, other):
        return self._binary(other, _FLOORDIV, "//", swap=True)

    def __truediv__(self, other):
        raise TypeError(_jit_checks.TRUEDIV_MESSAGE)

    __rtruediv__ = __truediv__

    def _no_comparison(self, other):
        raise TypeError("launch sizes are evaluated when the kernel launches: compare them with "
                        "cutlax.jit.min / cutlax.jit.max, not Python's min, max or comparisons")

    __lt__ = __le__ = __gt__ = __ge__ = _no_comparison

    def __bool__(self):
        self._no_comparison(None)

    def __index__(self):
        raise TypeError(f"the launch size {self.text} is only known at launch time; use it in a launch "
                        "expression, not as a Python integer")

    def __repr__(self):
        return f"<cutlax.jit launch expression {self.text}>"


def _call_or_fold(fn, opcode, name, a, b):
    if not isinstance(a, Expr) and not isinstance(b, Expr):
        return fn(int(a), int(b))
    return Expr.of(a)._binary(b, opcode, name)


def cdiv(a, b):
    """ceil(a / b) for a >= 0, b > 0: a number for numbers, an expression
    (evaluated at launch) when either is one."""
    return _call_or_fold(lambda a, b: -(-a // b), _CDIV, "cdiv", a, b)


def min(a, b):  # noqa: A001 - cutlax.jit.min, as the launch-expression docs name it
    """The smaller of two launch sizes."""
    return _call_or_fold(builtins.min, _MIN, "min", a, b)


def max(a, b):  # noqa: A001
    """The larger of two launch sizes."""
    return _call_or_fold(builtins.max, _MAX, "max", a, b)


def sm_count() -> Expr:
    """The launching GPU's multiprocessor count, read at launch: the grid of a
    persistent kernel, e.g. ``grid=lambda a, b: cutlax.jit.min(tiles(a, b),
    cutlax.jit.sm_count())``."""
    return Expr((_SM_COUNT,), "sm_count()")


class _Operand:
    """What a grid or block function sees of one input: ``shape``, ``size``
    and ``ndim``, the sizes as expressions of the buffer at launch."""

    def __init__(self, index: int, ndim: int):
        self.ndim = ndim
        self.shape = tuple(Expr((_DIM, index, axis), f"x{index}.shape[{axis}]") for axis in range(ndim))
        self.size = Expr((_SIZE, index), f"x{index}.size")


def _dims3(value, what: str) -> tuple[Expr, Expr, Expr]:
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if not 1 <= len(values) <= 3:
        raise ValueError(f"{what} has {len(values)} dimensions; give 1 to 3")
    return tuple(Expr.of(v) for v in values) + (Expr.of(1),) * (3 - len(values))


# CUDA's portable cluster limit: blocks per cluster.
_MAX_CLUSTER_BLOCKS = 8


def _check_cluster(entry: str, grid, cluster) -> None:
    """A constant cluster: 1 to 8 blocks, and a divisor of a constant grid
    (the handler checks expressions at launch). Messages read as the other
    launch sizes' do: ``cutlax.jit <entry>: cluster=<value>: <problem>``."""
    if callable(cluster):
        return
    where = f"cutlax.jit {entry}: cluster={cluster!r}"
    dims = _dims3(cluster, where)
    if any(d.tokens[0] != _CONST or len(d.tokens) != 2 for d in dims):
        return
    sizes = [int(d.tokens[1]) for d in dims]
    if any(s < 1 for s in sizes) or int(np.prod(sizes)) > _MAX_CLUSTER_BLOCKS:
        raise ValueError(f"{where}: each dimension must be >= 1 and the cluster at most "
                         f"{_MAX_CLUSTER_BLOCKS} blocks (CUDA's portable limit)")
    if callable(grid):
        return
    for axis, (g, c) in enumerate(zip(_dims3(grid, f"cutlax.jit {entry}: grid={grid!r}"), sizes)):
        if g.tokens[0] == _CONST and len(g.tokens) == 2 and g.tokens[1] % c:
            raise ValueError(f"{where}: grid={grid!r} is not a multiple of it along axis {'xyz'[axis]}")


def launch_program(grid, block, inputs: Sequence, cluster=1) -> np.ndarray:
    """grid.x, .y, .z, block.x, .y, .z, cluster.x, .y, .z as the int64 program
    the handler evaluates: each expression as its token count, then its tokens."""
    proxies = [_Operand(i, len(x.shape)) for i, x in enumerate(inputs)]
    words: list[int] = []
    for value, what in ((grid, "grid"), (block, "block"), (cluster, "cluster")):
        exprs = _launch_sizes(value, what, proxies)
        for expr in exprs:
            words += [len(expr.tokens), *expr.tokens]
    return np.asarray(words, np.int64)


def _constant(expr: Expr) -> int | None:
    return int(expr.tokens[1]) if len(expr.tokens) == 2 and expr.tokens[0] == _CONST else None


def _launch_sizes(value, what: str, proxies=None) -> tuple[Expr, Expr, Expr]:
    """``grid``, ``block`` or ``cluster`` (``what``) as three expressions,
    a function called on ``proxies``; errors name the argument, and constant
    grid and block sizes are checked against CUDA's limits."""
    result = _jit_checks.call_launch_function(what, value, proxies) if callable(value) else value
    try:
        exprs = _dims3(result, what)
    except TypeError as e:
        shown = f"= returned {result!r}" if callable(value) else f"={value!r}"
        raise TypeError(f"{what}{shown}: {e}") from None
    _jit_checks.check_launch_sizes(what, value, exprs, _constant)
    return exprs


# C++ names of JAX's dtypes: what a kernel's template arguments take.
_CPP_TYPES = {
    "float32": "float", "float64": "double", "float16": "cutlass::half_t", "bfloat16": "cutlass::bfloat16_t",
    "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
    "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t", "bool": "bool",
}


def cpp_type(dtype) -> str:
    """The C++ element type of ``dtype`` in a kernel (``float``,
    ``cutlass::half_t``, ``cutlass::bfloat16_t``, ...), for entries such as
    ``f"relu<{cutlax.jit.cpp_type(x.dtype)}>"``. The CUTLASS types have the
    layout of JAX's float16 and bfloat16 and the usual arithmetic."""
    name = np.dtype(dtype).name
    if name not in _CPP_TYPES:
        raise TypeError(f"cutlax.jit: no C++ element type for dtype {name}; "
                        f"supported: {', '.join(_CPP_TYPES)}")
    return _CPP_TYPES[name]


# Compiling ------------------------------------------------------------------


def _cache_dir() -> str:
    if os.environ.get("CUTLAX_CACHE_DIR"):
        return os.environ["CUTLAX_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cutlax", "jit")


def _cuda_roots() -> list[str]:
    """Where CUDA's headers and NVRTC may be: the toolkit (CUDA_HOME,
    CUDA_PATH, /usr/local/cuda), then NVIDIA's pip wheels (nvidia/cu13,
    nvidia/cuda_nvrtc, ...), as JAX's CUDA wheels install them."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    spec = importlib.util.find_spec("nvidia")
    for base in (spec.submodule_search_locations if spec and spec.submodule_search_locations else ()):
        roots += sorted(glob.glob(os.path.join(base, "*")))
    return list(dict.fromkeys(r for r in roots if r and os.path.isdir(r)))


@functools.lru_cache(maxsize=None)
def include_dirs() -> tuple[str, ...]:
    """The include path of every kernel: cutlax's headers (installed with the
    package), CUTLASS's (nvidia-cutlass) and CUDA's CCCL, where NVRTC finds
    cuda/std. Part of the disk cache's key, through a hash of their files."""
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.find_spec("cutlass_library")
    if spec is None:
        raise RuntimeError("cutlax.jit needs the CUTLASS headers: pip install --no-deps nvidia-cutlass==4.2.0.0")
    cutlass = os.path.join(list(spec.submodule_search_locations)[0], "source", "include")
    dirs = [os.path.join(here, "include"), cutlass]
    for root in _cuda_roots():
        dirs += [os.path.join(root, "include", "cccl"), os.path.join(root, "include")]
    # Only CUDA's own headers (cuda_fp16.h, cuda/std): the wheels' cuDNN or
    # NCCL headers would only lengthen the search and the cache key's hash.
    cuda_headers = [d for d in dirs[2:] if os.path.isfile(os.path.join(d, "cuda_fp16.h"))
                    or os.path.isdir(os.path.join(d, "cuda", "std"))]
    return tuple(dict.fromkeys(dirs[:2] + cuda_headers))


def _nvrtc_dirs() -> list[str]:
    """Directories holding a libnvrtc, toolkit first, for the runtime's dlopen."""
    dirs = []
    for root in _cuda_roots():
        for lib in ("lib64", "lib"):
            if glob.glob(os.path.join(root, lib, "libnvrtc.so*")):
                dirs.append(os.path.realpath(os.path.join(root, lib)))
    return list(dict.fromkeys(dirs))


def arch() -> str:
    """The architecture kernels compile for: ``CUTLAX_JIT_ARCH``, else the
    GPU's, else sm_90a."""
    return os.environ.get("CUTLAX_JIT_ARCH") or _device_arch()


# The GPU does not change while the process runs; the first query
# initialises the CUDA driver.
_device_arch = functools.lru_cache(maxsize=None)(_cutlax.jit.default_arch)


def _compile(source: str, entry: str, options: tuple[str, ...]) -> tuple[bytes, str]:
    artifact, lowered, log = _cutlax.jit.compile(source, entry, arch(), list(include_dirs()),
                                                 list(options), _cache_dir())
    if artifact is None:
        raise CompileError(entry, log)
    seconds = _cutlax.jit.cache_info().get("last_compile_seconds", 0.0)
    if seconds > 1.0:
        _log.info("cutlax.jit: compiling %s took %.2f s", entry, seconds)
    return artifact, lowered


def nvrtc_version() -> str:
    """NVRTC's version and library ("13.0 (/usr/local/cuda/lib64/libnvrtc.so)"),
    or "not found": whether kernels can be compiled in this process."""
    return _cutlax.jit.nvrtc_version()


def cache_info() -> dict:
    """In-process ``hits``, compiles (``misses``), ``disk_hits``, ``corrupt``
    entries rebuilt, and the cache ``directory``."""
    info = dict(_cutlax.jit.cache_info())
    info["directory"] = _cache_dir()
    return info


def clear_cache(disk: bool = True) -> None:
    """Forgets compiled kernels in this process and, with ``disk``, deletes
    the cache directory's entries."""
    _cutlax.jit.clear_cache(disk, _cache_dir())


# The op ---------------------------------------------------------------------


class Kernel(Op):
    """A runtime-compiled kernel as a cutlax.Op (see the module docstring)."""

    def __init__(self, source: str, entry: str, *, grid, block, cluster=None, shared_mem: int = 0,
                 tma: Sequence[Tma] = (), cpu: Callable | None = None, options: Sequence[str] = ()):
        if not isinstance(source, str) or not isinstance(entry, str) or not entry:
            raise TypeError("cutlax.jit.kernel: source and entry must be strings")
        if isinstance(shared_mem, bool) or not isinstance(shared_mem, (int, np.integer)) or shared_mem < 0:
            raise ValueError(f"cutlax.jit.kernel: shared_mem must be a byte count >= 0, got {shared_mem!r}")
        with _checks.errors(f"cutlax.jit {entry}"):
            for value, what in ((grid, "grid"), (block, "block")):
                if not callable(value):
                    _launch_sizes(value, what)
        cluster = 1 if cluster is None else cluster
        _check_cluster(entry, grid, cluster)
        tma = tuple(tma)
        for i, request in enumerate(tma):
            if not isinstance(request, Tma):
                raise TypeError(f"cutlax.jit.kernel {entry}: tma[{i}] must come from cutlax.jit.tma(...), "
                                f"got {request!r}")
        super().__init__(TARGET, Signature.any_arrays(entry), library="cutlax.jit",
                         platforms=_library.registered_targets().get(TARGET, ()), name=f"cutlax.jit {entry}")
        self.source, self.entry, self.grid, self.block, self.cluster = source, entry, grid, block, cluster
        self.tma = tma
        self.shared_mem, self.cpu, self.options = int(shared_mem), cpu, tuple(options)
        self._compiled: tuple[np.ndarray, str] | None = None
        self._parameters: tuple | None = None  # (the entry's parameters, or None when unknown,)
        self._checked: set = set()  # call signatures (shapes, dtypes) that passed _results' checks
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<cutlax.jit kernel {self.entry}>"

    def compiled(self) -> tuple[np.ndarray, str]:
        """The CUBIN artifact and the entry's lowered name, compiled on first use."""
        with self._lock:
            if self._compiled is None:
                artifact, lowered = _compile(self.source, self.entry, self.options)
                self._compiled = (np.frombuffer(artifact, np.uint8), lowered)
            return self._compiled

    def _arrays(self, args):
        arrays = super()._arrays(args)
        for i, a in enumerate(arrays):
            if a.ndim > _MAX_RANK:
                raise ValueError(f"x{i} has rank {a.ndim}; jit kernels take arrays of rank <= {_MAX_RANK}")
        return arrays

    def _kernel_attrs(self, operands, results, attrs) -> dict:
        self._check_arrays(operands, results)
        cubin, lowered = self.compiled()
        with _checks.errors(self.name):
            launch = launch_program(self.grid, self.block, operands, self.cluster)
        return dict(cubin=cubin, entry=lowered, kernel=self.entry, shared_mem=self.shared_mem,
                    launch=launch, tma=tma_words(self.tma))

    def _check_arrays(self, operands, results) -> None:
        """The TMA requests, then the kernel's parameters (read from the
        entry's lowered name: count, rank, dtype, const), against the arrays."""
        arrays = list(operands) + list(results)
        for i, request in enumerate(self.tma):
            request.check(i, arrays, f"cutlax.jit {self.entry}")
        with _checks.errors(self.name):
            if self._parameters is None:
                self._parameters = (_jit_checks.kernel_parameters(self.compiled()[1]),)
            _jit_checks.check_parameters(self.entry, self._parameters[0], operands, results, len(self.tma))

    def _results(self, arrays, attrs, out):
        # Checked at the call, before cpu= is traced, so a wrong call is
        # reported against the kernel's parameters, not as cpu='s failure.
        outs = super()._results(arrays, attrs, out)
        # Each call signature is checked once: eager calls would otherwise
        # trace cpu= again at every call. Symbolic shapes are checked each time.
        signature = tuple((tuple(x.shape), str(x.dtype)) for x in (*arrays, *outs))
        if all(isinstance(d, int) for shape, _ in signature for d in shape):
            if signature in self._checked:
                return outs
        else:
            signature = None
        self._check_arrays(arrays, outs)
        if self.cpu is not None:
            with _checks.errors(self.name):
                _jit_checks.check_out_against_cpu(self.cpu, arrays, outs)
        if signature is not None:
            self._checked.add(signature)
        return outs

    def _lower(self, call):
        if self.cpu is None:
            return call  # on CPU the handler says the kernel has no CPU version
        return lambda *operands: jax.lax.platform_dependent(*operands, cpu=self.cpu, default=call)


def kernel(source: str, entry: str, *, grid, block, cluster=None, shared_mem: int = 0, tma: Sequence[Tma] = (),
           cpu: Callable | None = None, options: Sequence[str] = ()) -> Kernel:
    """A CuTe C++ kernel as a JAX op, compiled with NVRTC on first use (see the
    module docstring). ``options`` are extra NVRTC flags (``-DNAME=value``)."""
    return Kernel(source, entry, grid=grid, block=block, cluster=cluster, shared_mem=shared_mem, tma=tma, cpu=cpu,
                  options=options)


def precompile(*kernels: Kernel, wait: bool = True) -> threading.Thread:
    """Compiles ``kernels`` now rather than at first use, in a background
    thread that holds no GIL while NVRTC runs. NVRTC compiles one kernel at a
    time per process, so the gain is overlap with the caller's own work
    (``wait=False``, then trace and load data meanwhile); a kernel already in
    the cache costs nothing. Returns the thread (joined when ``wait``)."""
    def compile_all():
        for k in kernels:
            try:
                k.compiled()
            except CompileError:
                pass  # raised again, with its log, when the kernel is first called

    thread = threading.Thread(target=compile_all, name="cutlax.jit.precompile", daemon=True)
    thread.start()
    if wait:
        thread.join()
    return thread


_cutlax.jit.set_nvrtc_search_dirs(_nvrtc_dirs())
_library.register_target(TARGET, _cutlax.jit.handlers(2))
_library.register_target(_cutlax.jit.TARGET_V1, _cutlax.jit.handlers(1))

__all__ = ["CompileError", "Expr", "Kernel", "Tma", "arch", "cache_info", "cdiv", "clear_cache", "cpp_type",
           "include_dirs", "kernel", "max", "min", "nvrtc_version", "precompile", "sm_count", "tma"]
