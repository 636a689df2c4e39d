"""Builds the app: the stack from the context's settings, checked by cdk-nag."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aws_cdk import App

from pgarena_cdk.nag import add_security_checks
from pgarena_cdk.settings import DeploySettings
from pgarena_cdk.site_stack import WorkerSiteStack, site_stack_id
from pgarena_cdk.stack import PgarenaStack

REPO_ROOT = Path(__file__).resolve().parents[2]
CDK_JSON = REPO_ROOT / "cdk.json"


def cdk_json_context(cdk_json: Path = CDK_JSON) -> dict[str, Any]:
    """cdk.json's context (settings and feature flags).

    The CDK CLI passes it to the app itself; loading it here as well makes `python cdk/app.py` and
    the tests synthesize the same template. Context from the CLI (`-c key=value`) still wins.
    """
    context: dict[str, Any] = json.loads(cdk_json.read_text())["context"]
    return context


def build(app: App, repo_root: Path = REPO_ROOT) -> PgarenaStack:
    """Add the stack to `app`, and a worker site's stack per region of `pgarena:sites` (its
    `site_stacks`). No `env` on the home stack: it is environment-agnostic, so synth never calls AWS."""
    settings = DeploySettings.from_context(app.node)
    stack = PgarenaStack(app, settings.stack_name, settings=settings, repo_root=repo_root)
    stack.site_stacks = [
        WorkerSiteStack(app, site_stack_id(site.region, settings.stack_name), site, settings, repo_root)
        for site in settings.sites
    ]
    add_security_checks(app)
    return stack
