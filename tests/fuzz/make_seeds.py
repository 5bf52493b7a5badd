#!/usr/bin/env python3
"""Writes the seed corpora of fuzz_handlers, fuzz_artifact and
fuzz_launch_program, tests/fuzz/corpus/<harness>/ (fuzz_library_table's
seeds were written by hand, as its harness's header comment describes).

Each seed is a small input in the encoding its harness's header comment
describes: well-formed calls, artifacts and launch programs the fuzzer
mutates from, plus a few malformed ones. Run once after changing an
encoding (python3 tests/fuzz/make_seeds.py); the files are checked in.
Regression inputs (a finding, once fixed) are added by hand under
regress-<what> names, and this script keeps them.
"""

import pathlib
import random
import struct
import zlib

HERE = pathlib.Path(__file__).resolve().parent
rng = random.Random(19)  # issue 19: the same seeds on every run

# ---------------------------------------------------------------------------
# fuzz_handlers: the CPU targets in name order, as the harness sorts them.
TARGETS = sorted([
    "cutlax_bias_relu_backward_v1", "cutlax_bias_relu_v1", "cutlax_gemm_aux_v1",
    "cutlax_gemm_tiled_v1", "cutlax_gemm_v1", "cutlax_jit_v2", "cutlax_relu_backward_v1",
    "cutlax_relu_v1", "cutlax_saxpy_dynamic_v1", "cutlax_saxpy_v1", "cutlax_vector_add_v1",
])
# A buffer's dtype byte < 0x80 picks declared type number byte % count (for
# "any", operand 0's type); its contents are random bytes.
DECLARED = 0x07  # flags: declared operand and result counts, declared attributes


def handler_call(target, buffers, attrs=b"", flags=DECLARED, counts=b"", extra=b"\x00"):
    """buffers: (dtype byte, dims, byte width) per operand then result."""
    out = bytes([TARGETS.index(target), flags]) + counts
    contents = b""
    for dtype, dims, width in buffers:
        out += bytes([dtype, len(dims), *dims])
        elements = 1
        for d in dims:
            elements *= d
        contents += bytes(rng.randrange(256) for _ in range(elements * width))
    return out + attrs + extra + contents


def handler_seeds():
    f32, f16, bf16 = 4, 2, 2
    seeds = {
        "vector_add_f32": handler_call("cutlax_vector_add_v1",
                                       [(0, [4, 8], f32), (0, [4, 8], f32), (0, [4, 8], f32)]),
        "vector_add_bf16": handler_call("cutlax_vector_add_v1",
                                        [(2, [3, 5], bf16), (2, [3, 5], bf16), (0, [3, 5], bf16)]),
        "relu_f16_3d": handler_call("cutlax_relu_v1", [(1, [2, 3, 4], f16), (0, [2, 3, 4], f16)]),
        "relu_empty": handler_call("cutlax_relu_v1", [(0, [0, 7], f32), (0, [0, 7], f32)]),
        "relu_scalar": handler_call("cutlax_relu_v1", [(0, [], f32), (0, [], f32)]),
        "relu_backward": handler_call("cutlax_relu_backward_v1",
                                      [(0, [16], f32), (0, [16], f32), (0, [16], f32)]),
        "bias_relu": handler_call("cutlax_bias_relu_v1",
                                  [(0, [4, 8], f32), (0, [8], f32), (0, [4, 8], f32)]),
        "bias_relu_backward": handler_call(
            "cutlax_bias_relu_backward_v1",
            [(0, [6, 8], f32), (0, [6, 8], f32), (0, [6, 8], f32), (0, [8], f32),
             (0, [2, 8], f32)]),
        "saxpy": handler_call("cutlax_saxpy_v1",
                              [(0, [8], f32), (0, [8], f32), (0, [8], f32)],
                              attrs=b"\x00" + struct.pack("<f", 2.0)),
        "saxpy_dynamic": handler_call("cutlax_saxpy_dynamic_v1",
                                      [(0, [], f32), (1, [2, 4], f16), (1, [2, 4], f16),
                                       (0x8b, [2, 4], f16)]),  # float16, not alpha's type
        "gemm_tiled": handler_call("cutlax_gemm_tiled_v1",
                                   [(0, [8, 8], f32), (0, [8, 8], f32), (0, [8, 8], f32)]),
        # activation, config, transpose: int64 each, each behind its mode byte.
        "gemm_bf16_relu": handler_call(
            "cutlax_gemm_v1",
            [(0, [16, 8], bf16), (0, [8, 16], bf16), (0, [16], bf16), (0, [16, 16], bf16)],
            attrs=b"".join(b"\x00" + struct.pack("<q", v) for v in (1, 0, 0))),
        "gemm_f32_bt": handler_call(
            "cutlax_gemm_v1",
            [(2, [4, 8], f32), (2, [12, 8], f32), (2, [12], f32), (0, [4, 12], f32)],
            attrs=b"".join(b"\x00" + struct.pack("<q", v) for v in (2, 0, 1))),
        "gemm_aux_f16_at": handler_call(
            "cutlax_gemm_aux_v1",
            [(1, [8, 16], f16), (1, [8, 8], f16), (1, [8], f16), (0, [16, 8], f16),
             (0, [16, 8], f16)],
            attrs=b"".join(b"\x00" + struct.pack("<q", v) for v in (2, 2, 2))),
        "jit_cpu": handler_call("cutlax_jit_v2", [], attrs=b"\x00\x06relu_k"),
        # Malformed: counts given by hand, an attribute of the wrong type, a
        # buffer of an undeclared dtype, a shape mismatch.
        "vector_add_counts": handler_call("cutlax_vector_add_v1",
                                          [(0, [4], f32), (0, [4], f32)],
                                          flags=0x04, counts=b"\x01\x01"),
        "saxpy_alpha_int": handler_call("cutlax_saxpy_v1",
                                        [(0, [8], f32), (0, [8], f32), (0, [8], f32)],
                                        attrs=b"\xf4" + struct.pack("<q", 2)),
        "relu_s32": handler_call("cutlax_relu_v1", [(0x82, [5], 4), (0, [5], 4)]),
        "bias_relu_mismatch": handler_call("cutlax_bias_relu_v1",
                                           [(0, [4, 8], f32), (0, [7], f32), (0, [4, 8], f32)]),
    }
    return seeds


# ---------------------------------------------------------------------------
# fuzz_artifact: byte 0 even: an artifact (the harness recomputes the
# checksum for its second pass, so these carry none); odd: round-trip fields.
def artifact(arch, name, cubin, cubin_size=None, compressed=None):
    z = zlib.compress(cubin, 1) if compressed is None else compressed
    size = len(cubin) if cubin_size is None else cubin_size
    header = b"cutlaxjt" + struct.pack("<IIIIQQ", 1, len(arch), len(name), len(z), size, 0)
    return header + arch + name + z


def fake_cubin(n):
    # ELF-like: a header, then long runs, as -default-device CUBINs are.
    body = b"\x7fELF\x02\x01\x01\x33" + bytes(56)
    while len(body) < n:
        body += bytes([rng.randrange(4)]) * rng.randrange(1, 40)
    return body[:n]


def artifact_seeds():
    return {
        "sm90a": b"\x00" + artifact(b"sm_90a", b"_Z4reluIfEvv", fake_cubin(600)),
        "sm80_empty_cubin": b"\x00" + artifact(b"sm_80", b"k", b""),
        "no_names": b"\x00" + artifact(b"", b"", fake_cubin(64)),
        "truncated": b"\x00" + artifact(b"sm_90a", b"kernel", fake_cubin(300))[:70],
        "bad_zlib": b"\x00" + artifact(b"sm_90a", b"k", b"", cubin_size=100,
                                       compressed=b"\x78\x01" + bytes(10)),
        "round_trip": b"\x01\x06\x0csm_90a_Z4reluIfEvv" + fake_cubin(200),
        "round_trip_empty": b"\x01\x00\x00\x00",
        # Regressions (src/jit/artifact.cpp's check_cubin_size): the header
        # alone, claiming a 1 GiB CUBIN from 0 compressed bytes (with the
        # checksum the harness recomputes, parse_artifact accepted it and
        # decompress_cubin allocated 1 GiB); and a header-only view claiming
        # 24 GiB, the fuzzer's first find.
        "regress-cubin-size-1gib": b"\x00" + artifact(b"", b"", b"", cubin_size=1 << 30,
                                                      compressed=b""),
        "regress-cubin-size-unverified": bytes.fromhex(
            "1a637574 6c61786a 74010000 00000000 00000000 00000000 00000000 00060000"
            "00860000 00000000 1a".replace(" ", "")),
    }


# ---------------------------------------------------------------------------
# fuzz_launch_program: operand count, shapes, then words as tag bytes.
def word(v):
    if 0 <= v < 0x80:
        return bytes([v])
    if -64 <= v < 0:
        return bytes([0x7f - v])
    return b"\xc0" + struct.pack("<q", v)


def program(*expressions):
    out = b""
    for tokens in expressions:
        out += word(len(tokens)) + b"".join(word(t) for t in tokens)
    return out


ONE = [0, 1]
PUSH, DIM, SIZE, ADD, SUB, MUL, FLOORDIV, CDIV, MIN, MAX, SM_COUNT = range(11)
WITH_SMS = 0x80  # the count byte's bit 7: the GPU has 132 multiprocessors


def launch_seeds():
    return {
        # grid.x = cdiv(x0.size, 256), block.x = 256
        "1d": b"\x01\x01\x64" + program([SIZE, 0, PUSH, 256, CDIV], ONE, ONE,
                                        [PUSH, 256], ONE, ONE),
        # 16x16 tiles over a (rows, cols) operand
        "2d_tiles": b"\x01\x02\x30\x50" + program(
            [DIM, 0, 1, PUSH, 16, CDIV], [DIM, 0, 0, PUSH, 16, CDIV], ONE,
            [PUSH, 16], [PUSH, 16], ONE),
        # every operator once, over two operands
        "operators": b"\x02\x02\x07\x09\x01\x05" + program(
            [DIM, 0, 0, DIM, 1, 0, ADD, PUSH, 3, MUL],
            [DIM, 0, 1, DIM, 0, 0, SUB, PUSH, 2, FLOORDIV], [PUSH, 4, PUSH, 9, MIN],
            [PUSH, 32, PUSH, 64, MAX], [SIZE, 1, PUSH, 4, CDIV], ONE),
        "empty_grid": b"\x01\x01\x00" + program([SIZE, 0, PUSH, 128, CDIV], ONE, ONE,
                                                [PUSH, 128], ONE, ONE),
        "negative_floordiv": b"\x00" + program([PUSH, -7, PUSH, 2, FLOORDIV, PUSH, 5, ADD],
                                               ONE, ONE, [PUSH, 64], ONE, ONE),
        "div_by_zero": b"\x00" + program([PUSH, 1, PUSH, 0, CDIV], ONE, ONE, ONE, ONE, ONE),
        "overflow": b"\x00" + program([PUSH, 2**63 - 1, PUSH, 1, ADD], ONE, ONE, ONE, ONE, ONE),
        "int64_min_cdiv": b"\x00" + program([PUSH, -2**63, PUSH, -1, CDIV], ONE, ONE, ONE,
                                            ONE, ONE),
        "too_many_threads": b"\x00" + program(ONE, ONE, ONE, [PUSH, 64], [PUSH, 32], ONE),
        "huge_dims": b"\x01\x03\xc0" + struct.pack("<q", 2**40) + b"\xc0"
                     + struct.pack("<q", 2**40) + b"\x00"
                     + program([SIZE, 0], ONE, ONE, ONE, ONE, ONE),
        "truncated": b"\x00" + program(ONE, ONE)[:-1],
        # a persistent grid of 2x1 clusters: min(tiles, sm_count()) rounded to the cluster
        "persistent_cluster": bytes([2 | WITH_SMS]) + b"\x02\x40\x40\x02\x40\x40" + program(
            [DIM, 0, 0, PUSH, 8, CDIV, SM_COUNT, MIN, PUSH, 2, FLOORDIV, PUSH, 2, MUL], ONE, ONE,
            [PUSH, 384], ONE, ONE, [PUSH, 2], ONE, ONE),
        "sm_count_unknown": b"\x00" + program([SM_COUNT], ONE, ONE, ONE, ONE, ONE),
        "cluster_not_a_divisor": b"\x00" + program([PUSH, 5], ONE, ONE, ONE, ONE, ONE, [PUSH, 2], ONE, ONE),
        "cluster_too_large": b"\x00" + program([PUSH, 9], [PUSH, 9], ONE, ONE, ONE, ONE, [PUSH, 3], [PUSH, 3], ONE),
    }


# ---------------------------------------------------------------------------
# fuzz_tma: array count, per array rank + dims + kind + address offset, then
# the records' words (fuzz_launch_program's tags).
def tma_record(operand, box, swizzle=0, interleave=0, l2=128, nan=0):
    return [operand, swizzle, interleave, l2, nan, len(box), *box, *([0] * (5 - len(box)))]


def tma_seeds():
    bf16 = b"\x06"  # element size 2, floating point
    words = lambda *records: b"".join(word(w) for r in records for w in r)  # noqa: E731
    return {
        # a (200, 72) bf16 array (a GEMM's a), a 64 x 64 box with the 128-byte swizzle
        "gemm_a": b"\x00" + b"\x02\x40\x48" + bf16 + b"\x00" + words(tma_record(0, [64, 64], 128)),
        # two arrays, a transpose's load and store
        "transpose": b"\x01" + b"\x02\x40\x20\x07\x00\x02\x20\x40\x07\x00"
                     + words(tma_record(0, [32, 32], 128), tma_record(1, [32, 32], 128)),
        "rows_not_16_bytes": b"\x00" + b"\x02\x08\x05\x07\x00" + words(tma_record(0, [8, 4])),
        "misaligned": b"\x00" + b"\x02\x08\x08\x07\x04" + words(tma_record(0, [8, 8])),
        "interleave_rank3": b"\x00" + b"\x03\x02\x04\x08\x06\x00"
                            + words(tma_record(0, [1, 4, 8], 32, 32)),
        "huge_strides": b"\x00" + b"\x03" + (b"\xc0" + struct.pack("<q", 2**32)) * 3 + b"\x07\x00"
                        + words(tma_record(0, [1, 1, 2])),
    }


def write(harness, seeds):
    directory = HERE / "corpus" / harness
    directory.mkdir(parents=True, exist_ok=True)
    for path in directory.iterdir():
        if not path.name.startswith("regress-"):
            path.unlink()
    for name, data in seeds.items():
        (directory / name).write_bytes(data)
    total = sum(p.stat().st_size for p in directory.iterdir())
    print(f"{harness}: {len(list(directory.iterdir()))} seeds, {total} bytes")


if __name__ == "__main__":
    write("fuzz_handlers", handler_seeds())
    write("fuzz_artifact", artifact_seeds())
    write("fuzz_launch_program", launch_seeds())
    write("fuzz_tma", tma_seeds())
