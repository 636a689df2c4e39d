"""The pgarena command line: validate, schema, run, parse."""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from pgarena.compare import DEFAULT_THRESHOLD, Comparison, compare_campaigns, load_results
from pgarena.matrix import MatrixError, json_schema, load_campaign
from pgarena.report import write_to_folder
from pgarena.results import CampaignResults

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Benchmark PostgreSQL services, rank them honestly.")
console = Console()
errors = Console(stderr=True, soft_wrap=True)


def _load_or_exit(path: Path):
    try:
        return load_campaign(path)
    except FileNotFoundError:
        errors.print(f"[red]{path}: no such file[/red]")
        raise typer.Exit(2) from None
    except MatrixError as error:
        errors.print(f"[red]{path}: {len(error.problems)} problem(s)[/red]")
        for problem in error.problems:
            errors.print(f"  {problem.path}: {problem.message}", markup=False, highlight=False)
        raise typer.Exit(1) from None


@app.command()
def validate(matrix: Annotated[Path, typer.Argument(help="provider matrix JSON")]) -> None:
    """Check a provider matrix; print every problem with its JSON path."""
    campaign = _load_or_exit(matrix)
    console.print(f"{matrix}: ok ({len(campaign.targets)} targets x {len(campaign.workloads)} workloads)")


@app.command()
def estimate(
    matrix: Annotated[Path, typer.Option(help="provider matrix JSON")],
    region: Annotated[str | None, typer.Option(help="price table region; default: the matrix's cost.region, else us-east-1")] = None,
    worker_cpu: Annotated[int, typer.Option(help="Fargate CPU units of a worker, as pgarena:workerCpu")] = 1024,
    worker_memory_mib: Annotated[int, typer.Option(help="Fargate memory of a worker, as pgarena:workerMemoryMiB")] = 2048,
    spot: Annotated[bool, typer.Option("--spot", help="price workers at the typical Fargate Spot discount")] = False,
) -> None:
    """Print what the campaign would cost in AWS, line by line, as the cost guard estimates it."""
    from pgarena.cost import estimate_campaign, format_lines

    campaign = _load_or_exit(matrix)
    result = estimate_campaign(campaign, worker_cpu, worker_memory_mib, region, spot)
    print(f"{campaign.campaign}: {result.tasks} worker tasks, about {result.wall_s / 60:.0f} min, "
          f"{result.region} list prices as of {result.prices_as_of}")
    for row in format_lines(result) + [f"note: {note}" for note in result.notes]:
        print(row)
    cap = campaign.cost.cap_usd if campaign.cost else None
    if campaign.cost and campaign.cost.monthly_cap_usd is not None:
        print(f"monthly cap ${campaign.cost.monthly_cap_usd:.2f}: checked against the month's ledger when it starts")
    if cap is not None and result.total_usd > cap:
        errors.print(f"over the campaign cap ${cap:.2f}: the cost guard would refuse it", highlight=False)
        raise typer.Exit(1)
    if cap is not None:
        print(f"within the campaign cap ${cap:.2f}")


@app.command()
def schema() -> None:
    """Print the provider matrix's JSON Schema."""
    print(json.dumps(json_schema(), indent=2))


def ranking_table(results: CampaignResults) -> Table:
    table = Table(title=f"pgarena ranking: {results.campaign_id}")
    for column in ("rank", "target", "provider", "status", "score", "tps (mean)", "error"):
        table.add_column(column)
    providers = {t.name: t for t in results.targets}
    for entry in results.ranking:
        target = providers[entry.target]
        tps = [w.tps for w in target.workloads if w.tps is not None]
        table.add_row(f"{entry.rank}{'=' if entry.tied_with else ''}", entry.target, target.provider, target.status, f"{entry.score:.3f}",
                      f"{sum(tps) / len(tps):,.1f}" if tps else "-", "")
    ranked = {r.target for r in results.ranking}
    for target in results.targets:
        if target.name not in ranked:
            error = f"{target.error.kind}: {target.error.message}" if target.error else ""
            table.add_row("-", target.name, target.provider, target.status, "-", "-", error)
    return table


@app.command()
def run(
    matrix: Annotated[Path, typer.Option(help="provider matrix JSON")],
    out: Annotated[Path, typer.Option(help="results folder")] = Path("results"),
    local: Annotated[bool, typer.Option("--local", help="run on this machine (the only mode this command has today)")] = False,
) -> None:
    """Run a campaign through the campaign state machine and print the ranking."""
    if not local:
        errors.print("only --local runs are started from this command; in AWS start an execution (see README.md)")
        raise typer.Exit(2)
    campaign = _load_or_exit(matrix)
    from pgarena.local.runtime import Event, run_local

    def show(event: Event) -> None:
        if event.kind == "step" and event.summary is not None:
            s = event.summary
            figure = f"{s.tps:,.1f} tps" if s.tps is not None else (f"loaded in {s.load_s:.2f} s" if s.load_s else "")
            colour = "green" if s.status == "succeeded" else "red"
            detail = f" {s.error.kind}: {s.error.message}" if s.error else ""
            console.print(f"[dim]{event.elapsed_s:6.1f}s[/dim] [{colour}]{s.status:9}[/{colour}] {s.step_id} {figure}{detail}",
                          highlight=False)
        else:
            console.print(f"[dim]{event.elapsed_s:6.1f}s {event.text}[/dim]", highlight=False)

    with console.status(f"running {campaign.campaign} locally"):
        result = run_local(campaign, out, on_event=show)
    if result.results is None:
        errors.print(f"[red]campaign {result.campaign_id} ended {result.status} without results: {result.error}[/red]")
        raise typer.Exit(1)
    console.print(ranking_table(result.results))
    console.print(f"results: {result.results_dir / 'results.json'}  ({result.wall_s:.1f} s)")
    if (result.results_dir / "report.html").exists():
        console.print(f"report:  {result.results_dir / 'report.html'}")
    if any(t.status == "failed" for t in result.results.targets):
        raise typer.Exit(3)


def _results_or_exit(path: Path) -> CampaignResults:
    try:
        return load_results(path)
    except FileNotFoundError:
        errors.print(f"[red]{path}: no results.json there[/red]")
        raise typer.Exit(2) from None
    except ValueError as error:
        errors.print(f"[red]{path}: not a pgarena results.json: {error}[/red]", markup=False)
        raise typer.Exit(1) from None


@app.command()
def report(folder: Annotated[Path, typer.Argument(help="campaign folder holding results.json")]) -> None:
    """Rebuild the reports (report.html, summary.md, CSV tables) from FOLDER/results.json."""
    results = _results_or_exit(folder)
    out = folder if folder.is_dir() else folder.parent
    for path in write_to_folder(results, out):
        console.print(str(path), highlight=False)


def comparison_table(comparison: Comparison) -> Table:
    table = Table(title=f"{comparison.a} -> {comparison.b} (changes beyond {comparison.threshold:.0%})")
    for column in ("target", "workload", "clients", "tps A", "tps B", "Δ tps", "Δ latency", "verdict"):
        table.add_column(column, justify="left" if column in ("target", "workload", "verdict") else "right")
    colours = {"regression": "red", "failed": "red", "improvement": "green", "recovered": "green"}
    for c in comparison.changes:
        colour = colours.get(c.verdict, "default")
        why = "; ".join(r for r in c.reasons if not r.startswith(("tps ", "latency ")))
        table.add_row(
            c.target, c.workload, str(c.clients if c.clients is not None else "-"),
            f"{c.tps_a:,.1f}" if c.tps_a is not None else "-", f"{c.tps_b:,.1f}" if c.tps_b is not None else "-",
            f"{c.tps_change:+.1%}" if c.tps_change is not None else "-",
            f"{c.latency_change:+.1%} {c.latency_field}" if c.latency_change is not None else "-",
            f"[{colour}]{c.verdict}[/{colour}]" + (f" ({why})" if why else ""),
        )
    return table


@app.command()
def compare(
    a: Annotated[Path, typer.Argument(help="the earlier campaign: its folder or its results.json")],
    b: Annotated[Path, typer.Argument(help="the later campaign: its folder or its results.json")],
    threshold: Annotated[float, typer.Option(help="relative change beyond which a difference counts", min=0)] = DEFAULT_THRESHOLD,
) -> None:
    """Show what changed from campaign A to campaign B per target, workload and client count; flag regressions."""
    comparison = compare_campaigns(_results_or_exit(a), _results_or_exit(b), threshold)
    console.print(comparison_table(comparison))
    regressions = comparison.regressions
    summary = f"{len(regressions)} regression(s)" + (": " + ", ".join(f"{c.target}/{c.workload}/c{c.clients}" for c in regressions) if regressions else "")
    console.print(summary, style="red" if regressions else "green", highlight=False)


class Tool(str, Enum):
    pgbench = "pgbench"


@app.command()
def parse(tool: Tool, file: Annotated[Path, typer.Argument(help="raw tool output; - for stdin")]) -> None:
    """Parse a benchmark tool's raw output and print JSON (summary, progress, init phases)."""
    from pgarena.parsers.pgbench import parse_pgbench

    text = sys.stdin.read() if str(file) == "-" else file.read_text(errors="replace")
    print(parse_pgbench(text).model_dump_json(indent=2))


if __name__ == "__main__":
    app()
