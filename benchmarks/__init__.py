"""sessiond's benchmarks: one module per area, run as ``python -m benchmarks.<module>``.

Shared pieces (timing, the machine and its load, Pi, the daemon, the results' shape) are in
:mod:`benchmarks.harness`; :mod:`benchmarks.run_all` runs every benchmark and writes
``docs/benchmarks.md``. See ``benchmarks/README.md``.
"""
