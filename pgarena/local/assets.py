"""The Lambda functions as `cdk synth` builds them, run the way Lambda runs them.

The CDK app is synthesized in this process into `build/strict-synth/<key>/`, where the key hashes the
sources that decide the assets (a later run with the same sources reuses it; the dependencies layer
comes from the bundling cache, pgarena_cdk.bundling). Each function then runs from its code asset and
the layer in a clean interpreter of its runtime (`-I -S`: no site-packages, no PYTHON* variables) with
boto3 as the only other package, as Lambda's Python runtime provides it: never from this virtualenv.
tests/infrastructure/test_lambda_bundles.py imports every handler with the same command.
"""

from __future__ import annotations

import glob
import hashlib
import importlib.metadata
import json
import logging
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pgarena.build_once import build_once
from pgarena.local.endpoints import FunctionError

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]
RUNNER = Path(__file__).with_name("lambda_runner.py")
SYNTH_CACHE_DIR = "build/strict-synth"
RUNTIME_PACKAGES_DIR = "build/lambda-runtime"
# What decides the synthesized template and assets.
SYNTH_SOURCES = (
    "pgarena",
    "functions",
    "workers",
    "statemachines",
    "cdk/pgarena_cdk",
    "cdk/app.py",
    "cdk.json",
    "pyproject.toml",
    "setup.py",
)
# Bump when what is cached changes shape.
SYNTH_FORMAT = 1
_COMPLETE = "pgarena-synth.json"
_RUNTIME_COMPLETE = "pgarena-runtime.json"
# Byte code goes elsewhere: the assets stay as synthesized (Lambda's are read-only).
PYCACHE = Path(tempfile.gettempdir()) / "pgarena-bundle-pycache"
_synth_lock = threading.Lock()
_synthesized: dict[Path, Path] = {}


class AssetError(RuntimeError):
    """The synthesized functions cannot be run here (no interpreter, no synth, an unknown reference)."""


@dataclass(frozen=True)
class FunctionAsset:
    """One function of the template: what Lambda would run, and with what settings."""

    name: str  # its folder in functions/ (pgarena.aws.access.Component)
    handler: str  # functions/validate/handler.handler
    runtime: str  # python3.12
    code_dir: Path
    layer_dirs: tuple[Path, ...]  # each holding python/
    memory_mib: int
    timeout_s: int
    environment: Mapping[str, object]  # as the template gives it: strings, or CloudFormation references

    def sys_path(self, runtime_packages: Path) -> list[Path]:
        return [self.code_dir, *(layer / "python" for layer in self.layer_dirs), runtime_packages]

    def local_environment(self, local_values: Mapping[str, str]) -> dict[str, str]:
        """The template's variables, each CloudFormation reference replaced by the local resource's value."""
        resolved = {}
        for name, value in self.environment.items():
            if isinstance(value, str):
                resolved[name] = value
            elif name in local_values:
                resolved[name] = local_values[name]
            else:
                raise AssetError(
                    f"{self.name}: environment variable {name} is a CloudFormation reference ({json.dumps(value)}) "
                    "that the local runtime has no value for: add it to the runtime's local resources"
                )
        return resolved


def _source_key(repo_root: Path, context: Mapping[str, Any] | None = None) -> str:
    digest = hashlib.sha256(f"format {SYNTH_FORMAT}\n".encode())
    if context:  # another context is another template (a site's grants)
        digest.update(json.dumps(context, sort_keys=True).encode() + b"\0")
    for source in SYNTH_SOURCES:
        root = repo_root / source
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in files:
            if "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            digest.update(str(path.relative_to(repo_root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def synthesized_app(repo_root: Path = REPO_ROOT, context: Mapping[str, Any] | None = None) -> Path:
    """The cloud assembly (cdk.out) of the app as it is in `repo_root`, synthesized once per source state;
    `context` over cdk.json's, as `cdk deploy -c` gives it."""
    key = _source_key(repo_root, context)
    cache_root = repo_root / SYNTH_CACHE_DIR
    outdir = cache_root / key
    with _synth_lock:
        if outdir in _synthesized or (outdir / _COMPLETE).is_file():
            _synthesized[outdir] = outdir
            return outdir
        build_once(outdir, _COMPLETE, lambda staging: {"template": _synthesize(repo_root, staging, context or {})})
        _prune(cache_root, keep=outdir)
        _synthesized[outdir] = outdir
        return outdir


def _prune(cache_root: Path, keep: Path, kept: int = 3) -> None:
    """Leave the newest synths (another process may be running one of them); each is tens of MB."""
    done = sorted((d for d in cache_root.iterdir() if (d / _COMPLETE).is_file() and d != keep), key=lambda d: d.stat().st_mtime)
    for old in done[: max(0, len(done) - (kept - 1))]:
        shutil.rmtree(old, ignore_errors=True)


def _synthesize(repo_root: Path, outdir: Path, context: Mapping[str, Any]) -> str:
    # The CDK app's package lives in cdk/ (cdk.json runs `python3 cdk/app.py`), outside the pgarena package.
    cdk_dir = str(repo_root / "cdk")
    if cdk_dir not in sys.path:
        sys.path.insert(0, cdk_dir)
    try:  # imported here: the CDK (an optional extra, and a Node.js process) only for --aws-strict
        from aws_cdk import App

        from pgarena_cdk.application import build, cdk_json_context
    except ImportError as error:
        raise AssetError(
            f"--aws-strict synthesizes the CDK app: install the cdk extra (`pip install -e '.[cdk]'`): {error}"
        ) from error
    log.info("synthesizing the CDK app for the strict runtime into %s", outdir)
    app = App(context={**cdk_json_context(repo_root / "cdk.json"), **context}, outdir=str(outdir))
    stack = build(app, repo_root)
    try:
        app.synth()
    except RuntimeError as error:  # cdk-nag findings: the assets and the template are written all the same
        log.warning("cdk synth reported: %s", error)
    template_file: str = stack.template_file
    return template_file


def home_template(cloud_assembly: Path) -> dict[str, Any]:
    """The home stack's template (the one whose roles the runtime enforces): a worker site's stack beside it
    holds only the site's capacity and execution role."""
    manifest = json.loads((cloud_assembly / _COMPLETE).read_text())
    template: dict[str, Any] = json.loads((cloud_assembly / manifest["template"]).read_text())
    return template


def function_assets(cloud_assembly: Path) -> dict[str, FunctionAsset]:
    """Every Lambda function of the synthesized template, by its folder in functions/."""
    manifest = json.loads((cloud_assembly / _COMPLETE).read_text())
    resources = json.loads((cloud_assembly / manifest["template"]).read_text())["Resources"]

    def asset_dir(code: dict[str, Any]) -> Path:
        return cloud_assembly / f"asset.{code['S3Key'].removesuffix('.zip')}"

    layers = {
        name: asset_dir(body["Properties"]["Content"])
        for name, body in resources.items()
        if body["Type"] == "AWS::Lambda::LayerVersion"
    }
    functions = {}
    for body in resources.values():
        if body["Type"] != "AWS::Lambda::Function":
            continue
        props = body["Properties"]
        name = props["Handler"].split("/")[1]
        functions[name] = FunctionAsset(
            name=name,
            handler=props["Handler"],
            runtime=props["Runtime"],
            code_dir=asset_dir(props["Code"]),
            layer_dirs=tuple(layers[layer["Ref"]] for layer in props.get("Layers", [])),
            memory_mib=int(props.get("MemorySize", 128)),
            timeout_s=int(props.get("Timeout", 3)),
            environment=props.get("Environment", {}).get("Variables", {}),
        )
    return functions


def runtime_interpreter(runtime: str) -> Path:
    """This machine's interpreter for a Lambda runtime name (`python3.12`): pyenv's, else on PATH."""
    version = runtime.removeprefix("python")
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    found = sorted(glob.glob(str(pyenv_root / "versions" / f"{version}.*" / "bin" / runtime)))
    if found:
        return Path(found[-1])
    on_path = shutil.which(runtime)
    if on_path and "shims" not in on_path:
        return Path(on_path)
    raise AssetError(f"no {runtime} interpreter to run the Lambda bundles with: install it (`pyenv install {version}`)")


def runtime_packages(repo_root: Path = REPO_ROOT) -> Path:
    """What Lambda's Python runtime brings besides the standard library: boto3 (and botocore), the
    version this virtualenv talks to moto with. Installed once into build/lambda-runtime/."""
    version = importlib.metadata.version("boto3")
    target = repo_root / RUNTIME_PACKAGES_DIR / f"boto3-{version}"

    def install(staging: Path) -> dict[str, str]:
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile"]
        try:
            subprocess.run([*command, "--target", str(staging), f"boto3=={version}"], check=True, capture_output=True, text=True)
        except subprocess.CalledProcessError as error:
            raise AssetError(
                f"pip could not install boto3=={version} for the Lambda runtime stand-in:\n{error.stderr}"
            ) from error
        return {"boto3": version}

    return build_once(target, _RUNTIME_COMPLETE, install)


def runner_command(interpreter: Path, handler: str, sys_path: list[Path], check: bool = False) -> list[str]:
    """The clean interpreter running pgarena/local/lambda_runner.py for `handler` with only `sys_path`."""
    return [
        str(interpreter),
        "-I",
        "-S",
        "-X",
        f"pycache_prefix={PYCACHE}",
        str(RUNNER),
        *(["--check"] if check else []),
        handler,
        *map(str, sys_path),
    ]


# What every Lambda environment has besides the function's variables.
LAMBDA_BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "en_US.UTF-8", "TZ": ":UTC"}


@dataclass
class Invocation:
    result: object = None
    error: dict[str, Any] | None = None  # errorType, errorMessage, stackTrace
    max_rss_kib: int = 0


class _Environment:
    """One execution environment: a runner process, reused for one invocation at a time."""

    def __init__(self, command: list[str], env: dict[str, str], log_path: Path) -> None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log = log_path.open("a")
        self.process = subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            start_new_session=True,
        )

    def invoke(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any] | None:
        """The runner's answer, or None when it gave none within timeout_s (or died)."""
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None  # Popen was given stdin=PIPE and stdout=PIPE
        try:
            stdin.write(json.dumps(request).encode() + b"\n")
            stdin.flush()
        except BrokenPipeError:
            return None
        ready, _, _ = select.select([stdout], [], [], timeout_s)
        line = stdout.readline() if ready else b""
        answer: dict[str, Any] | None = json.loads(line) if line else None
        return answer

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            assert stream is not None  # Popen was given stdin=PIPE and stdout=PIPE
            stream.close()
        self.log.close()


class AssetFunction:
    """A Lambda handler (event, context) -> result served by runner processes from the function's asset.

    Like Lambda, one environment serves one invocation at a time: concurrent invocations start more
    environments, idle ones are reused. An invocation past the function's timeout kills its environment
    and fails with Sandbox.Timedout; one whose environment's peak memory passed the function's memory
    size fails with Runtime.OutOfMemory (checked after the invocation: Lambda stops it at the limit).
    """

    def __init__(
        self,
        asset: FunctionAsset,
        function_name: str,
        function_arn: str,
        environment: Callable[[], dict[str, str]],
        runtime_packages: Path,
        logs_dir: Path,
    ) -> None:
        self.asset = asset
        self.function_name = function_name
        self.function_arn = function_arn
        self._environment = environment
        self.command = runner_command(runtime_interpreter(asset.runtime), asset.handler, asset.sys_path(runtime_packages))
        self._logs_dir = logs_dir
        self._idle: list[_Environment] = []
        self._all: list[_Environment] = []
        self._lock = threading.Lock()

    def _acquire(self) -> _Environment:
        with self._lock:
            if self._idle:
                return self._idle.pop()
            env = {
                **LAMBDA_BASE_ENV,
                **self._environment(),
                "AWS_LAMBDA_FUNCTION_NAME": self.function_name,
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(self.asset.memory_mib),
                "AWS_LAMBDA_FUNCTION_TIMEOUT": str(self.asset.timeout_s),
                "LAMBDA_TASK_ROOT": str(self.asset.code_dir),
                "_HANDLER": self.asset.handler,
            }
            environment = _Environment(self.command, env, self._logs_dir / f"lambda-{self.asset.name}-{len(self._all) + 1}.log")
            self._all.append(environment)
            return environment

    def invoke(self, event: object, request_id: str) -> Invocation:
        environment = self._acquire()
        timeout_s = self.asset.timeout_s
        request = {
            "request_id": request_id,
            "deadline_ms": int((time.time() + timeout_s) * 1000),
            "function_name": self.function_name,
            "function_arn": self.function_arn,
            "memory_mib": self.asset.memory_mib,
            "event": event,
        }
        answer = environment.invoke(request, timeout_s)
        if answer is None:
            environment.close()
            if environment.process.returncode not in (None, -9):  # the runner died on its own
                return Invocation(
                    error=_lambda_error(
                        "Runtime.ExitError",
                        request_id,
                        f"Runtime exited with error: exit status {environment.process.returncode}",
                    )
                )
            return Invocation(
                error=_lambda_error("Sandbox.Timedout", request_id, f"Task timed out after {timeout_s:.2f} seconds")
            )
        invocation = Invocation(answer.get("result"), answer.get("error"), int(answer.get("max_rss_kib", 0)))
        if invocation.max_rss_kib > self.asset.memory_mib * 1024:
            environment.close()
            return Invocation(
                error=_lambda_error(
                    "Runtime.OutOfMemory",
                    request_id,
                    f"Runtime exited with error: signal: killed (peak {invocation.max_rss_kib // 1024} MB > {self.asset.memory_mib} MB)",
                ),
                max_rss_kib=invocation.max_rss_kib,
            )
        with self._lock:
            self._idle.append(environment)
        return invocation

    def __call__(self, event: object, context: object) -> object:
        """The in-process handler's signature, for pgarena.local.endpoints.LambdaEndpoint."""
        invocation = self.invoke(event, getattr(context, "aws_request_id", ""))
        if invocation.error is not None:
            raise FunctionError(invocation.error)
        return invocation.result

    def close(self) -> None:
        with self._lock:
            environments, self._all, self._idle = self._all, [], []
        for environment in environments:
            environment.close()


def _lambda_error(error_type: str, request_id: str, message: str) -> dict[str, Any]:
    return {"errorType": error_type, "errorMessage": f"RequestId: {request_id} Error: {message}", "stackTrace": []}
