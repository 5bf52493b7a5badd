"""Writes tests/data/composed_cpu_cuda_v1.jax_export: the "composed" export
case (saxpy, bias_relu, sigmoid) with symbolic shapes (b, w), (w,), for CPU and
CUDA at once. The file is committed: the tests run it on CPU and, on the GPU
machine, on CUDA, which checks that an artifact made on one machine runs on
another and that the _v1 targets keep their meaning. Regenerate only with a
target version bump.

    python tests/python/transforms/make_export_artifact.py
"""

import os

from export_cases import CASES, arg_specs

import cutlax

if __name__ == "__main__":
    exp = cutlax.export.export(CASES["composed"][0], *arg_specs("composed"), platforms=("cpu", "cuda"))
    path = os.path.join(os.path.dirname(__file__), "..", "..", "data", "composed_cpu_cuda_v1.jax_export")
    with open(path, "wb") as f:
        f.write(exp.serialize())
    print(f"wrote {os.path.normpath(path)}: {os.path.getsize(path)} bytes")
