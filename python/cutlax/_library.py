"""Op libraries: reading a library's handler table and registering it with JAX.

Every cutlax library, the built-in ``_cutlax`` extension included, exports the
C function ``cutlax_library_handlers`` (``CUTLAX_LIBRARY()`` in
``include/cutlax/registry.hpp``). It returns a table of (FFI target name,
platform, signature, types, handler) entries, which the extension reads and
checks (``include/cutlax/library_reader.hpp``: nothing in a library the user
names is trusted): this module hands the handlers to
``jax.ffi.register_ffi_target`` and keeps each op's signature for
``cutlax.load_library``. One path serves built-in and user ops alike.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import NamedTuple

import jax

from cutlax import _cutlax


class LibraryError(RuntimeError):
    """A file could not be loaded as a cutlax op library."""


_lock = threading.Lock()
# target name -> set of platforms with a registered handler
_registered: dict[str, set[str]] = {}
# keeps each loaded library mapped for the life of the process
_loaded: dict[str, ctypes.CDLL] = {}


class Entry(NamedTuple):
    """One handler of a library's table, as the extension read and checked it
    (include/cutlax/library_reader.hpp)."""

    target: str
    platform: str  # "cpu" or "CUDA"
    signature: str  # "name(arg, ...) -> result, ...", as the table has it
    fields: dict  # the signature and types read: cutlax.Signature's fields, by keyword
    handler: int  # the XLA_FFI_Handler's address


def abi_version() -> int:
    """The table layout this cutlax reads: CUTLAX_LIBRARY_ABI_VERSION
    (include/cutlax/registry.hpp), as the extension was built with it."""
    return _cutlax.build_info()["library_abi"]


def _read_table(path: str) -> tuple[ctypes.CDLL, list[Entry]]:
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise LibraryError(f"cannot load {path!r} as a shared library: {e}") from e
    try:
        get_table = lib.cutlax_library_handlers
    except AttributeError:
        raise LibraryError(
            f"{path!r} is not a cutlax op library: it does not export "
            "cutlax_library_handlers (declare CUTLAX_LIBRARY() in one source file)"
        ) from None
    get_table.argtypes, get_table.restype = [], ctypes.c_void_p
    table = get_table() or 0  # its address; the extension reads and checks it
    return lib, [Entry(*e) for e in _reading(_cutlax.read_library_table, table, repr(path))]


def parse_signature(target: str, signature: str, types: str) -> dict:
    """cutlax.Signature's fields from one table entry's signature and types
    text, read as ``_read_table`` reads every entry's."""
    return _reading(_cutlax.parse_signature, target, signature, types)


def _reading(read, *args):
    """``read(*args)``, one of the extension's table readers, whose ValueError
    is the library's fault: a LibraryError with the reader's message."""
    try:
        return read(*args)
    except ValueError as e:
        raise LibraryError(str(e)) from None


def register_library(path: str) -> tuple[dict[str, set[str]], list[Entry]]:
    """Registers every handler of the library at ``path`` with JAX.

    Returns {target name: platforms} for this library, and its table entries.
    Registering the same file twice is a no-op; two libraries defining one
    target is an error.
    """
    path = os.path.realpath(path)
    with _lock:
        lib, entries = _read_table(path)
        targets: dict[str, set[str]] = {}
        for target, platform, *_ in entries:
            targets.setdefault(target, set()).add(platform)
        if path in _loaded:
            return targets, entries
        clashes = sorted(t for t in targets if t in _registered)
        if clashes:
            raise LibraryError(
                f"{path!r} defines FFI targets that are already registered: "
                f"{', '.join(clashes)}"
            )
        for target, platform, _, _, handler in entries:
            jax.ffi.register_ffi_target(
                target, jax.ffi.pycapsule(handler), platform=platform
            )
        _loaded[path] = lib
        for target, platforms in targets.items():
            _registered.setdefault(target, set()).update(platforms)
        return targets, entries


def register_target(target: str, handlers: dict) -> None:
    """Registers one FFI target from {platform: handler}, where a handler is a
    capsule or a {stage: capsule} dict (``jax.ffi.register_ffi_target``'s
    forms), and records it as cutlax's, as ``register_library`` does."""
    with _lock:
        if target in _registered:
            return
        for platform, handler in handlers.items():
            jax.ffi.register_ffi_target(target, handler, platform=platform)
        _registered[target] = set(handlers)


def registered_targets() -> dict[str, set[str]]:
    """Every FFI target cutlax has registered in this process, with platforms."""
    with _lock:
        return {t: set(p) for t, p in _registered.items()}
