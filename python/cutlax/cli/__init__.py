"""The tooling around the ops, apart from them: the command line's
``python -m cutlax demo | bench | doctor`` (demo.py, bench.py, doctor.py),
and what those and the scripts in bench/ share, public so that scripts and
examples need no private names:

* ``cutlax.cli.timing``: the timing method of every comparison with XLA;
* ``cutlax.cli.jit_examples``: ReLU and bias+ReLU as cutlax.jit kernels;
* ``cutlax.cli.bench.mlp_train``: the MLP that the benchmark trains;
* ``cutlax.cli.tuning``: the Hopper GEMM's tuning knobs (a tuning build's).

Nothing in the ops imports this package.
"""
