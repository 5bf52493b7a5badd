"""Every built-in op once per dtype, at sizes that split across XLA:CPU's
intra-op thread pool and end in a partial run, against jax.numpy: the
Python-side smoke run of the sanitizer builds (scripts/sanitize.sh), which
run it under AddressSanitizer + UndefinedBehaviorSanitizer and under
ThreadSanitizer. Exits non-zero on a mismatch; the sanitizers abort on a
finding."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import cutlax

# 2^20 + 4099 elements: many pool tasks, and a tail that is a multiple of
# no run or vector width.
N = (1 << 20) + 4099
ROWS, COLS = 1031, 1021


def values(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    return jnp.asarray(rng.standard_normal(shape), jnp.float32).astype(dtype)


def close(name, got, expected, tol):
    got, expected = np.asarray(got, np.float32), np.asarray(expected, np.float32)
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol, err_msg=name)


def main():
    checked = 0
    for dtype in (jnp.float32, jnp.float16, jnp.bfloat16):
        # float32: within an ulp or two (saxpy's FMA rounds once, jnp's
        # multiply and add twice); 16-bit: the result is rounded once to 8 or
        # 11 bits.
        tol = 2e-6 if dtype == jnp.float32 else 1e-2
        x, y = values((N,), dtype, 1), values((N,), dtype, 2)
        close("vector_add", cutlax.vector_add(x, y), x.astype(jnp.float32) + y, tol)
        close("saxpy", cutlax.saxpy(0.5, x, y), 0.5 * x.astype(jnp.float32) + y, tol)
        close("saxpy dynamic", cutlax.saxpy(jnp.float32(3.0), x, y), 3.0 * x.astype(jnp.float32) + y, tol)
        close("relu", cutlax.relu(x), jax.nn.relu(x), 0)
        close("relu_backward", cutlax.relu_backward(x, y), jnp.where(x > 0, y, 0), 0)
        m, bias = values((ROWS, COLS), dtype, 3), values((COLS,), dtype, 4)
        out = cutlax.bias_relu(m, bias)
        close("bias_relu", out, jax.nn.relu(m.astype(jnp.float32) + bias), tol)
        dx, dbias = cutlax.bias_relu_backward(out, m)
        expected_dx = jnp.where(out > 0, m, 0)
        close("bias_relu_backward dx", dx, expected_dx, 0)
        close("bias_relu_backward dbias", dbias, expected_dx.astype(jnp.float32).sum(0),
              1e-3 if dtype == jnp.float32 else 0.5)  # 1031 rows summed in some order
        a, b = values((129, 200), dtype, 5), values((200, 136), dtype, 6)
        for activation in (None, "relu", "gelu"):
            got = cutlax.gemm(a, b, bias=b[0], activation=activation)
            z = jnp.matmul(a.astype(jnp.float32), b.astype(jnp.float32), precision="highest") + b[0]
            expected = {None: z, "relu": jax.nn.relu(z), "gelu": jax.nn.gelu(z)}[activation]
            close(f"gemm {activation}", got, expected, 5e-2)  # TF32 or 16-bit inputs, K = 200
        # The backward's products under the forward's own relu mask (a mask
        # taken from a float32 reference would flip where z rounds near 0).
        grad = jax.grad(lambda a, b: cutlax.gemm(a, b, activation="relu").astype(jnp.float32).sum())(a, b)
        mask = (cutlax.gemm(a, b, activation="relu") > 0).astype(jnp.float32)
        close("grad of gemm", grad, mask @ b.astype(jnp.float32).T, 5e-2)
        checked += 1
    a, b = values((129, 200), jnp.float32, 7), values((200, 131), jnp.float32, 8)
    close("gemm tiled", cutlax.gemm(a, b, impl="tiled"), jnp.matmul(a, b, precision="highest"), 1e-4)
    print(f"every op checked on {jax.devices()[0].platform}, {checked} dtypes")


if __name__ == "__main__":
    main()
