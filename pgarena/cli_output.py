"""`--json` and `--quiet` for validate, estimate, run and compare: the mode a command runs in, the documents
it prints (their models: pgarena.model.cli_output) and the error document it prints instead on an error.

A command runs its body inside `command_output(as_json, quiet)`. Its error lines (pgarena.cli's `_fail`,
`_print_problems`) are recorded as they are printed on stderr; when the command exits non-zero without
having printed its document, the error document is printed on stdout with the same exit code.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer
from pydantic import BaseModel
from typer.core import TyperCommand
from typer.exceptions import TyperException

from pgarena.analysis.headline import headline, phase_cost
from pgarena.analysis.metrics import stored_metrics
from pgarena.analysis.ranking import unranked_reasons
from pgarena.model.cli_output import (
    AwsLimits,
    CompareOutput,
    ErrorDetail,
    ErrorDocument,
    EstimateDuration,
    EstimateOutput,
    EstimateStep,
    RegressionGate,
    RunFiles,
    RunOutput,
    RunTarget,
    RunVerdict,
)
from pgarena.model.comparison import Comparison
from pgarena.model.cost import CostEstimate
from pgarena.model.layout import campaign_prefix, results_key
from pgarena.model.matrix import Campaign
from pgarena.model.plan import Plan, Step
from pgarena.model.results import CampaignResults
from pgarena.planning.cost import TASK_OVERHEAD_S, expected_work_s
from pgarena.planning.duration import local_step_s
from pgarena.planning.footprint import Footprint


@dataclass
class Output:
    """How the running command prints: `as_json` one document on stdout, `quiet` nothing but errors."""

    as_json: bool = False
    quiet: bool = False
    errors: list[ErrorDetail] = field(default_factory=list)
    printed: bool = False

    @property
    def human(self) -> bool:
        """The tables and lines for people, on stdout: neither --json nor --quiet."""
        return not (self.as_json or self.quiet)

    @property
    def progress(self) -> bool:
        """Progress and warnings: on stdout for people, on stderr beside a JSON document, none with --quiet."""
        return not self.quiet

    def record(self, message: str, field: str | None = None, fix: str | None = None) -> None:
        self.errors.append(ErrorDetail(field=field, message=message, fix=fix))

    def emit(self, document: BaseModel) -> None:
        print(document.model_dump_json(indent=2))
        self.printed = True


# The running command's mode; commands without --json (and code outside any command) print as always.
_current: ContextVar[Output | None] = ContextVar("pgarena_output", default=None)


def current() -> Output:
    return _current.get() or Output()


def error_document(errors: list[ErrorDetail], exit_code: int) -> ErrorDocument:
    first = errors[0] if errors else ErrorDetail(message=f"exited {exit_code}")
    return ErrorDocument(error=first, errors=errors or [first], exit_code=exit_code)


@contextmanager
def command_output(as_json: bool, quiet: bool) -> Iterator[Output]:
    """The command's body runs in this mode; an error exit under --json prints the error document."""
    output = Output(as_json=as_json, quiet=quiet)
    token = _current.set(output)
    try:
        yield output
    except typer.Exit as stop:
        if output.as_json and stop.exit_code != 0 and not output.printed:
            output.emit(error_document(output.errors, stop.exit_code))
        raise
    except Exception as error:  # a bug's traceback still goes to stderr; stdout stays one JSON document
        if output.as_json and not output.printed:
            output.record(f"{type(error).__name__}: {error}")
            output.emit(error_document(output.errors, 1))
        raise
    finally:
        _current.reset(token)


class JsonCommand(TyperCommand):
    """A command whose --json covers the option parser's refusals too (a wrong option, a missing argument): the
    error document on stdout with the parser's exit code, its usage message on stderr as always."""

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        wants_json = "--json" in args  # before parsing, which consumes the list
        try:
            return super().make_context(info_name, args, parent, **extra)
        except TyperException as refused:
            if wants_json:
                detail = ErrorDetail(message=refused.format_message())
                print(error_document([detail], refused.exit_code).model_dump_json(indent=2))
            raise


def print_schemas(document: type[BaseModel]) -> None:
    """`--json-schema`: the command's document and the error document, as `history --json-schema` prints its own."""
    schemas = {"output": document.model_json_schema(), "error": ErrorDocument.model_json_schema()}
    print(json.dumps(schemas, indent=2))


def estimate_steps(plan: Plan) -> list[EstimateStep]:
    return [_estimate_step(phase.phase, step) for phase in plan.phases for target in phase.targets for step in target.steps]


def _estimate_step(phase: int, step: Step) -> EstimateStep:
    return EstimateStep(
        step_id=step.step_id,
        phase=phase,
        target=step.target,
        workload=step.workload,
        kind=step.kind,
        clients=step.clients,
        repetition=step.repetition,
        shard=step.shard,
        shards=step.shards,
        timeout_s=step.timeout_s,
        expected_local_s=round(local_step_s(step), 3),
        expected_aws_s=round(expected_work_s(step) + TASK_OVERHEAD_S, 3),
    )


def estimate_document(  # noqa: PLR0913  # what `estimate` computed, each piece once
    campaign: Campaign,
    plan: Plan,
    estimate: CostEstimate,
    priced_region: str,
    local_s: float,
    fixed_monthly_usd: float,
    notes: list[str],
    limits: Footprint,
) -> EstimateOutput:
    return EstimateOutput(
        campaign=campaign.campaign,
        priced_region=priced_region,
        steps=estimate_steps(plan),
        duration=EstimateDuration(local_s=round(local_s, 3), aws_s=round(estimate.wall_s, 3)),
        cost=estimate,
        cap_usd=campaign.cost.cap_usd if campaign.cost else None,
        monthly_cap_usd=campaign.cost.monthly_cap_usd if campaign.cost else None,
        fixed_monthly_usd=round(fixed_monthly_usd, 2),
        notes=notes,
        aws_limits=AwsLimits.model_validate(limits.model_dump()),
    )


def run_targets(results: CampaignResults) -> list[RunTarget]:
    """Each target with its rank and score, or why it has none (as the ranking table says)."""
    ranks = {r.target: r for r in results.ranking}
    unranked = unranked_reasons(results.targets, results.ranking, stored_metrics(results), results.footing)
    targets = []
    for t in results.targets:
        entry = ranks.get(t.name)
        error = f"{t.error.kind}: {t.error.message}" if t.error else (None if entry else unranked.get(t.name))
        targets.append(
            RunTarget(
                name=t.name,
                provider=t.provider,
                status=t.status,
                rank=entry.rank if entry else None,
                score=entry.score if entry else None,
                error=error,
            )
        )
    return targets


def run_document(  # noqa: PLR0913  # the results and where they are: each given once
    results: CampaignResults,
    folder: Path,
    wall_s: float,
    stalled: list[str],
    exit_code: int,
    execution_arn: str | None = None,
    bucket: str | None = None,
) -> RunOutput:
    report = folder / "report.html"
    return RunOutput(
        campaign_id=results.campaign_id,
        campaign=results.campaign,
        where="aws" if execution_arn else "local",
        execution_arn=execution_arn,
        status=results.status,
        started_at=results.started_at,
        finished_at=results.finished_at,
        wall_s=round(wall_s, 3),
        results=RunFiles(
            folder=str(folder),
            results_json=str(folder / "results.json"),
            report_html=str(report) if report.exists() else None,
            s3_prefix=f"s3://{bucket}/{campaign_prefix(results.campaign_id)}" if bucket else None,
            s3_results_json=f"s3://{bucket}/{results_key(results.campaign_id)}" if bucket else None,
        ),
        headline=headline(results.ranking, results.comparisons, results.footing, phase_cost(results)) or "",
        ranking=results.ranking,
        targets=run_targets(results),
        verdicts=[RunVerdict(a=c.a, b=c.b, outcome=c.outcome, reason=c.reason) for c in results.comparisons],
        stalled=stalled,
        cost=results.cost,
        exit_code=exit_code,
    )


def regression_labels(comparison: Comparison) -> list[str]:
    return [f"{c.target}/{c.workload}/c{c.clients}" for c in comparison.regressions]


def compare_document(comparison: Comparison, fail_on_regression: bool, exit_code: int) -> CompareOutput:
    regressions = regression_labels(comparison)
    gate = RegressionGate(enabled=fail_on_regression, regressions=regressions, passed=not (fail_on_regression and regressions))
    return CompareOutput(comparison=comparison, gate=gate, exit_code=exit_code)
