"""A near and a far embedded server measured from one site: the far one is behind the delay proxy
(embedded.network_delay_ms), the round-trip gap shows in results.json, and the ranking will not rank
them as equals unless the matrix allows it."""

import pytest

from pgarena.analysis.headline import headline
from pgarena.analysis.ranking import rank, unranked_reasons
from pgarena.local.runtime import run_local
from pgarena.model.matrix import RankingConfig
from pgarena.planning.campaign import parse_campaign

pytestmark = pytest.mark.integration

DELAY_MS = 2


@pytest.fixture(scope="module")
def near_far(tmp_path_factory):
    # Given the same server twice, one of them 2 ms away each way
    settings = {"synchronous_commit": "off"}
    matrix = {
        "campaign": "near-far",
        "targets": [
            {"name": "near", "provider": "embedded", "embedded": {"settings": settings}},
            {"name": "far", "provider": "embedded", "embedded": {"settings": settings, "network_delay_ms": DELAY_MS}},
        ],
        "workloads": [
            {"name": "tpcb", "tool": "pgbench", "init": {"scale": 1}, "run": {"clients": 1, "duration_s": 3, "progress_s": 1}}
        ],
    }
    # When the campaign runs locally
    run = run_local(parse_campaign(matrix), tmp_path_factory.mktemp("near-far"))
    assert run.status == "SUCCEEDED", run.error
    return run.results


def test_the_round_trip_gap_is_in_the_results(near_far):
    near, far = near_far.targets
    # Then the far target's median round trip carries the proxy's delay both ways, and both ran here
    assert far.rtt_ms >= 2 * DELAY_MS
    assert far.rtt_ms - near.rtt_ms > 1.0
    assert near.site == far.site == "local"
    assert near.worker_size == far.worker_size and near.worker_size.vcpu > 0
    assert all(t.status == "succeeded" and t.workloads[0].tps > 0 for t in (near, far))


def test_the_ranking_refuses_to_rank_them_as_equals(near_far):
    # Then only the near one is ranked; the far one is named with the gap and the fix
    assert [e.target for e in near_far.ranking] == ["near"]
    assert [(p.a, p.b) for p in near_far.footing] == [("near", "far")]
    reason = unranked_reasons(near_far.targets, near_far.ranking, near_far.metrics, near_far.footing)["far"]
    assert "not on equal footing" in reason and "median round trip" in reason
    assert "far is not ranked" in headline(near_far.ranking, near_far.comparisons, near_far.footing)


def test_allowed_unequal_footing_ranks_both_with_the_caveat(near_far):
    # When the same results are ranked with allow_unequal_footing
    ranked = rank(near_far.targets, RankingConfig(allow_unequal_footing=True))
    # Then both are ranked and the verdict carries the caveat
    assert sorted(e.target for e in ranked.entries) == ["far", "near"]
    assert "Caveat: ranked together on unequal footing" in headline(ranked.entries, ranked.comparisons, ranked.footing)
