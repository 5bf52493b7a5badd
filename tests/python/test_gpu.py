"""GPU-only behaviour: the CUDA handlers under XLA's command buffers, and the
CPU twin and CUDA kernel agreeing on the same inputs (big arrays:
test_big_sizes.py)."""

import jax
import numpy as np
import pytest
from conftest import GPUS, random

import cutlax

pytestmark = pytest.mark.gpu


def test_chain_of_dependent_calls_in_one_program(rng):
    # XLA captures runs of custom calls into CUDA graphs (command buffers);
    # the handlers must neither allocate nor synchronise while captured.
    x = jax.device_put(random(rng, (1024,)), GPUS[0])

    @jax.jit
    def chain(x):
        for _ in range(50):
            x = cutlax.saxpy(0.5, cutlax.relu(x), x)
        return x

    def reference(x):
        for _ in range(50):
            x = 0.5 * jax.nn.relu(x) + x
        return x

    np.testing.assert_allclose(chain(x), jax.jit(reference)(x), rtol=1e-5)


@pytest.mark.parametrize("op", ["vector_add", "relu", "bias_relu", "gemm"])
def test_cuda_kernel_agrees_with_cpu_twin(rng, op):
    cpu, gpu = jax.devices("cpu")[0], GPUS[0]
    shapes = {"vector_add": [(1000, 37)] * 2, "relu": [(1000, 37)],
              "bias_relu": [(1000, 37), (37,)], "gemm": [(300, 70), (70, 130)]}[op]
    args = [random(rng, s) for s in shapes]
    fn = getattr(cutlax, op)
    on_cpu = fn(*[jax.device_put(a, cpu) for a in args])
    on_gpu = fn(*[jax.device_put(a, gpu) for a in args])
    assert on_gpu.devices() == {gpu}
    tol = 1e-5 if op == "gemm" else 0
    np.testing.assert_allclose(np.asarray(on_gpu), np.asarray(on_cpu), rtol=tol, atol=tol)

