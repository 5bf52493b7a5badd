"""The cutlax command line: ``python -m cutlax demo | bench | doctor`` (their
code is in cutlax.cli), and ``--cmake-dir`` / ``--include-dir`` for building
op libraries."""

from __future__ import annotations

import os
import sys

COMMANDS = {
    "demo": "walk through the classic kernels, each checked against jax.numpy",
    "bench": "time every op against XLA in the same run",
    "doctor": "report versions, built platforms and devices",
}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("--cmake-dir", "--include-dir"):
        # Printed without importing cutlax (and so JAX): build scripts call this.
        here = os.path.dirname(os.path.abspath(__file__))
        print(os.path.join(here, "cmake" if argv[0] == "--cmake-dir" else "include"))
        return 0
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        print("usage: python -m cutlax {demo,bench,doctor} [options]")
        print("       python -m cutlax --cmake-dir | --include-dir\n")
        for name, text in COMMANDS.items():
            print(f"  {name:<8}{text}")
        return 0 if not argv or argv[0] in ("-h", "--help") else 2
    command, rest = argv[0], argv[1:]
    if command == "doctor":
        from cutlax.cli.doctor import main as run
    elif command == "bench":
        from cutlax.cli.bench import main as run
    else:
        from cutlax.cli.demo import main as run
    return run(rest)


if __name__ == "__main__":
    sys.exit(main())
