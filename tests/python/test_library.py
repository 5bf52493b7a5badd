"""cutlax.load_library's view of a library: the built-in one read through the
same table a user library has, and signature errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cutlax
from cutlax.library import LibraryError, Signature, builtin_library


def test_builtin_ops_read_from_their_table():
    lib = builtin_library()
    assert set(lib.ops) == {"vector_add", "saxpy", "saxpy_dynamic", "relu", "bias_relu", "gemm_tiled",
                            "relu_backward", "bias_relu_backward"}
    assert lib.saxpy.signature == Signature("saxpy", ("x", "y"), ("out",), ("any", "any"), ("any",),
                                            {"alpha": "float32"})
    assert lib.bias_relu_backward.signature.results == ("dx", "dbias", "partials")
    assert lib.relu.platforms >= {"cpu"}
    assert builtin_library() is lib


def test_a_raw_op_call_matches_the_checked_op():
    lib = builtin_library()
    x = jnp.linspace(-2, 2, 9, dtype=jnp.float32)
    out = jax.ShapeDtypeStruct(x.shape, x.dtype)
    np.testing.assert_array_equal(jax.jit(lambda x: lib.saxpy(x, x, out=out, alpha=3))(x), cutlax.saxpy(3.0, x, x))
    with pytest.raises(TypeError, match=r"cutlax.saxpy: attribute 'alpha' must be float32, got 'fast'"):
        lib.saxpy(x, x, out=out, alpha="fast")
    with pytest.raises(ValueError, match=r"cutlax.bias_relu_backward: has 3 results \(dx, dbias, partials\); out= gives 1"):
        lib.bias_relu_backward(x, x, out=out)
    with pytest.raises(TypeError, match=r"cutlax.relu: needs out=: the result's jax.ShapeDtypeStruct \(out\)"):
        lib.relu(x)


@pytest.mark.parametrize("signature,types,message", [
    ("relu x -> y", "in:any;out:any;attrs:", "cannot read its signature"),
    ("relu(x, y) -> z", "in:any;out:any;attrs:", "names 2 arguments and 1 results, but its launcher takes 1 and 1"),
    ("relu(x) -> z", "in:any;out:any;attrs:mode:complex64", "attributes of type complex64 are not supported"),
])
def test_bad_signatures_are_library_errors(signature, types, message):
    with pytest.raises(LibraryError, match=message):
        Signature.parse("t_v1", signature, types)
