"""Two processes on 127.0.0.1 with jax.distributed (gloo CPU collectives),
4 CPU devices each, one global mesh of 8: cutlax ops sharded across both."""

import os
import socket
import subprocess
import sys

HERE = os.path.dirname(__file__)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ops_sharded_across_two_processes():
    port = str(free_port())
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    workers = [subprocess.Popen([sys.executable, os.path.join(HERE, "multihost_worker.py"), str(i), port],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
               for i in range(2)]
    outputs = []
    try:
        for w in workers:
            outputs.append(w.communicate(timeout=120)[0])
    finally:
        for w in workers:
            w.kill()
    for i, (w, out) in enumerate(zip(workers, outputs)):
        assert w.returncode == 0, f"process {i} failed:\n{out[-3000:]}"
        assert f"process {i}: OK" in out
        assert f"process {i}: gemm, K across both processes (plain jit) ok" in out
