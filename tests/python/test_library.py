"""The op spec every op is called through (cutlax.Op), read from a library's
table: the built-in library's table and the public ops declared on it, the
call chain's checks and hooks on a raw op, and signature errors."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cutlax
from cutlax import _cutlax
from cutlax.library import LibraryError, Signature, builtin_library

TABLE = builtin_library().ops  # op name -> cutlax.Op, from the C++ declarations


@pytest.mark.parametrize("name", sorted(TABLE))
def test_every_table_op_is_declared_in_full(name):
    op = TABLE[name]
    assert isinstance(op, cutlax.Op)
    assert re.fullmatch(rf"cutlax_{name}_v\d+", op.target)
    assert "cpu" in op.platforms
    # Each built-in has every rule a user's op can declare.
    assert op._shape_rule is not None, "no shape rule"
    assert op._jvp is not None or op._vjp is not None, "no derivative rule"
    assert op._vmap is not None, "no batching rule"
    assert op._sharding is not None, "no sharding rule"


def test_public_ops_are_the_table_ops_or_call_them():
    public = {name: getattr(cutlax, name) for name in cutlax.__all__}
    ops = {name for name, value in public.items() if isinstance(value, cutlax.Op)}
    assert ops == {"vector_add", "relu", "bias_relu", "relu_backward", "bias_relu_backward"}
    assert all(public[name] is TABLE[name] for name in ops)
    # The others are functions over table ops with several targets behind them.
    x = jnp.ones((4, 4), jnp.float32)
    assert cutlax.saxpy.__name__ == "saxpy" and "saxpy_dynamic" in TABLE
    assert TABLE["gemm_tiled"].target in jax.jit(lambda x: cutlax.gemm(x, x, impl="tiled")).lower(x).as_text()
    gemm = jax.jit(lambda x: cutlax.gemm(x, x, impl="cutlax", precision="high"))
    assert TABLE["gemm"].target in gemm.lower(x).as_text()


def test_signatures_carry_the_dtypes_the_launchers_declare():
    assert TABLE["saxpy"].signature == Signature(
        "saxpy", ("x", "y"), ("out",), ("float32|float16|bfloat16",) * 2, ("any",), {"alpha": "float32"})
    assert TABLE["saxpy_dynamic"].signature.arg_dtypes[0] == "float32"
    assert TABLE["gemm_tiled"].signature.arg_dtypes == ("float32", "float32")
    backward = TABLE["bias_relu_backward"].signature
    assert backward.results == ("dx", "dbias", "partials") and backward.scratch == (2,)
    assert backward.describe() == "bias_relu_backward(y, g) -> dx, dbias"


def test_the_chain_checks_in_order_and_names_the_op():
    x = jnp.linspace(-2, 2, 9, dtype=jnp.float32)
    out = jax.ShapeDtypeStruct(x.shape, x.dtype)
    saxpy = TABLE["saxpy"]
    np.testing.assert_array_equal(jax.jit(lambda x: saxpy(x, x, out=out, alpha=3))(x), cutlax.saxpy(3.0, x, x))
    with pytest.raises(TypeError, match=r"^cutlax.saxpy: takes 2 array arguments \(x, y\), got 1$"):
        saxpy(x, alpha=3)
    with pytest.raises(TypeError, match=r"^cutlax.saxpy: x has dtype int32; expected one of: float32, float16"):
        saxpy(x.astype(jnp.int32), x, alpha=3)
    with pytest.raises(TypeError, match=r"^cutlax.saxpy: attribute 'alpha' must be float32, got 'fast'$"):
        saxpy(x, x, out=out, alpha="fast")
    with pytest.raises(ValueError, match=r"^cutlax.saxpy: y has shape \(3,\) but x has shape \(9,\)"):
        saxpy(x, x[:3], alpha=1.0)  # the op's own check, after the signature's
    with pytest.raises(ValueError, match=r"^cutlax.bias_relu_backward: has 3 results \(dx, dbias, partials\); "
                                         r"out= gives 1$"):
        cutlax.bias_relu_backward(x, x, out=out)


def test_scratch_results_are_dropped():
    y = jnp.arange(-3.0, 9.0, dtype=jnp.float32).reshape(4, 3)
    dx, dbias = cutlax.bias_relu_backward(y, jnp.ones_like(y))
    np.testing.assert_array_equal(dbias, (y > 0).sum(axis=0).astype(jnp.float32))


@pytest.mark.parametrize("signature,types,message", [
    ("relu x -> y", "in:any;out:any;attrs:", "cannot read its signature"),
    ("relu(x) -> y", "in:any;out:any;attrs:;extra:1", "cannot read its signature"),
    ("relu(x, y) -> z", "in:any;out:any;attrs:", "names 2 arguments and 1 results, but its launcher takes 1 and 1"),
    ("relu(x) -> z", "in:any;out:any;attrs:mode:complex64", "attributes of type complex64 are not supported"),
    ("relu(x-1) -> z", "in:any;out:any;attrs:", "its argument 'x-1' is not an identifier"),
    ("relu(x) -> z", "in:float33;out:any;attrs:", "argument x has type 'float33', which is not a dtype name"),
    ("relu(x) -> z", "in:any;out:any;attrs:n:int32,n:int64", "its attribute n is declared twice"),
    ("relu(x) -> z", "in:any;out:any;attrs:;scratch:1", "its scratch result 1 is not the index of one of its 1"),
])
def test_bad_signatures_are_library_errors(signature, types, message):
    with pytest.raises(LibraryError, match=message):
        Signature.parse("t_v1", signature, types)


def test_the_extension_checks_the_table_itself():
    # cutlax_library_handlers returned null: the reader's message, as load_library raises it.
    with pytest.raises(ValueError, match=r"^'lib.so' has no handler table: its cutlax_library_handlers returned null$"):
        _cutlax.read_library_table(0, "'lib.so'")


def test_a_table_without_scratch_field_still_reads():
    # Libraries built before scratch results existed.
    sig = Signature.parse("t_v1", "scale(x) -> y", "in:float32;out:float32;attrs:alpha:float32")
    assert sig.scratch == () and sig.attrs == {"alpha": "float32"}


def test_a_result_may_reuse_an_operand_buffer():
    x = jnp.linspace(-2, 2, 16, dtype=jnp.float32)
    donated = jax.jit(lambda x: cutlax.relu(x, input_output_aliases={0: 0}), donate_argnums=0)
    np.testing.assert_array_equal(donated(x.copy()), jax.nn.relu(x))
    assert "output_operand_aliases" in jax.jit(lambda x: cutlax.relu(x, input_output_aliases={0: 0})).lower(x).as_text()
