"""The `docker run` command the local ECS stand-in starts a container worker with."""

from pgarena.local import containers


def test_a_container_gets_the_tasks_environment_by_name_only():
    # Given a task's environment with a secret value
    workers = containers.ContainerWorkers("pgarena-worker:test")

    # When building its docker run command
    command = workers.command("abc", {"PGARENA_TASK_TOKEN": "s3cret-token", "AWS_REGION": "us-east-1"})

    # Then the names are passed, never the values, on the host's network
    assert command == [
        "docker", "run", "--rm", "--network", "host", "--cpus", "1", "--memory", "2048m", "--name", "pgarena-worker-abc",
        "-e", "AWS_REGION", "-e", "PGARENA_TASK_TOKEN", "pgarena-worker:test",
    ]  # fmt: skip


def test_a_container_is_limited_to_the_task_definitions_size():
    # Given a 0.25-vCPU, 512 MiB task definition
    workers = containers.ContainerWorkers("pgarena-worker:test", containers.WorkerSize(cpu_units=256, memory_mib=512))
    # Then its container gets that much, as Fargate gives it
    command = workers.command("abc", {})
    assert command[command.index("--cpus") + 1] == "0.25" and command[command.index("--memory") + 1] == "512m"
