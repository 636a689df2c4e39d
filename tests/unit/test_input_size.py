"""Issue 34.9: a matrix (or a results.json) far past any usable size is refused by its size before it is
read, never read whole into memory."""

import resource
import subprocess
import sys

import pytest

from pgarena.model.matrix_errors import MatrixError
from pgarena.model.matrix_json import MAX_MATRIX_BYTES, read_json, read_text


def _sparse(path, size: int) -> None:
    with path.open("wb") as handle:  # a hole: the file is large, the disk holds almost nothing
        handle.write(b'{"campaign": "x", "pad": "')
        handle.truncate(size)


def test_a_huge_matrix_is_refused_by_its_size(tmp_path):
    path = tmp_path / "matrix.json"
    _sparse(path, 1024**3)  # 1 GiB
    with pytest.raises(MatrixError) as caught:
        read_json(path)
    (problem,) = caught.value.problems
    assert "larger than 4,194,304 bytes" in problem.message


def test_the_refusal_reads_nothing_of_it(tmp_path):
    # Given a 1 GiB matrix and a process allowed far less memory than the file's size
    path = tmp_path / "matrix.json"
    _sparse(path, 1024**3)
    code = (
        "import resource, sys\n"
        "from pathlib import Path\n"
        "from pgarena.model.matrix_json import read_text\n"
        "resource.setrlimit(resource.RLIMIT_AS, (768 * 1024**2, 768 * 1024**2))\n"
        "try:\n"
        f"    read_text(Path({str(path)!r}))\n"
        "except OSError as error:\n"
        "    print('refused', error.strerror)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    # Then it is refused, not read into memory (which would raise MemoryError under the limit)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("refused larger than")


def test_a_matrix_within_the_bound_is_read(tmp_path):
    path = tmp_path / "matrix.json"
    path.write_text('{"campaign": "x"}')
    assert read_text(path) == '{"campaign": "x"}'
    assert MAX_MATRIX_BYTES >= 256 * 1024  # StartExecution's own limit is reported by validate, not here


def test_a_huge_results_json_is_refused_by_the_cli(tmp_path):
    from typer.testing import CliRunner

    from pgarena.cli import app

    _sparse(tmp_path / "results.json", 2 * 1024**3)
    outcome = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert outcome.exit_code == 2 and "larger than" in outcome.output
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 2 * 1024**2  # KiB: well under the file's 2 GiB
