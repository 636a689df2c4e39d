"""The pgarena command line: validate, schema, run, parse."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.status import Status
from rich.table import Table
from rich.text import Text

from pgarena.analysis.compare import (
    DEFAULT_THRESHOLD,
    INCONCLUSIVE,
    ResultsError,
    compare_campaigns,
    figure_reason,
    interval_text,
    load_results,
)
from pgarena.analysis.footing import describe
from pgarena.analysis.headline import headline, phase_cost, rank_label, score_label
from pgarena.analysis.history import detect as history_detect
from pgarena.analysis.history import index as history_index
from pgarena.analysis.history import trends as history_trends
from pgarena.analysis.history.schema import CampaignEntry, Campaigns, History
from pgarena.analysis.metrics import stored_metrics
from pgarena.analysis.ranking import unranked_reasons
from pgarena.aws.deployment import STACK_NAME
from pgarena.cli_output import (
    JsonCommand,
    Output,
    command_output,
    compare_document,
    current,
    print_schemas,
    regression_labels,
    run_document,
)
from pgarena.model import matrix_reference
from pgarena.model.cli_output import CompareOutput, EstimateOutput, RunOutput, ValidateOutput
from pgarena.model.comparison import Change, Comparison, verdict_words
from pgarena.model.matrix import REGION_PATTERN, SITE_NAME_PATTERN, Campaign, json_schema
from pgarena.model.matrix_errors import MatrixError, Problem
from pgarena.model.metrics import TargetMetrics
from pgarena.model.results import CampaignResults
from pgarena.model.sites import SiteMap, site_problems
from pgarena.planning.campaign import load_execution_input
from pgarena.remote.execution import RESULTS_WAIT_S
from pgarena.remote.follow import WORKER_STATE
from pgarena.report import InconsistentResultsError, check_consistent, write_to_folder
from pgarena.report.progress import CampaignProgress
from pgarena.report.timestamps import utc_second
from pgarena.report.trends import render_trends_html, save_trend_page, trends_csv
from pgarena.report.view import repetitions_note
from pgarena.tools.workloads import TOOL_NAMES

if TYPE_CHECKING:
    from pgarena.remote.execution import AwsRun
    from pgarena.remote.follow import Event

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Benchmark PostgreSQL services, rank them honestly.")
console = Console()
errors = Console(stderr=True, soft_wrap=True)


# Exit codes, every command's (docs/guide/10-cli.md has them in one table; tests/unit/test_exit_codes.py checks it).
EXIT_OK = 0
EXIT_ERROR = 1  # invalid input, a refusal, a run that could not start or finish, a --fail-on-regression gate
EXIT_USAGE = 2  # bad usage, no such file
EXIT_FAILED_TARGETS = 3  # a campaign ran, and some target failed or stalled
EXIT_CANCELLED = 130  # cancelled (Ctrl-C, SIGTERM, StopExecution), as a shell reports Ctrl-C


# Piped output (a file, `less`, CI logs) is not cut to rich's 80 columns: a table is as wide as its widest row.
PIPED_WIDTH = 10_000


def _version(value: bool) -> None:
    if value:
        print(f"pgarena {metadata.version('pgarena')}")
        raise typer.Exit()


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (`kill`, systemd, a CI runner's time-out) takes Ctrl-C's path while a campaign runs: the campaign
    is cancelled, its workers and servers stopped and a results.json written, instead of an exit 143 leaving
    them to the next run's reaping."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set a handler
        yield
        return
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", is_eager=True, callback=_version, help="print pgarena's version and exit")
    ] = False,
) -> None:
    """Benchmark PostgreSQL services, rank them honestly. Every command: pgarena COMMAND FILE [options]."""
    for stream in (console, errors):
        if not stream.is_terminal and "COLUMNS" not in os.environ:  # an explicit COLUMNS still wins
            stream.width = PIPED_WIDTH


def _fail(text: str, field: str | None = None, fix: str | None = None) -> None:
    """An error line in red, printed as given: paths and messages may hold [brackets] rich would eat; recorded
    for the error document under --json."""
    errors.print(text, style="red", markup=False, highlight=False)
    current().record(text, field, fix)


def _json_schema(document: type[BaseModel]) -> Any:  # typer.Option is typed Any
    """--json-schema: printed before anything else is read (no file needed), as --version is."""

    def show(value: bool) -> None:
        if value:
            print_schemas(document)
            raise typer.Exit()

    return typer.Option(False, "--json-schema", is_eager=True, callback=show, help="print the JSON Schema of --json's document")


AsJson = Annotated[
    bool, typer.Option("--json", help="print one JSON document on stdout (its schema: --json-schema); progress on stderr")
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="print nothing but errors (and the document with --json)")]


def _warn(text: str) -> None:
    """A warning on stderr, unless --quiet."""
    if current().progress:
        errors.print(f"warning: {text}", style="yellow", markup=False, highlight=False)


def _status(text: str) -> AbstractContextManager[Status | None]:
    """The spinner line, for people only: under --json or --quiet stdout carries nothing else."""
    return console.status(_text(text)) if current().human else nullcontext()


def _text(value: object, style: str = "") -> Text:
    """Data (names, messages, settings, paths) as plain text: never read as rich markup or emoji codes."""
    return Text(str(value), style=style)


def _matrix_file(positional: Path | None, option: Path | None) -> Path:
    """MATRIX as every command takes its file (`pgarena run FILE`), or `--matrix FILE`, the spelling of
    earlier versions, kept hidden so that scripts written for them still run."""
    if positional is not None and option is not None and positional != option:
        _fail(f"two matrix files given ({positional} and --matrix {option}): give one")
        raise typer.Exit(EXIT_USAGE)
    chosen = positional or option
    if chosen is None:
        _fail("give the matrix file: pgarena COMMAND FILE [options]")
        raise typer.Exit(EXIT_USAGE)
    return chosen


def _load_or_exit(path: Path) -> Campaign:
    """The campaign of a matrix file, or of an execution input file (`{"campaign_id", "matrix"}`)."""
    return _load_input_or_exit(path)[0]


def _load_input_or_exit(path: Path) -> tuple[Campaign, str | None]:
    """The campaign and the campaign_id the file gives, if any; problems printed, then exit 1."""
    try:
        return load_execution_input(path)
    except FileNotFoundError:
        _fail(f"{path}: no such file")
        raise typer.Exit(EXIT_USAGE) from None
    except MatrixError as error:
        _print_problems(path, error.problems)
        raise typer.Exit(EXIT_ERROR) from None


@app.command(cls=JsonCommand)
def validate(
    matrix: Annotated[Path, typer.Argument(help="provider matrix JSON")],
    stack: Annotated[
        str | None, typer.Option(help="also check the placements against this deployed stack's worker sites")
    ] = None,
    region: Annotated[str | None, typer.Option(help="--stack: the stack's region (default: boto3's)")] = None,
    as_json: AsJson = False,
    quiet: Quiet = False,
    json_schema_only: bool = _json_schema(ValidateOutput),
) -> None:
    """Check a provider matrix (or an execution input holding one); print every problem with its JSON path."""
    with command_output(as_json, quiet) as output:
        campaign = _load_or_exit(matrix)
        if stack is not None:
            _check_sites_or_exit(matrix, campaign, stack, region)
        warnings = validate_warnings(campaign)
        if output.as_json:
            output.emit(
                ValidateOutput(
                    matrix=str(matrix),
                    campaign=campaign.campaign,
                    targets=[t.name for t in campaign.targets],
                    workloads=[w.name for w in campaign.workloads],
                    stack=stack,
                    warnings=warnings,
                )
            )
        elif output.human:
            for warning in warnings:
                errors.print(_text(f"note: {warning}"), highlight=False)
            targets, workloads = len(campaign.targets), len(campaign.workloads)
            console.print(
                _text(f"{matrix}: ok ({targets} target{'s' * (targets != 1)} x {workloads} workload{'s' * (workloads != 1)})")
            )


def validate_warnings(campaign: Campaign) -> list[str]:
    """What a valid matrix may still surprise with: embedded targets run with `run --local` only."""
    names = [t.name for t in campaign.targets if t.embedded is not None]
    if not names:
        return []
    return [
        f"embedded target{'s' * (len(names) != 1)} {', '.join(names)}: `run --local` only (`run --aws` refuses them); "
        "give each an 'endpoint' to run the campaign in AWS"
    ]


def _print_problems(source: object, problems: list[Problem], fix: str | None = None) -> None:
    """The count, then one line per problem; each recorded with its JSON path for the error document."""
    errors.print(f"{source}: {len(problems)} problem(s)", style="red", markup=False, highlight=False)
    for problem in problems:
        errors.print(f"  {problem.path}: {problem.message}", markup=False, highlight=False)
        current().record(problem.message, problem.path, fix)


def _check_local_sites_or_exit(matrix: Path, campaign: Campaign, external_sites: list[str], site_regions: list[str]) -> None:
    """The local runtime serves its own region, the site regions and the external sites given: anything else
    is refused before it starts, as Validate And Plan would refuse it, with the local fix."""
    from pgarena.local.endpoints import REGION as LOCAL_REGION

    # Checked as the matrix's own placement is: a name reaches URLs, ARNs and file names.
    bad = [
        f"--site-region {r!r}: not an AWS region name (e.g. eu-west-1)"
        for r in site_regions
        if not re.fullmatch(REGION_PATTERN, r)
    ]
    bad += [
        f"--external-site {s!r}: not a site name (lower-case letters, digits and '-', at most 40)"
        for s in external_sites
        if not re.fullmatch(SITE_NAME_PATTERN, s)
    ]
    if bad:
        for problem in bad:
            _fail(problem)
        raise typer.Exit(EXIT_USAGE)
    sites = SiteMap(home_region=LOCAL_REGION, regions=frozenset(site_regions), external=frozenset(external_sites))
    problems = site_problems(campaign, sites)
    if not problems:
        return
    fix = (
        f"locally: pass --external-site NAME for each placement.site and --site-region REGION for each "
        f"placement.region other than {LOCAL_REGION}, the local runtime's own"
    )
    _print_problems(matrix, problems, fix)
    errors.print(fix, markup=False, highlight=False)
    raise typer.Exit(EXIT_ERROR)


def _check_sites_or_exit(matrix: Path, campaign: Campaign, stack: str, region: str | None) -> None:
    """Refuse a placement no worker site of the deployed stack serves (as Validate And Plan would)."""
    from botocore.exceptions import BotoCoreError, ClientError

    from pgarena.remote.execution import AwsRunError, aws_clients, stack_sites

    try:
        sites = stack_sites(aws_clients(region).cloudformation, stack)
    except AwsRunError as error:
        _fail(str(error))
        raise typer.Exit(EXIT_ERROR) from None
    except (BotoCoreError, ClientError) as error:
        _fail(f"could not read stack {stack!r}: {error} (check credentials and --region)", fix="check credentials and --region")
        raise typer.Exit(EXIT_ERROR) from None
    problems = site_problems(campaign, sites)
    if problems:
        _print_problems(matrix, problems)
        raise typer.Exit(EXIT_ERROR)


@app.command(cls=JsonCommand)
def estimate(
    matrix: Annotated[Path | None, typer.Argument(help="provider matrix JSON", metavar="MATRIX", show_default=False)] = None,
    matrix_option: Annotated[Path | None, typer.Option("--matrix", hidden=True, help="the old spelling of MATRIX")] = None,
    region: Annotated[
        str | None, typer.Option(help="price table region; default: the matrix's cost.region, else us-east-1")
    ] = None,
    worker_cpu: Annotated[int, typer.Option(help="Fargate CPU units of a worker, as pgarena:workerCpu")] = 1024,
    worker_memory_mib: Annotated[int, typer.Option(help="Fargate memory of a worker, as pgarena:workerMemoryMiB")] = 2048,
    spot: Annotated[bool, typer.Option("--spot", help="price workers at the typical Fargate Spot discount")] = False,
    as_json: AsJson = False,
    quiet: Quiet = False,
    json_schema_only: bool = _json_schema(EstimateOutput),
) -> None:
    """Print how long the campaign takes locally and in AWS, and what it would cost in AWS, line by line."""
    with command_output(as_json, quiet) as output:
        campaign = _load_or_exit(_matrix_file(matrix, matrix_option))
        _estimate(campaign, region, worker_cpu, worker_memory_mib, spot, output)


def _estimate(  # the command's options, passed on
    campaign: Campaign, region: str | None, worker_cpu: int, worker_memory_mib: int, spot: bool, output: Output
) -> None:
    from pgarena.cli_output import estimate_document
    from pgarena.planning.cost import DEFAULT_REGION, PRICES, endpoint_plan, estimate_campaign, format_lines
    from pgarena.planning.duration import local_wall_s
    from pgarena.planning.estimate_text import adaptive_note, cap_lines, duration_line, embedded_note
    from pgarena.planning.fixed_cost import fixed_monthly_cost
    from pgarena.planning.footprint import footprint, format_footprint

    result = estimate_campaign(campaign, worker_cpu, worker_memory_mib, region, spot)
    plan = endpoint_plan(campaign)
    embedded = [t.name for t in campaign.targets if t.embedded is not None]
    local_s = local_wall_s(plan, len(embedded))
    notes = [n for n in (adaptive_note(campaign.min_repetitions, campaign.max_repetitions), embedded_note(embedded)) if n]
    sites = [t.placement.region for t in campaign.targets if t.placement is not None and t.placement.region is not None]
    fixed = fixed_monthly_cost(result.region, site_regions=sites)
    monthly = campaign.cost.monthly_cap_usd if campaign.cost else None
    monthly_line = (
        [f"monthly cap ${monthly:.2f}: checked against the month's ledger when it starts"] if monthly is not None else []
    )
    cap = campaign.cost.cap_usd if campaign.cost else None
    cap_text, refused = cap_lines(result.total_usd, result.bound_usd, cap) if cap is not None else ([], False)
    # A region without a price table is priced as the default one: the header says which (the note, how to add it).
    priced = result.region if result.region in PRICES else DEFAULT_REGION
    if output.human:
        no_table = "" if priced == result.region else f" (no table for {result.region})"
        print(f"{campaign.campaign}: {result.tasks} worker tasks, {priced}{no_table} list prices as of {result.prices_as_of}")
        print(duration_line(local_s, result.wall_s, result.tasks))
        for row in notes + format_lines(result) + [f"note: {note}" for note in result.notes] + [fixed.line(), *monthly_line]:
            print(row)
    if refused:  # the cost guard would refuse it: an error, whatever else is printed
        _fail(cap_text[0], field="$.cost.cap_usd", fix="raise cost.cap_usd, or run fewer or shorter steps")
        raise typer.Exit(EXIT_ERROR)
    limits = footprint(campaign)
    if output.as_json:
        output.emit(
            estimate_document(campaign, plan, result, priced, local_s, fixed.total_usd, notes + monthly_line + cap_text, limits)
        )
    elif output.human:
        for row in cap_text + format_footprint(limits):
            print(row)


@app.command()
def schema(
    markdown: Annotated[
        bool, typer.Option("--markdown", help="print the matrix reference (docs/matrix-reference.md) instead")
    ] = False,
) -> None:
    """Print the provider matrix's JSON Schema."""
    if markdown:
        sys.stdout.write(matrix_reference.render(json_schema()))
        return
    print(json.dumps(json_schema(), indent=2))


def best_by_workload(target: TargetMetrics) -> tuple[dict[str, float], dict[str, float]]:
    """Per workload, the target's best point (workload x client count): its tps and its tps at SLO, each
    a mean over the point's repetitions. Never a figure across workloads: their tps do not add up."""
    tps: dict[str, float] = {}
    at_slo: dict[str, float] = {}
    for point in target.points:
        if point.tps is not None:
            tps[point.workload] = max(tps.get(point.workload, point.tps), point.tps)
        if point.slo_tps is not None:
            at_slo[point.workload] = max(at_slo.get(point.workload, point.slo_tps), point.slo_tps)
    return tps, at_slo


def best_nopm(target: TargetMetrics) -> dict[str, float]:
    """Per TPROC-C workload, the target's best point's NOPM (a mean over its repetitions)."""
    nopm: dict[str, float] = {}
    for point in target.points:
        if point.nopm is not None:
            nopm[point.workload] = max(nopm.get(point.workload, point.nopm), point.nopm)
    return nopm


def ranking_table(results: CampaignResults) -> Table:
    table = Table(title=_text(f"pgarena ranking: {results.campaign_id}"))
    workloads = list(dict.fromkeys(w.name for t in results.targets for w in t.workloads))
    searched = list(dict.fromkeys(w.name for t in results.targets for w in t.workloads if w.slo is not None))
    metrics = {m.target: m for m in stored_metrics(results)}  # as aggregation computed them: never recomputed here
    mixes = list(dict.fromkeys(p.workload for m in metrics.values() for p in m.points if p.nopm is not None))
    figures = [f"{name} tps" for name in workloads] + [f"{name} NOPM" for name in mixes]
    figures += [f"{name} tps at SLO" for name in searched]
    for column in ("rank", "target", "provider", "site · RTT · workers", "status", "score", *figures, "error"):
        table.add_column(_text(column))  # a results.json read back may name anything
    providers = {t.name: t for t in results.targets}
    for entry in results.ranking:
        target = providers[entry.target]
        tps, at_slo = best_by_workload(metrics[entry.target])
        nopm = best_nopm(metrics[entry.target])
        table.add_row(
            rank_label(entry),
            _text(entry.target),
            _text(target.provider),
            _text(describe(target)),
            target.status,
            _text(score_label(entry)),
            *(f"{tps[name]:,.1f}" if name in tps else "-" for name in workloads),
            *(f"{nopm[name]:,.1f}" if name in nopm else "-" for name in mixes),
            *(f"{at_slo[name]:,.1f}" if name in at_slo else "-" for name in searched),
            "",
        )
    ranked = {r.target for r in results.ranking}
    unranked = unranked_reasons(results.targets, results.ranking, list(metrics.values()), results.footing)
    for target in results.targets:
        if target.name not in ranked:
            error = f"{target.error.kind}: {target.error.message}" if target.error else unranked.get(target.name, "")
            table.add_row(
                "-",
                _text(target.name),
                _text(target.provider),
                _text(describe(target)),
                target.status,
                "-",
                *("-" for _ in figures),
                _text(error),
            )
    stats = results.statistics
    per_workload = "tps: each workload's best point (mean over its runs)"
    if stats is not None and stats.note:
        table.caption = _text(
            f"{per_workload}; {stats.note}; '=' marks a tie (equivalent), '?' a rank shared undecided or provisional (the verdict below says why)"
        )
    elif stats is not None and any(t.points for t in results.targets):
        table.caption = f"{per_workload}; {stats.repetitions} runs per point; '=' marks a tie (equivalent), '?' a rank shared undecided or provisional (the verdict below says why)"
    else:
        table.caption = per_workload
    return table


def scenario_tables(results: CampaignResults) -> list[Table]:
    """The consolidation sweep's measured-vs-ideal tables and the sustainable replication throughput."""
    tables = []
    for sweep in results.scenarios.consolidation if results.scenarios else []:
        table = Table(
            title=_text(f"consolidation: {sweep.workload}, {sweep.clients} clients per target (threshold {sweep.threshold:.0%})")
        )
        for column in ("targets", "measured tps", "ideal tps", "measured / ideal", ""):
            table.add_column(column)
        for step in sweep.steps:
            table.add_row(
                str(step.targets),
                f"{step.measured_tps or 0:,.1f}",
                f"{step.ideal_tps or 0:,.1f}",
                f"{step.ratio:.1%}" if step.ratio is not None else "-",
                _text("below threshold" if sweep.below_threshold_at == step.targets else (step.note or "")),
            )
        tables.append(table)
    if results.scenarios and results.scenarios.replication:
        table = Table(title="sustainable replication throughput")
        for column in ("target", "workload", "clients", "primary tps", "catch-up", "sustainable tps"):
            table.add_column(column)
        for point in results.scenarios.replication:
            table.add_row(
                _text(point.target),
                _text(point.workload),
                str(point.clients),
                f"{point.tps or 0:,.1f}",
                f"{point.catch_up_s:.2f} s" if point.caught_up else "not caught up",
                f"{point.sustainable_tps:,.1f}" if point.sustainable_tps is not None else "-",
            )
        tables.append(table)
    return tables


@app.command(cls=JsonCommand)
def run(
    matrix: Annotated[Path | None, typer.Argument(help="provider matrix JSON", metavar="MATRIX", show_default=False)] = None,
    matrix_option: Annotated[Path | None, typer.Option("--matrix", hidden=True, help="the old spelling of MATRIX")] = None,
    out: Annotated[Path, typer.Option(help="results folder")] = Path("results"),
    local: Annotated[bool, typer.Option("--local", help="run on this machine: moto's Step Functions, embedded servers")] = False,
    aws_strict: Annotated[
        bool,
        typer.Option(
            "--aws-strict",
            help="with --local: run each Lambda from its synthesized asset in its runtime's interpreter, "
            "with AWS's timeouts and limits (state payloads, Map concurrency), and workers as containers",
        ),
    ] = False,
    container_workers: Annotated[
        bool,
        typer.Option(
            "--container-workers",
            help="with --local: run each worker as a container of the image built from workers/Dockerfile "
            '(needs a Docker daemon: eval "$(tools/docker-here.sh)"); --aws-strict implies it',
        ),
    ] = False,
    external_site: Annotated[
        list[str] | None,
        typer.Option(
            "--external-site",
            help="with --local: serve this external site (placement.site), as a stack deployed with it in "
            "pgarena:external_sites would; its workers start as EXTERNAL tasks on this machine (repeatable)",
        ),
    ] = None,
    site_region: Annotated[
        list[str] | None,
        typer.Option(
            "--site-region",
            help="with --local: serve a worker site in this region (placement.region), as a stack deployed with it "
            "in pgarena:sites would; its workers are launched through that region's ECS (repeatable)",
        ),
    ] = None,
    aws: Annotated[
        bool,
        typer.Option(
            "--aws", help="run in the deployed stack: start an execution, follow it, download the results and print the ranking"
        ),
    ] = False,
    stack_name: Annotated[str, typer.Option(help="--aws: the deployed stack whose outputs name the resources")] = STACK_NAME,
    state_machine_arn: Annotated[str | None, typer.Option(help="--aws: instead of the stack's StateMachineArn")] = None,
    results_bucket: Annotated[str | None, typer.Option(help="--aws: instead of the stack's ResultsBucketName")] = None,
    results_table: Annotated[str | None, typer.Option(help="--aws: instead of the stack's ResultsTableName")] = None,
    worker_cluster_arn: Annotated[str | None, typer.Option(help="--aws: instead of the stack's WorkerClusterArn")] = None,
    region: Annotated[str | None, typer.Option(help="--aws: the stack's region (default: boto3's)")] = None,
    endpoint_url: Annotated[
        str | None,
        typer.Option(help="--aws: an AWS stand-in (moto server), as AWS_ENDPOINT_URL; AWS_ENDPOINT_URL_<SERVICE> still win"),
    ] = None,
    results_wait_s: Annotated[
        float, typer.Option(help="--aws: after a stop or a failure, how long to wait for finalize_stopped's results.json", min=0)
    ] = RESULTS_WAIT_S,
    verbose: Annotated[bool, typer.Option("--verbose", help="also print each state the state machine enters")] = False,
    as_json: AsJson = False,
    quiet: Quiet = False,
    json_schema_only: bool = _json_schema(RunOutput),
) -> None:
    """Run a campaign through the campaign state machine and print the ranking."""
    with command_output(as_json, quiet) as output:
        matrix = _matrix_file(matrix, matrix_option)
        if local == aws:
            _fail("choose where the campaign runs: --local (this machine) or --aws (the deployed stack)")
            raise typer.Exit(EXIT_USAGE)
        if aws and (aws_strict or container_workers or external_site or site_region):
            # These change how the local runtime runs; in AWS, Lambda, Fargate and the stack's sites already are what they imitate.
            _fail(
                "--aws-strict, --container-workers, --site-region and --external-site go with --local: remove them from a --aws run"
            )
            raise typer.Exit(EXIT_USAGE)
        campaign, given_id = _load_input_or_exit(matrix)
        if given_id and output.progress:
            errors.print(
                f"note: {matrix} names a campaign_id; a run names its campaign itself ({campaign.campaign}-<time>-<suffix>)",
                markup=False,
                highlight=False,
            )
        if aws:
            given = {
                "state_machine_arn": state_machine_arn,
                "results_bucket": results_bucket,
                "results_table": results_table,
                "worker_cluster_arn": worker_cluster_arn,
            }
            with terminate_as_interrupt():
                _finish_aws(*_run_aws(campaign, out, stack_name, given, region, endpoint_url, results_wait_s, verbose))
            return
        _check_local_sites_or_exit(matrix, campaign, external_site or [], site_region or [])
        where = LocalWhere(aws_strict, container_workers or aws_strict, tuple(external_site or ()), tuple(site_region or ()))
        _run_local(campaign, out, where, verbose)


@dataclass(frozen=True)
class LocalWhere:
    """How the local runtime runs a campaign: run's --aws-strict, --container-workers, --external-site, --site-region."""

    aws_strict: bool
    container_workers: bool
    external_sites: tuple[str, ...]
    site_regions: tuple[str, ...]


def _run_local(campaign: Campaign, out: Path, where: LocalWhere, verbose: bool) -> None:
    from pgarena.local.assets import AssetError
    from pgarena.local.containers import DockerError
    from pgarena.local.leases import LeaseDirError
    from pgarena.local.limits import StrictLimitError
    from pgarena.local.progress import Interrupted
    from pgarena.local.runtime import run_local
    from pgarena.model.errors import DiskFull

    # Ctrl-C stops the campaign (workers, leases) and still writes a results.json marked cancelled.
    mode = "locally, as AWS would run it" if where.aws_strict else "locally"
    try:
        with (
            terminate_as_interrupt(),
            _status(f"running {campaign.campaign} {mode} (Ctrl-C cancels, keeping what finished)") as status,
        ):
            result = run_local(
                campaign,
                out,
                on_event=progress_printer(campaign_progress(campaign, "local"), verbose, status),
                aws_strict=where.aws_strict,
                container_workers=where.container_workers,
                external_sites=where.external_sites,
                site_regions=where.site_regions,
            )
    except (AssetError, StrictLimitError, DockerError, LeaseDirError) as error:
        _fail(str(error))
        raise typer.Exit(EXIT_ERROR) from None
    except Interrupted as stop:
        _fail(
            f"interrupted: the steps that finished are kept in {stop.folder}; `pgarena resume {stop.folder}` runs the rest",
            fix=f"pgarena resume {stop.folder}",
        )
        raise typer.Exit(EXIT_CANCELLED) from None
    except DiskFull as full:
        _fail(f"disk_full: {full}")
        raise typer.Exit(EXIT_ERROR) from None
    _say_stopped(result.stopped)
    if result.results is None:
        _fail(f"campaign {result.campaign_id} ended {result.status} without results: {result.error}")
        raise typer.Exit(EXIT_ERROR)
    if result.status == "FAILED":  # an error no Catch handles (--aws-strict's limits): what finished is kept
        _fail(f"campaign {result.campaign_id} FAILED: {result.error}")
        _say_results_kept(result.results_dir)
        raise typer.Exit(EXIT_ERROR)
    _print_outcome(result.results, result.results_dir, result.wall_s)


def _say_results_kept(folder: Path) -> None:
    """After a failed execution: where what finished is (on stdout for people, as it was; else on stderr)."""
    if current().human:
        console.print(_text(f"results: {folder / 'results.json'}"))
    elif current().progress:
        errors.print(_text(f"results: {folder / 'results.json'}"), highlight=False)


def _run_aws(
    campaign: Campaign,
    out: Path,
    stack_name: str,
    given: dict[str, str | None],
    region: str | None,
    endpoint_url: str | None,
    results_wait_s: float,
    verbose: bool,
) -> tuple[AwsRun, str]:
    """Start the campaign in the deployed stack and follow it; Ctrl-C stops it (execution and workers). The run,
    and the results bucket it wrote to."""
    from botocore.exceptions import BotoCoreError, ClientError

    from pgarena.remote.capacity import capacity_warnings
    from pgarena.remote.execution import AwsCampaign, AwsRunError, aws_clients, aws_problems, stack_outputs

    problems = aws_problems(campaign)
    if problems:
        for problem in problems:
            _fail(problem)
        raise typer.Exit(EXIT_ERROR)
    if endpoint_url:  # as if exported: boto3 reads it for every client, a service's own variable first
        os.environ["AWS_ENDPOINT_URL"] = endpoint_url
    try:
        clients = aws_clients(region)
        outputs = stack_outputs(clients.cloudformation, stack_name, given)
        if outputs.sites is not None and (site_refusals := site_problems(campaign, outputs.sites)):
            _print_problems(stack_name, site_refusals)
            raise typer.Exit(EXIT_ERROR)
        for warning in capacity_warnings(
            campaign, stack_name, clients.cloudformation, clients.ecs, clients.service_quotas, clients.lambda_
        ):
            _warn(warning)
        runner = AwsCampaign(clients, outputs, out, results_wait_s)
        with _status(f"running {campaign.campaign} in AWS (Ctrl-C stops the execution and its workers)") as status:
            printer = progress_printer(campaign_progress(campaign, "aws"), verbose, status)
            return runner.run(campaign, on_event=printer), outputs.results_bucket
    except AwsRunError as error:
        _fail(str(error))
    except ClientError as error:
        _fail(f"AWS refused the run: {error}")
    except BotoCoreError as error:  # no credentials, no route, a bad endpoint: nothing was refused, nothing ran
        _fail(f"could not reach AWS: {error} (check credentials, --region and --endpoint-url)")
    except KeyboardInterrupt:  # a second Ctrl-C, while waiting for the stopped campaign's results
        _fail("interrupted: the execution is stopped; finalize_stopped writes its results.json to the results bucket")
        raise typer.Exit(EXIT_CANCELLED) from None
    raise typer.Exit(EXIT_ERROR)


def _finish_aws(result: AwsRun, bucket: str) -> None:
    where = f"execution {result.execution_arn}"
    if result.results is None:
        if result.status == "ABORTED":
            _fail(
                f"stopped {where} and {result.stopped_tasks} worker task(s); results.json was not written in time: "
                f"finalize_stopped writes it under {result.campaign_id}/ in the results bucket"
            )
            raise typer.Exit(EXIT_CANCELLED)
        _fail(f"campaign {result.campaign_id} ended {result.status} without results ({where}): {result.error}")
        raise typer.Exit(EXIT_ERROR)
    if result.status in ("FAILED", "TIMED_OUT"):  # finalize_stopped aggregated what finished
        _fail(f"campaign {result.campaign_id} {result.status} ({where}): {result.error}")
        _say_results_kept(result.results_dir)
        raise typer.Exit(EXIT_ERROR)
    _print_outcome(result.results, result.results_dir, result.wall_s, result.execution_arn, bucket)


class ProgressPrinter:
    """Live progress in campaign terms: each step's own line with its result when it ends ('target tuned ·
    tpcb · 4 clients · repetition 2/5 — step 7 of 22: 3,749.4 tps (~2 min left)'); the running step, and an
    SLO search's probe, on the status line. `verbose` adds every state the state machine enters."""

    def __init__(
        self,
        progress: CampaignProgress | None = None,
        verbose: bool = True,
        status: Status | None = None,
        stream: Console | None = None,
    ):
        self.progress = progress or CampaignProgress()
        self.verbose = verbose
        self.status = status
        self.stream = stream  # None: stdout for people (the module's console when printing); stderr beside a JSON document

    def _running(self, text: str) -> None:
        if self.status is not None:
            self.status.update(_text(f"{text} (Ctrl-C cancels)"))

    def __call__(self, event: Event) -> None:
        out = self.stream or console
        clock = (f"{event.elapsed_s:6.1f}s", "dim")
        if event.kind == "step" and event.summary is not None:
            s = event.summary
            colour = "green" if s.status == "succeeded" else "red"
            line = self.progress.finished(s, event.elapsed_s)
            out.print(Text.assemble(clock, " ", (f"{s.status:9}", colour), " ", line), highlight=False, soft_wrap=True)
        elif event.kind == "probe":
            self._running(self.progress.probing(event.text, event.probes, event.elapsed_s))
            if self.verbose:
                out.print(_text(f"{event.elapsed_s:6.1f}s SLO probe {event.probes} {event.text}", style="dim"), highlight=False)
        elif event.state:  # a state of the state machine: its name only with --verbose
            if event.state == WORKER_STATE and event.subject:
                self._running(self.progress.started(event.subject, event.elapsed_s))
            if self.verbose:
                out.print(_text(f"{event.elapsed_s:6.1f}s {event.text}", style="dim"), highlight=False, soft_wrap=True)
        else:  # the runtime's own news: a target that could not start, an execution started or stopped
            out.print(_text(f"{event.elapsed_s:6.1f}s {event.text}", style="dim"), highlight=False, soft_wrap=True)


show_event = ProgressPrinter()


def progress_printer(progress: CampaignProgress, verbose: bool, status: Status | None) -> Callable[[Event], None]:
    """The running command's progress: on stdout, on stderr under --json, nowhere under --quiet."""
    output = current()
    if not output.progress:
        return lambda event: None
    return ProgressPrinter(progress, verbose, status, console if output.human else errors)


def campaign_progress(campaign: Campaign, where: str) -> CampaignProgress:
    """The campaign's steps, each with its expected seconds in that place, for 'step 7 of 22, ~3 min left'."""
    from pgarena.planning.cost import TASK_OVERHEAD_S, endpoint_plan, estimate_campaign, expected_work_s
    from pgarena.planning.duration import local_step_s, local_wall_s

    plan = endpoint_plan(campaign)
    if where == "local":
        embedded = sum(1 for t in campaign.targets if t.embedded is not None)
        return CampaignProgress(plan, local_step_s, local_wall_s(plan, embedded))
    wall_s = estimate_campaign(campaign, 1024, 2048).wall_s  # the worker's size does not change its time
    return CampaignProgress(plan, lambda step: expected_work_s(step) + TASK_OVERHEAD_S, wall_s)


def print_verdict(results: CampaignResults) -> None:
    """The stored verdict: the headline its pairwise comparisons support, and the points too noisy to trust small differences."""
    said = headline(results.ranking, results.comparisons, results.footing, phase_cost(results))
    if said:
        console.print(_text(f"verdict: {said}"), highlight=False)
    for warning in results.noise:
        console.print(_text(f"noisy: {warning.message}", style="yellow"), highlight=False)


def _say_stopped(lines: list[str]) -> None:
    """A cancel's account: one line per thing it stopped (the execution, each worker task)."""
    for line in lines:
        errors.print(_text(line), highlight=False)


def _print_outcome(
    results: CampaignResults, folder: Path, wall_s: float, execution_arn: str | None = None, bucket: str | None = None
) -> None:
    """The ranking, verdict and where the results are (or run's JSON document); then the exit the outcome calls for."""
    try:
        check_consistent(results)  # a results.json read back from a bucket may have been edited
    except InconsistentResultsError as error:
        _fail(str(error))
        raise typer.Exit(EXIT_ERROR) from None
    stalls = stalled_runs(results)
    code = outcome_exit_code(results, stalls)
    output = current()
    if output.as_json:
        output.emit(run_document(results, folder, wall_s, stalls, code, execution_arn, bucket))
    elif output.human:
        _print_ranking(results, folder, wall_s)
    if code == EXIT_CANCELLED:
        errors.print(_text(f"cancelled: what finished is kept; `pgarena resume {folder}` re-runs the rest"), highlight=False)
    elif any(t.status == "failed" for t in results.targets):
        hint = _text(f"`pgarena resume {folder}` re-runs what failed")
        (console if output.human else errors).print(hint, highlight=False)
    else:
        for stall in stalls:  # a run that measured an outage (a frozen server, a lock held) measured no capacity
            errors.print(_text(f"stalled: {stall}"), highlight=False)
    if code != EXIT_OK:
        raise typer.Exit(code)


def outcome_exit_code(results: CampaignResults, stalls: list[str]) -> int:
    if results.status == "cancelled":
        return EXIT_CANCELLED
    if any(t.status == "failed" for t in results.targets) or stalls:
        return EXIT_FAILED_TARGETS
    return EXIT_OK


def _print_ranking(results: CampaignResults, folder: Path, wall_s: float) -> None:
    console.print(ranking_table(results))
    print_verdict(results)
    if (note := repetitions_note(results)) is not None:
        console.print(_text(note), highlight=False)
    for table in scenario_tables(results):
        console.print(table)
    console.print(_text(f"results: {folder / 'results.json'}  ({wall_s:.1f} s)"))
    if (folder / "report.html").exists():
        console.print(_text(f"report:  {folder / 'report.html'}"))


def stalled_runs(results: CampaignResults) -> list[str]:
    """Each stalled point of a succeeded target, with what its worst run's incident said."""
    return [
        f"{t.target}: {p.workload} at {p.clients} clients: "
        + ("; ".join(i.message for i in p.stability.incidents) or "no transactions for a while")
        + " (not ranked)"
        for t in stored_metrics(results)
        if t.status == "succeeded"
        for p in t.points
        if p.stalled
    ]


@app.command()
def resume(
    campaign: Annotated[Path, typer.Argument(help="a local campaign's folder (results/<campaign_id>)")],
    matrix: Annotated[Path | None, typer.Option(help="run with this matrix instead of the one kept beside the results")] = None,
    out: Annotated[Path | None, typer.Option(help="results folder (default: the campaign folder's parent)")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", help="also print each state the state machine enters")] = False,
) -> None:
    """Re-run only what failed in a campaign, and write a results.json combining it with what succeeded."""
    if not (campaign / "results.json").exists() and not (campaign / "matrix.json").exists():
        _fail(
            f"{campaign}: neither results.json nor matrix.json there. An AWS execution: copy its folder first "
            "(aws s3 cp --recursive s3://<bucket>/<campaign_id>/ results/<campaign_id>/) and pass --matrix"
        )
        raise typer.Exit(EXIT_USAGE)
    override = _load_or_exit(matrix) if matrix else None
    from pgarena.local.leases import LeaseDirError
    from pgarena.local.resume import NothingToResume, resume_local
    from pgarena.model.layout import UnsafePath

    try:
        with (
            terminate_as_interrupt(),
            console.status(_text(f"re-running what failed in {campaign.name} (Ctrl-C cancels)")) as status,
        ):
            resumed = resume_local(campaign, out, override, on_event=ProgressPrinter(None, verbose, status))
    except NothingToResume as nothing:
        console.print(_text(nothing), highlight=False)
        return
    except FileNotFoundError as missing:
        _fail(f"{missing}")
        raise typer.Exit(EXIT_USAGE) from None
    except (LeaseDirError, UnsafePath, ResultsError) as error:
        _fail(str(error))
        raise typer.Exit(EXIT_ERROR) from None
    console.print(
        _text(f"re-ran {', '.join(resumed.reruns) or 'nothing'}; kept the successes of {campaign.name}"), highlight=False
    )
    _print_outcome(resumed.results, resumed.results_dir, resumed.wall_s)


def _results_or_exit(path: Path) -> CampaignResults:
    try:
        return check_consistent(load_results(path))
    except FileNotFoundError:
        _fail(f"{path}: no results.json there")
        raise typer.Exit(EXIT_USAGE) from None
    except (ResultsError, InconsistentResultsError) as error:
        _fail(str(error))
        raise typer.Exit(EXIT_ERROR) from None
    except OSError as error:
        _fail(f"{path}: cannot read it: {error.strerror}")
        raise typer.Exit(EXIT_USAGE) from None


@app.command()
def report(folder: Annotated[Path, typer.Argument(help="campaign folder holding results.json")]) -> None:
    """Rebuild the reports (report.html, summary.md, CSV tables) from FOLDER/results.json."""
    results = _results_or_exit(folder)
    out = folder if folder.is_dir() else folder.parent
    for path in write_to_folder(results, out):
        console.print(_text(path), highlight=False)


def comparison_table(comparison: Comparison) -> Table:
    table = Table(title=_text(f"{comparison.a} -> {comparison.b}: every point (unchanged: within {comparison.threshold:.0%})"))
    # tps at SLO only where a campaign searched one: other comparisons keep their width
    slo = any(c.slo_tps_a is not None or c.slo_tps_b is not None for c in comparison.changes)
    columns = ["target", "workload", "clients", "tps A", "tps B", "Δ tps", "Δ latency"]
    columns += ["tps at SLO A", "tps at SLO B", "Δ tps at SLO"] if slo else []
    nopm = any(c.nopm_a is not None or c.nopm_b is not None for c in comparison.changes)  # a TPROC-C workload's
    columns += ["NOPM A", "NOPM B", "Δ NOPM"] if nopm else []
    for column in [*columns, "verdict"]:
        table.add_column(column, justify="left" if column in ("target", "workload", "verdict") else "right")
    colours = {"regression": "red", "failed": "red", "improvement": "green", "recovered": "green"}
    for c in comparison.changes:
        colour = colours.get(c.verdict, "default")
        why = _why(c)
        cells: list[str | Text] = [
            _text(c.target),
            _text(c.workload),
            str(c.clients if c.clients is not None else "-"),
            _figure(c.tps_a),
            _figure(c.tps_b),
            f"{c.tps_change:+.1%}" if c.tps_change is not None else "-",
            f"{c.latency_change:+.1%} {c.latency_field}" if c.latency_change is not None else "-",
        ]
        if slo:
            cells += [
                _figure(c.slo_tps_a),
                _figure(c.slo_tps_b),
                f"{c.slo_tps_change:+.1%}" if c.slo_tps_change is not None else "-",
            ]
        if nopm:
            cells += [_figure(c.nopm_a), _figure(c.nopm_b), f"{c.nopm_change:+.1%}" if c.nopm_change is not None else "-"]
        table.add_row(*cells, Text.assemble((verdict_words(c.verdict, comparison.threshold), colour), f" ({why})" if why else ""))
    return table


def _why(change: Change) -> str:
    """Each figure's interval (the changes are in their columns), then the reasons no figure gives."""
    figures = [f"{t.figure} {interval_text(t)}" for t in change.tests if t.ci_low is not None]
    missing: dict[str, list[str]] = {}  # why there is no interval -> the figures it holds for, said once
    for t in change.tests:
        if t.ci_low is None:
            missing.setdefault(interval_text(t).removesuffix("no interval").strip(": "), []).append(t.figure)
    figures += [f"no interval for {', '.join(names)}" + (f" ({why})" if why else "") for why, names in missing.items()]
    said = {INCONCLUSIVE, *(figure_reason(t) for t in change.tests)}
    others = [r for r in change.reasons if r not in said]
    return "; ".join([*figures, *others])


def _figure(value: float | None) -> str:
    return f"{value:,.1f}" if value is not None else "-"


def settings_table(comparison: Comparison) -> Table:
    """Non-default server settings that differ per target: the configuration behind a change in the figures."""
    table = Table(title="server settings that differ (– : at its default)")
    for column in ("target", "setting", "A", "B"):
        table.add_column(column)
    for change in comparison.settings:
        table.add_row(_text(change.target), _text(change.name), _text(change.a or "–"), _text(change.b or "–"))
    return table


@app.command(cls=JsonCommand)
def compare(
    a: Annotated[Path, typer.Argument(help="the earlier campaign: its folder or its results.json")],
    b: Annotated[Path, typer.Argument(help="the later campaign: its folder or its results.json")],
    threshold: Annotated[
        float, typer.Option(help="relative change within which the figures count as unchanged (equivalence margin)", min=0)
    ] = DEFAULT_THRESHOLD,
    fail_on_regression: Annotated[
        bool, typer.Option("--fail-on-regression", help="exit 1 when any point regressed (a CI gate)")
    ] = False,
    as_json: AsJson = False,
    quiet: Quiet = False,
    json_schema_only: bool = _json_schema(CompareOutput),
) -> None:
    """Show what changed from campaign A to campaign B per target, workload and client count; flag regressions."""
    with command_output(as_json, quiet) as output:
        comparison = compare_campaigns(_results_or_exit(a), _results_or_exit(b), threshold)
        regressions = regression_labels(comparison)
        code = EXIT_ERROR if fail_on_regression and regressions else EXIT_OK
        summary = f"{len(regressions)} regression(s)" + (": " + ", ".join(regressions) if regressions else "")
        if output.as_json:
            output.emit(compare_document(comparison, fail_on_regression, code))
        elif output.human:
            console.print(comparison_table(comparison))
            if comparison.settings:
                console.print(settings_table(comparison))
            else:
                console.print(
                    "server settings: no difference between the targets' recorded non-default settings", highlight=False
                )
            console.print(_text(summary), style="red" if regressions else "green", highlight=False)
        elif code != EXIT_OK:  # --quiet: the gate's failure is the one error
            _fail(summary)
        if code != EXIT_OK:
            raise typer.Exit(code)


# `pgarena history --fail-on-change`: a series changed for the worse at its latest runs.
EXIT_CHANGED = 4


@app.command(cls=JsonCommand)
def history(
    name: Annotated[str | None, typer.Argument(help="a campaign's name; none: list the campaigns")] = None,
    out: Annotated[Path, typer.Option(help="the results folder the campaigns were written to (run's --out)")] = Path("results"),
    as_json: AsJson = False,
    quiet: Quiet = False,
    html: Annotated[Path | None, typer.Option(help="write the trend page here, and its CSV beside it (.csv)")] = None,
    fail_on_change: Annotated[
        bool, typer.Option("--fail-on-change", help=f"exit {EXIT_CHANGED} when a series changed for the worse at its latest runs")
    ] = False,
    threshold: Annotated[
        float, typer.Option(help="relative change below which none is reported", min=0)
    ] = history_trends.DEFAULT_THRESHOLD,
    recent: Annotated[
        int, typer.Option(help="--fail-on-change looks at each series' last this many runs", min=1)
    ] = history_trends.DEFAULT_RECENT_RUNS,
    json_schema_only: Annotated[bool, typer.Option("--json-schema", help="print the JSON Schema of --json's output")] = False,
    stack: Annotated[
        str | None, typer.Option(help="first copy into --out the runs this deployed stack indexed (e.g. Pgarena)")
    ] = None,
    region: Annotated[str | None, typer.Option(help="--stack: the stack's region (default: boto3's)")] = None,
) -> None:
    """List the campaigns under --out, or one campaign's runs, its series' trends and change points."""
    if json_schema_only:
        print(json.dumps({"history": History.model_json_schema(), "campaigns": Campaigns.model_json_schema()}, indent=2))
        return
    with command_output(as_json, quiet) as output:
        if stack is not None:
            _copy_stack_runs(stack, region, name, out)
        found = _history_root(out, output)
        if name is None:
            _list_campaigns(found, out, output)
            return
        _check_history_or_exit(found, name, out, fail_on_change)
        told = history_trends.history(found, name, str(out), threshold, recent)
        save_trend_page(out, told)  # where its runs' reports link to (pgarena.report.links.trend_link)
        if html is not None:
            html.write_text(render_trends_html(told))
            html.with_suffix(".csv").write_text(trends_csv(told))
        if output.as_json:
            output.emit(told)
        elif output.human:
            print_history(told, html)
        if fail_on_change and told.gate:
            if not output.as_json and not output.human:  # --quiet: the gate's failure is the one error
                _fail(f"{len(told.gate)} series changed for the worse at their latest runs")
            raise typer.Exit(EXIT_CHANGED)


def _history_root(out: Path, output: Output) -> history_index.Found:
    """The runs under --out; the folders skipped said on stderr."""
    if not out.is_dir():
        _fail(f"{out}: no such folder (give the --out campaigns were written to)")
        raise typer.Exit(EXIT_USAGE)
    found = history_index.read_runs(out)
    for problem in found.unreadable:
        if output.progress:  # stderr: beside a JSON document too
            errors.print(_text(f"skipped: {problem}"), highlight=False)
    return found


def _check_history_or_exit(found: history_index.Found, name: str, out: Path, fail_on_change: bool) -> None:
    if not any(r.campaign == name for _, r in found.runs):
        _fail(f"{name}: no run of this campaign under {out} (`pgarena history --out {out}` lists them)")
        raise typer.Exit(EXIT_USAGE)
    if fail_on_change and not history_detect.available():
        _fail(history_detect.INSTALL_HINT)
        raise typer.Exit(EXIT_USAGE)


def _copy_stack_runs(stack: str, region: str | None, name: str | None, out: Path) -> None:
    """The runs the stack indexed, copied into --out (those not there yet), for history to read."""
    from botocore.exceptions import BotoCoreError, ClientError

    from pgarena.remote.execution import AwsRunError, aws_clients
    from pgarena.remote.history import copy_runs, indexed_runs

    try:
        clients = aws_clients(region)
        bucket, runs = indexed_runs(clients, stack, name)
        out.mkdir(parents=True, exist_ok=True)
        copied = copy_runs(clients, bucket, runs, out)
    except (AwsRunError, BotoCoreError, ClientError) as error:
        _fail(f"could not read stack {stack!r}'s history: {error} (check credentials and --region)")
        raise typer.Exit(EXIT_ERROR) from None
    if current().progress:
        errors.print(_text(f"{len(runs)} run(s) indexed in {stack}; copied {len(copied)} into {out}"), highlight=False)


def _list_campaigns(found: history_index.Found, out: Path, output: Output) -> None:
    listing = history_index.campaigns(found)
    if output.as_json:
        output.emit(Campaigns(root=str(out), campaigns=listing, unreadable=found.unreadable))
    elif output.human:
        console.print(history_campaigns_table(listing))


def history_campaigns_table(listing: list[CampaignEntry]) -> Table:
    table = Table(title="campaigns")
    for column in ("campaign", "runs", "first run", "last run", "last status", "last campaign id"):
        table.add_column(column)
    for c in listing:
        table.add_row(
            _text(c.campaign),
            str(c.runs),
            utc_second(c.first_started_at),
            utc_second(c.last_started_at),
            c.last_status,
            _text(c.last_campaign_id),
        )
    return table


def print_history(told: History, html: Path | None) -> None:
    """The runs table, then every change and split, then the gate's verdict."""
    table = Table(title=_text(f"{told.campaign}: {len(told.runs)} run(s) under {told.root}"))
    for column in ("run", "started", "campaign id", "status", "targets", "verdict", "cost"):
        table.add_column(column, justify="right" if column in ("run", "cost") else "left")
    for r in told.runs:
        failed = f" ({', '.join(r.failed_targets)} failed)" if r.failed_targets else ""
        table.add_row(
            str(r.run),
            utc_second(r.started_at),
            _text(r.campaign_id),
            r.status + failed,
            _text(", ".join(r.targets)),
            _text(history_index.short_headline(r)),
            history_index.cost_text(r),
        )
    console.print(table)
    for s in told.series:
        for split in s.splits:
            console.print(
                _text(f"split: {s.label}: {s.metric} from run {split.run}: {'; '.join(split.changed)}"), highlight=False
            )
        for change in s.changes:
            console.print(_text(f"change: {change.message}", "red" if change.direction == "worse" else "green"), highlight=False)
    wanting = history_trends.too_few_runs(told)
    if told.detector is None:
        console.print(_text(f"no change points: {history_detect.INSTALL_HINT}", "yellow"), highlight=False)
    elif wanting is not None:
        console.print(_text(wanting, "yellow"), highlight=False)
    elif not any(s.changes for s in told.series):
        console.print(_text(f"no change in {len(told.series)} series", "green"), highlight=False)
    if html is not None:
        console.print(_text(f"trends: {html} (and {html.with_suffix('.csv')})"), highlight=False)


def _tool_name(name: str) -> str:
    if name not in TOOL_NAMES:
        raise typer.BadParameter(f"{name!r} is not one of {', '.join(TOOL_NAMES)}")
    return name


@app.command()
def parse(
    tool: Annotated[str, typer.Argument(callback=_tool_name, help=f"one of {', '.join(TOOL_NAMES)}")],
    file: Annotated[Path, typer.Argument(help="raw tool output; - for stdin")],
) -> None:
    """Parse a benchmark tool's raw output (pgbench 9.6-18, sysbench 0.5 and 1.0) and print JSON."""
    from pgarena.tools.registry import tool_for

    try:
        text = sys.stdin.read() if str(file) == "-" else file.read_text(errors="replace")
    except FileNotFoundError:
        _fail(f"{file}: no such file")
        raise typer.Exit(EXIT_USAGE) from None
    except OSError as error:  # a directory, no permission
        _fail(f"{file}: cannot read it: {error.strerror or error}")
        raise typer.Exit(EXIT_USAGE) from None
    parsed = tool_for(tool).parse(text)
    print(parsed.model_dump_json(indent=2))


if __name__ == "__main__":
    app()
