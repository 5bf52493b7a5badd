"""The TMA transpose (examples/jit_tma) against XLA's own copy and transpose.

Bandwidth is bytes read plus bytes written over the median time, every
function timed on the same array in one process, their batches interleaved.
XLA's copy is ``-x`` (one read and one write of every element, what any
device-to-device copy moves); XLA's transpose is ``x.T``.

    python3 bench/jit_tma_copy.py [OUT.json]
"""

from __future__ import annotations

import json
import pathlib
import sys

import jax
import jax.numpy as jnp

from cutlax.cli.timing import median_seconds_each

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples" / "jit_tma"))
import transpose as tma_transpose  # noqa: E402

CASES = [(jnp.float32, (16384, 16384)), (jnp.bfloat16, (16384, 32768)), (jnp.float32, (8192, 8200))]


def main(argv: list[str]) -> int:
    rows = []
    print(f"{'dtype':9} {'shape':>15} {'XLA copy TB/s':>14} {'XLA x.T TB/s':>13} {'TMA transpose TB/s':>19} "
          f"{'vs copy':>8} {'vs x.T':>7}")
    for dtype, shape in CASES:
        x = jax.random.normal(jax.random.key(0), shape, jnp.float32).astype(dtype)
        fns = [jax.jit(lambda x: -x), jax.jit(lambda x: x.T), jax.jit(tma_transpose.transpose)]
        assert bool((fns[2](x) == x.T).all()), "the TMA transpose is wrong"
        seconds = median_seconds_each(fns, x, batches=7)
        moved = 2 * x.size * x.dtype.itemsize
        copy, xla_t, tma = (moved / s / 1e12 for s in seconds)
        row = dict(dtype=jnp.dtype(dtype).name, shape=list(shape), xla_copy_tbs=copy, xla_transpose_tbs=xla_t,
                   tma_transpose_tbs=tma, ratio_vs_copy=tma / copy, ratio_vs_xla_transpose=tma / xla_t)
        rows.append(row)
        print(f"{row['dtype']:9} {str(shape):>15} {copy:14.2f} {xla_t:13.2f} {tma:19.2f} {tma / copy:8.3f} "
              f"{tma / xla_t:7.3f}")
    result = dict(device=str(jax.devices()[0].device_kind), jax=jax.__version__, rows=rows)
    if len(argv) > 1:
        pathlib.Path(argv[1]).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
