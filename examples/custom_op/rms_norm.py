"""RMSNorm as a JAX op from the out-of-tree cutlax library built here.

    python3 rms_norm.py            # check against jax.numpy, then time both
    python3 rms_norm.py --rows 65536 --width 1024

The library path comes from $RMS_NORM_LIBRARY, else build/librms_norm.so.
"""

from __future__ import annotations

import argparse
import os

import jax
import jax.numpy as jnp

import cutlax

HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARY = os.environ.get("RMS_NORM_LIBRARY", os.path.join(HERE, "build", "librms_norm.so"))

lib = cutlax.load_library(LIBRARY)


# The op's rules, on the cutlax.Op the library's table gives (the same hooks
# the built-in ops are declared with).


@lib.rms_norm.def_checks
def _operands(x, weight, *, eps):
    if x.ndim < 1 or weight.shape != x.shape[-1:]:
        raise ValueError(f"weight must have shape {x.shape[-1:]} (x's last axis), got {weight.shape}")


@lib.rms_norm.def_shape
def _shape(x, weight, *, eps):
    return jax.ShapeDtypeStruct(x.shape, x.dtype)


@lib.rms_norm.def_vjp
def _backward(args, y, g, *, eps):
    # y = x r w with r = rsqrt(mean(x^2) + eps): dx = r g w - r^3 x mean(g w x),
    # dw = the sum over rows of g x r. Plain jax.numpy, which XLA fuses.
    x, w = args
    r = jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps)
    gw = g * w
    dx = r * gw - r ** 3 * x * jnp.mean(gw * x, axis=-1, keepdims=True)
    dw = jnp.sum(g * x * r, axis=tuple(range(x.ndim - 1)))
    return dx, dw


# The kernel folds leading axes into rows, so a batch is more rows; a batched
# weight has no room for one and runs one call per batch element.
lib.rms_norm.def_vmap(cutlax.batching.broadcast(shared=(1,)))
# Rows shard freely; the normalised (last) axis stays whole on each device.
lib.rms_norm.def_sharding(cutlax.sharding.ROWS)


def rms_norm(x, weight, eps: float = 1e-6):
    """x / sqrt(mean(x**2, axis=-1) + eps) * weight, for float32 x of rank >= 1."""
    return lib.rms_norm(x, weight, eps=eps)


def rms_norm_reference(x, weight, eps: float = 1e-6):
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def main():
    from cutlax.cli.timing import median_seconds

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=65536 if jax.default_backend() == "gpu" else 4096)
    p.add_argument("--width", type=int, default=1024)
    args = p.parse_args()
    kx, kw = jax.random.split(jax.random.PRNGKey(0))
    x = jax.random.normal(kx, (args.rows, args.width), jnp.float32)
    w = jax.random.normal(kw, (args.width,), jnp.float32)
    ours, ref = jax.jit(rms_norm), jax.jit(rms_norm_reference)
    err = float(jnp.max(jnp.abs(ours(x, w) - ref(x, w))))
    t_ours, t_ref = median_seconds(ours, x, w), median_seconds(ref, x, w)
    moved = 2 * x.size * 4
    print(f"rms_norm {args.rows}x{args.width} float32 on {jax.devices()[0].device_kind}: max error {err:.2e}")
    print(f"  cutlax    {t_ours * 1e6:9.1f} us  {moved / t_ours / 1e9:7.1f} GB/s")
    print(f"  jax.numpy {t_ref * 1e6:9.1f} us  {moved / t_ref / 1e9:7.1f} GB/s")
    print(f"  cutlax / jax.numpy speed: {t_ref / t_ours:.3f}")


if __name__ == "__main__":
    main()
