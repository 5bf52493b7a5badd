"""cutlax: custom CUDA C++ / CuTe kernels as first-class JAX ops.

Importing cutlax registers the built-in ops' FFI handlers (CPU and CUDA) with
JAX; do it before calling any function that uses them, including a
deserialized ``jax.export`` artifact.
"""

from __future__ import annotations


# jax (and jaxlib's own extensions) load before ours.
import jax as _jax  # noqa: F401

from cutlax._library import register_library as _register_library
from cutlax import _cutlax  # noqa: E402

__version__ = "0.1.0"

_register_library(_cutlax.__file__)

from cutlax import jit  # noqa: E402  (registers cutlax_jit_v2 and _v1, the runtime-compiled kernels' targets)

from cutlax import batching, export, sharding  # noqa: E402
from cutlax.library import LibraryError, load_library  # noqa: E402
from cutlax.op import Op  # noqa: E402
from cutlax.ops import PUBLIC as _OPS  # noqa: E402

globals().update(_OPS)  # vector_add, saxpy, relu, ...: one module each in cutlax/ops/

__all__ = sorted(_OPS) + ["Op", "batching", "export", "jit", "sharding", "load_library", "LibraryError",
                          "__version__"]
