"""Runs serialized cutlax artifacts in a fresh process that imports only jax,
numpy and cutlax, and compares each with a jax.numpy reference.

    python run_exported.py DIR NAME...   (DIR/NAME.bin, shapes in DIR/NAME.json)

Prints one JSON line per run: {"name", "shapes", "error"}; exits 1 on failure.
"""

import json
import sys

import jax
import jax.numpy as jnp
import numpy as np

import cutlax  # noqa: F401  (registers the handlers the artifacts call)

REFERENCES = {
    "vector_add": lambda a, b: a + b,
    "saxpy_static": lambda x, y: 2.5 * x + y,
    "saxpy_dynamic": lambda a, x, y: a * x + y,
    "relu": jax.nn.relu,
    "bias_relu": lambda x, b: jax.nn.relu(x + b),
    "bias_relu_static_width": lambda x, b: jax.nn.relu(x + b),
    "gemm": lambda a, b: jnp.matmul(a, b, precision="highest"),
    "composed": lambda x, b: jax.nn.sigmoid(jax.nn.relu(2.0 * x + x + b)),
}


def main(directory, names):
    rng = np.random.default_rng(0)
    ok = True
    for name in names:
        exported = jax.export.deserialize(open(f"{directory}/{name}.bin", "rb").read())
        for shapes in json.load(open(f"{directory}/{name}.json")):
            args = [jnp.asarray(rng.standard_normal(s), jnp.float32) for s in shapes]
            out, ref = exported.call(*args), REFERENCES[name](*args)
            err = float(jnp.linalg.norm(out - ref) / max(float(jnp.linalg.norm(ref)), 1e-30))
            ok &= out.shape == ref.shape and err < 1e-5
            print(json.dumps({"name": name, "shapes": shapes, "shape": list(out.shape), "error": err}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
