"""What a dead coordinator left running is stopped by the next run, and nothing else is."""

import os
import signal
import subprocess

import pytest

from pgarena.local.children import CHILDREN_FILE, Children, reap, remove_labelled_container
from pgarena.local.containers import COORDINATOR_LABEL, coordinator_label
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
    messages = reap(tmp_path, remove_container=lambda name, label: removed.append(name) or label == coordinator_label(gone))
    assert removed == ["pgarena-worker-abc"]
    assert messages == [
        f"removed container pgarena-worker-abc left running by campaign crashed, whose coordinator (pid {gone.pid}) is gone"
    ]


# Issue 34.5: the records are trusted only as far as who could have written them.


def _no_signal():
    signalled = []
    return signalled, {"kill": lambda *a: signalled.append(a), "killpg": lambda *a: signalled.append(a)}


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757])
def test_records_in_a_folder_others_may_write_are_never_acted_on(tmp_path, sleeper, mode, caplog):
    # Given a dead coordinator's record of a running process, in a campaign folder other users may write in
    folder = tmp_path / "planted"
    _record(folder, identity(sleeper.pid), _dead_coordinator(), program(sleeper.pid))
    folder.chmod(mode)
    signalled, stubs = _no_signal()
    removed = []
    # When the next run reaps
    messages = reap(tmp_path, **stubs, remove_container=lambda *a: removed.append(a) or True)
    # Then nothing is signalled, the record is left (not ours to delete) and the refusal is logged
    assert messages == [] and signalled == [] and removed == [] and sleeper.poll() is None
    assert (folder / CHILDREN_FILE).exists()
    assert "writable by other users" in caplog.text


def test_a_record_file_others_may_write_or_own_is_never_acted_on(tmp_path, sleeper):
    folder = tmp_path / "planted"
    _record(folder, identity(sleeper.pid), _dead_coordinator(), program(sleeper.pid))
    (folder / CHILDREN_FILE).chmod(0o666)
    signalled, stubs = _no_signal()
    assert reap(tmp_path, **stubs) == [] and signalled == []
    (folder / CHILDREN_FILE).chmod(0o600)
    os.chown(folder / CHILDREN_FILE, 65534, 65534)  # another user's (nobody's)
    assert reap(tmp_path, **stubs) == [] and signalled == [] and sleeper.poll() is None


def test_a_record_file_that_is_a_symlink_is_never_followed(tmp_path, sleeper):
    elsewhere = tmp_path / "elsewhere"
    _record(elsewhere, identity(sleeper.pid), _dead_coordinator(), program(sleeper.pid))
    folder = tmp_path / "out" / "planted"
    folder.mkdir(parents=True)
    (folder / CHILDREN_FILE).symlink_to(elsewhere / CHILDREN_FILE)
    signalled, stubs = _no_signal()
    assert reap(tmp_path / "out", **stubs) == [] and signalled == [] and sleeper.poll() is None


def test_a_process_of_another_owner_is_never_signalled(tmp_path, sleeper):
    # Given a record whose pid, start and program match but whose recorded owner is another uid
    folder = tmp_path / "crashed"
    _record(folder, identity(sleeper.pid), _dead_coordinator(), program(sleeper.pid))
    record = ChildRecord.model_validate_json((folder / CHILDREN_FILE).read_text())
    (folder / CHILDREN_FILE).write_text(record.model_copy(update={"uid": os.geteuid() + 4242}).model_dump_json() + "\n")
    signalled, stubs = _no_signal()
    assert reap(tmp_path, **stubs) == [] and signalled == [] and sleeper.poll() is None


def test_a_record_names_its_processs_owner(tmp_path, sleeper):
    Children(tmp_path).add("campaign", "worker", sleeper.pid, group=True)
    record = ChildRecord.model_validate_json((tmp_path / "campaign" / CHILDREN_FILE).read_text())
    assert record.uid == os.geteuid()


def _docker(labels: dict[str, str]):
    calls = []

    def docker(*args):
        calls.append(args)
        if args[0] == "inspect":
            name = args[-1]
            return subprocess.CompletedProcess(args, 0 if name in labels else 1, stdout=labels.get(name, "") + "\n", stderr="")
        return subprocess.CompletedProcess(args, 0, stdout="", stderr="")

    return docker, calls


def test_a_container_is_removed_only_with_pgarenas_label_naming_the_coordinator():
    gone = _dead_coordinator()
    label = coordinator_label(gone)
    docker, calls = _docker({"pgarena-worker-ours": label, "victim-db": "", "other-run": coordinator_label(me())})
    # A container pgarena started for that coordinator is removed
    assert remove_labelled_container("pgarena-worker-ours", label, docker)
    # Any other (no label: someone's database; another coordinator's; one that does not exist) is not
    assert not remove_labelled_container("victim-db", label, docker)
    assert not remove_labelled_container("other-run", label, docker)
    assert not remove_labelled_container("missing", label, docker)
    removed = [c[-1] for c in calls if c[0] == "rm"]
    assert removed == ["pgarena-worker-ours"]
    assert all(COORDINATOR_LABEL in " ".join(c) for c in calls if c[0] == "inspect")
