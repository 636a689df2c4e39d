from pgarena.campaign.step.summary import with_lock_waits
from pgarena.model.errors import ErrorInfo
from pgarena.model.monitor import ActivitySample
from pgarena.server.monitor import detect_drops, lock_waits_of, report_of, sample_of


def sample(t, benchmark, total=None):
    return ActivitySample(
        t_s=t,
        total=total or benchmark,
        benchmark=benchmark,
        by_state={"active": benchmark},
        by_role={"bench": benchmark},
        longest_s_by_state={"active": 0.1},
    )


def test_sample_counts_by_state_role_and_the_benchmarks_own():
    rows = [
        ("bench", "active", "pgarena/x", 0.5),
        ("bench", "idle in transaction", "pgarena/x", 2.0),
        ("rdsadmin", "idle", "", 300.0),
    ]
    s = sample_of(rows, "pgarena/x", 1.0)
    assert (s.total, s.benchmark) == (3, 2)
    assert s.by_state == {"active": 1, "idle in transaction": 1, "idle": 1}
    assert s.by_role == {"bench": 2, "rdsadmin": 1}
    assert s.longest_s_by_state["idle"] == 300.0


def test_collapse_mid_run_is_an_incident():
    # Given 950 connections falling to 628 within one interval (the Azure study)
    incidents = detect_drops([sample(0, 950), sample(5, 950), sample(10, 628), sample(15, 630)])
    (incident,) = incidents
    assert incident.kind == "connection_drop" and "950 to 628" in incident.message


def test_connections_closing_at_the_end_are_not_a_collapse():
    assert detect_drops([sample(0, 8), sample(1, 8), sample(2, 0)]) == []


def test_report_keeps_peaks():
    report = report_of([sample(0, 3, 5), sample(1, 8, 9), sample(2, 8, 9)], 1.0, [])
    assert (report.peak_benchmark, report.peak_total, report.samples) == (8, 9, 3)
    assert report.peak_by_state == {"active": 8}


def test_a_timed_out_step_names_the_lock_its_sessions_waited_on_and_who_held_it():
    # Given the monitor saw 8 benchmark sessions waiting on a relation lock held by pid 4242
    waiting = sample(10.0, 8)
    waiting.lock_waits = lock_waits_of([("Lock:relation", 4242, "lock table pgbench_accounts in access exclusive mode", 8)])
    report = report_of([sample(5.0, 8), waiting, sample(15.0, 8)], 5.0, [])
    # When the step timed out
    timeout = ErrorInfo(kind="timeout", message="pgbench ran past the step's 308 s timeout and was killed")
    error = with_lock_waits(timeout, report)
    # Then the error says who waited on what, and who held it
    assert "8 session(s) waiting on Lock:relation, blocked by pid 4242" in error.message
    assert "lock table pgbench_accounts in access exclusive mode" in error.message
    # And other failures are left as they were
    refused = ErrorInfo(kind="connection_refused", message="refused")
    assert with_lock_waits(refused, report) == refused


def test_other_clients_sessions_are_recorded_as_background_load():
    # Given a step's sessions, its campaign's monitor and other shard, its worker's own check, and other clients
    step = "pgarena/aaaaaaaaaaaa/bbbbbbbbbbbb"
    rows = [
        ("bench", "active", step, 0.1),
        ("bench", "active", "pgarena/aaaaaaaaaaaa/cccccccccccc", 0.1),  # another shard of the step
        ("bench", "idle", "pgarena/aaaaaaaaaaaa/monitor", 0.1),
        ("bench", "idle", "pgarena-replication", 0.1),
        ("bench", "active", "pgarena/ffffffffffff/dddddddddddd", 0.2),  # another campaign's load
        ("bench", "active", "pgarena/eeeeeeeeeeee/identify", 0.0),  # a waiting campaign's one query: no load
        ("app", "idle in transaction", "", 3.0),
        ("tenant", "idle", "psql", 9.0),
        ("other", "unknown", "", 1.0),  # a state the role may not see
    ]
    s = sample_of(rows, step, 1.0)
    # Then four sessions are others', two of them working
    assert (s.background, s.background_active) == (4, 2)
    assert s.background_by_name == {"pgarena/ffffffffffff/dddddddddddd": 1, "(app)": 1, "psql": 1, "(other)": 1}
    # And the report keeps the peaks, and says so in a note for the verdict
    quiet = sample_of([("bench", "active", step, 0.1)], step, 2.0)
    report = report_of([s, quiet], 1.0, [])
    assert (report.peak_background, report.peak_background_active) == (4, 2)
    note = report.background_note()
    assert note is not None and "background load: up to 2 session(s)" in note and "pgarena/ffffffffffff/dddddddddddd 1" in note
    assert report_of([quiet], 1.0, []).background_note() is None


def test_a_step_seen_waiting_on_a_lock_carries_how_long_and_on_what():
    # Given a load seen waiting on pid 4242's table lock in 3 samples of 5 taken every 2 s
    blocked = lock_waits_of([("Lock:relation", 4242, "lock table pgbench_branches in access exclusive mode", 1)])
    samples = [sample(0.0, 1), *(sample(t, 1) for t in (2.0, 4.0, 6.0)), sample(8.0, 1)]
    for waiting in samples[1:4]:
        waiting.lock_waits = blocked
    # When the monitor reports the load
    report = report_of(samples, 2.0, [], run=False)
    # Then the report says for how long, from when, and who held the lock
    assert report.lock_wait_s == 6.0
    (incident,) = [i for i in report.incidents if i.kind == "lock_wait"]
    assert incident.at_s == 2.0 and "about 6.0 s" in incident.message
    assert "blocked by pid 4242" in incident.message and "lock table pgbench_branches" in incident.message
    # And a run's clients waiting on each other's row locks are counted, not an incident (the hot-row finding reads them)
    as_run = report_of(samples, 2.0, [])
    assert as_run.lock_wait_s == 6.0 and as_run.lock_waits and not [i for i in as_run.incidents if i.kind == "lock_wait"]


def test_a_step_that_never_waited_has_no_lock_wait():
    report = report_of([sample(0.0, 1), sample(1.0, 1)], 1.0, [])
    assert report.lock_wait_s == 0.0 and not [i for i in report.incidents if i.kind == "lock_wait"]


def test_a_loads_connections_closing_as_it_goes_are_no_collapse():
    # Given sysbench prepare's 4 threads finishing their tables one after the other
    samples = [sample(0, 4), sample(1, 4), sample(2, 2), sample(3, 1), sample(4, 0)]
    # When the load's report is made / Then no connection_drop (a run's would have one)
    assert not report_of(samples, 1.0, [], run=False).incidents
    assert {i.kind for i in report_of(samples, 1.0, []).incidents} == {"connection_drop"}
