"""Container workers: the local ECS stand-in runs each task as `docker run` of the worker image built
from workers/Dockerfile, the image Fargate runs, with the environment the task gets in AWS.

The containers share the host's network (`--network host`), so a worker reaches the moto server and an
embedded PostgreSQL server on 127.0.0.1 as a Fargate task reaches its VPC. A Docker daemon must answer
(DOCKER_HOST or the default socket): `eval "$(tools/docker-here.sh)"` starts one on a machine without.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from pgarena import worker_image
from pgarena.model.process import ProcessIdentity
from pgarena.system.processes import die_with_parent, is_running, me, spawn

REPO_ROOT = Path(__file__).resolve().parents[2]
IMAGE_TAG = "pgarena-worker:local"
CONTEXT_DIR = "build/worker-image/context"
BUILD_LOG = "build/worker-image/build.log"
CONTAINER_PREFIX = "pgarena-worker-"
BUILD_TIMEOUT_S = 3600  # a cold build under vfs storage on a busy machine: base packages, then the wheels
DOCKER_HERE = "tools/docker-here.sh"
COORDINATOR_LABEL = "pgarena.coordinator"


def coordinator_label(process: ProcessIdentity) -> str:
    return f"{process.host}/{process.pid}/{process.started}"


class DockerError(RuntimeError):
    pass


def _docker(*args: str, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout_s, check=False)
    except FileNotFoundError:
        raise DockerError(
            f'the docker command is not installed: run `eval "$({DOCKER_HERE})"` (installs Debian\'s docker.io)'
        ) from None


def check_daemon() -> None:
    result = _docker("info", "--format", "{{.ServerVersion}}")
    if result.returncode != 0:
        where = os.environ.get("DOCKER_HOST", "the default socket")
        raise DockerError(
            f"no Docker daemon answers at {where} ({result.stderr.strip()[-300:]}): container workers need one; "
            f'start it with `eval "$({DOCKER_HERE})"`'
        )


def _digest(context: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in context.rglob("*") if p.is_file()):
        digest.update(f"{path.relative_to(context)}\0{path.stat().st_size}\0".encode())
        if path.parent.name != worker_image.WHEELS:  # a wheel's name and size say enough
            digest.update(path.read_bytes())
    return digest.hexdigest()


# Images this process built, by their context's digest and the daemon: an unchanged context is not sent again.
_built: dict[tuple[str, str], str] = {}


def build_image(repo_root: Path = REPO_ROOT, tag: str = IMAGE_TAG) -> str:
    """Build the worker image (Docker's layer cache makes an unchanged rebuild quick); return its id."""
    check_daemon()
    context = worker_image.stage_context(repo_root, repo_root / CONTEXT_DIR)
    key = (_digest(context), os.environ.get("DOCKER_HOST", ""))
    if key in _built and _docker("image", "inspect", _built[key]).returncode == 0:
        return _built[key]
    # The classic builder (no buildx here) on the host's network: the daemon may have no bridge.
    command = ["docker", "build", "--network", "host", "-f", worker_image.DOCKERFILE, "-t", tag, str(context)]
    log = repo_root / BUILD_LOG
    with log.open("w") as out:
        result = subprocess.run(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=BUILD_TIMEOUT_S,
            check=False,
            env={**os.environ, "DOCKER_BUILDKIT": "0"},
        )
    if result.returncode != 0:
        raise DockerError(
            f"building the worker image from {worker_image.DOCKERFILE} failed (log: {log}):\n{log.read_text()[-3000:]}"
        )
    inspected = _docker("image", "inspect", "--format", "{{.Id}}", tag)
    if inspected.returncode != 0:
        raise DockerError(f"the worker image {tag} was built but cannot be inspected: {inspected.stderr.strip()}")
    _built[key] = inspected.stdout.strip()
    return _built[key]


@dataclass(frozen=True)
class WorkerSize:
    """The task definition's size, as Fargate gives it to the task: CPU units (1024 = 1 vCPU) and MiB."""

    cpu_units: int = 1024
    memory_mib: int = 2048


# `docker run`'s own exit codes: the daemon could not create or start the container (an image that is not
# there), or its command could not be run. The worker never ran (ECS's TaskFailedToStart).
DOCKER_RUN_FAILED = frozenset({125, 126, 127})


class ContainerWorkers:
    """Starts a task's worker as a container of `image`, limited to the task's size as Fargate limits
    it; the environment goes by name only (`-e NAME`), so that no value (the task token, credentials)
    appears in a command line."""

    def __init__(self, image: str, size: WorkerSize = WorkerSize()):
        self.image = image
        self.size = size

    def command(self, task_id: str, env: Mapping[str, str]) -> list[str]:
        names = [arg for name in sorted(env) for arg in ("-e", name)]
        # The label names the coordinator: `docker ps --filter label=pgarena.coordinator` lists what a
        # coordinator left, and the next local run removes those whose coordinator is gone (pgarena.local.children).
        label = f"{COORDINATOR_LABEL}={coordinator_label(me())}"
        limits = ["--cpus", f"{self.size.cpu_units / 1024:g}", "--memory", f"{self.size.memory_mib}m"]
        # --pull never: the image is built here (build_image); one that is not here fails to start, as
        # Fargate's CannotPullContainerError, instead of being looked for in a registry.
        return [
            "docker", "run", "--rm", "--pull", "never", "--network", "host", *limits, "--name", self.container(task_id), "--label", label,
            *names, self.image,
        ]  # fmt: skip

    def container(self, task_id: str) -> str:
        return CONTAINER_PREFIX + task_id

    def never_ran(self, exit_code: int) -> bool:
        return exit_code in DOCKER_RUN_FAILED

    def start(self, task_id: str, env: Mapping[str, str], log: IO[str]) -> subprocess.Popen[bytes]:
        # `docker run` passes SIGTERM on to the container (StopTask), as ECS signals the task; it gets one
        # too when this process dies (the parent-death signal), and passes it on the same way.
        docker_env = {name: os.environ[name] for name in ("PATH", "HOME", "DOCKER_HOST") if name in os.environ}
        return spawn(
            lambda: subprocess.Popen(
                self.command(task_id, env),
                env={**docker_env, **env},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=die_with_parent(signal.SIGTERM),
            )
        )

    def kill(self, task_id: str) -> None:
        """What SIGKILL of the `docker run` client leaves running: the container itself."""
        _docker("rm", "--force", CONTAINER_PREFIX + task_id)


def reap_containers(docker: Callable[..., subprocess.CompletedProcess[str]] = _docker) -> list[str]:
    """Remove the worker containers whose coordinator is gone (by their label); one message per container."""
    listed = docker(
        "ps", "--filter", f"label={COORDINATOR_LABEL}", "--format", f'{{{{.Names}}}} {{{{.Label "{COORDINATOR_LABEL}"}}}}'
    )
    messages = []
    for line in listed.stdout.splitlines() if listed.returncode == 0 else []:
        name, _, label = line.partition(" ")
        host, _, rest = label.partition("/")
        pid, _, started = rest.partition("/")
        try:
            coordinator = ProcessIdentity(pid=int(pid), host=host, started=started)
        except ValueError:  # a label not of ours
            continue
        if not is_running(coordinator) and docker("rm", "--force", name).returncode == 0:
            messages.append(f"removed container {name}, left running by a coordinator that is gone (pid {pid})")
    return messages
