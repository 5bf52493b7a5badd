"""``python -m cutlax doctor``: what this installation can do, or why it cannot."""

from __future__ import annotations

import sys


def older(version: str, than: str) -> bool:
    def parts(v):
        return tuple(int(p) for p in v.split(".")[:3] if p.isdigit())

    return parts(version) < parts(than)


def main(argv=None) -> int:
    import jax
    import jaxlib

    print(f"jax {jax.__version__}, jaxlib {jaxlib.__version__}, python {sys.version.split()[0]}")
    try:
        import cutlax
        from cutlax import _cutlax
        from cutlax._library import registered_targets
    except Exception as e:  # the one place a broad catch is the point
        print(f"error: the cutlax extension cannot load: {type(e).__name__}: {e}", file=sys.stderr)
        print("  Rebuild it against this jaxlib: pip install --no-build-isolation --force-reinstall .",
              file=sys.stderr)
        return 1
    info, cuda = _cutlax.build_info(), _cutlax.cuda_status()
    print(f"cutlax {cutlax.__version__}: built with XLA FFI API {info['xla_ffi_api']} (jaxlib "
          f"{info['jaxlib_headers']}'s headers; runs on that jaxlib and newer), CUTLASS {info['cutlass']}")
    jaxlib_too_old = older(jaxlib.__version__, info["jaxlib_headers"])
    if jaxlib_too_old:
        print(f"  error: this jaxlib {jaxlib.__version__} is older than the headers cutlax was built with "
              f"({info['jaxlib_headers']}); XLA will refuse its handlers. Upgrade jaxlib or rebuild cutlax.")
    if info["cuda"]:
        print(f"  CUDA kernels: yes, for {info['cuda_architectures']}, CUDA runtime {info['cuda_runtime_built']}")
    else:
        print("  CUDA kernels: no (built without nvcc); CPU twins only")
    print(f"  CUDA driver: {cuda['driver']}; CUDA devices: {cuda['devices']}")
    print(f"  cutlax.jit: NVRTC {cuda['nvrtc']}; kernels compile for {cutlax.jit.arch()}; "
          f"cache {cutlax.jit.cache_info()['directory']}")
    try:
        print(f"    include path: {' '.join(cutlax.jit.include_dirs())}")
    except RuntimeError as e:
        print(f"    include path: {e}")
    targets = registered_targets()
    platforms = sorted({p for ps in targets.values() for p in ps})
    print(f"  FFI targets: {len(targets)} registered, handlers for platforms: {', '.join(platforms)}")
    for name in sorted(targets):
        print(f"    {name}: {', '.join(sorted(targets[name]))}")
    try:
        gpus = jax.devices("gpu")
    except RuntimeError:
        gpus = []
    print(f"  JAX devices: {', '.join(str(d) for d in jax.devices())}")
    print(f"  GPUs seen by JAX: {len(gpus)}" + (f" ({gpus[0].device_kind})" if gpus else ""))
    return 1 if jaxlib_too_old else 0
