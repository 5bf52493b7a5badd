"""One process of the multi-host test (test_multihost.py): 4 CPU devices of a
global mesh of 8 spread over 2 processes, talking through jax.distributed and
gloo CPU collectives, exactly as processes on separate GPU hosts would.

    python multihost_worker.py PROCESS_ID PORT
"""

import functools
import sys

import jax

process_id, port = int(sys.argv[1]), sys.argv[2]
# CPU devices even on a GPU machine: this test is about the CPU collectives.
jax.config.update("jax_platforms", "cpu")
jax.config.update("jax_num_cpu_devices", 4)
jax.config.update("jax_cpu_collectives_implementation", "gloo")
jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=2, process_id=process_id)

import numpy as np  # noqa: E402
from jax.experimental import multihost_utils  # noqa: E402
from jax.sharding import AxisType, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import cutlax  # noqa: E402

# float32 gemm in true FP32 with the K-splitting MATMUL rule (the default runs in TF32).
TILED_GEMM = functools.partial(cutlax.gemm, impl="tiled")

assert jax.process_count() == 2 and len(jax.devices()) == 8 and len(jax.local_devices()) == 4
mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
rng = np.random.default_rng(7)  # the same global data in both processes


def global_array(values, *spec):
    """A global array of which this process holds only its devices' shards."""
    return jax.make_array_from_callback(values.shape, NamedSharding(mesh, P(*spec)),
                                        lambda index: values[index])


def check(name, out, expected, tol):
    full = multihost_utils.process_allgather(out, tiled=True)
    np.testing.assert_allclose(full, expected, rtol=tol, atol=tol, err_msg=name)
    print(f"process {process_id}: {name} ok", flush=True)


a, b = rng.standard_normal((64, 32)).astype(np.float32), rng.standard_normal((64, 32)).astype(np.float32)
check("vector_add (plain jit)", jax.jit(cutlax.vector_add)(global_array(a, "x"), global_array(b, "x")), a + b, 0)

x, bias = rng.standard_normal((64, 48)).astype(np.float32), rng.standard_normal(48).astype(np.float32)
check("bias_relu (plain jit)", jax.jit(cutlax.bias_relu)(global_array(x, "x"), global_array(bias)),
      np.maximum(x + bias, 0), 0)

m, k = rng.standard_normal((24, 64)).astype(np.float32), rng.standard_normal((64, 16)).astype(np.float32)
ref = m.astype(np.float64) @ k.astype(np.float64)
check("gemm, rows (plain jit)", jax.jit(TILED_GEMM)(global_array(m, "x"), global_array(k)), ref, 1e-4)
check("gemm, K across both processes (plain jit)",
      jax.jit(TILED_GEMM)(global_array(m, None, "x"), global_array(k, "x")), ref, 1e-4)

mapped = jax.jit(jax.shard_map(lambda p, q: jax.lax.psum(TILED_GEMM(p, q), "x"), mesh=mesh,
                               in_specs=(P(None, "x"), P("x")), out_specs=P()))
check("gemm, K (shard_map + psum)", mapped(global_array(m, None, "x"), global_array(k, "x")), ref, 1e-4)
print(f"process {process_id}: OK", flush=True)
