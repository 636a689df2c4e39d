import json
import re
from pathlib import Path

import pytest

from pgarena.model.errors import (
    RAISED,
    Caught,
    ErrorInfo,
    ErrorKind,
    ToolExit,
    WorkerStopped,
    error_info,
    failure,
    with_hint,
)


@pytest.mark.parametrize(
    "text, kind",
    [
        (
            'pgbench: error: connection to server at "nope.invalid", port 5432 failed: could not translate host name "nope.invalid" to address',
            "dns_failure",
        ),
        ("FATAL:  sorry, too many clients already", "too_many_clients"),
        ("FATAL:  remaining connection slots are reserved for non-replication superuser connections", "too_many_clients"),
        ('connection to server at "127.0.0.1", port 1 failed: Connection refused', "connection_refused"),
        ("server closed the connection unexpectedly", "server_closed_connection"),
        ('FATAL:  password authentication failed for user "bench"', "authentication"),
        ("ERROR:  canceling statement due to statement timeout", "statement_timeout"),
        ("PANIC: could not write to file: No space left on device", "disk_full"),
        ("ERROR:  no more connections allowed (max_client_conn)", "pooler_refused"),
        ("all good", "tool_failed"),
    ],
)
def test_a_drivers_or_tools_text_names_its_kind(text, kind):
    assert error_info(text, ErrorKind.TOOL_FAILED).kind == kind


def test_failure_class_name_spells_the_kind():
    error = failure("too_many_clients", "full")
    assert type(error).__name__ == "TooManyClients" and error.kind == "too_many_clients"


def test_lambda_error_becomes_kind_and_message():
    cause = json.dumps({"errorType": "BudgetRefused", "errorMessage": "needs 9, has 5"})
    info = error_info(Caught({"Error": "BudgetRefused", "Cause": cause}))
    assert (info.kind, info.message) == ("budget_refused", "needs 9, has 5")


def test_worker_failure_keeps_raw_pointer():
    cause = json.dumps({"errorType": "dns_failure", "errorMessage": "could not translate", "raw": "c/raw/x.log"})
    info = error_info(Caught({"Error": "dns_failure", "Cause": cause}))
    assert (info.kind, info.raw) == ("dns_failure", "c/raw/x.log")


def test_heartbeat_timeout_means_worker_lost():
    assert error_info(Caught({"Error": "States.HeartbeatTimeout", "Cause": ""})).kind == "worker_lost"


# --- one declared set of kinds: code, state machine and the failures guide agree ----------------------------------

ROOT = Path(__file__).resolve().parents[2]


def _error_equals(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "ErrorEquals":
                yield from value
            else:
                yield from _error_equals(value)
    elif isinstance(node, list):
        for item in node:
            yield from _error_equals(item)


def test_every_error_the_state_machine_matches_is_a_declared_exception():
    names = set(_error_equals(json.loads((ROOT / "statemachines" / "campaign.asl.json").read_text())))
    ours = {name for name in names if not name.startswith(("States.", "Lambda."))}
    assert ours and ours <= {cls.__name__ for cls in RAISED.values()}


def test_each_raised_exception_is_named_for_its_kind():
    for kind, cls in RAISED.items():
        assert cls.__name__ == "".join(part.capitalize() for part in kind.split("_"))
        assert failure(kind, "m").info().kind == kind


def test_the_failures_guide_documents_exactly_the_declared_kinds():
    guide = (ROOT / "docs" / "guide" / "07-failures.md").read_text()
    section = guide[guide.index("| kind | meaning |") :]
    documented = set(re.findall(r"`([a-z_]+)`", section))
    assert documented == {kind.value for kind in ErrorKind}


def test_a_poolers_refusal_is_its_own_kind_with_the_hint_to_declare_the_pooler():
    # Given pgbench refused by an undeclared pgbouncer
    text = 'pgbench: error: connection to server at "127.0.0.1", port 6432 failed: ERROR:  no more connections allowed (max_client_conn)'
    # When the step's failure is classified
    error = error_info(ToolExit("pgbench", 1, text, [text], 300))
    # Then it is pooler_refused, not tool_failed, and says what to do
    assert error.kind == "pooler_refused"
    assert 'declare it in the target\'s "pooler"' in error.message


def test_a_hint_is_added_once():
    once = with_hint("pooler_refused", "refused")
    assert with_hint("pooler_refused", once) == once and with_hint("tool_failed", "x") == "x"


def test_every_source_of_a_failure_gets_its_kind_from_one_entry_point():
    # An exception pgarena raised, and the same failure handed back by a Catch from the worker's Cause
    raised = error_info(failure("disk_full", "full", raw="c/raw/x.log"))
    assert (raised.kind, raised.message, raised.raw) == ("disk_full", "full", "c/raw/x.log")
    assert error_info(Caught({"Error": raised.kind, "Cause": raised.cause()})) == raised
    # A SIGTERM in a worker, and any other exception (a crash)
    stopped = error_info(WorkerStopped(raw="c/raw/pgbench.log"))
    assert (stopped.kind, stopped.raw) == ("worker_stopped", "c/raw/pgbench.log")
    assert error_info(KeyError("step")).model_dump() == {"kind": "worker_crashed", "message": "KeyError: 'step'", "raw": None}
    # A tool's exit: killed at the timeout, a classified error line, or the exit code when it printed nothing
    assert error_info(ToolExit("pgbench", -9, "", [], 300)).message == "pgbench ran past the step's 300 s timeout and was killed"
    refused = error_info(ToolExit("pgbench", 1, "x\nConnection refused\n", [], 300))
    assert (refused.kind, refused.message) == ("connection_refused", "x | Connection refused")
    assert error_info(ToolExit("sysbench", 2, "")).model_dump() == {
        "kind": "tool_failed",
        "message": "sysbench exited with code 2",
        "raw": None,
    }
    # A Catch: a state timing out is a timeout, unless a worker's step wrote no summary: then the worker was lost
    timed_out = {"Error": "States.Timeout", "Cause": ""}
    assert error_info(Caught(timed_out)).model_dump() == {"kind": "timeout", "message": "States.Timeout", "raw": None}
    lost = error_info(Caught(timed_out, worker_timeouts_s=(60, 900)))
    assert lost.kind == "worker_lost" and "no heartbeat for 60 s or past the step's 900 s" in lost.message
    # A worker's stopped task reported at once (task_stopped's WorkerLost) keeps its message: ECS's reason
    stopped_task = ErrorInfo(kind=ErrorKind.WORKER_LOST, message="the worker's task stopped while its step ran (exit code 137)")
    caught = Caught({"Error": "WorkerLost", "Cause": stopped_task.cause()}, worker_timeouts_s=(60, 900))
    assert error_info(caught) == stopped_task
    # A driver's text that names no kind gets the caller's, and the message it is given
    assert error_info("boom", ErrorKind.PREFLIGHT_FAILED, "reading settings failed: boom").model_dump() == {
        "kind": "preflight_failed",
        "message": "reading settings failed: boom",
        "raw": None,
    }
