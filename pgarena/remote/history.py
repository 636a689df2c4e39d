"""`pgarena history --stack`: the runs a deployed stack indexed (finalize's items in the results table),
copied into the local results folder, where `history` reads them as it reads local runs."""

from __future__ import annotations

from pathlib import Path

from pgarena.analysis.history.schema import IndexedRun
from pgarena.aws.history_index import HistoryIndex
from pgarena.model import layout
from pgarena.remote.execution import AwsClients, AwsRunError, download_results, stack_outputs


def indexed_runs(clients: AwsClients, stack_name: str, campaign: str | None) -> tuple[str, list[IndexedRun]]:
    """The stack's results bucket, and the runs its index holds (of one campaign, or of every one)."""
    outputs = stack_outputs(clients.cloudformation, stack_name, {})
    if not outputs.results_table:
        raise AwsRunError(f"stack {stack_name!r} has no results table output: is it pgarena's stack?")
    index = HistoryIndex(clients.dynamodb, outputs.results_table)
    names = [campaign] if campaign is not None else index.campaigns()
    return outputs.results_bucket, [run for name in names for run in index.runs(name)]


def copy_runs(clients: AwsClients, bucket: str, runs: list[IndexedRun], out: Path) -> list[str]:
    """Each run's results.json and reports into out/<campaign_id>/, unless already there; the ids copied."""
    copied = []
    for run in runs:
        if (out / run.campaign_id / layout.RESULTS_FILE).exists():
            continue
        download_results(clients.s3, bucket, run.campaign_id, out)
        copied.append(run.campaign_id)
    return copied
