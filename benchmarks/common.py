"""The timing harness for the scripts in this folder.

It lives in the package (`seqlab.bench.harness`, so `seqlab bench` can use it
installed); this module only re-exports it for `benchmarks/ops.py`.
"""
from seqlab.bench.harness import (  # noqa: F401
    Timing, blas_env_prefix, blas_threads, compare, cpu_model, machine_info, markdown_table, match_threads,
    numpy_blas_text, set_threads, write_section,
)
