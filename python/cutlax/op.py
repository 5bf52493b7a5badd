"""``cutlax.Op``: the one object every cutlax op is called through.

An op is an FFI target, registered for CPU and CUDA under one name, plus the
rules that make it a JAX op. Built-in ops, the ops of a library loaded with
``cutlax.load_library`` and runtime-compiled kernels (``cutlax.jit``) are all
``Op``s, declared with the same hooks:

    op.def_checks(fn)     fn(*arrays, **attrs): raise TypeError/ValueError for bad input
    op.def_shape(rule)    rule(*arrays, **attrs) -> the results' jax.ShapeDtypeStructs
    op.def_jvp(rule)      rule(out, args, tangents, **attrs) -> the results' tangents
    op.def_vjp(rule)      rule(args, out, cotangents, **attrs) -> one cotangent per argument
    op.def_vmap(rule)     a cutlax.batching rule
    op.def_sharding(rule) a cutlax.sharding rule

A call ``op(*arrays, out=None, **attrs)`` runs, in this order:

1. argument checks: the number of arrays, each one's dtype against the
   signature the C++ launcher declares, the attributes' names and types, then
   the ``def_checks`` functions; every message starts with the op's name;
2. the shape/dtype rule (or ``out=``) gives the results;
3. derivatives: ``jax.custom_jvp`` or ``jax.custom_vjp`` around the rest;
4. batching: ``jax.custom_batching.custom_vmap`` with the batching rule;
5. sharding: on local shards wherever the operands are sharded (cutlax._sharding);
6. ``jax.ffi.ffi_call`` of the target, the only one in cutlax; scratch
   results (``Scratch<T>`` in C++) are dropped from what it returns.

Steps 3-6, the wrapper stack, depend only on the attributes and the result
types, which each step passes down explicitly: the call's own result types to
the kernel call on whole operands, and the shape rule's types on local
shards. So each op builds the stack once per (attributes, result types,
aliases) and keeps it (``Op._wrapped``); attributes are keyed by their bits,
so 0.0 and -0.0 are two stacks and a NaN is one.
"""

from __future__ import annotations

import collections
import dataclasses
import numbers
import threading
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from cutlax import _checks, _library, _sharding

# What an operand declared as "any" type (ffi::AnyBuffer) accepts.
_ANY_DTYPES = _checks.REAL_DTYPES + (jnp.bool_,)


@dataclasses.dataclass(frozen=True)
class Signature:
    """One op's interface, as its C++ declaration states it.

    ``arg_dtypes`` and ``result_dtypes`` hold a dtype name, several joined by
    "|", or "any"; ``scratch`` the indices of results the op does not return.
    ``variadic`` (a jit kernel's): any number of arrays and results, of any
    dtype, named x0, x1, ... and out0, out1, ...
    """

    name: str
    args: tuple[str, ...]
    results: tuple[str, ...]
    arg_dtypes: tuple[str, ...]
    result_dtypes: tuple[str, ...]
    attrs: dict[str, str]  # attribute name -> type name
    scratch: tuple[int, ...] = ()
    variadic: bool = False

    @classmethod
    def any_arrays(cls, name: str) -> "Signature":
        return cls(name, (), (), (), (), {}, variadic=True)

    def arg_names(self, count: int) -> tuple[tuple[str, str], ...]:
        """(name, dtype) of each of ``count`` arguments."""
        if self.variadic:
            return tuple((f"x{i}", "any") for i in range(count))
        return tuple(zip(self.args, self.arg_dtypes))

    def result_names(self, count: int) -> tuple[tuple[str, str], ...]:
        if self.variadic:
            return tuple((f"out{i}", "any") for i in range(count))
        return tuple(zip(self.results, self.result_dtypes))

    @classmethod
    def parse(cls, target: str, signature: str, types: str) -> "Signature":
        """From a table entry: ``signature`` is "name(arg, ...) -> result, ...",
        ``types`` is "in:...;out:...;attrs:name:type,...[;scratch:i,...]", read
        and checked as the extension reads every entry of a library's table
        (include/cutlax/library_reader.hpp); LibraryError says what is wrong."""
        return cls(**_library.parse_signature(target, signature, types))

    def describe(self) -> str:
        if self.variadic:
            return f"{self.name}(x0, x1, ...) -> out0, ..."
        attrs = "".join(f", {n}: {t}" for n, t in self.attrs.items())
        returned = [r for i, r in enumerate(self.results) if i not in self.scratch]
        return f"{self.name}({', '.join(self.args)}{attrs}) -> {', '.join(returned)}"


def _dtypes(spec: str) -> tuple:
    return _ANY_DTYPES if spec == "any" else tuple(jnp.dtype(d) for d in spec.split("|"))


def same_as(index: int = 0) -> Callable:
    """The shape rule of an op whose one result has the shape and dtype of
    operand ``index`` (elementwise ops)."""
    return lambda *args, **attrs: jax.ShapeDtypeStruct(args[index].shape, args[index].dtype)


class Op:
    """One op: an FFI target and its rules, callable like a JAX function.

    ``library`` prefixes the op's name in messages and reprs ("cutlax" for the
    built-in ops, the library's file name for a loaded library).
    """

    def __init__(self, target: str, signature: Signature, *, library: str, platforms=(),
                 name: str | None = None):
        self.target, self.signature, self.library = target, signature, library
        self.platforms = frozenset(platforms)
        self.name = name or f"{library}.{signature.name}"
        self._checks: list[Callable] = []
        self._shape_rule: Callable | None = None
        self._jvp: Callable | None = None
        self._vjp: Callable | None = None
        self._vmap: Callable | None = None
        self._sharding: _sharding.Rule | Callable[[dict], _sharding.Rule] | None = None
        # The wrapper stacks built so far, by _key (least recently used first).
        self._memo: collections.OrderedDict = collections.OrderedDict()
        self._memo_lock = threading.Lock()
        self.__doc__ = f"{signature.describe()}  [FFI target {target}; {', '.join(sorted(self.platforms))}]"

    def __repr__(self) -> str:
        return f"<cutlax op {self.library}.{self.signature.describe()}>"

    # The hooks. Each returns its argument, so it can be used as a decorator.

    def def_checks(self, fn: Callable) -> Callable:
        """Adds ``fn(*arrays, **attrs)``, run after the signature's own checks;
        it raises TypeError or ValueError, and the op's name is put in front
        of the message."""
        self._checks.append(fn)
        return fn

    def def_shape(self, rule: Callable) -> Callable:
        """Declares ``rule(*arrays, **attrs) -> ShapeDtypeStruct`` (or a tuple
        of them, one per result, scratch results included), so calls may
        leave out ``out=``; batching and sharding rules need it."""
        self._shape_rule = rule
        return rule

    def def_jvp(self, rule: Callable) -> Callable:
        """Forward mode: ``rule(out, args, tangents, **attrs)`` returns the
        tangents of the results, linear in ``tangents``. JAX transposes it for
        reverse mode, so grad works too (a backward kernel can enter as the
        transpose of a linear map: cutlax._autodiff.TangentMap)."""
        if self._vjp is not None:
            raise self._error(TypeError, "already has a vjp rule: declare def_jvp or def_vjp, not both")
        self._jvp = rule
        self._forget_wrappers()
        return rule

    def def_vjp(self, rule: Callable) -> Callable:
        """Reverse mode: ``rule(args, out, cotangents, **attrs)`` returns one
        cotangent per argument (None for zero); it may call cutlax ops,
        including this one. jax.grad and jax.vjp work; forward mode does not."""
        if self._jvp is not None:
            raise self._error(TypeError, "already has a jvp rule: declare def_jvp or def_vjp, not both")
        self._vjp = rule
        self._forget_wrappers()
        return rule

    def def_vmap(self, rule: Callable) -> Callable:
        """Declares how the op runs under jax.vmap (a cutlax.batching rule)."""
        self._vmap = rule
        self._forget_wrappers()
        return rule

    def def_sharding(self, rule: _sharding.Rule | Callable[[dict], _sharding.Rule]) -> _sharding.Rule:
        """Declares how the op splits over a mesh (a cutlax.sharding rule, or
        a function of the op's attributes that returns one), so it runs on
        local shards under jax.jit over sharded inputs. Each shard's result
        shape comes from the shape rule, which must be declared first."""
        if self._shape_rule is None:
            raise self._error(TypeError, "a sharding rule needs a shape rule: declare it with .def_shape first")
        self._sharding = rule
        self._forget_wrappers()
        return rule

    def _error(self, kind, text):
        return kind(f"{self.name}: {text}")

    def _forget_wrappers(self) -> None:
        """Drops the memoized wrapper stacks: a hook changed what they hold."""
        with self._memo_lock:
            self._memo.clear()

    # The call chain, in the order of the module docstring.

    def __call__(self, *args, out=None, input_output_aliases=None, **attrs):
        """``input_output_aliases`` ({operand index: result index}) lets a
        result reuse an operand's buffer, as in ``jax.ffi.ffi_call``."""
        with _checks.errors(self.name):
            arrays = self._arrays(args)
            attrs = self._attrs(attrs)
            for check in self._checks:
                check(*arrays, **attrs)
            outs = self._results(arrays, attrs, out)
        return self._wrapped(attrs, outs, input_output_aliases)(*arrays)

    def _arrays(self, args) -> list[jax.Array]:
        sig = self.signature
        if not sig.variadic and len(args) != len(sig.args):
            raise TypeError(f"takes {len(sig.args)} array arguments ({', '.join(sig.args)}), got {len(args)}")
        return [_checks.array(name, value, dtypes=_dtypes(dtype))
                for (name, dtype), value in zip(sig.arg_names(len(args)), args)]

    def _attrs(self, attrs) -> dict:
        sig = self.signature
        missing = [n for n in sig.attrs if n not in attrs]
        if missing:
            raise TypeError(f"missing attribute {missing[0]!r} ({sig.attrs[missing[0]]})")
        extra = [n for n in attrs if n not in sig.attrs]
        if extra:
            known = ", ".join(sig.attrs) or "none"
            raise TypeError(f"got an unexpected attribute {extra[0]!r} (its attributes: {known})")
        converted = {}
        for name, value in attrs.items():
            kind = sig.attrs[name]
            if isinstance(value, jax.Array):  # traced values are jax.Arrays too
                raise TypeError(f"attribute {name!r} must be a static Python or NumPy value ({kind}), "
                                "not a JAX array: attributes are compiled into the program")
            ok = (isinstance(value, (bool, np.bool_)) if kind == "bool" else
                  isinstance(value, numbers.Integral) and not isinstance(value, bool) if kind.startswith("int") else
                  isinstance(value, numbers.Real) and not isinstance(value, bool))
            if not ok:
                raise TypeError(f"attribute {name!r} must be {kind}, got {value!r}")
            converted[name] = np.dtype(kind).type(value)  # the NumPy scalar it is sent as
        return converted

    def _results(self, arrays, attrs, out) -> list[jax.ShapeDtypeStruct]:
        sig = self.signature
        if out is None:
            if self._shape_rule is None:
                raise TypeError(f"needs out=: the result's jax.ShapeDtypeStruct ({', '.join(sig.results)}), "
                                "or a shape rule declared with .def_shape")
            out = self._shape_rule(*arrays, **attrs)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        if not sig.variadic and len(outs) != len(sig.results):
            raise ValueError(f"has {len(sig.results)} results ({', '.join(sig.results)}); out= gives {len(outs)}")
        for (name, dtype), o in zip(sig.result_names(len(outs)), outs):
            if not hasattr(o, "shape") or not hasattr(o, "dtype"):
                raise TypeError(f"out= for {name} must be a jax.ShapeDtypeStruct, got {o!r}")
            if jnp.dtype(o.dtype) not in _dtypes(dtype):
                raise TypeError(f"result {name} has dtype {dtype}; out= says {jnp.dtype(o.dtype).name}")
        return outs

    def _kernel_attrs(self, operands, results, attrs) -> dict:
        """The attributes the FFI call sends for ``operands`` and the
        ``results``' types: the caller's. (A jit kernel adds its CUBIN and
        launch program, cutlax/jit.py.)"""
        return attrs

    def _lower(self, call: Callable) -> Callable:
        """The FFI call as lowered for every platform (a jit kernel with a
        jax.numpy version puts it on CPU, cutlax/jit.py)."""
        return call

    def _wrapped(self, attrs, outs, aliases) -> Callable:
        """The wrapper stack (steps 3-6) for ``attrs``, the result types
        ``outs`` and ``aliases``: built on the first call with them, then
        reused (the most recent _MEMO_SIZE per op). A result shape with a
        symbolic dimension (jax.export) is built afresh each time."""
        key = _key(attrs, outs, aliases)
        if key is None:
            return self._build(attrs, outs, aliases)
        with self._memo_lock:
            fn = self._memo.get(key)
            if fn is not None:
                self._memo.move_to_end(key)
                return fn
        fn = self._build(attrs, outs, aliases)
        with self._memo_lock:
            fn = self._memo.setdefault(key, fn)
            while len(self._memo) > _MEMO_SIZE:
                self._memo.popitem(last=False)
        return fn

    def _build(self, attrs, outs, aliases) -> Callable:
        """Steps 3-6 for these attributes and result types: the kernel call
        on whole operands returns ``outs``; on local shards, what the shape
        rule gives for them."""
        def whole(*operands):
            return self._ffi_call(attrs, outs, aliases)(*operands)

        call = whole if self._sharding is None else self._sharded(whole, attrs, aliases)
        call = self._batchable(call, attrs, outs, aliases)
        return self._differentiable(call, attrs)

    def _ffi_call(self, attrs, results, aliases) -> Callable:
        """The kernel call on operands whose results have the shapes and
        dtypes of ``results`` (their other type information, such as the
        mesh axes they vary over, comes from the operands)."""
        returned = [i for i in range(len(results)) if i not in self.signature.scratch]

        def call(*operands):
            types = [_sharding.result_type(o.shape, o.dtype, *operands) for o in results]
            out = jax.ffi.ffi_call(self.target, types, input_output_aliases=aliases)(
                *operands, **self._kernel_attrs(operands, results, attrs))
            kept = [out[i] for i in returned]
            return kept[0] if len(kept) == 1 else tuple(kept)

        return self._lower(call)

    def _sharded(self, whole, attrs, aliases) -> Callable:
        """``whole`` on whole operands; on local shards, the kernel call with
        the shape rule's result types for the shards."""
        def local(*shards):
            return self._ffi_call(attrs, self._results(shards, attrs, None), aliases)(*shards)

        def sharded(*arrays):
            rule = self._sharding if isinstance(self._sharding, _sharding.Rule) else self._sharding(attrs)
            return _sharding.run(local, arrays, rule, whole=whole)

        return sharded

    def _batchable(self, call, attrs, outs, aliases) -> Callable:
        """``call`` with the batching rule; vmap never reaches ffi_call itself."""
        batchable = jax.custom_batching.custom_vmap(call)

        @batchable.def_vmap
        def _rule(axis_size, in_batched, *operands):
            if self._vmap is None:
                raise self._error(NotImplementedError, "has no batching rule: declare one with .def_vmap "
                                                       "(cutlax.batching.BROADCAST, SEQUENTIAL, ...)")
            # The shapes of the operands of one batch element (the batch is
            # a batched operand's leading axis): those whose results are outs.
            element = [a.shape[1:] if b else a.shape for a, b in zip(operands, in_batched)]

            def again(*args):  # this op, same attributes, on other operands
                same = [a.shape for a in args] == element
                return self(*args, out=outs if same else None, input_output_aliases=aliases, **attrs)

            again.attrs = dict(attrs)  # for rules that depend on them (cutlax.batching)
            return self._vmap(again, axis_size, in_batched, *operands)

        return batchable

    def _differentiable(self, call, attrs) -> Callable:
        if self._jvp is not None:
            fn = jax.custom_jvp(call)

            @fn.defjvp
            def _jvp(args, tangents):
                out = fn(*args)
                return out, self._jvp(out, args, tangents, **attrs)

            return fn
        if self._vjp is not None:
            fn = jax.custom_vjp(call)

            def forward(*args):
                out = call(*args)
                return out, (args, out)

            def backward(residuals, cotangents):
                args, out = residuals
                return tuple(self._vjp(args, out, cotangents, **attrs))

            fn.defvjp(forward, backward)
            return fn
        return call


# Wrapper stacks kept per op: eager calls over many shapes build one each.
_MEMO_SIZE = 256


def _frozen(value):
    """A hashable stand-in for an attribute value that tells apart what the
    kernel would: NumPy values by dtype and bits (0.0 and -0.0 differ, NaN
    equals itself), arrays also by shape."""
    if isinstance(value, (np.ndarray, np.generic)):
        value = np.asarray(value)
        return ("numpy", value.dtype, value.shape, value.tobytes())
    if isinstance(value, float):
        return ("float", np.float64(value).tobytes())
    if isinstance(value, (tuple, list)):
        return (type(value).__name__,) + tuple(_frozen(v) for v in value)
    hash(value)  # anything else as it is, if it is hashable (else TypeError)
    return (type(value).__name__, value)


def _key(attrs: dict, outs, aliases):
    """The memo key of a wrapper stack, or None (not memoized) when a result
    shape has a symbolic dimension, whose comparisons may be inconclusive,
    or an attribute has no hashable stand-in."""
    shapes = []
    for o in outs:
        if not all(isinstance(d, (int, np.integer)) for d in o.shape):
            return None
        shapes.append((tuple(int(d) for d in o.shape), jnp.dtype(o.dtype)))
    try:
        frozen = tuple(sorted((name, _frozen(v)) for name, v in attrs.items()))
    except TypeError:
        return None
    return frozen, tuple(shapes), None if aliases is None else tuple(sorted(aliases.items()))


__all__ = ["Op", "Signature", "same_as"]
