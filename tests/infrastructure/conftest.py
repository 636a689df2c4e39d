"""Synthesis helpers for the infrastructure tests: the app is synthesized once per session for each context
(a synthesis takes tens of seconds: jsii, cdk-nag), and the tests only read what it wrote."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
# The CDK app's package lives in cdk/ (cdk.json runs `python3 cdk/app.py`), outside the pgarena package.
sys.path.insert(0, str(REPO_ROOT / "cdk"))

from aws_cdk import App  # noqa: E402
from aws_cdk.assertions import Template  # noqa: E402

from pgarena_cdk.application import build, cdk_json_context  # noqa: E402
from pgarena_cdk.stack import PgarenaStack  # noqa: E402


@dataclass(frozen=True)
class Synthesized:
    stack: PgarenaStack
    outdir: Path
    template: Template
    # Set when synthesis failed validation (cdk-nag findings left unacknowledged); the template is
    # still written, so the other tests can run and this one failure is reported by its own test.
    validation_error: Exception | None

    @property
    def resources(self) -> dict:
        return self.template.to_json()["Resources"]

    def resources_of_type(self, type_: str) -> dict:
        return {name: body for name, body in self.resources.items() if body["Type"] == type_}

    def asset_dir(self, asset_hash: str) -> Path:
        return self.outdir / f"asset.{asset_hash}"


def synthesize(outdir: Path, **context_overrides) -> Synthesized:
    app = App(context={**cdk_json_context(), **context_overrides}, outdir=str(outdir))
    stack = build(app)
    validation_error = None
    try:
        app.synth()
    except RuntimeError as error:
        validation_error = error
    template_json = json.loads((outdir / stack.template_file).read_text())
    return Synthesized(stack, outdir, Template.from_json(template_json), validation_error)


@pytest.fixture(scope="session")
def synthesize_app():
    """`synthesize(outdir, **context)`, for a test whose synthesis fails (the others share `synthesized`)."""
    return synthesize


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory) -> Callable[..., Synthesized]:
    """`synthesized(**context)`: the app with `context` over cdk.json's, synthesized once per session for each
    context, so that modules asking for the same context share one synthesis."""
    done: dict[str, Synthesized] = {}

    def synthesized_with(**context_overrides) -> Synthesized:
        key = json.dumps(context_overrides, sort_keys=True)
        if key not in done:
            done[key] = synthesize(tmp_path_factory.mktemp("cdk.out"), **context_overrides)
        return done[key]

    return synthesized_with


@pytest.fixture(scope="session")
def default_synth(synthesized) -> Synthesized:
    """The app as `cdk synth` builds it from cdk.json alone: a new VPC."""
    return synthesized()


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT
