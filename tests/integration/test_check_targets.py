"""Issue 34.14: every target's connection, authentication and budget are checked before any target's
load starts: a wrong password on the second target fails the campaign before the first one loads,
naming the target and the environment variable to fix."""

from __future__ import annotations

import pg8000.dbapi
import pytest

from pgarena.local.embedded import EmbeddedProcess
from pgarena.local.runtime import run_local
from pgarena.planning.campaign import parse_campaign

pytestmark = pytest.mark.integration

WRONG_PASSWORD_ENV = "PGARENA_TEST_WRONG_PW"
FAST = {"fsync": "off", "synchronous_commit": "off"}


@pytest.fixture(scope="module")
def servers():
    trusting = EmbeddedProcess("first", FAST)  # trusts local connections: no password needed
    guarded = EmbeddedProcess("second", FAST, password_auth=True)
    first, second = trusting.start(), guarded.start()
    yield first, second
    guarded.stop()
    trusting.stop()


def tables_of(endpoint) -> list[str]:
    conn = pg8000.dbapi.connect(host=endpoint.host, port=endpoint.port, user=endpoint.user, database=endpoint.dbname)
    cursor = conn.cursor()
    cursor.execute("select tablename from pg_tables where tablename like 'pgbench%%'")
    names = [row[0] for row in cursor.fetchall()]
    conn.close()
    return names


def test_a_wrong_password_on_the_second_target_fails_before_the_first_loads(servers, tmp_path, monkeypatch):
    # Given two targets, the second's password variable holding a wrong password
    first, second = servers
    monkeypatch.setenv(WRONG_PASSWORD_ENV, "not-the-password")
    wrong = second.model_copy(update={"password_env": WRONG_PASSWORD_ENV})
    campaign = parse_campaign(
        {
            "campaign": "checked",
            "targets": [
                {"name": "first", "provider": "self-hosted", "endpoint": first.model_dump(exclude_none=True)},
                {"name": "second", "provider": "self-hosted", "endpoint": wrong.model_dump(exclude_none=True)},
            ],
            "workloads": [
                {
                    "name": "tpcb",
                    "tool": "pgbench",
                    "init": {"scale": 1},
                    "run": {"clients": 1, "jobs": 1, "duration_s": 1},
                }
            ],
        }
    )
    # When the campaign runs
    run = run_local(campaign, tmp_path)
    # Then it fails naming the second target and the variable to fix
    assert run.status == "FAILED"
    assert run.error and "target second" in run.error and WRONG_PASSWORD_ENV in run.error, run.error
    # And no target loaded: no load step ran, the first server has no pgbench table
    folder = tmp_path / run.campaign_id
    assert not list(folder.glob("raw/*/tpcb/init/summary.json"))
    assert tables_of(first) == []
