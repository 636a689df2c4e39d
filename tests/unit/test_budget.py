import json

import pytest

from pgarena.model.budget import COORDINATOR_CONNECTIONS, ConnectionFacts, Sessions
from pgarena.model.errors import BudgetRefused
from pgarena.model.matrix import ConnectionPolicy, Pooler
from pgarena.model.plan import campaign_tag
from pgarena.planning.budget import apply_budget, compute_budget, held_by_other_campaigns
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from pgarena.server.facts import sessions_of
from tests.conftest import FIXTURES


def facts(**overrides) -> ConnectionFacts:
    base = dict(
        max_connections=30,
        superuser_reserved_connections=3,
        reserved_connections=0,
        role="bench",
        database="postgres",
        sessions=Sessions(),
    )
    return ConnectionFacts(**{**base, **overrides})


def target(clients, policy="fail", margin=2):
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = data["targets"][:1]
    data["workloads"][0]["run"]["clients"] = clients
    data["connections"] = {"policy": policy, "safety_margin": margin}
    return plan_campaign(parse_campaign(data), "cid").targets[0]


def test_cloud_sql_style_budget_subtracts_reserved_slots_agents_and_pgarena():
    # Given max_connections 30, 3 superuser-reserved, 2 reserved (PG16), and provider agents holding 4 slots
    f = facts(reserved_connections=2, sessions=Sessions(total=4, by_role={"cloudsqladmin": 3, "cloudsqlagent": 1}))
    # When the budget of a plain role is computed
    budget = compute_budget(f, ConnectionPolicy(safety_margin=2))
    # Then 30 - 3 - 2 - 4 - 2 (preflight, monitor) - 2 margin = 17, bound by the server
    assert budget.capacity == 17 and budget.binding == "server"
    assert "cloudsqladmin 3" in budget.explanation and "= 17" in budget.explanation


def test_superuser_may_use_reserved_slots():
    budget = compute_budget(facts(role_is_superuser=True, reserved_connections=2), ConnectionPolicy(safety_margin=0))
    assert budget.capacity == 30 - COORDINATOR_CONNECTIONS


def test_pg_use_reserved_connections_unlocks_reserved_but_not_superuser_slots():
    budget = compute_budget(facts(reserved_connections=5, role_can_use_reserved=True), ConnectionPolicy(safety_margin=0))
    assert budget.capacity == 30 - 3 - COORDINATOR_CONNECTIONS


def test_role_connection_limit_binds_when_lower():
    f = facts(role_conn_limit=10, sessions=Sessions(total=1, role=1))
    budget = compute_budget(f, ConnectionPolicy(safety_margin=0))
    assert (budget.binding, budget.capacity) == ("role", 10 - 1 - COORDINATOR_CONNECTIONS)


def test_database_connection_limit_binds_when_lower():
    budget = compute_budget(facts(database_conn_limit=8), ConnectionPolicy(safety_margin=0))
    assert (budget.binding, budget.capacity) == ("database", 8 - COORDINATOR_CONNECTIONS)


def test_pooler_limit_binds_when_lower_and_report_says_so():
    budget = compute_budget(
        facts(max_connections=500), ConnectionPolicy(safety_margin=0), Pooler(kind="pgpool", max_client_connections=32)
    )
    assert (budget.binding, budget.capacity) == ("pooler", 32 - COORDINATOR_CONNECTIONS)
    assert "pooler limit" in budget.explanation


def test_fail_policy_refuses_with_budget_consumers_and_fix():
    # Given 20 clients against a budget of 30 - 3 - 5 held - 2 - 2 = 18
    budget = compute_budget(facts(sessions=Sessions(total=5, by_role={"rdsadmin": 5})), ConnectionPolicy())
    with pytest.raises(BudgetRefused) as caught:
        apply_budget(target(20), budget)
    message = str(caught.value)
    assert "needs 20 connections but only 18 are available" in message
    assert "rdsadmin 5" in message
    # max_connections itself: at 32, less 3 reserved, 5 held, 2 for pgarena and 2 margin, 20 are available
    assert "Raise max_connections to at least 32, or lower connections.safety_margin to 0, or lower clients to 18" in message
    assert 'set "connections": {"policy": "clamp"} to run with 18 clients' in message


def test_clamp_policy_runs_the_largest_count_that_fits_and_keeps_the_request():
    budget = compute_budget(facts(), ConnectionPolicy())  # 30 - 3 - 2 - 2 = 23
    steps = apply_budget(target(40, policy="clamp"), budget)
    run = steps[1]
    assert (run.clients, run.requested_clients) == (23, 40)


def test_sweep_points_above_the_budget_are_clamped_below_it_untouched():
    budget = compute_budget(facts(), ConnectionPolicy())
    steps = apply_budget(target([8, 16, 32], policy="clamp"), budget)
    assert [(s.clients, s.requested_clients) for s in steps if s.kind == "run"] == [(8, None), (16, None), (23, 32)]


def test_leases_of_other_campaigns_reduce_what_is_allowed():
    budget = compute_budget(facts(), ConnectionPolicy())
    steps = apply_budget(target(20, policy="clamp"), budget, leased_by_others=10)
    assert steps[1].clients == 13


def test_clamp_refuses_when_nothing_fits():
    budget = compute_budget(facts(max_connections=6), ConnectionPolicy())
    with pytest.raises(BudgetRefused):
        apply_budget(target(4, policy="clamp"), budget)


def test_a_refusal_offers_only_fixes_that_work():
    # Given a clamp campaign left with no connection at all: 16 of 22's 18 held by another campaign, and 3 more
    budget = compute_budget(facts(max_connections=22, role_is_superuser=True), ConnectionPolicy(safety_margin=2))
    with pytest.raises(BudgetRefused) as caught:
        apply_budget(target(16, policy="clamp"), budget, leased_by_others=19)
    message = str(caught.value)
    # Then it says none are available, and offers neither 0 (or -1) clients nor the policy it already has
    assert "none are available" in message and "-1" not in message
    assert "lower clients" not in message and '"policy": "clamp"' not in message
    # But what would work: a larger server, the others finishing first, a smaller margin only if it is enough
    assert "Raise max_connections to at least 39" in message
    assert "let the other campaigns finish first" in message
    assert "connections.safety_margin" not in message


def test_a_fail_refusal_offers_clamp_and_the_count_that_fits():
    budget = compute_budget(facts(max_connections=22, role_is_superuser=True), ConnectionPolicy(safety_margin=0))
    with pytest.raises(BudgetRefused) as caught:
        apply_budget(target(25, policy="fail"), budget)
    assert caught.value.args[0].endswith(
        'Raise max_connections to at least 27, or lower clients to 20, or set "connections": {"policy": "clamp"} to run with 20 clients'
    )


# --- other pgarena campaigns: their sessions are held, never subtracted as if a lease covered them -----


def test_another_campaigns_sessions_count_even_without_a_lease():
    # Given a campaign whose 16 sessions are open on the server, but whose lease this store cannot see
    seen = {campaign_tag("other"): 16}
    # Then they are held: another lease store, an expired lease, still take slots
    assert held_by_other_campaigns({}, "mine/a", seen) == 16


def test_a_campaign_with_both_a_lease_and_sessions_is_counted_once():
    # Given the other campaign leased 17 slots and 16 of its sessions are open
    leased = {"other/a": 17, "mine/a": 5}
    seen = {campaign_tag("other"): 16}
    # Then the larger of the two, not their sum; this campaign's own lease is not counted
    assert held_by_other_campaigns(leased, "mine/a", seen) == 17


def test_this_campaigns_other_targets_on_the_same_server_hold_their_leases():
    assert held_by_other_campaigns({"mine/a": 5, "mine/b": 7}, "mine/a", {}) == 7


def test_sessions_of_leaves_this_campaign_out_and_counts_others_by_campaign():
    mine, other = campaign_tag("mine"), campaign_tag("other")
    rows = [
        ("bench", "postgres", "active", f"{mine}/0123456789ab"),
        ("bench", "postgres", "active", f"{mine}/monitor"),
        ("bench", "postgres", "active", f"{other}/0123456789ab"),
        ("bench", "postgres", "idle", f"{other}/monitor"),
        ("tenant", "postgres", "idle", "psql"),
        ("bench", "postgres", "idle", "pgarena-check"),  # untagged: counted as anyone's session
    ]
    s = sessions_of(rows, "bench", "postgres", own_tag=mine)
    assert (s.total, s.pgarena, s.by_campaign) == (2, 2, {other: 2})
    assert s.by_role == {"tenant": 1, "bench": 1}


def test_a_steps_sessions_carry_its_campaigns_tag_within_63_bytes():
    step = target(4).steps[1]
    assert step.application_name.startswith(campaign_tag("cid") + "/")
    assert len(step.application_name.encode()) <= 63


def test_a_waiting_campaigns_identifying_session_is_no_load():
    # Given another campaign's short session reading who the server is (before it queues), and its preflight
    other = campaign_tag("other")
    rows = [("bench", "postgres", "active", f"{other}/identify"), ("bench", "postgres", "active", f"{other}/preflight")]
    sessions = sessions_of(rows, "bench", "postgres", campaign_tag("mine"))
    # Then only the preflight is held by that campaign: a waiter never counts against the holder's budget
    assert sessions.by_campaign == {other: 1} and sessions.total == 0
