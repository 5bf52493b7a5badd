"""Every op is deterministic: the same inputs give the same bits, call after
call, on each platform. No kernel uses atomics or a split whose order varies
between runs (bias_relu_backward's column sums go through fixed row chunks;
the GEMMs tile without split-K or stream-K), so this holds on the GPU as well
as for the CPU twins, whose thread-pool tasks own disjoint outputs. And the
handlers are re-entrant: calls from many threads at once agree with one."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import random

import cutlax

CASES = {
    "vector_add": lambda x, w, b: cutlax.vector_add(x, x * 0.5),
    "saxpy": lambda x, w, b: cutlax.saxpy(jnp.float32(1.7), x, x),
    "relu": lambda x, w, b: cutlax.relu(x),
    "relu_backward": lambda x, w, b: cutlax.relu_backward(x, x),
    "bias_relu": lambda x, w, b: cutlax.bias_relu(x, b),
    "bias_relu_backward": lambda x, w, b: cutlax.bias_relu_backward(x, x * 3),
    "gemm": lambda x, w, b: cutlax.gemm(x, w, bias=b, activation="gelu"),
    "gemm_grad": lambda x, w, b: jax.grad(lambda x: cutlax.gemm(x, w, activation="relu").astype(
        jnp.float32).sum())(x),
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_the_same_inputs_give_the_same_bits(device, rng, name, dtype):
    x = random(rng, (1031, 520), dtype)
    w, b = random(rng, (520, 264), dtype), random(rng, (x.shape[1],), dtype)
    if name.startswith("gemm"):
        b = b[: w.shape[1]]
    fn = jax.jit(CASES[name])
    first = jax.tree.map(np.asarray, fn(x, w, b))
    for _ in range(3):
        again = jax.tree.map(np.asarray, fn(x, w, b))
        jax.tree.map(lambda a, b: np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8)), first, again)


def test_calls_from_many_threads_agree(device, rng):
    # Handlers are re-entrant: XLA may run one op's handler on several
    # threads (and streams) at once. Eight Python threads calling every op
    # get the bits a lone call gets.
    from concurrent.futures import ThreadPoolExecutor

    # Committed to the device: jax.default_device is per thread, so
    # uncommitted inputs would run on each worker thread's default device.
    x, w, b = jax.device_put((random(rng, (517, 264), jnp.float32), random(rng, (264, 264), jnp.float32),
                              random(rng, (264,), jnp.float32)), device)
    step = jax.jit(lambda x, w, b: [fn(x, w, b) for fn in CASES.values()])
    alone = jax.tree.map(np.asarray, step(x, w, b))

    def run(_):
        return [jax.tree.map(np.asarray, step(x, w, b)) for _ in range(20)]

    with ThreadPoolExecutor(8) as pool:
        for results in pool.map(run, range(8)):
            for got in results:
                jax.tree.map(np.testing.assert_array_equal, alone, got)
