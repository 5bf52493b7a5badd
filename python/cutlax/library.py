"""Op libraries: ``cutlax.load_library(path)``.

A library built with ``cutlax_add_op_library`` (CMake, docs/tutorial.md)
declares its ops with ``CUTLAX_OP(target, launcher, "name(arg, ...) ->
result, ...")``. Loading it registers every handler with JAX (CPU and CUDA)
and gives one ``cutlax.Op`` per op name:

    lib = cutlax.load_library("build/librms_norm.so")
    y = lib.rms_norm(x, w, out=jax.ShapeDtypeStruct(x.shape, x.dtype), eps=1e-6)

Arguments, attribute names and types, and result dtypes come from the
library's table, so a wrong call fails in Python at trace time, before XLA;
``def_shape``, ``def_checks``, ``def_jvp``/``def_vjp``, ``def_vmap`` and
``def_sharding`` give an op everything a built-in op has. The built-in ops
are read from the extension's own table the same way (``builtin``).
"""

from __future__ import annotations

import os

from cutlax import _library
from cutlax._library import LibraryError
from cutlax.op import Op, Signature


class OpLibrary:
    """The ops of one loaded library, as attributes named after their signatures."""

    def __init__(self, path: str, ops: dict[str, Op]):
        self.path, self._ops = path, ops

    def __getattr__(self, name: str) -> Op:
        try:
            return self.__dict__["_ops"][name]
        except KeyError:
            raise AttributeError(f"{os.path.basename(self.path)} has no op {name!r}; "
                                 f"its ops: {', '.join(sorted(self._ops))}") from None

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._ops))

    @property
    def ops(self) -> dict[str, Op]:
        return dict(self._ops)

    def __repr__(self) -> str:
        return f"<cutlax library {self.path}: {', '.join(sorted(self._ops))}>"


_libraries: dict[str, OpLibrary] = {}


def load_library(path: str | os.PathLike) -> OpLibrary:
    """Loads a cutlax op library, registers its handlers with JAX, and returns
    its ops. Loading the same file again returns the same object; a library
    whose targets another library already registered is refused
    (``LibraryError``), as is a file that is not a cutlax library."""
    path = os.path.realpath(os.fspath(path))
    if path in _libraries:
        return _libraries[path]
    targets, entries = _library.register_library(path)
    lib_name = os.path.basename(path).split(".")[0].removeprefix("lib").removeprefix("_")
    ops: dict[str, Op] = {}
    seen: dict[str, Signature] = {}
    for entry in entries:
        target, sig = entry.target, Signature(**entry.fields)
        if target in seen and seen[target] != sig:
            raise LibraryError(f"{target}: its CPU and CUDA launchers declare different signatures: "
                               f"{seen[target].describe()} and {sig.describe()}")
        seen[target] = sig
        if sig.name in ops and ops[sig.name].target != target:
            raise LibraryError(f"{path}: op name {sig.name!r} is declared for two targets, "
                               f"{ops[sig.name].target} and {target}")
        ops[sig.name] = Op(target, sig, library=lib_name, platforms=targets[target])
    library = OpLibrary(path, ops)
    _libraries[path] = library
    return library


def builtin_library() -> OpLibrary:
    """The built-in ops as the extension's table declares them: the same
    ``Op`` objects that cutlax.relu and friends are or call."""
    from cutlax import _cutlax

    return load_library(_cutlax.__file__)


def builtin(name: str, *, public_name: str | None = None, doc: str | None = None) -> Op:
    """The built-in op ``name`` from the table, for its declaration in
    cutlax/ops/ (``public_name``: the name its messages carry, when a public
    function stands in front of it, as saxpy does of saxpy_dynamic)."""
    op = getattr(builtin_library(), name)
    if public_name is not None:
        op.name = public_name
    if doc is not None:
        op.__doc__ = f"{doc}\n\n{op.__doc__}"
    return op


__all__ = ["LibraryError", "Op", "OpLibrary", "Signature", "builtin", "builtin_library", "load_library"]
