import json

import pytest

from pgarena.model.budget import ConnectionFacts
from pgarena.model.matrix import ConnectionPolicy
from pgarena.model.matrix_errors import MatrixError
from pgarena.planning.budget import apply_budget, compute_budget
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from pgarena.planning.shards import shard, split_clients
from tests.conftest import FIXTURES


@pytest.mark.parametrize(
    "clients, workers, expected",
    [(10, 4, [3, 3, 2, 2]), (8, 4, [2, 2, 2, 2]), (1, 4, [1]), (3, 8, [1, 1, 1]), (7, 1, [7])],
)
def test_split_is_even_and_never_empty(clients, workers, expected):
    assert split_clients(clients, workers) == expected
    assert sum(expected) == clients


def target(**run):
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = data["targets"][:1]
    data["workloads"][0]["run"].update(run)
    data["connections"] = {"policy": "clamp", "safety_margin": 0}
    return plan_campaign(parse_campaign(data), "cid").targets[0]


def test_shards_get_their_own_ids_and_share_a_group():
    group = shard(target(clients=10, workers=4).steps[1])
    assert [s.step_id for s in group.shards] == [f"a/tpcb/c10-r1/s{i}" for i in range(4)]
    assert {s.group_id for s in group.shards} == {"a/tpcb/c10-r1"} and {s.shards for s in group.shards} == {4}


def test_unsharded_step_is_a_group_of_itself():
    step = target(clients=4).steps[1]
    assert shard(step).shards == [step]


def test_init_is_never_sharded():
    assert len(shard(target(clients=10, workers=4).steps[0]).shards) == 1


def test_workers_derived_from_a_per_worker_client_cap():
    group = shard(target(clients=10, max_clients_per_worker=4).steps[1])
    assert [s.clients for s in group.shards] == [4, 3, 3]


def test_budget_clamps_the_total_before_it_is_split():
    planned = target(clients=40, workers=4)
    budget = compute_budget(
        ConnectionFacts(max_connections=24, role="u", database="d", role_is_superuser=True), ConnectionPolicy(safety_margin=0)
    )
    (_, run) = apply_budget(planned, budget)
    group = shard(run)
    assert run.requested_clients == 40 and sum(s.clients for s in group.shards) == 22
    assert {s.requested_clients for s in group.shards} == {40}


def test_several_workers_need_per_transaction_logs():
    with pytest.raises(MatrixError) as caught:
        target(clients=8, workers=2, percentiles=False)
    assert "percentiles" in caught.value.problems[0].message
