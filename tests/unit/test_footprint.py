"""Issue 26.1: `pgarena estimate` prints, beside the cost, what the campaign asks of AWS's limits."""

import copy
import json

from typer.testing import CliRunner

from pgarena.cli import app
from pgarena.model.matrix import Campaign
from pgarena.planning.footprint import footprint
from pgarena.planning.history import count_history
from tests.conftest import FIXTURES

MINIMAL = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())


def sharded(workers: int) -> dict:
    data = copy.deepcopy(MINIMAL)
    data["targets"] = data["targets"][:1]
    data["workloads"][0]["run"].update(clients=[8, 16], workers=workers, percentiles=True, duration_s=300, progress_s=5)
    return data


def test_the_figures_follow_the_campaign_s_shape():
    # Given the same campaign on 2 and on 4 workers per run
    two, four = (footprint(Campaign.model_validate(sharded(w))) for w in (2, 4))
    # Then the history and the memory aggregation holds at once grow with the workers, the progress series does not
    assert four.history_events > two.history_events == count_history(Campaign.model_validate(sharded(2))).events
    assert four.shards_per_step == 4 and two.shards_per_step == 2
    assert four.aggregation_series_bytes == 2 * two.aggregation_series_bytes
    assert four.largest_progress_samples == two.largest_progress_samples == 60
    assert four.plan_bytes > 0 and 0 < four.largest_state_bytes < 256 * 1024


def test_estimate_prints_the_limits_beside_the_cost(tmp_path):
    matrix = tmp_path / "m.json"
    matrix.write_text(json.dumps(sharded(4)))
    result = CliRunner().invoke(app, ["estimate", "--matrix", str(matrix)])
    assert result.exit_code == 0, result.output
    events = count_history(Campaign.model_validate(sharded(4))).events
    assert f"history events      {events:,} of 25,000" in result.output
    assert "aggregation memory  one step's shards at a time: 4 x series" in result.output
    assert "of the Aggregate function's 1,024 MB" in result.output and "keeps a pointer" in result.output
