import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import random

import cutlax


def check_gemm(out, a, b):
    """Against true-FP32 jnp.matmul: relative Frobenius error under 1e-5 (FP32
    accumulation over K), and every element within 1e-4 * sqrt(K) of it."""
    ref = jnp.matmul(a, b, precision="highest")
    assert out.shape == ref.shape and out.dtype == jnp.float32
    err = float(jnp.linalg.norm(out - ref) / max(float(jnp.linalg.norm(ref)), 1e-30))
    assert err < 1e-5, err
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4 * np.sqrt(a.shape[1]))


@pytest.mark.parametrize(
    "m,n,k",
    # (100, 40, 700): partial row tiles and panels, a partial column tile, and
    # K over several of the CPU twin's depth blocks.
    [(128, 64, 128), (257, 129, 65), (1, 1, 1), (1024, 1024, 1024), (3, 5, 7), (130, 260, 12),
     (100, 40, 700)],
)
@pytest.mark.parametrize("impl", ["tiled", "auto"])
def test_matches_matmul_highest(device, rng, m, n, k, impl):
    a, b = random(rng, (m, k)), random(rng, (k, n))
    check_gemm(cutlax.gemm(a, b, impl=impl), a, b)


def test_k_zero_gives_zeros(device, rng):
    a, b = random(rng, (5, 0)), random(rng, (0, 3))
    np.testing.assert_array_equal(cutlax.gemm(a, b), jnp.zeros((5, 3)))


def test_empty_rows(device, rng):
    assert cutlax.gemm(random(rng, (0, 4)), random(rng, (4, 3))).shape == (0, 3)


def test_bias_and_relu(device, rng):
    a, b, bias = random(rng, (33, 17)), random(rng, (17, 40)), random(rng, (40,))
    ref = jnp.matmul(a, b, precision="highest") + bias
    np.testing.assert_allclose(cutlax.gemm(a, b, bias=bias), ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(cutlax.gemm(a, b, bias=bias, activation="relu"), jax.nn.relu(ref), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(cutlax.gemm(a, b, activation="relu"), jax.nn.relu(ref - bias), rtol=1e-4, atol=1e-4)


def test_inside_jit_with_other_ops(device, rng):
    a, b = random(rng, (64, 48)), random(rng, (48, 32))
    f = jax.jit(lambda a, b: jnp.tanh(cutlax.gemm(a * 0.5, b)).sum())
    np.testing.assert_allclose(f(a, b), jnp.tanh(jnp.matmul(a * 0.5, b, precision="highest")).sum(), rtol=1e-4)


def test_nan_and_inf_propagate(device, rng):
    a, b = random(rng, (4, 3)), random(rng, (3, 5))
    a = a.at[1, 2].set(np.nan).at[2, 0].set(np.inf)
    out, ref = cutlax.gemm(a, b), jnp.matmul(a, b, precision="highest")
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(out), np.isinf(ref))


def test_mismatched_k(rng):
    with pytest.raises(ValueError, match=r"b has shape \(6, 4\); expected b.shape\[0\] == a.shape\[1\] == 5 \(K\)"):
        cutlax.gemm(random(rng, (3, 5)), random(rng, (6, 4)))


@pytest.mark.parametrize("shapes", [((5,), (5, 4)), ((3, 5), (5,)), ((2, 3, 5), (5, 4))], ids=str)
def test_operands_must_be_matrices(rng, shapes):
    with pytest.raises(ValueError, match="must have rank 2"):
        cutlax.gemm(random(rng, shapes[0]), random(rng, shapes[1]))


def test_tiled_is_float32_only(rng):
    with pytest.raises(TypeError, match="impl='tiled' takes float32, got bfloat16"):
        cutlax.gemm(random(rng, (4, 4), jnp.bfloat16), random(rng, (4, 4), jnp.bfloat16), impl="tiled")
    with pytest.raises(TypeError, match="a has dtype int32; expected one of: float32, bfloat16, float16"):
        cutlax.gemm(jnp.ones((4, 4), jnp.int32), jnp.ones((4, 4), jnp.int32))


def test_unknown_impl_and_activation(rng):
    a = random(rng, (4, 4))
    with pytest.raises(ValueError, match=r"impl must be one of \('auto', 'tiled', 'cooperative_128x256x64_2x1', "
                                         r"'pingpong_128x128x64_1x1'\), got 'cublas'"):
        cutlax.gemm(a, a, impl="cublas")
    with pytest.raises(ValueError, match=r"activation must be one of \(None, 'relu', 'gelu'\), got 'swish'"):
        cutlax.gemm(a, a, activation="swish")
    with pytest.raises(ValueError, match=r"precision must be one of \(None, 'default', 'highest'\), got 'high'"):
        cutlax.gemm(a, a, precision="high")


def test_float32_gelu(device, rng):
    a, b, bias = random(rng, (9, 17)), random(rng, (17, 6)), random(rng, (6,))
    ref = jax.nn.gelu(jnp.matmul(a, b, precision="highest") + bias)
    np.testing.assert_allclose(cutlax.gemm(a, b, bias=bias, activation="gelu", precision="highest"), ref,
                               rtol=1e-4, atol=1e-4)


def test_bias_shape_checked(rng):
    a = random(rng, (4, 4))
    with pytest.raises(ValueError, match=r"bias has shape \(3,\); expected \(4,\), N"):
        cutlax.gemm(a, a, bias=random(rng, (3,)))
