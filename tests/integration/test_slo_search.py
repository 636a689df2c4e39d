"""Throughput at a latency SLO on real servers: two embedded targets of different settings each get a
tps at SLO from a bounded search, every figure traceable to the probes' raw output, with the curve in the report."""

import gzip
import json

import pytest

from pgarena.analysis.latency import new_histogram, percentiles_of
from pgarena.local.runtime import run_local
from pgarena.planning.campaign import parse_campaign

PROBES = 4
MATRIX = {
    "campaign": "slo-search",
    "targets": [
        {"name": "durable", "provider": "embedded", "embedded": {"settings": {"synchronous_commit": "on", "fsync": "on"}}},
        {"name": "tuned", "provider": "embedded", "embedded": {"settings": {"synchronous_commit": "off", "fsync": "off"}}},
    ],
    "workloads": [
        {
            "name": "tpcb",
            "tool": "pgbench",
            "init": {"scale": 1},
            # Short probes keep the test short: 1 ceiling run + 4 probes of 3 s per target.
            "run": {"clients": 2, "duration_s": 3, "progress_s": 1, "no_vacuum": True, "slo": {"p99_ms": 100, "probes": PROBES}},
        }
    ],
}


@pytest.fixture(scope="module")
def events():
    return []


@pytest.fixture(scope="module")
def run(tmp_path_factory, events):
    result = run_local(parse_campaign(MATRIX), tmp_path_factory.mktemp("results"), on_event=events.append)
    assert result.status == "SUCCEEDED", result.error
    return result


def test_progress_counts_each_search_s_probes_while_it_runs(run, events):
    # Given the campaign's progress events: each SLO step's worker reports the probe it reached
    probes = [e for e in events if e.kind == "probe"]
    assert probes, "no probe was reported while the searches ran"
    # Then per worker the probe numbers only go up, within the search's bound, each before the step's summary
    for worker in {e.text for e in probes}:
        reached = [e.probes for e in probes if e.text == worker]
        assert reached == sorted(set(reached)) and reached[0] >= 1 and reached[-1] <= PROBES
        finished = next(i for i, e in enumerate(events) if e.kind == "step" and e.text == worker)
        assert all(events.index(e) < finished for e in probes if e.text == worker)


def test_every_target_gets_tps_at_slo_from_a_bounded_search(run):
    # Given the campaign's results
    for target in run.results.targets:
        (workload,) = target.workloads
        search = workload.slo
        # Then its search ran the closed-loop ceiling (the run's own figures) and exactly PROBES probes
        assert workload.status == "succeeded" and search is not None, target.name
        assert search.ceiling_tps == workload.tps and search.curve[0].rate_tps is None
        assert len(search.curve) == 1 + PROBES and all(p.rate_tps for p in search.curve[1:])
        # And tps at SLO is the achieved tps of the highest-rate probe that met p99 <= 100 ms (0 if none did)
        met = [p for p in search.curve[1:] if p.met]
        assert search.slo_tps == (max(met, key=lambda p: p.rate_tps).tps if met else 0.0)
        assert all(p.p99_ms <= 100 and p.sustained for p in met)
        # And the ranking's point has it
        (point,) = target.points
        assert point.workload == "tpcb"


def test_each_probe_traces_to_its_own_raw_output(run):
    # Given one probe of the first target
    target = run.results.targets[0]
    probe = target.workloads[0].slo.curve[1]
    log_path = next(p for p in probe.raw if p.endswith("pgbench.log"))
    assert "/probe-1/" in log_path
    # When its raw pgbench output and transaction log are read
    text = (run.results_dir / log_path).read_text()
    histogram = new_histogram()
    for path in (p for p in probe.raw if "transactions" in p):
        with gzip.open(run.results_dir / path, "rt") as log:
            for line in log:
                latency = line.split()[2]
                if latency.isdigit():
                    histogram.record_value(max(1, int(latency)))
    # Then pgbench ran at the probe's rate (it reports the schedule lag only with --rate), and the p99
    # recomputed from the log is the probe's
    assert "schedule lag" in text
    assert percentiles_of(histogram).p99 == probe.p99_ms


def test_the_report_has_tps_at_slo_and_the_rate_curve_per_target(run):
    html = (run.results_dir / "report.html").read_text()
    assert "tps at SLO" in html and 'id="slo"' in html
    assert 'id="chart-slo-' in html
    assert all(f'data-series="{t.name}"' in html for t in run.results.targets)
    summary = json.loads((run.results_dir / "results.json").read_text())
    assert all(w["slo"]["slo_tps"] is not None for t in summary["targets"] for w in t["workloads"])
    assert "slo_tps" in (run.results_dir / "metrics.csv").read_text().splitlines()[0]
