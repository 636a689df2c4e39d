"""Sustainable replication throughput: the formula, WAL positions, and waiting for a replica to catch up."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pgarena.analysis.catch_up import lsn_to_int, peaks, replication_result, run_seconds, sustainable_tps
from pgarena.analysis.ranking import rank_targets
from pgarena.model.matrix import RankingConfig, Replica
from pgarena.model.plan import RUN_TIMEOUT_MARGIN_S
from pgarena.model.replication import LagSample, ReplicaCatchUp
from pgarena.model.results import TargetResult, WorkloadResult
from pgarena.planning.campaign import load_campaign, parse_campaign
from pgarena.planning.planner import plan_campaign
from pgarena.server.replication import (
    CatchUpClock,
    Position,
    PrimaryPosition,
    Probe,
    caught_up,
    choose_method,
    lag_of,
    wait_for_catch_up,
)

STANDBY = {"host": "standby.internal", "user": "bench", "password_env": "PW"}


def replica(name="standby", kind="physical", timeout_s=60, **fields) -> Replica:
    return Replica(name=name, kind=kind, endpoint=STANDBY, catch_up_timeout_s=timeout_s, **fields)


def test_worked_example_of_the_methodology():
    # Given 10,000 tps for 30 minutes and a standby that needs 15 minutes to catch up
    transactions = 10_000 * 30 * 60
    # When the sustainable throughput is computed
    tps = sustainable_tps(transactions, run_s=30 * 60, catch_up_s=15 * 60)
    # Then it is 18,000,000 / 2,700 s = 6,666 tps
    assert transactions == 18_000_000
    assert int(tps) == 6_666 and tps == pytest.approx(6_666.67, abs=0.01)


def test_a_replica_that_keeps_up_sustains_what_the_primary_ran():
    assert sustainable_tps(30_000, run_s=30, catch_up_s=0) == 1_000


@pytest.mark.parametrize("run_s, catch_up_s", [(0, 1), (10, -1)])
def test_impossible_times_are_refused(run_s, catch_up_s):
    with pytest.raises(ValueError):
        sustainable_tps(100, run_s, catch_up_s)


def test_run_time_is_the_fixed_duration_else_transactions_over_tps():
    assert run_seconds(1800, 18_000_000, 10_123.0) == 1800
    assert run_seconds(None, 20_000, 1_000.0) == 20.0
    assert run_seconds(None, None, None) is None


@pytest.mark.parametrize("lsn, value", [("0/0", 0), ("0/3000060", 0x3000060), ("16/B374D848", (0x16 << 32) + 0xB374D848)])
def test_wal_positions_become_byte_offsets(lsn, value):
    assert lsn_to_int(lsn) == value


def test_a_position_that_is_not_an_lsn_is_refused():
    with pytest.raises(ValueError, match="not a WAL position"):
        lsn_to_int("3000060")


def test_lag_is_the_wal_between_primary_and_replica():
    primary = PrimaryPosition(lsn="1/00000100", at=datetime(2025, 1, 1, tzinfo=UTC))
    assert lag_of(primary, Position(lsn="1/00000040")) == {"replica_lsn": "1/00000040", "lag_bytes": 0xC0}
    # A replica reading ahead of the primary's sample (sampled a moment later) is not behind
    assert lag_of(primary, Position(lsn="1/00000200"))["lag_bytes"] == 0


def test_timestamp_lag_is_the_primary_clock_minus_the_replay_time():
    now = datetime(2025, 1, 1, 12, 0, 10, tzinfo=UTC)
    lag = lag_of(PrimaryPosition(lsn="0/1", at=now), Position(at=now - timedelta(seconds=2.5)))
    assert lag["lag_s"] == 2.5


def test_caught_up_by_lsn_or_by_a_replayed_commit_at_least_as_recent_as_the_marker():
    end = PrimaryPosition(lsn="0/5000", at=datetime(2025, 1, 1, 12, tzinfo=UTC))
    assert caught_up(end, Position(lsn="0/5000")) and not caught_up(end, Position(lsn="0/4FFF"))
    assert caught_up(end, Position(at=end.at)) and not caught_up(end, Position(at=end.at - timedelta(microseconds=1)))
    assert not caught_up(end, Position())


class FakeClock(CatchUpClock):
    def __init__(self):
        self.t = 0.0
        super().__init__(now=lambda: self.t, sleep=self._sleep)

    def _sleep(self, seconds: float) -> None:
        self.t += seconds


class Replaying:
    """A replica whose replay position advances by `rate` bytes per second of the fake clock."""

    def __init__(self, clock: FakeClock, start: int, rate: float):
        self.clock, self.start, self.rate = clock, start, rate

    def read(self) -> Position:
        position = self.start + int(self.rate * self.clock.t)
        return Position(lsn=f"{position >> 32:X}/{position & 0xFFFFFFFF:X}")


def probe(clock, name, start, rate, timeout_s=60) -> Probe:
    p = Probe(replica(name=name, timeout_s=timeout_s), method="replay_lsn")
    p.read = Replaying(clock, start, rate).read  # type: ignore[method-assign]  # a scripted replica instead of a connection
    return p


def test_catch_up_time_is_when_each_replica_reached_the_end_of_the_run():
    # Given the run ended at 0/A000 and two standbys 10,000 and 30,000 bytes behind, replaying 10,000 B/s
    clock = FakeClock()
    end = PrimaryPosition(lsn="0/A000", at=datetime(2025, 1, 1, tzinfo=UTC))
    fast, slow = probe(clock, "fast", 0xA000 - 10_000, 10_000), probe(clock, "slow", 0xA000 - 30_000, 10_000)
    seen = []
    # When pgarena waits for them, polling every 0.1 s
    done = wait_for_catch_up([fast, slow], end, lambda p, pos, err: seen.append((p.replica.name, pos)), clock, 0.1)
    # Then each caught up when its replay reached the end: 1 s and 3 s, to the polling resolution
    assert done["fast"][0] and done["fast"][1] == pytest.approx(1.0, abs=0.11)
    assert done["slow"][0] and done["slow"][1] == pytest.approx(3.0, abs=0.11)
    assert {name for name, _ in seen} == {"fast", "slow"}


def test_a_replica_that_never_catches_up_is_given_up_at_its_timeout():
    clock = FakeClock()
    end = PrimaryPosition(lsn="0/A000", at=datetime(2025, 1, 1, tzinfo=UTC))
    stuck = probe(clock, "stuck", 0, 0, timeout_s=5)
    done = wait_for_catch_up([stuck], end, lambda *a: None, clock, 0.5)
    assert done["stuck"] == (False, None, pytest.approx(5.0, abs=0.5))


def test_a_replica_that_errors_is_waited_for_until_its_timeout():
    clock = FakeClock()
    broken = Probe(replica(name="gone", timeout_s=2), method="replay_lsn")

    def fail() -> Position:
        raise ConnectionError("server closed the connection")

    broken.read = fail  # type: ignore[method-assign]  # a replica that stops answering
    errors = []
    done = wait_for_catch_up(
        [broken], PrimaryPosition(lsn="0/1", at=datetime.now(UTC)), lambda p, pos, err: errors.append(err), clock, 0.5
    )
    assert done["gone"][0] is False and "closed" in errors[0]


def test_a_replica_that_could_not_be_read_at_all_is_not_waited_for():
    clock = FakeClock()
    unreachable = Probe(replica(name="unreachable"), error="connection refused")
    done = wait_for_catch_up([unreachable], PrimaryPosition(lsn="0/1", at=datetime.now(UTC)), lambda *a: None, clock)
    assert done == {"unreachable": (False, None, 0.0)} and clock.t == 0


class Cursor:
    def __init__(self, answer):
        self.answer = answer

    def execute(self, sql, params=None):
        if isinstance(self.answer, Exception):
            raise self.answer

    def fetchone(self):
        return (self.answer,)


def test_a_managed_replica_is_read_by_lsn_where_the_service_answers_it():
    assert choose_method(replica(kind="managed"), Cursor("0/3000000")) == "replay_lsn"
    # Aurora-like: the function is refused, only the replay timestamp is left
    assert choose_method(replica(kind="managed"), Cursor(RuntimeError("not supported"))) == "replay_timestamp"
    assert choose_method(replica(kind="logical", subscription="sub"), Cursor(None)) == "subscription_lsn"


def test_a_physical_replica_that_is_not_in_recovery_is_an_error():
    with pytest.raises(RuntimeError, match="not in recovery"):
        choose_method(replica(kind="physical"), Cursor(None))


def catch_up(name, seconds, peak=1000):
    return ReplicaCatchUp(
        name=name,
        kind="physical",
        caught_up=seconds is not None,
        catch_up_s=seconds,
        waited_s=seconds or 60,
        timeout_s=60,
        peak_lag_bytes=peak,
    )


def test_the_slowest_replica_bounds_the_sustainable_throughput():
    result = replication_result([catch_up("a", 2.0), catch_up("b", 15 * 60.0)], 18_000_000, 1800.0, "raw/x.jsonl")
    assert result.catch_up_s == 900 and result.caught_up
    assert int(result.sustainable_tps) == 6_666
    assert all(r.lag_series == "raw/x.jsonl" for r in result.replicas)


def test_no_sustainable_figure_when_a_replica_never_caught_up():
    result = replication_result([catch_up("a", 2.0), catch_up("b", None)], 30_000, 30.0)
    assert not result.caught_up and result.catch_up_s is None and result.sustainable_tps is None


def test_peaks_are_per_replica():
    samples = [
        LagSample(t_s=0, stage="run", replica="a", lag_bytes=10),
        LagSample(t_s=1, stage="run", replica="a", lag_bytes=30),
        LagSample(t_s=1, stage="run", replica="b", lag_s=1.5),
    ]
    assert peaks(samples, "a") == (30, None) and peaks(samples, "b") == (None, 1.5)


def matrix(replicas, **target):
    return {
        "campaign": "rep",
        "targets": [{"name": "pg", "provider": "rds", "endpoint": {"host": "h", "user": "u"}, "replicas": replicas, **target}],
        "workloads": [{"name": "tpcb", "tool": "pgbench", "run": {"clients": [1, 2], "duration_s": 60}}],
    }


def test_a_logical_replica_names_its_subscription():
    with pytest.raises(ValueError, match="subscription"):
        parse_campaign(matrix([{"name": "sub", "kind": "logical", "endpoint": STANDBY}]))
    with pytest.raises(ValueError, match="subscription"):
        parse_campaign(matrix([{"name": "sb", "kind": "physical", "subscription": "s", "endpoint": STANDBY}]))


def test_replica_names_are_unique_within_a_target():
    twice = {"name": "sb", "kind": "physical", "endpoint": STANDBY}
    with pytest.raises(ValueError, match="unique"):
        parse_campaign(matrix([twice, twice]))


def test_runs_carry_the_replicas_and_wait_for_them_within_their_timeout():
    # Given a target with a standby that may take 10 minutes to catch up
    campaign = parse_campaign(matrix([{"name": "sb", "kind": "physical", "endpoint": STANDBY, "catch_up_timeout_s": 600}]))
    # When planned
    init, *runs = plan_campaign(campaign, "cid").targets[0].steps
    # Then every run knows the standby and its timeout leaves room for the catch-up; the load does not wait
    assert [r.replicas[0].name for r in runs] == ["sb", "sb"] and init.replicas == []
    assert all(r.timeout_s == 60 + RUN_TIMEOUT_MARGIN_S + 600 for r in runs)


def test_the_example_matrix_validates_and_asks_for_the_sustainable_ranking():
    campaign = load_campaign(Path(__file__).parents[2] / "examples" / "replication.json")
    assert {r.kind for t in campaign.targets for r in t.replicas} == {"physical", "logical"}
    assert campaign.ranking.weights["sustainable"] > 0


def replicated_target(name, tps, catch_up_s):
    transactions = int(tps * 60)
    runs = [
        WorkloadResult(
            name="tpcb",
            tool="pgbench",
            clients=clients,
            repetition=1,
            status="succeeded",
            tps=tps,
            transactions=transactions,
            replication=replication_result([catch_up("standby", catch_up_s)], transactions, 60.0),
        )
        for clients in (1, 8)
    ]
    return TargetResult(name=name, provider="self-hosted", status="succeeded", workloads=runs)


def test_the_ranking_weighs_sustainable_throughput_when_the_matrix_asks():
    # Given a primary that runs faster but whose standby lags far behind, and a slower pair that keeps up
    fast = replicated_target("fast", tps=1000, catch_up_s=60)  # sustains 500 tps
    steady = replicated_target("steady", tps=800, catch_up_s=0)  # sustains 800 tps
    # When ranked on sustainable throughput / by default
    asked = rank_targets([fast, steady], RankingConfig(weights={"sustainable": 1.0}))
    default = rank_targets([fast, steady])
    # Then the pair that keeps up wins only where the matrix asks for it
    assert [e.target for e in asked] == ["steady", "fast"]
    assert asked[1].metrics["sustainable"] == pytest.approx(500 / 800)
    assert default[0].target == "fast" and "sustainable" not in default[0].basis
