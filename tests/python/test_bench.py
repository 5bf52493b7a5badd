"""The benchmark command: a short run writes a complete JSON record and plot."""

import json

import pytest

from cutlax.cli import bench


def test_short_run_writes_json_and_png(tmp_path, capsys):
    out, png = tmp_path / "bench.json", tmp_path / "bench.png"
    args = ["--ops", "relu,bias_relu_backward,gemm,chain,mlp", "--log2-sizes", "12,13", "--dtypes", "float32",
            "--gemm-size", "64", "--chain", "4", "--mlp", "32,16,3", "--calls", "1", "--batches", "1",
            "--json", str(out)]
    pytest.importorskip("matplotlib")
    assert bench.main(args + ["--png", str(png)]) == 0
    record = json.loads(out.read_text())
    ops = [(r["op"], r["elements"]) for r in record["rows"]]
    assert ops[:4] == [("relu", 4096), ("relu", 8192), ("bias_relu_backward", 4096), ("bias_relu_backward", 8192)]
    want = {"gemm tiled", "gemm tf32", "gemm 3xtf32 highest", "gemm 3xtf32 high", "chain of 4", "mlp 32x16"}
    assert want <= {op for op, _ in ops}
    for row in record["rows"]:
        assert row["cutlax_s"] > 0 and row["xla_s"] > 0
        assert row["ratio"] == pytest.approx(row["xla_s"] / row["cutlax_s"])
        if row["metric"] == "GB/s":
            assert row["copy_rate"] > 0
    assert len(record["mlp_losses"]["cutlax"]) == 3
    assert record["mlp_losses"]["max_rel_diff"] < 1e-4
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "MLP loss, cutlax:" in capsys.readouterr().out


def test_16_bit_gemm_and_mlp_rows_and_plot(tmp_path):
    out, png = tmp_path / "bench.json", tmp_path / "bench.png"
    args = ["--ops", "gemm16,mlp16", "--dtypes", "bfloat16", "--gemm16-shapes", "40x24x16", "--mlp16", "16,16,2",
            "--calls", "1", "--batches", "1", "--json", str(out)]
    pytest.importorskip("matplotlib")
    assert bench.main(args + ["--png", str(png)]) == 0
    rows = json.loads(out.read_text())["rows"]
    labels = {r["op"] for r in rows}
    assert {"gemm 40x24x16", "gemm+bias+relu 40x24x16", "gemm+bias+gelu 40x24x16", "mlp3 16x16"} <= labels
    assert all(r["metric"] == "TFLOP/s" and r["dtype"] == "bfloat16" and r["cutlax_s"] > 0 for r in rows)
    assert (tmp_path / "bench-gemm.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_unknown_op_is_an_argument_error(capsys):
    with pytest.raises(SystemExit) as e:
        bench.main(["--ops", "softmax"])
    assert e.value.code == 2
    assert "unknown op 'softmax'; choose from vector_add" in capsys.readouterr().err
