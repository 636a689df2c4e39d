"""examples/four-provider-aws.json reproduces the managed-services study's commands flag for flag."""

from pathlib import Path

from pgarena.planning.campaign import load_campaign
from pgarena.tools.pgbench.command import init_args, run_args
from pgarena.tools.sysbench import command as sysbench
from tests.conftest import ROOT

STUDY = load_campaign(ROOT / "examples" / "four-provider-aws.json")
PGBENCH, SYSBENCH = STUDY.workloads


def test_pgbench_load_is_scale_10000_fillfactor_90():
    # pgbench -i --fillfactor=90 --scale=10000
    assert init_args(PGBENCH.init) == ["--initialize", "--scale=10000", "--fillfactor=90"]


def test_pgbench_run_is_prepared_1000_clients_600_s_with_60_s_progress(tmp_path: Path):
    # pgbench --protocol=prepared -P 60 --time=600 --client=1000 --jobs=2048 (pgbench caps jobs at clients)
    args = run_args(PGBENCH.run, 1000, tmp_path, PGBENCH.run.rate_tps)
    for flag in ["--builtin=tpcb-like", "--client=1000", "--jobs=1000", "--time=600", "--protocol=prepared", "--progress=60"]:
        assert flag in args


def test_sysbench_is_the_write_heavy_test_on_250_tables_of_450000_rows():
    args = sysbench.run_args(SYSBENCH.run, SYSBENCH.prepare)
    for flag in [
        "oltp_read_write",
        "--tables=250",
        "--table_size=450000",
        "--threads=1000",
        "--time=600",
        "--report-interval=60",
        "--rand-type=uniform",
        "--point_selects=0",
        "--simple_ranges=0",
        "--sum_ranges=0",
        "--order_ranges=0",
        "--distinct_ranges=0",
        "--forced-shutdown=30",
        "run",
    ]:
        assert flag in args
