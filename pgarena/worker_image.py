"""The worker image's build context, the one way to make it: the CDK app (at synth, for `cdk deploy`)
and the local runtime's container workers (pgarena.local.containers) build workers/Dockerfile from it.

The context holds the code the Dockerfile copies and `wheels/`, the Python dependencies as wheels for
the image's interpreter (Debian bookworm's python3) downloaded by pip on the building machine: the
image build itself reaches only Debian's package archive, and pip here uses this machine's own
settings (index, proxy, certificates). Wheels are kept per key in `build/worker-image/` (delete it to
take newer releases within pyproject's ranges); the code is copied afresh each time.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from pgarena.build_once import build_once

DOCKERFILE = "workers/Dockerfile"
# What the Dockerfile copies from the repository.
CODE = ("pgarena", "workers", "pyproject.toml", "setup.py", "README.md")
WHEELS = "wheels"
# Debian bookworm's python3 on x86_64 (the task definition's platform), glibc 2.36.
IMAGE_PYTHON = "3.11"
PIP_PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_28_x86_64")
CACHE_DIR = "build/worker-image"
_COMPLETE = "pgarena-wheels.json"


class ImageContextError(RuntimeError):
    pass


def worker_requirements(pyproject: Path) -> list[str]:
    """What the worker imports: pyproject's [project] dependencies and its `worker` extra, as spelled there."""
    project = tomllib.loads(pyproject.read_text())["project"]
    return sorted([*project["dependencies"], *project["optional-dependencies"]["worker"]])


def wheels_key(requirements: list[str]) -> str:
    inputs = {"requirements": requirements, "python": IMAGE_PYTHON, "platforms": PIP_PLATFORMS}
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]


def _wheelhouse(requirements: list[str], cache_root: Path) -> Path:
    """The requirements' wheels for the image's Python, downloaded once per key."""
    platforms = [arg for platform in PIP_PLATFORMS for arg in ("--platform", platform)]

    def download(staging: Path) -> dict[str, list[str]]:
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--dest", str(staging)]
        command += ["--only-binary=:all:", "--implementation", "cp", "--python-version", IMAGE_PYTHON, *platforms]
        result = subprocess.run([*command, *requirements], capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise ImageContextError(
                f"pip could not download the worker's dependencies for Python {IMAGE_PYTHON} on x86_64 "
                f"(pyproject.toml dependencies and the worker extra; needs PyPI or a pip cache):\n{result.stderr.strip()}"
            )
        return {"requirements": requirements}

    return build_once(cache_root / f"wheels-{wheels_key(requirements)}", _COMPLETE, download)


def stage_context(repo_root: Path, destination: Path) -> Path:
    """`destination` made the image's build context: the code, the Dockerfile and the wheels, nothing else
    (so that unrelated changes, tests, docs or the CDK app, do not change the image)."""
    wheels = _wheelhouse(worker_requirements(repo_root / "pyproject.toml"), repo_root / CACHE_DIR)
    shutil.rmtree(destination, ignore_errors=True)
    destination.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".*", "*.so")  # the image compiles its own scanner
    for name in CODE:
        source = repo_root / name
        if source.is_dir():
            shutil.copytree(source, destination / name, ignore=ignore)
        else:
            shutil.copy2(source, destination / name)
    # Hard links: the wheels (about 100 MB) are not copied for every build.
    shutil.copytree(wheels, destination / WHEELS, ignore=shutil.ignore_patterns(_COMPLETE), copy_function=os.link)
    return destination
