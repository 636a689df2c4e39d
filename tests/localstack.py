"""LocalStack on this machine, for the second-interpreter test: installed by tools/localstack/install.sh into
.venv-localstack (Python 3.13), started as a process on a free 127.0.0.1 port with its own data folder,
killed with everything it started (DynamoDB Local's JVM) when the test ends.

Lambda is pgarena's provider (tools/localstack/plugin): Invoke goes to the local runtime's Lambda endpoint,
named in FORWARD_FILE by pgarena.local.hosts.LocalStackHost. Nothing here skips: what cannot be installed
or started fails with LocalStack's own output.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pgarena.local.hosts import LAMBDA_FORWARD_ENV, LocalStackHost
from pgarena.system.processes import die_with_parent

ROOT = Path(__file__).parents[1]
INSTALL = ROOT / "tools" / "localstack" / "install.sh"
VENV = ROOT / ".venv-localstack"
# What a campaign touches: the interpreter, its Lambda and DynamoDB tasks, the bucket, the table, the secrets.
SERVICES = "s3,dynamodb,stepfunctions,lambda,sts,secretsmanager"
INSTALL_TIMEOUT_S = 1800
START_TIMEOUT_S = 180  # ~3 s idle; generous for a loaded 2-core machine
STOP_TIMEOUT_S = 30


@dataclass(frozen=True)
class LocalStack:
    url: str
    data_dir: Path
    log: Path
    process: subprocess.Popen[bytes]

    def host(self) -> LocalStackHost:
        """The local runtime's state machine host for this LocalStack (waiting until it is healthy)."""
        self.ready()
        return LocalStackHost(self.url, self.data_dir / "lambda-forward.json")

    def ready(self) -> None:
        """Wait until every service answers; fail with LocalStack's output if it exits or never does."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _healthy(self.url):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"LocalStack did not become healthy at {self.url}:\n{self.log.read_text()[-4000:]}")
            time.sleep(0.5)


def install() -> None:
    """tools/localstack/install.sh (a no-op once installed): what `make install` runs."""
    result = subprocess.run(
        ["bash", str(INSTALL), str(VENV)], cwd=ROOT, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"LocalStack could not be installed ({INSTALL.relative_to(ROOT)}):\n{result.stderr[-4000:]}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _lay_out(data_dir: Path) -> None:
    """DynamoDB Local and a JDK where LocalStack looks for them (it would download both otherwise)."""
    libs = data_dir / "var" / "lib" / "localstack" / "lib"
    (libs / "dynamodb-local").mkdir(parents=True)
    (libs / "java").mkdir()
    (libs / "dynamodb-local" / "2").symlink_to(VENV / "dynamodb-local")
    # LocalStack asks for Java 21; DynamoDB Local needs 17 or later.
    (libs / "java" / "21").symlink_to((VENV / "java-home").resolve())


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_localstack/health", timeout=5) as answer:
            services = json.load(answer).get("services", {})
    except (urllib.error.URLError, OSError, ValueError):
        return False
    return all(services.get(name) in ("available", "running") for name in SERVICES.split(","))


@contextmanager
def running(data_dir: Path) -> Iterator[LocalStack]:
    """LocalStack started in data_dir for as long as the context lasts (LocalStack.ready waits for it: the
    caller may do something else while it starts)."""
    _lay_out(data_dir)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(data_dir),
        "OVERRIDE_IN_DOCKER": "0",  # this machine may have a /.dockerenv: LocalStack runs on the host
        "FILESYSTEM_ROOT": str(data_dir),
        "GATEWAY_LISTEN": f"127.0.0.1:{port}",
        "SERVICES": SERVICES,
        "PROVIDER_OVERRIDE_LAMBDA": "pgarena",
        LAMBDA_FORWARD_ENV: str(data_dir / "lambda-forward.json"),
        # The account is the one the runtime's access key encodes (pgarena.local.signing), as in AWS: the state
        # machine's role (in the runtime's account) then acts where the runtime made its table and bucket.
        "PARITY_AWS_ACCESS_KEY_ID": "1",
        "DNS_ADDRESS": "0",
        "SKIP_SSL_CERT_DOWNLOAD": "1",
        "DISABLE_EVENTS": "1",
        "EAGER_SERVICE_LOADING": "1",  # the first campaign step does not wait for DynamoDB Local's JVM
    }
    log = data_dir / "localstack.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [str(VENV / "bin" / "python"), "-m", "localstack.runtime.main"],
            env=env,
            cwd=data_dir,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its process group: DynamoDB Local's JVM is stopped with it
            preexec_fn=die_with_parent(signal.SIGKILL),
        )
    try:
        yield LocalStack(url, data_dir, log, process)
    finally:
        _stop(process)


def _descendants(pid: int) -> list[int]:
    """Every process below pid, from /proc (DynamoDB Local's JVM runs in a session of its own)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):  # gone meanwhile
            continue
        children.setdefault(parent, []).append(int(entry.name))
    found, below = [], [pid]
    while below:
        for child in children.get(below.pop(), []):
            found.append(child)
            below.append(child)
    return found


def _stop(process: subprocess.Popen[bytes]) -> None:
    """LocalStack and everything it started, killed at once: what they hold is in the test's temporary
    folder, and LocalStack's orderly shutdown takes 3 to 16 s here for nothing kept."""
    started = _descendants(process.pid)
    for pid in (process.pid, *started):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait()
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while any(Path(f"/proc/{pid}").exists() for pid in started) and time.monotonic() < deadline:
        time.sleep(0.1)  # not this process's children: their exit can only be watched
