"""The `docker run` command the local ECS stand-in starts a container worker with."""

import subprocess

from pgarena.local import containers
from pgarena.model.process import ProcessIdentity
from pgarena.system.processes import me


def test_a_container_gets_the_tasks_environment_by_name_only():
    # Given a task's environment with a secret value
    workers = containers.ContainerWorkers("pgarena-worker:test")

    # When building its docker run command
    command = workers.command("abc", {"PGARENA_TASK_TOKEN": "s3cret-token", "AWS_REGION": "us-east-1"})

    # Then the names are passed, never the values, on the host's network, labelled with its coordinator
    assert command == [
        "docker", "run", "--rm", "--pull", "never", "--network", "host", "--cpus", "1", "--memory", "2048m",
        "--name", "pgarena-worker-abc",
        "--label", f"pgarena.coordinator={containers.coordinator_label(me())}",
        "-e", "AWS_REGION", "-e", "PGARENA_TASK_TOKEN", "pgarena-worker:test",
    ]  # fmt: skip


def test_a_container_is_limited_to_the_task_definitions_size():
    # Given a 0.25-vCPU, 512 MiB task definition
    workers = containers.ContainerWorkers("pgarena-worker:test", containers.WorkerSize(cpu_units=256, memory_mib=512))
    # Then its container gets that much, as Fargate gives it
    command = workers.command("abc", {})
    assert command[command.index("--cpus") + 1] == "0.25" and command[command.index("--memory") + 1] == "512m"


def test_containers_whose_coordinator_is_gone_are_removed_and_no_others():
    # Given two labelled worker containers: one of this (running) process, one of a coordinator that died
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = ProcessIdentity(pid=gone.pid, host=me().host, started="boot:1")
    listed = (
        f"pgarena-worker-live {containers.coordinator_label(me())}\npgarena-worker-dead {containers.coordinator_label(dead)}\n"
    )
    calls = []

    def docker(*args, **kwargs):
        calls.append(args)
        return subprocess.CompletedProcess(args, 0, stdout=listed if args[0] == "ps" else "", stderr="")

    # When the next run starts with container workers
    messages = containers.reap_containers(docker)
    # Then only the dead coordinator's container is removed, with a message
    assert [c for c in calls if c[0] == "rm"] == [("rm", "--force", "pgarena-worker-dead")]
    assert messages == [f"removed container pgarena-worker-dead, left running by a coordinator that is gone (pid {gone.pid})"]
