"""Issue 34.6: an embedded server's OS user and folder are marked before they are made, and a mark whose
maker is gone (a coordinator killed by SIGKILL) is reaped by the next run; nothing a mark does not name, or
that is not pgarena's, is touched."""

import os
import subprocess

import pytest

from pgarena.local import server_marks
from pgarena.local.embedded import EmbeddedProcess
from pgarena.model.process import ProcessIdentity
from pgarena.system.processes import me


@pytest.fixture(autouse=True)
def marks(tmp_path, monkeypatch):
    monkeypatch.setenv("PGARENA_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "xdg"))
    return server_marks.marks_dir()


def _dead() -> ProcessIdentity:
    gone = subprocess.Popen(["true"])
    gone.wait()
    return ProcessIdentity(pid=gone.pid, host=me().host, started="boot:1")


def _server_folder(tmp_path, name="pgarena-killed-abc"):
    folder = tmp_path / "servers" / name
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "PG_VERSION").write_text("17\n")
    return folder


def _mark(marks, folder, maker, user=None):
    path = marks / f"{folder.name}.json"
    path.write_text(server_marks.ServerMark(user=user, folder=str(folder), maker=maker).model_dump_json())
    path.chmod(0o600)
    return path


def test_the_marks_folder_is_this_users_own(marks):
    info = os.lstat(marks)
    assert info.st_uid == os.geteuid() and info.st_mode & 0o777 == 0o700


def test_a_dead_makers_server_folder_is_removed_with_its_mark(tmp_path, marks):
    # Given a mark of a server folder whose maker (a coordinator killed by SIGKILL) is gone
    folder = _server_folder(tmp_path)
    maker = _dead()
    mark = _mark(marks, folder, maker)
    # When the next run reaps
    messages = server_marks.reap_servers()
    # Then the folder and the mark are gone, with a message naming the folder
    assert not folder.exists() and not mark.exists()
    assert messages == [f"removed data directory {folder} (left by pid {maker.pid}, which is gone)"]


def test_a_live_makers_server_is_left_alone(tmp_path, marks):
    folder = _server_folder(tmp_path)
    mark = _mark(marks, folder, me())
    assert server_marks.reap_servers() == []
    assert folder.exists() and mark.exists()


def test_a_folder_not_named_as_pgarenas_is_never_removed(tmp_path, marks):
    folder = _server_folder(tmp_path, name="precious")
    _mark(marks, folder, _dead())
    assert server_marks.reap_servers() == []
    assert folder.exists()


def test_a_user_pgarena_did_not_make_is_never_removed(tmp_path, marks):
    # Given a mark naming an existing user that is not a pgarena server's (no pgarena comment)
    folder = _server_folder(tmp_path)
    _mark(marks, folder, _dead(), user="nobody")
    server_marks.reap_servers()
    assert server_marks.user_exists("nobody")


def test_a_mark_others_may_write_is_ignored(tmp_path, marks):
    folder = _server_folder(tmp_path)
    mark = _mark(marks, folder, _dead())
    mark.chmod(0o666)
    assert server_marks.reap_servers() == []
    assert folder.exists()


def test_an_embedded_server_is_marked_from_its_making_until_it_is_stopped(tmp_path, marks):
    # Given an embedded server object (its folder made, its user named, nothing started)
    server = EmbeddedProcess("marked", {}, root=tmp_path)
    mark = marks / f"{server.dir.name}.json"
    # Then its folder and user are marked as this process's
    found = server_marks.ServerMark.model_validate_json(mark.read_text())
    assert found.folder == str(server.dir) and found.maker == me()
    assert found.user == server.user_name and (found.user is None) == (os.geteuid() != 0)
    assert os.lstat(mark).st_mode & 0o777 == 0o600
    # And stopping it removes the folder, then the mark
    server.stop()
    assert not server.dir.exists() and not mark.exists()
