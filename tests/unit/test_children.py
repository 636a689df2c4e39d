"""What a dead coordinator left running is stopped by the next run, and nothing else is."""

import signal
import subprocess

import pytest

from pgarena.local.children import CHILDREN_FILE, Children, reap
from pgarena.model.process import ChildRecord, ProcessIdentity
from pgarena.system.processes import identity, me, program


@pytest.fixture
def sleeper():
    process = subprocess.Popen(["sleep", "300"], start_new_session=True)
    yield process
    process.kill()
    process.wait()


def _dead_coordinator() -> ProcessIdentity:
    gone = subprocess.Popen(["true"])
    gone.wait()
    return ProcessIdentity(pid=gone.pid, host=me().host, started="boot:1")


def _record(folder, process: ProcessIdentity, coordinator: ProcessIdentity, program_name: str, what="worker") -> None:
    record = ChildRecord(
        what=what, campaign_id=folder.name, process=process, coordinator=coordinator, program=program_name, group=what == "worker"
    )
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / CHILDREN_FILE).open("a") as out:
        out.write(record.model_dump_json() + "\n")


def test_a_dead_coordinators_worker_is_stopped_with_a_message(tmp_path, sleeper):
    # Given a campaign folder recording a running worker whose coordinator died (a damaged line beside it)
    folder = tmp_path / "crashed-20240101"
    _record(folder, identity(sleeper.pid), _dead_coordinator(), program(sleeper.pid))
    with (folder / CHILDREN_FILE).open("a") as out:
        out.write('{"what": "wor')
    # When the next run starts in the same results folder
    messages = reap(tmp_path)
    # Then the worker's process group is killed, and the message names the process and the campaign
    assert sleeper.wait(timeout=60) == -signal.SIGKILL
    (message,) = messages
    assert f"pid {sleeper.pid}" in message and "crashed-20240101" in message
    assert not (folder / CHILDREN_FILE).exists()


def test_a_reused_pid_is_never_signalled(tmp_path, sleeper):
    # Given a record of this pid with another start time (the recorded process ended, the pid was reused)
    folder = tmp_path / "crashed"
    reused = identity(sleeper.pid).model_copy(update={"started": "another-boot:7"})
    _record(folder, reused, _dead_coordinator(), program(sleeper.pid))
    signalled = []
    # When the next run reaps / Then nothing is signalled and the process runs on
    assert reap(tmp_path, kill=lambda *a: signalled.append(a), killpg=lambda *a: signalled.append(a)) == []
    assert signalled == [] and sleeper.poll() is None


def test_a_process_running_another_program_is_never_signalled(tmp_path, sleeper):
    folder = tmp_path / "crashed"
    _record(folder, identity(sleeper.pid), _dead_coordinator(), "postgres", what="postmaster")
    signalled = []
    assert reap(tmp_path, kill=lambda *a: signalled.append(a), killpg=lambda *a: signalled.append(a)) == []
    assert signalled == []


def test_a_live_campaigns_children_are_left_alone(tmp_path, sleeper):
    # Given a folder whose coordinator (this process) still runs
    children = Children(tmp_path)
    children.add("running-campaign", "worker", sleeper.pid, group=True)
    signalled = []
    # When another run starts in the same results folder / Then it leaves them, record included
    assert reap(tmp_path, kill=lambda *a: signalled.append(a), killpg=lambda *a: signalled.append(a)) == []
    assert signalled == [] and (tmp_path / "running-campaign" / CHILDREN_FILE).exists()
    # And the coordinator's own close drops its records once it stopped them
    children.close()
    assert not (tmp_path / "running-campaign" / CHILDREN_FILE).exists()


def test_a_dead_coordinators_container_is_removed(tmp_path):
    folder = tmp_path / "crashed"
    gone = _dead_coordinator()
    _record(folder, gone, gone, "docker")
    record = ChildRecord.model_validate_json((folder / CHILDREN_FILE).read_text())
    (folder / CHILDREN_FILE).write_text(record.model_copy(update={"container": "pgarena-worker-abc"}).model_dump_json() + "\n")
    removed = []
    messages = reap(tmp_path, remove_container=lambda name: removed.append(name) or True)
    assert removed == ["pgarena-worker-abc"]
    assert messages == [
        f"removed container pgarena-worker-abc left running by campaign crashed, whose coordinator (pid {gone.pid}) is gone"
    ]
