"""What `--json` prints for validate, estimate, run and compare: one documented schema each (`--json-schema`
prints it), and the error document every command prints instead when it exits on an error.

`pgarena history --json` has its own (pgarena.analysis.history.schema). A document is the only thing a
command prints on stdout under `--json`: progress and warnings go to stderr (or nowhere with `--quiet`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from pgarena.model.comparison import Comparison
from pgarena.model.cost import CostEstimate
from pgarena.model.pairwise import Outcome
from pgarena.model.results import CampaignCost, RankEntry
from pgarena.model.tool_spec import StepKind


class ErrorDetail(BaseModel):
    """One error: what is wrong, where in the matrix when a field is at fault, and what to do when a separate fix is known
    (a matrix problem's message says its fix itself: 'unknown field (did you mean duration_s?): remove it …')."""

    field: str | None = Field(None, description="the JSON path of the field at fault, e.g. $.workloads[0].run.clients")
    message: str
    fix: str | None = None


class ErrorDocument(BaseModel):
    """What any command prints under `--json` when it exits on an error: the same exit code as without `--json`."""

    error: ErrorDetail = Field(description="the first error (the only one but for a matrix's problems)")
    errors: list[ErrorDetail] = Field(description="every error found, `error` first: a matrix's, one per JSON path")
    exit_code: int


class ValidateOutput(BaseModel):
    """`pgarena validate --json`: the matrix is valid (an invalid one prints an ErrorDocument, exit 1)."""

    ok: Literal[True] = True
    matrix: str = Field(description="the file checked")
    campaign: str
    targets: list[str]
    workloads: list[str]
    stack: str | None = Field(None, description="the deployed stack whose worker sites the placements were checked against")
    warnings: list[str] = Field(default_factory=list, description="what does not stop a run but may surprise")


class EstimateStep(BaseModel):
    """One step of the plan: one worker's task (a shard of a step sharded over several workers)."""

    step_id: str
    phase: int
    target: str
    workload: str
    kind: StepKind
    clients: int | None = None
    repetition: int
    shard: int
    shards: int
    timeout_s: int
    expected_local_s: float = Field(description="its expected time with `run --local` on this machine")
    expected_aws_s: float = Field(description="its expected time in AWS, a worker's start-up included")


class EstimateDuration(BaseModel):
    local_s: float = Field(description="the campaign's expected wall time with `run --local` on this machine")
    aws_s: float = Field(description="the campaign's expected wall time in AWS (the cost guard's)")


class AwsLimits(BaseModel):
    """What the campaign asks of AWS's limits (pgarena.planning.footprint)."""

    history_events: int = Field(description="Step Functions execution history events (25,000 at most)")
    largest_state_bytes: int
    plan_bytes: int
    largest_progress_samples: int
    shards_per_step: int
    aggregation_series_bytes: int


class EstimateOutput(BaseModel):
    """`pgarena estimate --json`: the plan's steps, how long it takes and what it costs in AWS, line by line."""

    campaign: str
    priced_region: str = Field(description="the price table used: the region asked, or the default one when it has none")
    steps: list[EstimateStep]
    duration: EstimateDuration
    cost: CostEstimate = Field(description="the cost guard's estimate: its lines, total and bound (every step to its timeout)")
    cap_usd: float | None = Field(None, description="cost.cap_usd: over it, the cost guard refuses the campaign (exit 1)")
    monthly_cap_usd: float | None = None
    fixed_monthly_usd: float = Field(description="the deployed stack's own cost a month, whether campaigns run or not")
    notes: list[str] = Field(
        default_factory=list, description="what the figures assume (adaptive repetitions, embedded targets, the cap)"
    )
    aws_limits: AwsLimits


class RunFiles(BaseModel):
    folder: str = Field(description="the campaign's results folder on this machine")
    results_json: str
    report_html: str | None = None
    s3_prefix: str | None = Field(
        None, description="--aws: where the results are in the results bucket, s3://bucket/campaign_id/"
    )
    s3_results_json: str | None = Field(None, description="--aws: results.json's key, s3://bucket/campaign_id/results.json")


class RunTarget(BaseModel):
    name: str
    provider: str
    status: str = Field(description="succeeded, failed, skipped …, as results.json says")
    rank: int | None = Field(None, description="None when not ranked")
    score: float | None = None
    error: str | None = Field(None, description="why it failed, or why it was not ranked")


class RunVerdict(BaseModel):
    """One pair of ranked targets as the ranking decided it (results.json's comparisons)."""

    a: str
    b: str
    outcome: Outcome
    reason: str


class RunOutput(BaseModel):
    """`pgarena run --json`: the campaign's outcome once it ended (exit 0, 3 some target failed or stalled, 130 cancelled);
    a run that could not start or finish prints an ErrorDocument."""

    campaign_id: str
    campaign: str
    where: Literal["local", "aws"]
    execution_arn: str | None = Field(None, description="--aws: the Step Functions execution")
    status: Literal["completed", "cancelled", "failed"] = Field(description="results.json's status")
    started_at: str
    finished_at: str
    wall_s: float
    results: RunFiles
    headline: str = Field(description="the stored verdict in one sentence ('' when nothing was ranked)")
    ranking: list[RankEntry]
    targets: list[RunTarget]
    verdicts: list[RunVerdict]
    stalled: list[str] = Field(default_factory=list, description="points a stall kept from the ranking")
    cost: CampaignCost | None = None
    exit_code: int


class RegressionGate(BaseModel):
    enabled: bool = Field(description="--fail-on-regression was given")
    regressions: list[str] = Field(description="target/workload/c<clients> of every point that regressed or failed in B")
    passed: bool = Field(description="False when enabled and any point regressed: the command exits 1")


class CompareOutput(BaseModel):
    """`pgarena compare --json`: every point of either campaign with its verdict and each figure's interval."""

    comparison: Comparison
    gate: RegressionGate
    exit_code: int
