"""The `docker run` command the local ECS stand-in starts a container worker with."""

from pgarena.local import containers


def test_a_container_gets_the_tasks_environment_by_name_only():
    # Given a task's environment with a secret value
    workers = containers.ContainerWorkers("pgarena-worker:test")

    # When building its docker run command
    command = workers.command("abc", {"PGARENA_TASK_TOKEN": "s3cret-token", "AWS_REGION": "us-east-1"})

    # Then the names are passed, never the values, on the host's network
    assert command == [
        "docker", "run", "--rm", "--network", "host", "--name", "pgarena-worker-abc",
        "-e", "AWS_REGION", "-e", "PGARENA_TASK_TOKEN", "pgarena-worker:test",
    ]  # fmt: skip
