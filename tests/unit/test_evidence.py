"""Each raw file's size and sha256 recorded as uploaded, and a kept copy checked against them."""

import gzip

import pytest

from pgarena.analysis.evidence import incomplete, raw_file
from pgarena.analysis.rerun import failed_pairs, with_failed_pairs
from pgarena.campaign.step.evidence import Evidence
from pgarena.model.errors import ErrorInfo
from pgarena.model.layout import UnsafePath
from pgarena.model.results import CampaignResults, LoadResult, StepSummary, TargetResult, WorkloadResult

KEY = "c1/raw/a/tpcb/c2-r1/transactions.1.gz"


class Uploads:
    def __init__(self):
        self.files = {}

    def put_file(self, key, path, content_type="text/plain"):
        self.files[key] = path.read_bytes()
        return key


@pytest.fixture
def kept(tmp_path):
    """A campaign folder holding one step's transaction log, and the step's summary as its worker wrote it."""
    folder = tmp_path / "c1"
    path = folder / "raw/a/tpcb/c2-r1/transactions.1.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(gzip.compress(b"1 0 1234 0 1700000000 5\n" * 2000))
    uploads = Uploads()
    evidence = Evidence(uploads)
    evidence.put_file(KEY, path, "application/gzip")
    summary = StepSummary(
        campaign_id="c1", step_id="a/tpcb/c2-r1", target="a", workload="tpcb", kind="run", tool="pgbench",
        status="succeeded", started_at="t", finished_at="t", wall_s=1.0, raw=[KEY], raw_files=evidence.of([KEY]),
    )  # fmt: skip
    assert uploads.files[KEY] == path.read_bytes()  # the worker's upload went through, unchanged
    return folder, path, summary


def test_the_summary_records_each_uploaded_files_size_and_checksum(kept):
    _, path, summary = kept
    assert summary.raw_files == {KEY: raw_file(path)}
    assert summary.raw_files[KEY].size_bytes == path.stat().st_size


def test_a_copy_as_uploaded_is_complete(kept):
    folder, _, summary = kept
    assert incomplete(folder, summary) is None


def test_a_truncated_copy_is_incomplete(kept):
    # Given the copy cut short (a disk that filled while it was written)
    folder, path, summary = kept
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    # Then the step's evidence is incomplete, and the reason names the file and its sizes
    why = incomplete(folder, summary)
    assert why == f"raw/a/tpcb/c2-r1/transactions.1.gz is truncated ({len(data) // 2:,} of {len(data):,} bytes)"


def test_a_missing_or_altered_copy_is_incomplete(kept):
    folder, path, summary = kept
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    assert "is not the file its worker uploaded" in incomplete(folder, summary)
    path.unlink()
    assert incomplete(folder, summary) == "raw/a/tpcb/c2-r1/transactions.1.gz is missing"


def test_a_summary_without_records_has_nothing_to_check(kept):
    folder, path, summary = kept
    path.unlink()
    assert incomplete(folder, summary.model_copy(update={"raw_files": {}})) is None


def test_a_recorded_key_leading_outside_the_folder_is_refused(kept):
    folder, _, summary = kept
    tampered = summary.model_copy(update={"raw_files": {"c1/../../etc/passwd": summary.raw_files[KEY]}})
    with pytest.raises(UnsafePath):
        incomplete(folder, tampered)


def test_a_pair_with_incomplete_evidence_is_failed_and_re_run():
    # Given results where both pairs of target a succeeded
    def load(workload):
        return LoadResult(workload=workload, tool="pgbench", status="succeeded")

    def run(name):
        return WorkloadResult(name=name, tool="pgbench", clients=2, repetition=1, status="succeeded")

    target = TargetResult(
        name="a", provider="p", status="succeeded", loads=[load("tpcb"), load("ro")], workloads=[run("tpcb"), run("ro")]
    )
    results = CampaignResults(campaign_id="c1", campaign="c", started_at="t", finished_at="t", targets=[target], ranking=[])
    # When tpcb's kept evidence turns out incomplete
    error = ErrorInfo(kind="evidence_incomplete", message="truncated")
    marked = with_failed_pairs(results, {("a", "tpcb"): error})
    # Then that pair (and so its target) is failed with the reason, and only it is re-run
    (a,) = marked.targets
    assert a.status == "failed" and a.error == error
    assert [w.status for w in a.workloads] == ["failed", "succeeded"] and a.workloads[0].error == error
    assert failed_pairs(marked) == {"a": ["tpcb"]}


def test_logs_are_kept_compressed_with_the_size_and_checksum_of_what_was_uploaded(tmp_path):
    # Given three thread files of a transaction log (pgbench -j 3)
    logs = []
    for i in range(3):
        log = tmp_path / f"pgbench_log.42{'.' + str(i) if i else ''}"
        log.write_bytes(b"".join(b"%d %d 1234 0 1700000000 5\n" % (i, n) for n in range(20_000)))
        logs.append(log)
    uploads = Uploads()
    evidence = Evidence(uploads)
    # When the worker keeps them (compressed side by side, hashed as written)
    keys = evidence.put_logs("c1/raw/a/tpcb/c2-r1", logs)
    # Then each is uploaded under its own name, in order, decompresses to the log, and its record is the upload's
    assert keys == [f"c1/raw/a/tpcb/c2-r1/{log.name}.gz" for log in logs]
    for key, log in zip(keys, logs):
        assert gzip.decompress(uploads.files[key]) == log.read_bytes()
        uploaded = tmp_path / "uploaded.gz"
        uploaded.write_bytes(uploads.files[key])
        assert evidence.of([key])[key] == raw_file(uploaded)
