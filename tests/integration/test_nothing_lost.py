"""Issue 15.5: a full disk or a second Ctrl-C leaves a folder `pgarena resume` completes."""

from __future__ import annotations

import errno

import pytest

from pgarena.local import progress
from pgarena.local.progress import Interrupted
from pgarena.local.resume import resume_local
from pgarena.local.runtime import LocalRuntime
from pgarena.model.errors import DiskFull
from pgarena.planning.campaign import parse_campaign

pytestmark = pytest.mark.integration


def campaign(name: str):
    return parse_campaign(
        {
            "campaign": name,
            "connections": {"monitor_interval_s": 0.5},
            "targets": [
                {"name": name_, "provider": "embedded", "embedded": {"settings": {"fsync": "off"}}} for name_ in ("one", "two")
            ],
            "workloads": [
                {
                    "name": "tpcb",
                    "tool": "pgbench",
                    "init": {"scale": 1},
                    "run": {"clients": 2, "jobs": 1, "duration_s": 2, "progress_s": 1},
                }
            ],
        }
    )


def test_a_full_disk_after_the_targets_were_measured_leaves_a_resumable_folder(tmp_path, monkeypatch):
    # Given a disk that fills up once the campaign's results.json is being copied out
    real = progress._write_bytes

    def full_at_results(path, data):
        if path.name == "results.json":
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data)

    monkeypatch.setattr(progress, "_write_bytes", full_at_results)
    # When the campaign ends
    with LocalRuntime(tmp_path) as runtime, pytest.raises(DiskFull) as full:
        runtime.run(campaign("diskfull"))
    # Then the error says the disk is full, what was kept and how to complete it
    message = str(full.value)
    assert full.value.kind == "disk_full" and "no space left on device writing" in message
    assert "kept 4 finished step(s)" in message and "pgarena resume" in message
    (folder,) = [p for p in tmp_path.iterdir() if p.name.startswith("diskfull-")]
    assert not (folder / "results.json").exists()
    # And, space freed, resume completes the folder from what it kept, re-running nothing
    monkeypatch.setattr(progress, "_write_bytes", real)
    resumed = resume_local(folder)
    assert resumed.reruns == [] and resumed.results_dir == folder
    assert resumed.results.status == "completed"
    assert [t.status for t in resumed.results.targets] == ["succeeded", "succeeded"]
    assert all(w.tps and w.tps > 0 for t in resumed.results.targets for w in t.workloads)
    assert (folder / "results.json").exists() and (folder / "report.html").exists()


def test_a_second_ctrl_c_while_cancelling_leaves_a_folder_resume_completes(tmp_path):
    # Given a campaign interrupted once its first target's load finished (Ctrl-C) ...
    def ctrl_c_after_the_first_step(event):
        if event.kind == "step":
            raise KeyboardInterrupt

    with LocalRuntime(tmp_path) as runtime:

        def ctrl_c_again(task_arns):  # ... and again while the cancellation stops its workers
            raise KeyboardInterrupt

        runtime.workers.wait_stopped = ctrl_c_again
        with pytest.raises(Interrupted) as interrupted:
            runtime.run(campaign("twice"), ctrl_c_after_the_first_step)
    folder = interrupted.value.folder
    # Then the folder has no results.json, but the step that finished is there
    assert not (folder / "results.json").exists()
    assert list((folder / "raw").glob("**/summary.json"))
    # And resume runs what did not finish and writes the combined results
    resumed = resume_local(folder, out_dir=tmp_path / "resumed")
    assert resumed.reruns and resumed.results.status == "completed"
    assert [t.status for t in resumed.results.targets] == ["succeeded", "succeeded"]
    assert folder.name in resumed.results.resumed_from
