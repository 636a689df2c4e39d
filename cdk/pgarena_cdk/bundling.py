"""The functions' third-party dependencies, bundled by the app itself: no Docker, no manual step.

Synth installs the runtime dependencies of pyproject.toml with pip, as wheels for the functions'
Python version and architecture, into `build/lambda-layer/<key>/python/` (a layer's layout), where
the key hashes everything that decides the content. Later synths reuse that directory, so the
tests, which synthesize many times, install once. CDK's local bundling copies it into the cloud
assembly; `cdk deploy` uploads it as the dependencies layer. Delete `build/lambda-layer/` to take
newer releases within pyproject's ranges.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_

from pgarena.build_once import build_once

# Lambda's Python runtimes ship boto3 and what it depends on: a copy in the layer would come first
# on sys.path and shadow them (aws-xray-sdk pulls in botocore).
RUNTIME_PROVIDED = frozenset({"boto3", "botocore", "s3transfer", "jmespath", "python-dateutil", "six", "urllib3"})
# Only the CLI (pgarena/cli.py) imports these; tests/infrastructure imports every handler without them.
CLI_ONLY = frozenset({"rich", "typer"})
# hdrhistogram declares its build tool pbr (which pulls in setuptools) as a run-time requirement;
# nothing in the layer imports either.
BUILD_ONLY = frozenset({"pbr", "setuptools"})
# manylinux wheels a Lambda of each architecture runs (Amazon Linux 2023, glibc 2.34).
PIP_PLATFORMS = {
    "x86_64": ("manylinux2014_x86_64", "manylinux_2_28_x86_64"),
    "arm64": ("manylinux2014_aarch64", "manylinux_2_28_aarch64"),
}
LAYER_CACHE_DIR = "build/lambda-layer"
# Bump when the layout or the pruning changes, so that older cached layers are not reused.
LAYER_FORMAT = 1
_COMPLETE = "pgarena-layer.json"


def canonical_name(requirement: str) -> str:
    """The distribution a requirement names, normalized (PEP 503): `Jinja2>=3` -> `jinja2`."""
    name = re.split(r"[\s\[<>=!~;@]", requirement.strip(), maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def lambda_requirements(pyproject: Path) -> list[str]:
    """pyproject's [project] dependencies that the functions need in their layer, sorted."""
    dependencies = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    excluded = RUNTIME_PROVIDED | CLI_ONLY
    return sorted(dep for dep in dependencies if canonical_name(dep) not in excluded)


def layer_key(requirements: list[str], python_version: str, architecture: str) -> str:
    inputs = {
        "requirements": requirements,
        "python": python_version,
        "platforms": PIP_PLATFORMS[architecture],
        "pruned": sorted(RUNTIME_PROVIDED | BUILD_ONLY),
        "format": LAYER_FORMAT,
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]


def build_layer(requirements: list[str], python_version: str, architecture: str, cache_root: Path) -> Path:
    """The directory holding `python/` with the requirements installed for Lambda; built once per key."""

    def install(staging: Path) -> dict[str, object]:
        site = staging / "python"
        _pip_install(requirements, python_version, architecture, site)
        installed = _prune(site, RUNTIME_PROVIDED | BUILD_ONLY)
        shutil.rmtree(site / "bin", ignore_errors=True)  # console scripts: Lambda never runs them
        return {"python": python_version, "architecture": architecture, "requirements": requirements, "installed": installed}

    return build_once(cache_root / layer_key(requirements, python_version, architecture), _COMPLETE, install)


def _pip_install(requirements: list[str], python_version: str, architecture: str, site: Path) -> None:
    platforms = [arg for platform in PIP_PLATFORMS[architecture] for arg in ("--platform", platform)]
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--target",
        str(site),
        "--only-binary=:all:",
        "--implementation",
        "cp",
        "--python-version",
        python_version,
        *platforms,
        # Byte code compiled by this interpreter would not match the runtime's version.
        "--no-compile",
        *requirements,
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(
            f"pip could not install the Lambda dependencies for Python {python_version} on {architecture} "
            f"(pyproject.toml [project] dependencies; needs PyPI or a pip cache holding those wheels):\n"
            f"{result.stderr.strip()}"
        )


def _prune(site: Path, names: frozenset[str]) -> list[str]:
    """Remove the distributions named (by their RECORD); return the others as `name==version`."""
    kept = []
    for dist in importlib.metadata.distributions(path=[str(site)]):
        name = canonical_name(dist.metadata["Name"])
        if name not in names:
            kept.append(f"{name}=={dist.version}")
            continue
        for file in dist.files or []:
            (site / file).unlink(missing_ok=True)
    for directory in sorted((path for path in site.rglob("*") if path.is_dir()), key=lambda p: len(p.parts), reverse=True):
        if not any(directory.iterdir()):
            directory.rmdir()
    return sorted(kept)


@jsii.implements(ILocalBundling)
class _PrebuiltLayer:
    """Local bundling: build (or reuse) the cached layer, then copy it into CDK's output directory."""

    def __init__(self, requirements: list[str], python_version: str, architecture: str, cache_root: Path) -> None:
        self._args = (requirements, python_version, architecture, cache_root)

    # ILocalBundling's signature: jsii spreads the BundlingOptions struct over keyword-only parameters.
    # Only the output directory is used: the layer is the same whatever the image or command.
    def try_bundle(self, output_dir: str, *, image: DockerImage, **options: object) -> bool:
        layer_dir = build_layer(*self._args)
        shutil.copytree(layer_dir / "python", Path(output_dir) / "python", dirs_exist_ok=True)
        return True


# The optional extra whose packages make the change-point layer (ruptures, with numpy and scipy).
HISTORY_EXTRA = "history"


def extra_requirements(pyproject: Path, extra: str) -> list[str]:
    """pyproject's [project.optional-dependencies] `extra`, sorted."""
    return sorted(tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"][extra])


def dependencies_layer_code(repo_root: Path, runtime: lambda_.Runtime, architecture: lambda_.Architecture) -> lambda_.Code:
    """The layer's code asset: pyproject's dependencies for `runtime` on `architecture`, bundled at synth."""
    return layer_code(repo_root, lambda_requirements(repo_root / "pyproject.toml"), runtime, architecture)


def history_layer_code(repo_root: Path, runtime: lambda_.Runtime, architecture: lambda_.Architecture) -> lambda_.Code:
    """The change-point layer's code asset: the `history` extra (ruptures, numpy, scipy), for the functions
    that finalize a campaign only: about 175 MB unzipped, which every function's 250 MB would not spare."""
    return layer_code(repo_root, extra_requirements(repo_root / "pyproject.toml", HISTORY_EXTRA), runtime, architecture)


def layer_code(
    repo_root: Path, requirements: list[str], runtime: lambda_.Runtime, architecture: lambda_.Architecture
) -> lambda_.Code:
    """A layer of `requirements` for `runtime` on `architecture`, bundled at synth (cached by its key)."""
    python_version = runtime.name.removeprefix("python")
    key = layer_key(requirements, python_version, architecture.name)
    return lambda_.Code.from_asset(
        str(repo_root),
        # The key names the content, so CDK need not fingerprint the repository or the bundle.
        asset_hash_type=AssetHashType.CUSTOM,
        asset_hash=key,
        bundling=BundlingOptions(
            # Never used: local bundling always succeeds or raises. CDK requires an image.
            image=DockerImage.from_registry("public.ecr.aws/sam/build-python" + python_version),
            local=_PrebuiltLayer(requirements, python_version, architecture.name, repo_root / LAYER_CACHE_DIR),
        ),
    )
