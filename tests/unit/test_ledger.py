"""The monthly ledger and the cost guard's decisions, against moto's DynamoDB."""

import json
import threading
from datetime import UTC, datetime

import boto3
import pytest
from moto import mock_aws

from pgarena.aws.ledger import Ledger
from pgarena.aws.store import create_results_table
from pgarena.campaign.cost_guard import check_cost, month_of, settle_campaign
from pgarena.model.ledger import COST_CAP_REFUSED, WorkerPricing
from pgarena.model.outcomes import StepOutcome, TargetOutcome
from pgarena.model.results import StepSummary
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from tests.conftest import FIXTURES

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC).timestamp()
MONTH = "2026-11"


@pytest.fixture
def dynamodb(aws_credentials):
    with mock_aws():
        client = boto3.client("dynamodb")
        create_results_table(client, "t")
        yield client


@pytest.fixture
def ledger(dynamodb):
    return Ledger(dynamodb, "t", clock=lambda: NOW)


def plan(campaign_id="c1", hourly=1.0, **cost_policy):
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = data["targets"][:1]
    data["targets"][0]["hourly_cost_usd"] = hourly
    if cost_policy:
        data["cost"] = cost_policy
    return plan_campaign(parse_campaign(data), campaign_id)


# --- Ledger ------------------------------------------------------------------------------------


def test_month_is_the_utc_calendar_month():
    assert month_of(NOW) == MONTH


def test_booking_adds_the_estimate_to_the_month(ledger):
    # Given an empty month / When two campaigns are booked without a monthly cap
    first = ledger.book(MONTH, "c1", 1.25)
    second = ledger.book(MONTH, "c2", 2.5, schedule="nightly")

    # Then both are booked and the month holds their sum
    assert (first.booked, second.booked) == (True, True)
    assert (first.committed_before_usd, second.committed_before_usd) == (0.0, 1.25)
    assert ledger.total(MONTH) == pytest.approx(3.75)
    assert [(e.campaign_id, e.status, e.schedule) for e in sorted(ledger.entries(MONTH), key=lambda e: e.campaign_id)] == [
        ("c1", "booked", None),
        ("c2", "booked", "nightly"),
    ]


def test_monthly_cap_refuses_a_campaign_that_would_pass_it(ledger):
    # Given a month with $9 booked under a $10 cap
    ledger.book(MONTH, "c1", 9.0, monthly_cap_usd=10.0)

    # When a $2 campaign asks to be booked
    booking = ledger.book(MONTH, "c2", 2.0, monthly_cap_usd=10.0)

    # Then it is refused with the month's figures, recorded as refused, and the total is unchanged
    assert not booking.booked and booking.entry.status == "refused"
    assert "$9.00 booked" in booking.entry.reason and "monthly cap $10.00" in booking.entry.reason
    assert ledger.total(MONTH) == 9.0
    assert ledger.entry(MONTH, "c2").status == "refused"


def test_a_campaign_that_fits_exactly_is_booked(ledger):
    ledger.book(MONTH, "c1", 9.0, monthly_cap_usd=10.0)
    assert ledger.book(MONTH, "c2", 1.0, monthly_cap_usd=10.0).booked
    assert ledger.total(MONTH) == pytest.approx(10.0)


def test_a_retried_booking_counts_once(ledger):
    # Given a campaign booked once / When the guard is retried with the same campaign
    ledger.book(MONTH, "c1", 4.0, monthly_cap_usd=10.0)
    again = ledger.book(MONTH, "c1", 4.0, monthly_cap_usd=10.0)

    # Then it is still booked, and the month counts it once
    assert again.booked and ledger.total(MONTH) == 4.0


def test_months_are_separate(ledger):
    ledger.book("2026-10", "c1", 10.0, monthly_cap_usd=10.0)
    assert ledger.book(MONTH, "c2", 10.0, monthly_cap_usd=10.0).booked


def test_racing_campaigns_never_book_past_the_cap(dynamodb):
    # Given eight campaigns of $3 racing for a $10 month. DynamoDB applies a transaction atomically;
    # moto's in-process backend does not lock, so its transactions are serialised here as DynamoDB's are.
    # The race under test (read the total, decide, write) stays: only the conditional write is atomic.
    atomic = threading.Lock()
    transact = dynamodb.transact_write_items

    def transact_atomically(**request):
        with atomic:
            return transact(**request)

    dynamodb.transact_write_items = transact_atomically
    ledger = Ledger(dynamodb, "t", clock=lambda: NOW)
    results = {}

    def book(i):
        results[i] = ledger.book(MONTH, f"c{i}", 3.0, monthly_cap_usd=10.0).booked

    threads = [threading.Thread(target=book, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # Then exactly three got in and the month holds $9
    assert sum(results.values()) == 3
    assert ledger.total(MONTH) == pytest.approx(9.0)


def test_settling_replaces_the_estimate_with_the_actual(ledger):
    # Given two booked campaigns
    ledger.book(MONTH, "c1", 4.0)
    ledger.book(MONTH, "c2", 1.0)

    # When the first finishes having cost $2.50
    settled = ledger.settle(MONTH, "c1", 2.5)

    # Then its entry holds both figures and the month counts the actual
    assert (settled.status, settled.estimated_usd, settled.actual_usd) == ("settled", 4.0, 2.5)
    assert ledger.entry(MONTH, "c1") == settled
    assert ledger.total(MONTH) == pytest.approx(3.5)


def test_settling_twice_counts_once(ledger):
    ledger.book(MONTH, "c1", 4.0)
    ledger.settle(MONTH, "c1", 2.5)
    ledger.settle(MONTH, "c1", 2.5)
    assert ledger.total(MONTH) == pytest.approx(2.5)


def test_a_refused_campaign_is_not_settled(ledger):
    ledger.record_refusal(MONTH, "c1", 50.0, "too dear")
    assert ledger.settle(MONTH, "c1", 1.0).status == "refused"
    assert ledger.total(MONTH) == 0.0


# --- Cost guard --------------------------------------------------------------------------------


def test_guard_refuses_a_campaign_over_its_cap_with_the_estimate(ledger):
    # Given a campaign whose target alone costs more than its cap
    p = plan(hourly=100.0, cap_usd=0.5)

    # When checked
    decision = check_cost(p, ledger, WorkerPricing(cpu_units=1024, memory_mib=2048, default_region="us-east-1"))

    # Then it is refused, the reason names the estimate and the cap, and nothing is booked
    assert not decision.allowed and not decision.booked
    assert f"estimated ${decision.estimate.total_usd:.2f} exceeds the campaign cap $0.50" in decision.reason
    assert "targets $" in decision.reason
    assert decision.refusal.kind == COST_CAP_REFUSED == "cost_cap_refused"
    assert ledger.total(MONTH) == 0.0 and ledger.entry(MONTH, "c1").status == "refused"


def test_guard_books_a_campaign_under_its_caps(ledger):
    # Given a campaign well under both caps
    p = plan(hourly=1.0, cap_usd=5.0, monthly_cap_usd=100.0, schedule="nightly")

    # When checked / Then it is allowed and its estimate is booked under its schedule's name
    decision = check_cost(p, ledger, WorkerPricing(cpu_units=1024, memory_mib=2048, default_region="us-east-1"))
    assert decision.allowed and decision.booked and decision.refusal is None
    assert decision.month == MONTH and decision.month_committed_usd == 0.0
    entry = ledger.entry(MONTH, "c1")
    assert (entry.status, entry.estimated_usd, entry.schedule) == ("booked", decision.estimate.total_usd, "nightly")


def test_guard_refuses_when_the_month_is_spent(ledger):
    # Given a month whose budget another campaign already holds
    ledger.book(MONTH, "earlier", 99.99, monthly_cap_usd=100.0)

    # When a scheduled campaign under its own cap is checked
    decision = check_cost(
        plan("c2", cap_usd=5.0, monthly_cap_usd=100.0, schedule="nightly"),
        ledger,
        WorkerPricing(cpu_units=1024, memory_mib=2048, default_region="us-east-1"),
    )

    # Then the monthly cap refuses it
    assert not decision.allowed and decision.month_committed_usd == pytest.approx(99.99)
    assert "monthly cap $100.00" in decision.reason and decision.refusal.kind == "cost_cap_refused"


def test_guard_without_caps_still_books(ledger):
    decision = check_cost(plan(), ledger, WorkerPricing(cpu_units=1024, memory_mib=2048, default_region="us-east-1"))
    assert decision.allowed and ledger.total(MONTH) == pytest.approx(decision.estimate.total_usd)


def test_guard_prices_the_deployed_worker_size_and_the_matrix_region(ledger):
    small = check_cost(
        plan("a", region="eu-central-1"), ledger, WorkerPricing(cpu_units=512, memory_mib=1024, default_region="us-east-1")
    )
    large = check_cost(plan("b"), ledger, WorkerPricing(cpu_units=2048, memory_mib=4096, default_region="us-east-1"))
    assert (small.estimate.region, small.estimate.worker_vcpu, small.estimate.worker_memory_gb) == ("eu-central-1", 0.5, 1.0)
    assert (large.estimate.region, large.estimate.worker_vcpu) == ("us-east-1", 2.0)


def test_settle_campaign_records_what_ran(ledger):
    # Given a booked campaign whose load ran 2 s and whose run was launched but wrote nothing
    p = plan(hourly=3.6, monthly_cap_usd=100.0)
    decision = check_cost(p, ledger, WorkerPricing(cpu_units=1024, memory_mib=2048, default_region="us-east-1"))
    load, run = p.targets[0].steps
    summary = StepSummary(
        campaign_id="c1",
        step_id=load.step_id,
        target="a",
        workload="tpcb",
        kind="init",
        tool="pgbench",
        status="succeeded",
        started_at="",
        finished_at="",
        wall_s=2.0,
    )
    outcomes = [
        TargetOutcome(
            name="a",
            steps=[StepOutcome(step_id=load.step_id, status="succeeded"), StepOutcome(step_id=run.step_id, status="failed")],
        )
    ]

    # When settled after a 100 s campaign
    report = settle_campaign(decision, p, outcomes, [summary], "2026-11-22T12:00:00+00:00", "2026-11-22T12:01:40+00:00", ledger)

    # Then the actual is recorded in place of the estimate, and both are reported
    entry = ledger.entry(MONTH, "c1")
    assert entry.status == "settled" and entry.actual_usd == report.actual_usd
    assert report.estimated_usd == decision.estimate.total_usd and report.refused is None
    assert ledger.total(MONTH) == pytest.approx(report.actual_usd)
    assert report.actual_usd > 3.6 * 100 / 3600  # the target's 100 s, plus the lost run up to its hard stop


def test_settle_campaign_reports_a_refusal_without_touching_the_ledger(ledger):
    decision = check_cost(
        plan(hourly=100.0, cap_usd=0.5), ledger, WorkerPricing(cpu_units=1024, memory_mib=2048, default_region="us-east-1")
    )
    report = settle_campaign(decision, plan(), [], [], "a", "b", ledger)
    assert report.refused == decision.reason and report.actual_usd is None
    assert ledger.total(MONTH) == 0.0
