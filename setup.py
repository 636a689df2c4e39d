"""The one compiled module: pgbench's per-transaction log parser (pgarena/tools/pgbench/_txlog.c).

Everything else is in pyproject.toml. `pip install -e .` builds it into the source tree; the worker
image builds it with `python3 setup.py build_ext --inplace` (workers/Dockerfile).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "pgarena.tools.pgbench._txlog",
            sources=["pgarena/tools/pgbench/_txlog.c"],
            extra_compile_args=["-O3", "-Wall"],
            libraries=["z"],  # zlib: a second's histogram is compressed in the scanner
        )
    ]
)
