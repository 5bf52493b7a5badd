"""The export cases shared by the tests and the committed artifact: for each
op, a function, its argument specs with symbolic dimensions, and the concrete
sizes to run it at. The references live in run_exported.py, which must not
import this module (an artifact runs without the code that defined it)."""

import jax
import jax.numpy as jnp
from jax.export import symbolic_shape

import cutlax

F32 = jnp.float32


CASES = {
    # name: (function, symbolic dims per argument, concrete shapes per run)
    "vector_add": (cutlax.vector_add, ("n", "n"), [[(7,), (7,)], [(1000,), (1000,)]]),
    "saxpy_static": (lambda x, y: cutlax.saxpy(2.5, x, y), ("b, h", "b, h"),
                     [[(3, 5), (3, 5)], [(64, 33), (64, 33)]]),
    "saxpy_dynamic": (lambda a, x, y: cutlax.saxpy(a, x, y), ("", "n", "n"),
                      [[(), (9,), (9,)], [(), (4096,), (4096,)]]),
    "relu": (cutlax.relu, ("b, h",), [[(3, 5)], [(17, 300)]]),
    "bias_relu": (cutlax.bias_relu, ("b, w", "w"), [[(3, 5), (5,)], [(64, 128), (128,)]]),
    "bias_relu_static_width": (cutlax.bias_relu, ("b, 16", "16"), [[(3, 16), (16,)], [(200, 16), (16,)]]),
    "gemm": (lambda a, b: cutlax.gemm(a, b, impl="tiled"), ("m, k", "k, n"),
             [[(3, 4), (4, 5)], [(130, 70), (70, 129)]]),
    "composed": (lambda x, bias: jax.nn.sigmoid(cutlax.bias_relu(cutlax.saxpy(2.0, x, x), bias)),
                 ("b, w", "w"), [[(2, 8), (8,)], [(300, 64), (64,)]]),
}


def arg_specs(name: str):
    """ShapeDtypeStructs for the case's arguments; "" is a scalar. One scope
    per case, so a dimension name means one size across its arguments."""
    scope = jax.export.SymbolicScope()
    return [jax.ShapeDtypeStruct(symbolic_shape(dims, scope=scope) if dims else (), F32)
            for dims in CASES[name][1]]
