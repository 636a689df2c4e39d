"""cdk-nag (v3) checks and acknowledgements: every finding left in place carries its reason here."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct


def add_security_checks(app: IConstruct) -> None:
    # Unacknowledged findings fail synthesis; acknowledgements and their reasons are recorded in the
    # cloud assembly (`aws:cdk:acknowledged-rules` metadata), not in the template.
    Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))


def acknowledge(scope: IConstruct, rule: str, reason: str, finding: str | None = None) -> None:
    """Acknowledge one finding of `rule` on `scope` and its children; `finding` narrows it (IAM5's `Resource::*`)."""
    rule_id = f"{rule}[{finding}]" if finding else rule
    Validations.of(scope).acknowledge(Acknowledgment(id=rule_id, reason=reason))
