"""The server's own counters over each run's window, on real embedded servers: a target with a small
max_wal_size and shared_buffers checkpoints and reads past its cache during the run, one at the defaults
does not; a scale-1, 8-client run gets the hot-row hint; every delta in results.json is recomputed from
the two snapshots kept beside the tool's output."""

import hashlib
import json

import pytest

from pgarena.local.runtime import run_local
from pgarena.model.server_counters import ServerCounters
from pgarena.planning.campaign import parse_campaign

pytestmark = pytest.mark.integration

# Scale 5 is about 80 MiB: past the small target's 1 MB of shared_buffers, within the defaults' 128 MB.
# Its random updates write a full-page image for each first change of a page after a checkpoint: with
# max_wal_size at 32MB a checkpoint is requested at each 16 MB WAL segment filled, which the small
# target's run fills several times over (measured on a loaded 2-core machine, see the report).
SMALL = {"max_wal_size": "32MB", "checkpoint_timeout": "30s", "shared_buffers": "1MB"}
MATRIX = {
    "campaign": "counters",
    "connections": {"monitor_interval_s": 0.5},
    "targets": [
        {"name": "small", "provider": "embedded", "embedded": {"settings": SMALL}},
        {"name": "defaults", "provider": "embedded", "embedded": {}},
    ],
    "workloads": [
        {"name": "writes", "tool": "pgbench", "init": {"scale": 5}, "run": {"clients": 4, "jobs": 2, "duration_s": 8}},
        {"name": "hot", "tool": "pgbench", "init": {"scale": 1}, "run": {"clients": 8, "jobs": 2, "duration_s": 3}},
    ],
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    run = run_local(parse_campaign(MATRIX), tmp_path_factory.mktemp("counters"))
    assert run.status == "SUCCEEDED", run.error
    lost = [(t.name, w.name, w.error) for t in run.results.targets for w in t.workloads if w.status != "succeeded"]
    assert not lost, lost
    return run


def _workload(run, target: str, name: str):
    [t] = [t for t in run.results.targets if t.name == target]
    [w] = [w for w in t.workloads if w.name == name]
    return w


def _findings(run, target: str, workload: str) -> dict[str, str]:
    [m] = [m for m in run.results.metrics if m.target == target]
    return {f.kind: f.message for f in m.findings if f.workload == workload and f.source == "server"}


def test_the_small_target_checkpointed_during_its_run_and_the_defaults_did_not(run):
    small, defaults = _workload(run, "small", "writes"), _workload(run, "defaults", "writes")
    assert small.server_counters.checkpoints.checkpoints_req > 0
    assert small.server_counters.wal.wal_bytes > 16 << 20 and small.server_counters.wal.wal_fpi > 0
    assert defaults.server_counters.checkpoints.checkpoints_req == 0
    # The finding names the figure and the fix, on that target only
    said = _findings(run, "small", "writes")["checkpoints_requested"]
    assert f"{small.server_counters.checkpoints.checkpoints_req} checkpoint(s) requested" in said
    assert "raise max_wal_size" in said and "(32MB)" in said
    assert "checkpoints_requested" not in _findings(run, "defaults", "writes")
    # And the difference between the two is said in results.json, summary.md and report.html
    differs = [f for f in run.results.findings if f.kind == "differs:checkpoints_requested" and f.workload == "writes"]
    assert [f.target for f in differs] == ["small"] and "), not on defaults: " in differs[0].message
    assert differs[0].message in (run.results_dir / "summary.md").read_text()
    assert "Where the servers differed" in (run.results_dir / "report.html").read_text()


def test_a_data_set_past_shared_buffers_reports_its_cache_hit_ratio(run):
    counters = _workload(run, "small", "writes").server_counters
    ratio = counters.cache_hit_ratio
    assert ratio is not None and ratio < 0.99 and counters.database.blks_read > 0
    said = _findings(run, "small", "writes")["low_cache_hit_ratio"]
    assert f"cache hit ratio {ratio:.3f}" in said and "shared_buffers 1MB" in said and "the data does not fit" in said
    assert counters.database_size_bytes > 40 << 20 and counters.shared_buffers_bytes == 1 << 20


def test_a_scale_1_8_client_run_gets_the_hot_row_hint_in_its_incidents(run):
    for target in ("small", "defaults"):
        hot = _workload(run, target, "hot")
        assert hot.tool_figures.scale == 1 and hot.clients == 8
        assert "scale 1 is below the 8 clients" in _findings(run, target, "hot")["hot_row"]
        assert "hot_row" not in _findings(run, target, "writes")  # scale 5 >= 4 clients
    assert "scale 1 is below the 8 clients" in (run.results_dir / "summary.md").read_text()
    # The report's incidents list them (it said "Incidents (0)" while the monitor recorded lock waits)
    html = (run.results_dir / "report.html").read_text()
    assert '<span class="badge server">hot_row</span>' in html and "Incidents (0)" not in html


def test_every_delta_is_recomputed_from_the_kept_snapshots(run):
    checked = 0
    for t in run.results.targets:
        for w in t.workloads:
            counters = w.server_counters
            assert isinstance(counters, ServerCounters) and counters.raw in w.raw
            path = run.results_dir / counters.raw
            kept = json.loads(path.read_text())
            before, after = kept["before"], kept["after"]
            assert after["server_version_num"] >= 150000 and counters.unreadable == {}
            for section in ("database", "checkpoints", "wal", "io"):
                delta = getattr(counters, section).model_dump()
                for name, value in delta.items():
                    if value is None:
                        assert before[section][name] is None or after[section][name] is None
                        continue
                    assert value == after[section][name] - before[section][name], (t.name, w.name, section, name)
                    checked += 1
            for table in counters.tables:
                [a] = [x for x in after["tables"] if x["table"] == table.table]
                [b] = [x for x in before["tables"] if x["table"] == table.table]
                assert table.autovacuum_count == a["autovacuum_count"] - b["autovacuum_count"]
                assert (table.n_dead_tup_before, table.n_dead_tup_after) == (b["n_dead_tup"], a["n_dead_tup"])
            assert counters.window_s == pytest.approx(after["epoch"] - before["epoch"], abs=1e-3)
            # The snapshots file is the one the worker uploaded: its sha256 is in the step's summary
            [summary] = [json.loads(p.read_text()) for p in path.parent.glob("summary.json")]
            key = next(k for k in summary["raw_files"] if k.endswith("server-counters.json"))
            assert summary["raw_files"][key]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert checked >= 4 * 15
