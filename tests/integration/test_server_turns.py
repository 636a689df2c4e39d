"""Issue 34, findings 1 and 2, at preflight against one real server listening on 127.0.0.1, 127.0.0.2 and
::1: campaigns reaching it through different addresses take it in turns (one lease, not three), and
waiters queue in arrival order without counting each other's sessions (no deadlock, no refusal)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pg8000.dbapi
import pytest

from pgarena.campaign.leases import holder_id
from pgarena.campaign.preflight import _lease_budget
from pgarena.local.leases import FileLeases
from pgarena.model.plan import PlannedTarget, PreflightResult, campaign_tag
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from tests.loopback import listening_on_every_address

pytestmark = pytest.mark.integration

MAX_CONNECTIONS = 22
# What each campaign may hold: 22 (the role is a superuser: no reserved slots) - 2 for pgarena - margin 2.
CAPACITY = MAX_CONNECTIONS - 2 - 2
WAIT_S = 120  # lease_wait_s: generous; the fixed code waits only for the holder's release
DEADLINE_S = 60


@pytest.fixture(scope="module")
def server():
    pg = listening_on_every_address("turns", MAX_CONNECTIONS)
    yield pg.endpoint.port
    pg.stop()


def planned(campaign_id: str, host: str, port: int, clients: int) -> PlannedTarget:
    matrix = {
        "campaign": campaign_id,
        "connections": {"policy": "fail", "safety_margin": 2, "lease_wait_s": WAIT_S},
        "targets": [
            {
                "name": "shared",
                "provider": "self-hosted",
                "endpoint": {"host": host, "port": port, "user": "postgres", "dbname": "postgres", "sslmode": "disable"},
            }
        ],
        "workloads": [{"name": "sel", "tool": "pgbench", "init": {"scale": 1}, "run": {"clients": clients, "duration_s": 2}}],
    }
    return plan_campaign(parse_campaign(matrix), campaign_id).targets[0]


class Preflight:
    """One target's preflight in a thread: when it took the lease (or how it failed)."""

    def __init__(self, campaign_id: str, target: PlannedTarget, leases: FileLeases):
        self.campaign_id, self.target, self.leases = campaign_id, target, leases
        self.result: PreflightResult | None = None
        self.error: BaseException | None = None
        self.taken_at: float | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.result = _lease_budget(self.target, self.campaign_id, self.leases)
            self.taken_at = time.monotonic()
        except BaseException as error:
            self.error = error

    @property
    def done(self) -> bool:
        return not self.thread.is_alive()

    def release(self) -> float:
        assert self.result is not None and self.result.lease_key is not None, self.error
        released_at = time.monotonic()
        self.leases.release(self.result.lease_key, holder_id(self.campaign_id, self.target.name))
        return released_at


def wait_until(condition, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"waited {DEADLINE_S} s for {what}"
        time.sleep(0.05)


def arrived(preflight: Preflight, lease_dir: Path, port: int) -> bool:
    """The preflight is waiting (queued in the lease files, or its session open on the server) or done."""
    if preflight.done:
        return True
    holder = holder_id(preflight.campaign_id, preflight.target.name)
    for path in lease_dir.glob("*.json"):
        if any(w.get("holder") == holder for w in json.loads(path.read_text()).get("queue", [])):
            return True
    conn = pg8000.dbapi.connect(host="127.0.0.1", port=port, user="postgres", database="postgres", application_name="observer")
    try:
        cursor = conn.cursor()
        cursor.execute(
            "select count(*) from pg_stat_activity where application_name = %s",
            (campaign_tag(preflight.campaign_id) + "/preflight",),
        )
        return bool(cursor.fetchone()[0])
    finally:
        conn.close()


def test_two_campaigns_through_two_addresses_never_hold_the_server_together(server, tmp_path):
    # Given one campaign holding the server through 127.0.0.1, for a load that fits with room to spare
    leases = FileLeases(tmp_path / "leases")
    first = Preflight("turns-first", planned("turns-first", "127.0.0.1", server, 4), leases)
    wait_until(lambda: first.done, "the first campaign's lease")
    assert first.error is None, first.error
    # When a second campaign preflights the same server through ::1 while the first holds it
    second = Preflight("turns-second", planned("turns-second", "::1", server, 4), leases)
    wait_until(lambda: arrived(second, tmp_path / "leases", server), "the second campaign to arrive")
    released_at = first.release()
    wait_until(lambda: second.done, "the second campaign's lease")
    # Then it took the server only once the first gave it back: one lease key for both addresses
    assert second.error is None, second.error
    assert second.taken_at is not None and second.taken_at > released_at
    assert first.result is not None and second.result is not None
    assert second.result.lease_key == first.result.lease_key
    assert second.result.server.system_identifier and second.result.lease_key.startswith("pg-")
    assert second.result.server.lease_waited_s > 0
    second.release()


def test_three_waiters_take_the_server_in_turns_and_none_is_refused(server, tmp_path):
    # Given three campaigns that each need all 18 connections the server can give one campaign (one address:
    # the first test is about addresses), the first holding it and the others arriving in turn while it does
    leases = FileLeases(tmp_path / "leases")
    lease_dir = tmp_path / "leases"
    names = [f"turns-{n}" for n in ("a", "b", "c")]
    a = Preflight(names[0], planned(names[0], "127.0.0.1", server, CAPACITY), leases)
    wait_until(lambda: a.done, "the first campaign's lease")
    assert a.error is None, a.error
    b = Preflight(names[1], planned(names[1], "127.0.0.1", server, CAPACITY), leases)
    wait_until(lambda: arrived(b, lease_dir, server), "the second campaign to arrive")
    c = Preflight(names[2], planned(names[2], "127.0.0.1", server, CAPACITY), leases)
    wait_until(lambda: arrived(c, lease_dir, server), "the third campaign to arrive")
    # When the first gives it back, and each next one as soon as it holds it
    a_released = a.release()
    wait_until(lambda: b.done, "the second campaign's lease")
    assert b.error is None, b.error  # not refused: the server was idle but for waiters
    b_released = b.release()
    wait_until(lambda: c.done, "the third campaign's lease")
    assert c.error is None, c.error
    c.release()
    # Then they held it one after the other, in arrival order, each with every connection it asked for
    assert b.taken_at is not None and c.taken_at is not None
    assert a_released < b.taken_at < b_released < c.taken_at
    for preflight in (a, b, c):
        assert preflight.result is not None
        assert preflight.result.server.allowed == CAPACITY and not preflight.result.server.clamped
    # And nothing is left in the queue or held
    (record,) = [json.loads(p.read_text()) for p in lease_dir.glob("*.json")]
    assert record["holders"] == [] and record["queue"] == []
