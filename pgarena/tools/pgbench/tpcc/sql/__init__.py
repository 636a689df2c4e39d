"""The TPROC-C kit's SQL, one module constant per statement (tests/unit/test_fuzz_sql.py): the schema, the
loader, the five transactions as PL/pgSQL functions and TPC-C's consistency conditions."""
