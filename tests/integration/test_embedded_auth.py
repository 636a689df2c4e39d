"""Issue 15.2: an embedded target's server admits only pgarena, and runs with no more than its own group."""

import os

import pg8000.dbapi
import pytest

from pgarena.local.embedded import EmbeddedProcess

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server():
    # Given an embedded server started as the local runtime starts its targets
    pg = EmbeddedProcess("auth", {}, password_auth=True)
    endpoint = pg.start()
    yield pg, endpoint
    pg.stop()


def test_a_connection_without_the_password_is_refused(server):
    # When another local user connects over TCP with a guessed password
    _, endpoint = server
    with pytest.raises(pg8000.dbapi.DatabaseError) as refused:
        pg8000.dbapi.connect(host=endpoint.host, port=endpoint.port, user="postgres", database="postgres", password="guess")
    # Then the server refuses it
    assert "password authentication failed" in str(refused.value)


def test_pgarena_connects_with_the_generated_password(server):
    _, endpoint = server
    conn = pg8000.dbapi.connect(
        host=endpoint.host,
        port=endpoint.port,
        user=endpoint.user,
        database=endpoint.dbname,
        password=os.environ[endpoint.password_env],
    )
    cursor = conn.cursor()
    cursor.execute("select current_setting('password_encryption')")
    assert cursor.fetchone()[0] == "scram-sha-256"
    conn.close()


def test_the_server_process_has_no_supplementary_groups_and_no_secrets(server):
    # When the server runs a program (as COPY ... FROM PROGRAM would)
    pg, endpoint = server
    conn = pg8000.dbapi.connect(
        host=endpoint.host, port=endpoint.port, user="postgres", database="postgres", password=pg.admin_password
    )
    conn.autocommit = True
    cursor = conn.cursor()
    cursor.execute("create temp table seen(line text)")
    cursor.execute("copy seen from program 'id -G; env'")
    cursor.execute("select line from seen")
    groups, *env = [row[0] for row in cursor.fetchall()]
    conn.close()
    # Then it has only its own user's group, and none of this process's credentials
    expected = str(pg.user.gid) if pg.user else str(os.getgid())
    assert groups.split() == [expected] if pg.user else expected in groups.split()
    assert not [line for line in env if line.startswith(("AWS_", "PGARENA_", "PGPASSWORD"))]
