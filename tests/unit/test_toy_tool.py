"""A tool from a test-only package (tests/unit/toytool) registered and run through the step use case:
adding a tool needs its package and a registration, no edit elsewhere."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from pgarena.campaign.step.run import run_step
from pgarena.model.plan import Step
from pgarena.tools.registry import TOOLS, registered, tool_for
from tests.unit.step_fakes import FakeProcesses, Fakes, FakeTool, a_run_step
from tests.unit.toytool.spec import ToyStep
from tests.unit.toytool.tool import Toy


def test_a_registered_toy_tool_runs_a_step_through_the_use_case(monkeypatch, tmp_path):
    # Given the toy tool registered, and a run step whose record is the toy's
    monkeypatch.setenv("PGARENA_PW_A", "s3cr3t-pw")
    monkeypatch.setenv(Toy.binary_env, "/opt/toy/bin/toy")
    planned = a_run_step().model_dump(mode="json")
    planned["spec"] = ToyStep(operations=500, duration_s=2).model_dump(mode="json")
    fakes, processes = Fakes(), FakeProcesses(FakeTool(["toy 0.1\n", "operations: 500\n", "ops/s: 250.5\n"]))
    with registered(Toy(), ToyStep):
        assert tool_for("toy").name == "toy"
        # The step as the worker reads it (JSON, as the state machine hands it over): the toy's record
        step = Step.model_validate_json(json.dumps(planned))
        assert isinstance(step.spec, ToyStep) and step.spec.operations == 500
        assert json.loads(step.model_dump_json())["spec"]["operations"] == 500
        # When the worker runs it
        summary = run_step(step, fakes.worker(processes), tmp_path, 1)
    # Then the toy's command ran, and its summary has the toy's figures, stored
    argv, env = processes.started[0]
    assert argv == ["/opt/toy/bin/toy", "--operations", "500", "--clients", str(step.clients)]
    assert env["TOY_PASSWORD"] == "s3cr3t-pw"
    assert summary.tool == "toy" and summary.status == "succeeded" and summary.tps == 250.5 and summary.transactions == 500
    assert summary.worker is not None and summary.worker.tools == {"toy": "toy (fake) 1.0"}
    assert fakes.store.stored == [summary] and fakes.store.files[f"{step.raw_prefix}/toy.log"].endswith("ops/s: 250.5\n")
    # And the registration ends with the block
    assert "toy" not in TOOLS
    with pytest.raises(ValidationError, match="no tool named 'toy'"):
        Step.model_validate_json(json.dumps(planned))


def test_a_tool_cannot_be_registered_over_another():
    class Impostor(Toy):
        name = "pgbench"

    with pytest.raises(ValueError, match="pgbench is registered already"), registered(Impostor(), ToyStep):
        pass
    assert tool_for("pgbench").name == "pgbench" and type(tool_for("pgbench")).__name__ == "Pgbench"
