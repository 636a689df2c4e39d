"""`pgarena parse TOOL FILE`: every supported tool's raw output comes back as the parser's JSON."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pgarena.cli import app

FIXTURES = Path(__file__).parents[1] / "fixtures"


@pytest.mark.parametrize(
    ("tool", "fixture", "tps"),
    [
        ("sysbench", "sysbench/run_oltp_read_write_t4_T5_i1.txt", 244.70),
        ("sysbench", "sysbench/sb05_handmade_oltp_write_heavy_t8_T30_i10.txt", 999.67),
        ("pgbench", "pgbench/pg96_run_tpcb_c4_j2_T5_P1.txt", 1262.907513),
    ],
)
def test_parse_prints_the_parsed_report(tool, fixture, tps):
    # Given a raw output file of the tool
    path = FIXTURES / fixture
    # When `pgarena parse TOOL FILE` runs
    result = CliRunner().invoke(app, ["parse", tool, str(path)])
    # Then it succeeds and prints the summary the parser reads from the file
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed["summary"]["tps"] == tps


def test_parse_pgbench_shows_the_rate_and_latency_limit_lines():
    # Given a pgbench 10 run under --rate 400 --latency-limit 20
    path = FIXTURES / "pgbench/pg10_run_tpcb_rate_R400_L20_c4_j2_T3_P1.txt"
    # When it is parsed from the command line
    result = CliRunner().invoke(app, ["parse", "pgbench", str(path)])
    # Then the schedule lag, skipped and late transactions are in the JSON as printed
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["summary"]
    assert (summary["schedule_lag_avg_ms"], summary["schedule_lag_max_ms"]) == (0.146, 2.617)
    assert (summary["transactions_skipped"], summary["transactions_above_latency_limit"]) == (1, 1)
    assert summary["latency_limit_ms"] == 20.0 and summary["transactions_retried"] is None


def test_parse_sysbench_reads_stdin():
    # Given a sysbench 1.0 output piped in
    text = (FIXTURES / "sysbench/run_oltp_point_select_t4_T5_i1.txt").read_text()
    # When `pgarena parse sysbench -` runs
    result = CliRunner().invoke(app, ["parse", "sysbench", "-"], input=text)
    # Then the interval lines are in the JSON, one per printed line
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["intervals"]) == text.count("] thds:")


def test_parse_missing_file_is_a_clear_error(tmp_path):
    # Given a path with no file
    missing = tmp_path / "nothing.txt"
    # When it is parsed
    result = CliRunner().invoke(app, ["parse", "sysbench", str(missing)])
    # Then the command fails with exit 2 and names the file
    assert result.exit_code == 2
    assert "nothing.txt" in result.output
