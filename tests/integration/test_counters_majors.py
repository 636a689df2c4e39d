"""The counters reader on every major pgarena supports (the embedded wheel's and Debian's 15), as a role
with no privilege at all and as the benchmark role (pg_read_all_stats): each view read, or listed as
unreadable with the reason; never an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgarena.local.embedded import EmbeddedProcess
from pgarena.server.counters import read_counters
from pgarena.server.postgres import connect

pytestmark = pytest.mark.integration

DEBIAN_BIN = max(Path("/usr/lib/postgresql").glob("*/bin"), default=Path("/usr/lib/postgresql/15/bin"))
NOBODY = "nobody_in_particular"


@pytest.fixture(scope="module", params=["embedded", "debian"])
def server(request):
    server = EmbeddedProcess(f"counters-{request.param}", {}, bin_dir=DEBIAN_BIN if request.param == "debian" else None)
    endpoint = server.start()
    with connect(endpoint) as conn:  # the superuser's: a plain role, and a table of the benchmark's
        cursor = conn.cursor()
        cursor.execute(f"create role {NOBODY} login")
        cursor.execute(f"grant create on schema public to {NOBODY}")
    yield endpoint.model_copy(update={"user": NOBODY})
    server.stop()


def test_a_role_without_privileges_reads_every_view_its_major_has(server):
    with connect(server, application_name="setup") as conn:
        conn.cursor().execute("create table if not exists bench (id int primary key, v int)")
        conn.cursor().execute("insert into bench select g, g from generate_series(1, 1000) g on conflict do nothing")
    snapshot = read_counters(server, "nobody-runs", "pgarena-test/counters", wait_gone_s=1.0)
    assert snapshot is not None
    major = snapshot.server_version_num // 10000
    assert major in (15, 18) and snapshot.database is not None and snapshot.database.xact_commit > 0
    # Checkpoints from pg_stat_bgwriter (<= 16) or pg_stat_checkpointer (17+), under the same names
    checkpoints = snapshot.checkpoints
    assert checkpoints is not None and checkpoints.checkpoints_timed is not None and checkpoints.checkpoints_req is not None
    assert (checkpoints.buffers_backend is None) == (major >= 17)
    assert snapshot.wal is not None and snapshot.wal.wal_bytes > 0
    if major >= 16:
        assert snapshot.io is not None and snapshot.io.hits > 0 and "io" not in snapshot.unreadable
    else:
        assert snapshot.io is None and snapshot.unreadable == {"io": "pg_stat_io is new in PostgreSQL 16"}
    [table] = [t for t in snapshot.tables if t.table == "public.bench"]
    assert table.n_live_tup is not None and table.autovacuum_count is not None
    assert snapshot.shared_buffers_bytes == 128 << 20
    assert snapshot.database_size_bytes > 0 and set(snapshot.settings) == {
        "shared_buffers",
        "max_wal_size",
        "checkpoint_timeout",
        "work_mem",
    }


def test_an_unreachable_server_gives_no_snapshot(server):
    assert read_counters(server.model_copy(update={"port": 1}), "x", "pgarena-test/counters") is None
