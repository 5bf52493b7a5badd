"""User op libraries: ``cutlax.load_library(path)``.

A library built with ``cutlax_add_op_library`` (CMake, docs/tutorial.md)
declares its ops with ``CUTLAX_OP(target, launcher, "name(arg, ...) ->
result, ...")``. Loading it registers every handler with JAX (CPU and CUDA)
and gives one callable per op name:

    lib = cutlax.load_library("build/librms_norm.so")
    y = lib.rms_norm(x, w, out=jax.ShapeDtypeStruct(x.shape, x.dtype), eps=1e-6)

Arguments, attribute names and types, and result dtypes come from the
library's table, so a wrong call fails in Python at trace time, before XLA.
"""

from __future__ import annotations

import dataclasses
import numbers
import os
import re
from typing import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from cutlax import _checks, _library, _sharding
from cutlax._autodiff import broadcast_batch
from cutlax._library import LibraryError

# Attribute types a launcher may declare, and the NumPy scalar each is sent as.
_ATTR_TYPES = {"float32": np.float32, "float64": np.float64, "int32": np.int32,
               "int64": np.int64, "bool": np.bool_}


@dataclasses.dataclass(frozen=True)
class Signature:
    """One op's interface, as its CUTLAX_OP line declares it."""

    name: str
    args: tuple[str, ...]
    results: tuple[str, ...]
    arg_dtypes: tuple[str, ...]  # a dtype name, or "any"
    result_dtypes: tuple[str, ...]
    attrs: dict[str, str]  # attribute name -> type name

    @classmethod
    def parse(cls, target: str, signature: str, types: str) -> "Signature":
        m = re.fullmatch(r"\s*(\w+)\s*\(([^)]*)\)\s*->\s*(.*\S)\s*", signature)
        fields = dict(part.split(":", 1) for part in types.split(";"))
        if not m or set(fields) != {"in", "out", "attrs"}:
            raise LibraryError(f"{target}: cannot read its signature {signature!r} ({types!r}); "
                               "expected \"name(arg, ...) -> result, ...\"")
        split = lambda text: tuple(t.strip() for t in text.split(",") if t.strip())  # noqa: E731
        args, results = split(m.group(2)), split(m.group(3))
        arg_dtypes, result_dtypes = split(fields["in"]), split(fields["out"])
        if len(args) != len(arg_dtypes) or len(results) != len(result_dtypes):
            raise LibraryError(
                f"{target}: its signature {signature!r} names {len(args)} arguments and "
                f"{len(results)} results, but its launcher takes {len(arg_dtypes)} and {len(result_dtypes)}")
        attrs = dict(a.split(":") for a in split(fields["attrs"]))
        unknown = {t for t in attrs.values() if t not in _ATTR_TYPES}
        if unknown:
            raise LibraryError(f"{target}: attributes of type {', '.join(sorted(unknown))} are not supported")
        return cls(m.group(1), args, results, arg_dtypes, result_dtypes, attrs)

    def describe(self) -> str:
        attrs = "".join(f", {n}: {t}" for n, t in self.attrs.items())
        return f"{self.name}({', '.join(self.args)}{attrs}) -> {', '.join(self.results)}"


class LibraryOp:
    """One op of a loaded library, callable like a JAX function."""

    def __init__(self, library: str, target: str, platforms: set[str], signature: Signature):
        self.library, self.target, self.platforms, self.signature = library, target, platforms, signature
        self._shape_rule: Callable | None = None
        self._vmap_method: str | None = None
        self._sharding: _sharding.Rule | None = None
        self.__doc__ = f"{signature.describe()}  [FFI target {target}; {', '.join(sorted(platforms))}]"

    def __repr__(self) -> str:
        return f"<cutlax op {self.library}.{self.signature.describe()}>"

    def def_shape(self, rule: Callable) -> Callable:
        """Declares ``rule(*args, **attrs) -> ShapeDtypeStruct`` (or a tuple of
        them, one per result), so calls may leave out ``out=``. Usable as a decorator."""
        self._shape_rule = rule
        return rule

    def def_rules(self, *, vmap_method: str | None = None, sharding: _sharding.Rule | None = None) -> "LibraryOp":
        """Opts in to the helpers the built-in ops use: ``vmap_method`` as in
        ``jax.ffi.ffi_call`` ("broadcast_all", "expand_dims", "sequential"),
        and a ``cutlax.sharding`` rule for sharded inputs under jit. A
        sharded call computes each shard's result shape, so a sharding rule
        needs a shape rule (``def_shape``) first."""
        if sharding is not None and self._shape_rule is None:
            raise self._error(TypeError, "a sharding rule needs a shape rule: declare it with .def_shape first")
        self._vmap_method, self._sharding = vmap_method, sharding
        return self

    def _error(self, kind, text):
        return kind(f"{self.library}.{self.signature.name}: {text}")

    def _arrays(self, args) -> list[jax.Array]:
        sig = self.signature
        if len(args) != len(sig.args):
            raise self._error(TypeError, f"takes {len(sig.args)} array arguments ({', '.join(sig.args)}), "
                                         f"got {len(args)}")
        arrays = []
        for name, dtype, value in zip(sig.args, sig.arg_dtypes, args):
            dtypes = _checks.REAL_DTYPES + (jnp.bool_,) if dtype == "any" else (jnp.dtype(dtype),)
            arrays.append(_checks.array(f"{self.library}.{sig.name}", name, value, dtypes=dtypes))
        return arrays

    def _attrs(self, attrs) -> dict:
        sig = self.signature
        missing = [n for n in sig.attrs if n not in attrs]
        if missing:
            raise self._error(TypeError, f"missing attribute {missing[0]!r} ({sig.attrs[missing[0]]})")
        extra = [n for n in attrs if n not in sig.attrs]
        if extra:
            known = ", ".join(sig.attrs) or "none"
            raise self._error(TypeError, f"got an unexpected attribute {extra[0]!r} (its attributes: {known})")
        converted = {}
        for name, value in attrs.items():
            kind = sig.attrs[name]
            if isinstance(value, jax.Array):  # traced values are jax.Arrays too
                raise self._error(TypeError, f"attribute {name!r} must be a static Python or NumPy value "
                                             f"({kind}), not a JAX array: attributes are compiled into the program")
            ok = (isinstance(value, (bool, np.bool_)) if kind == "bool" else
                  isinstance(value, numbers.Integral) and not isinstance(value, bool) if kind.startswith("int") else
                  isinstance(value, numbers.Real) and not isinstance(value, bool))
            if not ok:
                raise self._error(TypeError, f"attribute {name!r} must be {kind}, got {value!r}")
            converted[name] = _ATTR_TYPES[kind](value)
        return converted

    def _results(self, arrays, attrs, out) -> list[jax.ShapeDtypeStruct]:
        sig = self.signature
        if out is None:
            if self._shape_rule is None:
                raise self._error(TypeError, "needs out=: the result's jax.ShapeDtypeStruct "
                                             f"({', '.join(sig.results)}), or a shape rule declared "
                                             f"with .def_shape")
            out = self._shape_rule(*arrays, **attrs)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        if len(outs) != len(sig.results):
            raise self._error(ValueError, f"has {len(sig.results)} results ({', '.join(sig.results)}); "
                                          f"out= gives {len(outs)}")
        for name, dtype, o in zip(sig.results, sig.result_dtypes, outs):
            if not hasattr(o, "shape") or not hasattr(o, "dtype"):
                raise self._error(TypeError, f"out= for {name} must be a jax.ShapeDtypeStruct, got {o!r}")
            if dtype != "any" and jnp.dtype(o.dtype) != jnp.dtype(dtype):
                raise self._error(TypeError, f"result {name} has dtype {dtype}; out= says {jnp.dtype(o.dtype).name}")
        return outs

    def __call__(self, *args, out=None, **attrs):
        arrays = self._arrays(args)
        attrs = self._attrs(attrs)
        outs = self._results(arrays, attrs, out)
        single = len(outs) == 1

        def call(*arrays):
            # On shards (a sharding rule), the shape rule gives the shard's result.
            local = outs if self._sharding is None else self._results(arrays, attrs, None)
            types = [_checks.result(o.shape, o.dtype, *arrays) for o in local]
            results = jax.ffi.ffi_call(self.target, types, vmap_method=self._vmap_method)(*arrays, **attrs)
            return results[0] if single else tuple(results)

        if self._sharding is None:
            return call(*arrays)
        return self._batchable(lambda *a: _sharding.run(call, a, self._sharding))(*arrays)

    def _batchable(self, fn):
        """``fn`` with ``vmap_method``'s meaning kept: the sharding wrapper
        (custom_partitioning) has no batching rule of its own."""
        batchable = jax.custom_batching.custom_vmap(fn)

        @batchable.def_vmap
        def _rule(axis_size, in_batched, *args):
            if self._vmap_method == "sequential":
                out = jax.lax.map(lambda xs: batchable(*xs), tuple(broadcast_batch(axis_size, in_batched, args)))
            elif self._vmap_method == "broadcast_all":
                out = batchable(*broadcast_batch(axis_size, in_batched, args))
            else:
                raise self._error(NotImplementedError, f"cannot be batched with vmap_method={self._vmap_method!r} "
                                                       "and a sharding rule; use \"sequential\" or \"broadcast_all\"")
            return out, jax.tree.map(lambda _: True, out)

        return batchable


class OpLibrary:
    """The ops of one loaded library, as attributes named after their signatures."""

    def __init__(self, path: str, ops: dict[str, LibraryOp]):
        self.path, self._ops = path, ops

    def __getattr__(self, name: str) -> LibraryOp:
        try:
            return self.__dict__["_ops"][name]
        except KeyError:
            raise AttributeError(f"{os.path.basename(self.path)} has no op {name!r}; "
                                 f"its ops: {', '.join(sorted(self._ops))}") from None

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._ops))

    @property
    def ops(self) -> dict[str, LibraryOp]:
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
    ops: dict[str, LibraryOp] = {}
    seen: dict[str, Signature] = {}
    for target, _platform, signature, types, _ in entries:
        sig = Signature.parse(target, signature, types)
        if target in seen and seen[target] != sig:
            raise LibraryError(f"{target}: its CPU and CUDA launchers declare different signatures: "
                               f"{seen[target].describe()} and {sig.describe()}")
        seen[target] = sig
        if sig.name in ops and ops[sig.name].target != target:
            raise LibraryError(f"{path}: op name {sig.name!r} is declared for two targets, "
                               f"{ops[sig.name].target} and {target}")
        ops[sig.name] = LibraryOp(lib_name, target, targets[target], sig)
    library = OpLibrary(path, ops)
    _libraries[path] = library
    return library


def builtin_library() -> OpLibrary:
    """The built-in ops' raw FFI targets as library ops (what cutlax.relu and
    friends call underneath, without their checks, batching and derivatives)."""
    from cutlax import _cutlax

    return load_library(_cutlax.__file__)


__all__ = ["LibraryError", "LibraryOp", "OpLibrary", "Signature", "builtin_library", "load_library"]
