"""The backward kernels: relu_backward and bias_relu_backward (dx and dbias
in one sweep), directly against jax.numpy on every platform, inside every
gradient of relu and bias_relu, sharded, and with bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import FLOAT_DTYPES, assert_same, random
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import cutlax

SHAPES = [(5,), (7, 3), (64, 128), (3, 5, 24), (1000, 40), (4099, 8), (33, 1000)]


def ref_backward(y, g):
    dx = jnp.where(y > 0, g, jnp.zeros_like(g))
    dbias = dx.astype(jnp.float64 if jax.config.jax_enable_x64 else jnp.float32)
    return dx, dbias.sum(axis=tuple(range(dx.ndim - 1)))


def forward_and_cotangent(rng, shape, dtype):
    x = random(rng, shape, dtype)
    return cutlax.bias_relu(x, random(rng, shape[-1:], dtype)), random(rng, shape, dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: jnp.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_bias_relu_backward_matches_jnp(device, rng, shape, dtype):
    y, g = forward_and_cotangent(rng, shape, dtype)
    dx, dbias = jax.jit(cutlax.bias_relu_backward)(y, g)
    want_dx, want_dbias = ref_backward(y, g)
    assert_same(dx, want_dx)  # a mask: exact
    assert dbias.dtype == dtype and dbias.shape == shape[-1:]
    # float32 sums of exactly-masked values, rounded once to dtype.
    rtol = {jnp.float32: 1e-5, jnp.float16: 1e-3, jnp.bfloat16: 8e-3}[dtype]
    scale = float(np.sqrt(np.prod(shape[:-1])))
    np.testing.assert_allclose(np.asarray(dbias, np.float32), np.asarray(want_dbias),
                               rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: jnp.dtype(d).name)
@pytest.mark.parametrize("shape", [(1,), (1023,), (8, 129)], ids=str)
def test_relu_backward_matches_jnp(device, rng, shape, dtype):
    y, g = cutlax.relu(random(rng, shape, dtype)), random(rng, shape, dtype)
    assert_same(jax.jit(cutlax.relu_backward)(y, g), ref_backward(y, g)[0])


def test_relu_backward_keeps_nan_masked():
    y = jnp.array([jnp.nan, 0.0, -1.0, 2.0], jnp.float32)
    g = jnp.array([5.0, 5.0, 5.0, 5.0], jnp.float32)
    assert_same(cutlax.relu_backward(y, g), jnp.array([0.0, 0.0, 0.0, 5.0], jnp.float32))


def test_gradients_run_the_backward_kernels(rng):
    x, bias = random(rng, (16, 8)), random(rng, (8,))
    hlo = jax.jit(jax.grad(lambda x, b: cutlax.bias_relu(x, b).sum(), (0, 1))).lower(x, bias).as_text()
    assert cutlax.bias_relu_backward.target in hlo
    hlo = jax.jit(jax.grad(lambda x: cutlax.relu(x).sum())).lower(x).as_text()
    assert cutlax.relu_backward.target in hlo
    # Forward mode keeps XLA's fused mask: no backward kernel.
    hlo = jax.jit(lambda x, t: jax.jvp(cutlax.relu, (x,), (t,))).lower(x, x).as_text()
    assert cutlax.relu_backward.target not in hlo


def test_backward_ops_are_differentiable(rng):
    y, g = forward_and_cotangent(rng, (6, 5), jnp.float32)
    from jax.test_util import check_grads
    check_grads(lambda g: cutlax.bias_relu_backward(y, g), (g,), order=2, modes=("fwd", "rev"))
    check_grads(lambda g: cutlax.relu_backward(y, g), (g,), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("in_axes", [0, 1, (None, 0)], ids=str)
def test_vmap_keeps_a_dbias_per_batch_element(rng, in_axes):
    y, g = forward_and_cotangent(rng, (3, 4, 6), jnp.float32)
    if in_axes == (None, 0):
        y = y[0]
    dx, dbias = jax.vmap(cutlax.bias_relu_backward, in_axes=in_axes)(y, g)
    want = jax.vmap(ref_backward, in_axes=in_axes)(y, g)
    assert_same(dx, want[0])
    np.testing.assert_allclose(dbias, want[1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
@pytest.mark.parametrize("spec", [("x",), ("x", "y"), (None, "y")], ids=str)
def test_sharded_backward_sums_dbias_across_row_shards(rng, axis_type, spec):
    mesh = jax.sharding.Mesh(np.array(jax.devices("cpu")).reshape(4, 2), ("x", "y"),
                             axis_types=(axis_type, axis_type))
    y, g = (jax.device_put(a, NamedSharding(mesh, P(*spec))) for a in forward_and_cotangent(rng, (16, 8), jnp.float32))
    text = jax.jit(cutlax.bias_relu_backward).lower(y, g).compile().as_text()
    assert "all-gather" not in text
    if spec[0] is not None:  # rows sharded: the partial dbias are summed
        assert "all-reduce" in text
    dx, dbias = jax.jit(cutlax.bias_relu_backward)(y, g)
    want_dx, want_dbias = ref_backward(y, g)
    assert_same(dx, want_dx)
    np.testing.assert_allclose(dbias, want_dbias, rtol=1e-5, atol=1e-5)


def test_grad_under_shard_map(rng):
    mesh = jax.sharding.Mesh(np.array(jax.devices("cpu")), ("x",))
    x, bias = random(rng, (16, 8)), random(rng, (8,))

    def loss(x, b):
        local = jax.shard_map(lambda x, b: cutlax.bias_relu(x, b), mesh=mesh,
                              in_specs=(P("x"), P()), out_specs=P("x"))
        return (local(x, b) ** 2).sum()

    got = jax.jit(jax.grad(loss, (0, 1)))(x, bias)
    want = jax.grad(lambda x, b: (jax.nn.relu(x + b) ** 2).sum(), (0, 1))(x, bias)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_bad_input_names_the_argument(rng):
    y = random(rng, (4, 3))
    with pytest.raises(ValueError, match=r"cutlax.bias_relu_backward: g has shape \(4, 2\) but y has shape \(4, 3\)"):
        cutlax.bias_relu_backward(y, random(rng, (4, 2)))
    with pytest.raises(TypeError, match="cutlax.relu_backward: g has dtype float16 but y has dtype float32"):
        cutlax.relu_backward(y, y.astype(jnp.float16))
    with pytest.raises(ValueError, match=r"cutlax.bias_relu_backward: y must have rank >= 1, got shape \(\)"):
        cutlax.bias_relu_backward(jnp.float32(1), jnp.float32(1))


@pytest.mark.parametrize("partials,message", [
    (jax.ShapeDtypeStruct((0, 3), jnp.float32), r"partials must have at least one row chunk, got shape \(0, 3\)"),
    (jax.ShapeDtypeStruct((2, 3), jnp.float16), "INVALID_ARGUMENT: partials has dtype float16; expected float32"),
    (jax.ShapeDtypeStruct((2, 4), jnp.float32),
     r"partials has shape \(2, 4\); expected dimension 1 to be 3 \(the width of y's last axis\)"),
])
def test_handler_rejects_a_bad_partials_buffer(device, rng, partials, message):
    # The C++ checks behind the Python ones: an ffi::Error, raised as an exception.
    y = random(rng, (4, 3))
    call = jax.ffi.ffi_call(cutlax.bias_relu_backward.target,
                            (jax.ShapeDtypeStruct(y.shape, y.dtype), jax.ShapeDtypeStruct((3,), y.dtype), partials))
    with pytest.raises(Exception, match=message):
        jax.block_until_ready(call(y, y))
