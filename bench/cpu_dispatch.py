"""Why a bare cutlax op trails XLA:CPU below 2^24 elements, measured.

XLA:CPU's client runs an executable on the calling thread when its cost
analysis counts fewer than 1000 flops, and it counts a custom call as none:
a program that is only a cutlax call runs inline, while `a + b` on a large
array runs on a worker thread. The two then get their results from different
glibc arenas. For vector_add in float32 at each size this prints the bare
ratio (XLA time / cutlax time), the ratio inside a program with other work
(a 4096-element multiply returned alongside, on both sides), and the page
faults per call of each bare program (the result's pages mapped afresh).

    python bench/cpu_dispatch.py [--log2-sizes 16,18,20,22,24]
"""

import argparse
import resource

import jax
import jax.numpy as jnp

import cutlax
from cutlax.cli.timing import median_seconds_each


def faults_per_call(fn, args, calls=50):
    jax.block_until_ready(fn(*args))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    out = None
    for _ in range(calls):
        out = fn(*args)
    jax.block_until_ready(out)
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--log2-sizes", default="16,18,20,22,24")
    args = p.parse_args()
    small = jnp.ones((4096,), jnp.float32)
    bare = jax.jit(cutlax.vector_add), jax.jit(lambda a, b: a + b)
    in_program = (jax.jit(lambda a, b, s: (cutlax.vector_add(a, b), s * 2.0)),
                  jax.jit(lambda a, b, s: (a + b, s * 2.0)))
    print(f"{jax.devices()[0].device_kind}, jax {jax.__version__}; vector_add float32, ratio = XLA / cutlax time")
    print("size   bare   in a program   faults/call cutlax    XLA")
    for log2 in (int(s) for s in args.log2_sizes.split(",")):
        a = jax.random.normal(jax.random.PRNGKey(0), (2**log2,), jnp.float32)
        b = a + 1.0
        t_bare = median_seconds_each(bare, a, b, batches=7)
        t_prog = median_seconds_each(in_program, a, b, small, batches=7)
        faults = [faults_per_call(f, (a, b)) for f in bare]
        print(f"2^{log2:<3} {t_bare[1] / t_bare[0]:5.2f}   {t_prog[1] / t_prog[0]:12.2f}   "
              f"{faults[0]:17.0f} {faults[1]:6.0f}")


if __name__ == "__main__":
    main()
