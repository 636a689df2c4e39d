"""Local stand-ins for the Lambda and ECS APIs, reached by the AWS SDK through AWS_ENDPOINT_URL_*.

The Lambda endpoint runs the real handlers; the ECS endpoint starts the real worker entrypoint, as a
process or (pgarena.local.containers) as a container of the worker image. Both speak just enough of the wire protocol for Invoke and RunTask/StopTask,
and answer only requests signed with one of the run's keys (pgarena.local.signing): anything else gets 403.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import signal
import subprocess
import threading
import traceback
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any, Protocol, Self
from urllib.parse import unquote

from pgarena.aws.launch import step_field
from pgarena.local.children import Children
from pgarena.local.signing import RunKeys
from pgarena.local.task_env import WorkerUserError, override_refusal, own_user, process_environment, worker_command
from pgarena.model.results import now_iso
from pgarena.planning.limits import RUNTASK_OVERRIDES_LIMIT_CHARS
from pgarena.system.processes import die_with_parent, spawn

Handler = Callable[[dict[str, Any], Any], Any]  # (event, context) -> a JSON-serializable result

ACCOUNT = "123456789012"
REGION = "us-east-1"
# Credential=AKID/20240101/eu-west-1/ecs/aws4_request: a request's region is its signature's.
_CREDENTIAL_SCOPE = re.compile(r"Credential=[^/,\s]+/\d{8}/(?P<region>[^/,\s]+)/")
FUNCTIONS = (
    "validate",
    "cost_guard",
    "preflight",
    "launch_worker",
    "release_lease",
    "aggregate",
    "decide",
    "finalize_stopped",
    "task_stopped",
)


def function_arn(name: str, region: str = REGION) -> str:
    """A function's ARN; a site region's (its own task_stopped) has the same name, and the same handler here."""
    return f"arn:aws:lambda:{region}:{ACCOUNT}:function:pgarena-{name.replace('_', '-')}"


def load_handlers() -> dict[str, Handler]:
    """The real Lambda handlers, by the function name their ARN ends with."""
    return {
        function_arn(name).rsplit(":", 1)[1]: importlib.import_module(f"functions.{name}.handler").handler for name in FUNCTIONS
    }


@dataclass
class LambdaContext:
    function_name: str
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = ""
    log_group_name: str = "local"
    log_stream_name: str = "local"

    def get_remaining_time_in_millis(self) -> int:
        return 900_000


class _Server:
    def __init__(self, handler_class: type[BaseHTTPRequestHandler]):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler_class)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_port}"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def region_of(authorization: str) -> str | None:
    """The region of a SigV4 Authorization header's credential scope (None when it has none)."""
    match = _CREDENTIAL_SCOPE.search(authorization)
    return match["region"] if match else None


def cluster_region(cluster: str) -> str | None:
    """The region of a cluster ARN (None for a cluster given by name: the endpoint's own)."""
    parts = cluster.split(":")
    return parts[3] if cluster.startswith("arn:") and len(parts) > 5 else None


def _task_region(task_arn: str) -> str:
    return task_arn.split(":")[3]


def cluster_name(cluster: str) -> str:
    """A cluster's name, from its ARN or as given; ECS's `default` when none is."""
    return cluster.rsplit("/", 1)[-1] or "default"


class _Quiet(BaseHTTPRequestHandler):
    raw: bytes = b""

    def log_message(self, *args: object) -> None:  # the runtime shows progress its own way
        pass

    @property
    def region(self) -> str:
        """The region the request was signed for (its credential scope's): the regional endpoint it meant."""
        return region_of(self.headers.get("Authorization") or "") or REGION

    def _signed(self, keys: RunKeys) -> bool:
        """Whether the request is one of the run's callers'; if not, it is answered 403 here."""
        length = int(self.headers.get("Content-Length") or 0)
        self.raw = self.rfile.read(length)
        reason = keys.refusal(self.command, self.path, self.headers.get, self.raw)
        if reason is None:
            return True
        self._reply(
            {"__type": "AccessDeniedException", "Type": "User", "message": f"refused by the local runtime: {reason}"},
            status=403,
            headers={"x-amzn-ErrorType": "AccessDeniedException"},
        )
        return False

    def _body(self) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.raw or b"{}")
        return body

    def _reply(self, payload: Any, headers: dict[str, str] | None = None, status: int = 200) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)


class FunctionError(Exception):
    """An invocation that failed outside this process, as Lambda reports it: errorType, errorMessage, stackTrace."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error.get("errorMessage", ""))
        self.error = error


class LambdaEndpoint(_Server):
    """POST /2015-03-31/functions/{name}/invocations calls the function's handler: the handler itself, in
    this process, or (--aws-strict) a pgarena.local.assets.AssetFunction running its synthesized asset."""

    def __init__(self, handlers: Mapping[str, Handler], keys: RunKeys):
        endpoint = self

        class Invoke(_Quiet):
            def do_POST(self) -> None:
                if not self._signed(keys):
                    return
                name = unquote(self.path.split("/functions/", 1)[1].split("/", 1)[0]).rsplit(":", 1)[-1]
                handler = endpoint.handlers.get(name)
                if handler is None:
                    self._reply(
                        {"Type": "User", "message": f"Function not found: {name}"},
                        status=404,
                        headers={"x-amzn-ErrorType": "ResourceNotFoundException"},
                    )
                    return
                event = self._body()
                try:
                    result = handler(event, LambdaContext(function_name=name, invoked_function_arn=name))
                except FunctionError as error:  # a handler run elsewhere (its asset): its error as reported there
                    self._reply(error.error, headers={"X-Amz-Function-Error": "Unhandled"})
                    return
                except Exception as error:  # reported the way Lambda reports an unhandled error
                    self._reply(
                        {
                            "errorType": type(error).__name__,
                            "errorMessage": str(error),
                            "stackTrace": traceback.format_exc().splitlines()[-5:],
                        },
                        headers={"X-Amz-Function-Error": "Unhandled"},
                    )
                    return
                self._reply(result)

        self.handlers = handlers
        super().__init__(Invoke)


# ECS RunTask: "the total character count of container overrides (JSON) cannot exceed 8192 characters"
# (validation plans within the same limit).
MAX_OVERRIDES_CHARS = RUNTASK_OVERRIDES_LIMIT_CHARS


class InvalidParameter(Exception):
    pass


class ClusterNotFound(Exception):
    """A cluster ARN of another region than the endpoint's: ECS is regional, and finds no such cluster."""


class Workers(Protocol):
    """How a task's worker starts on this machine, and what stopping it for good takes."""

    def start(self, task_id: str, env: Mapping[str, str], log: IO[str]) -> subprocess.Popen[bytes]: ...

    def kill(self, task_id: str) -> None: ...

    def container(self, task_id: str) -> str | None:
        """The task's container, when it runs in one: what a later run removes if this process died."""

    def never_ran(self, exit_code: int) -> bool:
        """Whether a task whose process ended with `exit_code` never ran its worker (ECS's TaskFailedToStart)."""


class ProcessWorkers:
    """The worker entrypoint of this interpreter (pgarena.local.task_env.worker_command), in the filesystem's
    root, with the environment a Fargate task gets (pgarena.local.task_env), as `user` (uid, gid) when
    given: a user of its own when this process is root."""

    def __init__(self, user: tuple[int, int] | None = None) -> None:
        self.user = user
        self.command: list[str] | None = None  # found on the first start, as `user` can run it

    def start(self, task_id: str, env: Mapping[str, str], log: IO[str]) -> subprocess.Popen[bytes]:
        environment = process_environment(env, own_user=self.user is not None)
        if self.command is None:
            self.command = worker_command(self.user, environment)
        command = self.command
        as_user: dict[str, Any] = {}
        if self.user is not None:
            as_user = {"user": self.user[0], "group": self.user[1], "extra_groups": []}
        # Killed with this process (SIGKILL: with it gone, nothing the worker could report would arrive);
        # the tool it runs dies with the worker in turn.
        return spawn(
            lambda: subprocess.Popen(
                command,
                env=environment,
                cwd="/",
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=die_with_parent(signal.SIGKILL),
                **as_user,
            )
        )

    def kill(self, task_id: str) -> None:  # killing its process group was all it took
        pass

    def container(self, task_id: str) -> str | None:
        return None

    def never_ran(self, exit_code: int) -> bool:  # the process is the worker: it ran (exec failures raise in start)
        return False


# What ECS's task state change carries (pgarena.aws.task_stopped reads it): one callback per stopped task.
TaskStopped = Callable[[dict[str, Any]], None]
# The last lines of a task's log that name why it did not start.
REASON_LINES = 2


def task_stopped_event(
    task: dict[str, Any], stopped_reason: str, container_reason: str, exit_code: int | None = None
) -> dict[str, Any]:
    """ECS's "ECS Task State Change" for a stopped task: one that stopped before its container ran (no
    startedAt, TaskFailedToStart), or, given its container's `exit_code`, one that ran (startedAt, and the
    stop code ECS gives: UserInitiated after StopTask, else EssentialContainerExited)."""
    name = (task.get("overrides", {}).get("containerOverrides") or [{}])[0].get("name", "")
    container: dict[str, Any] = {"name": name, "lastStatus": "STOPPED", "reason": container_reason}
    ran: dict[str, Any] = {}
    if exit_code is not None:
        container["exitCode"] = exit_code if exit_code >= 0 else 128 - exit_code  # a signal's death as Docker says it: 137
        ran = {
            "startedAt": task.get("startedAt", ""),
            "stopCode": "UserInitiated" if task.get("desiredStatus") == "STOPPED" else "EssentialContainerExited",
        }
    return {
        "version": "0",
        "source": "aws.ecs",
        "detail-type": "ECS Task State Change",
        "account": ACCOUNT,
        "region": task["taskArn"].split(":")[3],
        "resources": [task["taskArn"]],
        "detail": {
            "clusterArn": task.get("clusterArn"),
            "taskArn": task["taskArn"],
            "lastStatus": "STOPPED",
            "desiredStatus": "STOPPED",
            "stopCode": "TaskFailedToStart",
            "stoppedReason": stopped_reason,
            "startedBy": task.get("startedBy", ""),
            "overrides": task.get("overrides", {}),
            "containers": [container],
        }
        | ran,
    }


def _last_lines(log_path: Path) -> str:
    try:
        lines = [line.strip() for line in log_path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-REASON_LINES:])


def _check_request(request: dict[str, Any], region: str) -> None:
    """What ECS refuses before placing anything: a cluster of another region, overrides past its limit."""
    cluster = request.get("cluster", "")
    if cluster_region(cluster) not in (None, region):
        raise ClusterNotFound(f"Cluster not found: {cluster} is not a cluster of {region}")
    size = len(json.dumps(request.get("overrides", {}).get("containerOverrides", []), separators=(",", ":")))
    if size > MAX_OVERRIDES_CHARS:
        raise InvalidParameter(f"Container Overrides length must be at most {MAX_OVERRIDES_CHARS} (was {size})")


# A memberOf placement constraint on a container instance attribute (cluster query language), the one
# form pgarena sends: `attribute:pgarena.site == gcp-us-central1`.
_ATTRIBUTE_CONSTRAINT = re.compile(r"^attribute:(?P<name>[A-Za-z0-9_.-]+)\s*==\s*(?P<value>[A-Za-z0-9_.-]+)$")
# ECS's failure reason when no container instance satisfies a memberOf constraint.
CONSTRAINT_UNSATISFIED = "MemberOf placement constraint unsatisfied."


def satisfied(constraints: list[dict[str, Any]], attributes: Mapping[str, str]) -> bool:
    """Whether an instance with `attributes` meets every memberOf constraint (each `attribute:NAME == VALUE`)."""
    for constraint in constraints:
        match = _ATTRIBUTE_CONSTRAINT.match(constraint.get("expression", "").strip())
        if constraint.get("type") != "memberOf" or match is None:
            raise InvalidParameter(
                f"placement constraint {constraint!r} is not served locally (memberOf attribute:NAME == VALUE)"
            )
        if attributes.get(match["name"]) != match["value"]:
            return False
    return True


class EcsEndpoint(_Server):
    """RunTask starts a worker (`workers`: a process, or a container of the worker image) with worker_env
    (what the task gets besides RunTask's overrides: credentials, region, endpoints) and the container
    overrides' environment; overrides of what runs code or what the runtime sets are refused
    (pgarena.local.task_env). on_stopped gets the state change of a task whose worker never ran, as
    EventBridge hands ECS's to a rule's target.

    Launch type EXTERNAL (ECS Anywhere) places the task on one of `instances` (container instance ARN ->
    its attributes) that meets the request's placement constraints, and fails it as ECS does when none
    does; the worker itself starts as any other (this machine stands in for the external one)."""

    def __init__(  # noqa: PLR0913  # what a task gets, where it runs, where it may be placed, whom it reports to
        self,
        worker_env: dict[str, str],
        logs_dir: Path,
        keys: RunKeys,
        workers: Workers | None = None,
        children: Children | None = None,
        instances: Mapping[str, Mapping[str, str]] | None = None,
        on_stopped: TaskStopped | None = None,
    ):
        endpoint = self
        self.on_stopped = on_stopped
        self.children = children
        self.instances = dict(instances or {})
        self.worker_env = worker_env
        self.workers: Workers = workers or ProcessWorkers(own_user())
        self.logs_dir = logs_dir
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.tokens: dict[str, dict[str, Any]] = {}  # RunTask clientToken -> the task it started
        self.tasks: dict[str, dict[str, Any]] = {}  # task ARN -> the task as RunTask described it
        self.lock = threading.Lock()

        class Ecs(_Quiet):
            def do_POST(self) -> None:
                if not self._signed(keys):
                    return
                action = self.headers.get("X-Amz-Target", "").rsplit(".", 1)[-1]
                try:
                    self._reply(endpoint.answer(action, self._body(), self.region))
                except InvalidParameter as error:
                    self._reply({"__type": "InvalidParameterException", "message": str(error)}, status=400)
                except ClusterNotFound as error:
                    self._reply({"__type": "ClusterNotFoundException", "message": str(error)}, status=400)
                except WorkerUserError as error:  # no worker can start on this machine: said once, not retried
                    self._reply({"__type": "ClientException", "message": str(error)}, status=400)

        super().__init__(Ecs)

    def answer(self, action: str, body: dict[str, Any], region: str) -> dict[str, Any]:
        """The action's answer from `region`'s ECS (the request's signature names it)."""
        if action == "RunTask":
            return self.run_task(body, region)
        if action == "StopTask":
            return self.stop_task(body["task"], region, body.get("reason", ""))
        if action == "ListTasks":  # Ctrl-C and the runtime's cancel find a campaign's workers, site by site
            return self.list_tasks(body.get("cluster", ""), body.get("startedBy"), region)
        if action == "DescribeTasks":
            return self.describe_tasks(body.get("tasks", []), region)
        raise InvalidParameter(f"{action} is not served locally")

    def run_task(self, request: dict[str, Any], region: str = REGION) -> dict[str, Any]:
        """As ECS does: a repeated clientToken returns the task it started (no second worker), and
        container overrides past 8,192 characters are refused. `region`: the regional endpoint the request
        was sent to (a worker site's, for one in another region); its cluster must be there, and the task
        is that region's (its ARN, and the AWS_REGION its worker is given, as Fargate gives a task its own)."""
        cluster = request.get("cluster", "")
        _check_request(request, region)
        token = request.get("clientToken")
        with self.lock:
            if token and token in self.tokens:
                return {"tasks": [self.tokens[token]], "failures": []}
        placed = self._placement(request)
        if placed is None:
            return {"tasks": [], "failures": [{"arn": request.get("cluster", ""), "reason": CONSTRAINT_UNSATISFIED}]}
        task_id = uuid.uuid4().hex
        task_arn = f"arn:aws:ecs:{region}:{ACCOUNT}:task/{cluster_name(cluster)}/{task_id}"
        overrides = request.get("overrides", {}).get("containerOverrides", [{}])[0].get("environment", [])
        refusal = override_refusal(overrides)
        if refusal is not None:
            raise InvalidParameter(refusal)
        env = {**self.worker_env, "AWS_REGION": region, "AWS_DEFAULT_REGION": region}
        env.update({item["name"]: item["value"] for item in overrides})
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.logs_dir / f"worker-{task_id}.log"
        task = {
            "taskArn": task_arn,
            "lastStatus": "PROVISIONING",
            "clusterArn": request.get("cluster"),
            "startedBy": request.get("startedBy", ""),
            "overrides": request.get("overrides", {}),
            "launchType": request.get("launchType", "FARGATE"),
            **placed,
        }
        try:
            with log_path.open("w") as log:
                process = self.workers.start(task_id, env, log)
        except OSError as error:
            # RunTask succeeded, then the task stopped without running: ECS tells through the task's state change.
            self._stopped(task, "CannotStartContainerError: the worker could not be started", f"{type(error).__name__}: {error}")
            with self.lock:
                self.tasks[task_arn] = task
                if token:
                    self.tokens[token] = task
            return {"tasks": [task], "failures": []}
        task["startedAt"] = now_iso()  # its process runs: no provisioning to wait for
        campaign_id = step_field(env, "campaign_id")
        if self.children is not None:
            self.children.add(campaign_id, "worker", process.pid, group=True, container=self.workers.container(task_id))
        with self.lock:
            self.processes[task_arn] = process
            self.tasks[task_arn] = task
            if token:
                self.tokens[token] = task
        if self.on_stopped is not None:
            threading.Thread(target=self._watch, args=(task, process, log_path), name=f"task-{task_id}", daemon=True).start()
        return {"tasks": [task], "failures": []}

    def _placement(self, request: dict[str, Any]) -> dict[str, str] | None:
        """Where the task runs: {} for Fargate, an EXTERNAL task's container instance, or None when no
        registered instance meets its constraints."""
        if request.get("launchType") == "EXTERNAL":
            instance = self._external_instance(request.get("placementConstraints") or [])
            return None if instance is None else {"launchType": "EXTERNAL", "containerInstanceArn": instance}
        if request.get("placementConstraints"):
            raise InvalidParameter("Task placement constraints are not supported for the Fargate launch type")
        return {}

    def _external_instance(self, constraints: list[dict[str, Any]]) -> str | None:
        """A registered external instance meeting every constraint (the first, by ARN), or None."""
        for arn, attributes in sorted(self.instances.items()):
            if satisfied(constraints, attributes):
                return arn
        return None

    def _watch(self, task: dict[str, Any], process: subprocess.Popen[bytes], log_path: Path) -> None:
        """When the task's process ends, its state change goes out as ECS sends it: for a worker that never
        ran (a container that could not start), and for one that ran, whatever its exit (task_stopped fails
        the step a worker killed mid-step held, at once)."""
        exit_code = process.wait()
        if self.workers.never_ran(exit_code):
            reason = _last_lines(log_path) or f"exit code {exit_code}"
            self._stopped(task, f"CannotStartContainerError: {reason}", reason)
            return
        stopped_reason = task.get("stoppedReason") or "Essential container in task exited"
        if self.on_stopped is not None:
            self.on_stopped(task_stopped_event(task, stopped_reason, "", exit_code))

    def _stopped(self, task: dict[str, Any], stopped_reason: str, container_reason: str) -> None:
        if self.on_stopped is not None:
            self.on_stopped(task_stopped_event(task, stopped_reason, container_reason))

    def stop_task(self, task_arn: str, region: str = REGION, reason: str = "") -> dict[str, Any]:
        """StopTask: SIGTERM to the task's worker (ECS's SIGTERM; wait_stopped is its stop timeout), its
        stoppedReason kept. ECS is regional: a task of another region is not found."""
        with self.lock:
            task = self.tasks.get(task_arn) if _task_region(task_arn) == region else None
            process = self.processes.get(task_arn)
            if task is not None:
                task.update({"desiredStatus": "STOPPED", "stoppedReason": reason})
        if task is None:
            raise InvalidParameter(f"The referenced task was not found: {task_arn} in {region}")
        if process is not None and process.poll() is None:
            process.terminate()
        return {"task": {**task, "lastStatus": self._status(task_arn)}}

    def list_tasks(self, cluster: str, started_by: str | None, region: str = REGION) -> dict[str, Any]:
        """ListTasks with desiredStatus RUNNING: the workers of one cluster of `region` whose process still runs."""
        with self.lock:
            arns = [
                arn
                for arn, process in self.processes.items()
                if process.poll() is None
                and _task_region(arn) == region
                and cluster_name(self.tasks[arn].get("clusterArn") or "") == cluster_name(cluster)
                and started_by in (None, self.tasks[arn]["startedBy"])
            ]
        return {"taskArns": arns}

    def describe_tasks(self, task_arns: list[str], region: str = REGION) -> dict[str, Any]:
        with self.lock:
            known = [arn for arn in task_arns if arn in self.tasks and _task_region(arn) == region]
            found = [{**self.tasks[arn], "lastStatus": self._status(arn)} for arn in known]
        missing = [{"arn": arn, "reason": "MISSING"} for arn in task_arns if arn not in known]
        return {"tasks": found, "failures": missing}

    def _status(self, task_arn: str) -> str:
        process = self.processes.get(task_arn)
        return "RUNNING" if process is not None and process.poll() is None else "STOPPED"

    def wait_stopped(self, task_arns: list[str], timeout_s: float = 10) -> None:
        """Wait for the tasks StopTask was sent to, then kill what is left (ECS's stop timeout: SIGKILL after
        SIGTERM). Only these: a worker no StopTask reached keeps running, as it would in AWS."""
        with self.lock:
            processes = {arn: self.processes[arn] for arn in task_arns if arn in self.processes}
        self._stop(processes, timeout_s)

    def stop_all(self) -> None:
        with self.lock:
            processes = dict(self.processes)
        self._stop(processes, 10)

    def _stop(self, processes: dict[str, subprocess.Popen[bytes]], timeout_s: float) -> None:
        for process in processes.values():
            if process.poll() is None:
                process.terminate()
        for task_arn, process in processes.items():
            try:
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                try:  # the worker's session: it and the tool it started (a Fargate task stops whole)
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                process.wait()
                self.workers.kill(task_arn.rsplit("/", 1)[1])
