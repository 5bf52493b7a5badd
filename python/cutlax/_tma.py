"""TMA descriptors for ``cutlax.jit`` kernels: ``cutlax.jit.tma(array, box, ...)``
asks the runtime for a ``CUtensorMap`` over one of the kernel's arrays, encoded
at every launch from the real buffer (so exports with symbolic shapes get the
right descriptor at each size) and passed by value after the arrays' Tensor
parameters. The record format is src/jit/tma.hpp's; the checks here are the
ones the sizes known at trace time allow, the handler repeats them all."""

from __future__ import annotations

import dataclasses

import numpy as np

_MAX_RANK = 5
_MAX_BOX = 256
_SWIZZLES = (0, 32, 64, 128)
_INTERLEAVES = (0, 16, 32)
_L2_PROMOTIONS = (0, 64, 128, 256)
_OOB_FILLS = ("zero", "nan")
_FLOATS = ("float16", "bfloat16", "float32", "float64")


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _one_of(name: str, value, allowed):
    if value not in allowed or (not isinstance(value, str) and not _is_int(value)):
        raise ValueError(f"cutlax.jit.tma: {name} is {value!r}; it must be one of "
                         f"{', '.join(map(repr, allowed))}")
    return value


@dataclasses.dataclass(frozen=True)
class Tma:
    """One TMA descriptor request (see ``tma``)."""

    array: int
    box: tuple[int, ...]
    swizzle: int = 0
    interleave: int = 0
    l2_promotion: int = 128
    oob_fill: str = "zero"

    def __post_init__(self):
        if not _is_int(self.array) or self.array < 0:
            raise TypeError(f"cutlax.jit.tma: array must be an array index >= 0 (inputs, then outputs), "
                            f"got {self.array!r}")
        box = tuple(self.box) if isinstance(self.box, (tuple, list)) else (self.box,)
        if not 1 <= len(box) <= _MAX_RANK:
            raise ValueError(f"cutlax.jit.tma: box has {len(box)} extents; TMA takes 1 to {_MAX_RANK}")
        for axis, extent in enumerate(box):
            if not _is_int(extent) or not 1 <= extent <= _MAX_BOX:
                raise ValueError(f"cutlax.jit.tma: box[{axis}] is {extent!r}; it must be an integer "
                                 f"from 1 to {_MAX_BOX}")
        object.__setattr__(self, "box", tuple(int(b) for b in box))
        _one_of("swizzle", self.swizzle, _SWIZZLES)
        _one_of("interleave", self.interleave, _INTERLEAVES)
        _one_of("l2_promotion", self.l2_promotion, _L2_PROMOTIONS)
        _one_of("oob_fill", self.oob_fill, _OOB_FILLS)
        if self.interleave == 32 and self.swizzle != 32:
            raise ValueError("cutlax.jit.tma: interleave=32 needs swizzle=32")

    def words(self) -> list[int]:
        """The request as src/jit/tma.hpp's record."""
        box = list(self.box) + [0] * (_MAX_RANK - len(self.box))
        return [int(self.array), int(self.swizzle), int(self.interleave), int(self.l2_promotion),
                _OOB_FILLS.index(self.oob_fill), len(self.box), *box]

    def check(self, index: int, arrays, kernel: str) -> None:
        """Raises, naming the kernel and the descriptor, for what the arrays'
        trace-time shapes and dtypes already rule out."""
        where = f"{kernel}: tma[{index}]"
        if self.array >= len(arrays):
            raise ValueError(f"{where} names array x{self.array}, but the kernel has {len(arrays)} arrays "
                             "(inputs, then outputs)")
        x = arrays[self.array]
        shape, dtype = tuple(x.shape), np.dtype(x.dtype)
        name = f"array x{self.array} of shape {shape} and dtype {dtype.name}"
        if len(shape) != len(self.box):
            raise ValueError(f"{where}: the box {self.box} has rank {len(self.box)} but {name} has rank "
                             f"{len(shape)}")
        if self.interleave and len(shape) < 3:
            raise ValueError(f"{where}: interleave needs an array of rank 3 or more; {name} has rank {len(shape)}")
        if self.oob_fill == "nan" and dtype.name not in _FLOATS:
            raise TypeError(f"{where}: oob_fill='nan' needs a floating-point array; {name} is not")
        inner = self.box[-1] * dtype.itemsize
        if not self.interleave and inner % 16:
            raise ValueError(f"{where}: the box's innermost extent ({self.box[-1]} x {dtype.itemsize} bytes = "
                             f"{inner} bytes) must be a multiple of 16 bytes")
        if not self.interleave and self.swizzle and inner > self.swizzle:
            raise ValueError(f"{where}: the box's innermost extent is {inner} bytes, more than the "
                             f"{self.swizzle}-byte swizzle span")
        alignment = 32 if self.interleave == 32 else 16
        if len(shape) >= 2 and _is_int(shape[-1]) and (shape[-1] * dtype.itemsize) % alignment:
            raise ValueError(f"{where}: {name}: its rows are {shape[-1] * dtype.itemsize} bytes apart; TMA "
                             f"needs a multiple of {alignment} (pad the last axis to a multiple of "
                             f"{alignment // dtype.itemsize} elements)")
        for axis, dim in enumerate(shape):
            if _is_int(dim) and dim > 1 << 32:
                raise ValueError(f"{where}: {name}: axis {axis} has {dim} elements; TMA allows at most 2^32")


def tma(array: int, box, *, swizzle: int = 0, interleave: int = 0, l2_promotion: int = 128,
        oob_fill: str = "zero") -> Tma:
    """A TMA descriptor over array ``array`` (inputs, then outputs, numbered as
    in launch expressions) for a kernel's ``tma=`` list.

    ``box``: the tile one copy moves, in the array's axis order (outermost
    first), one extent (1 to 256) per axis; its innermost extent must be a
    multiple of 16 bytes. ``swizzle``: 0, 32, 64 or 128 bytes, the shared
    memory swizzle (128 for CuTe's ``GMMA::Layout_*_SW128_Atom`` layouts;
    the box's innermost extent must then fit in it). ``interleave``: 0, 16 or
    32 bytes (rank >= 3). ``l2_promotion``: 0, 64, 128 or 256 bytes.
    ``oob_fill``: what elements outside the array read as, ``"zero"`` or
    ``"nan"``; stores outside it are dropped.

    The kernel takes one ``const __grid_constant__ cutlax::jit::TmaDescriptor``
    per request after its Tensor parameters (docs/jit.md)."""
    return Tma(array, box, swizzle, interleave, l2_promotion, oob_fill)


def tma_words(requests) -> np.ndarray:
    """The ``tma`` attribute of a call: every request's record, in order."""
    words = [w for r in requests for w in r.words()]
    return np.asarray(words, np.int64)
