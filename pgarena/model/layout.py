"""Where a campaign's files live in the results bucket (and, once downloaded, in its folder). Pure.

Every object key is built here. The access map (pgarena.aws.access) grants each component its
objects by calling these same functions with "*" for the ids, so a key and the IAM pattern that
allows it cannot drift apart. This lives in `model` because plans, analysis and the local runtime
name these keys too, and they may not import `aws`.
"""

from __future__ import annotations

from pathlib import Path

RAW_DIR = "raw"
# What the state machine's states share without carrying it in the execution's state (256 KiB): the
# plan, the cost guard's decision, each preflight's steps. The state carries the campaign id and indices.
STATE_DIR = "state"
PLAN_FILE = "plan.json"
COST_FILE = "cost.json"
DECISIONS_FILE = "decisions.json"
RESULTS_FILE = "results.json"
PREFLIGHT_EVIDENCE_FILE = "preflight/preflight.json"
# Reports (pgarena.report.REPORT_FILES) sit at the campaign's root beside results.json; they are
# granted by extension, so a new CSV table needs no IAM change (tests/unit/test_access.py checks).
REPORT_SUFFIXES = (".html", ".md", ".csv")
# Schedules whose matrix is kept in the bucket (not inline in the CDK context) read it from here.
SCHEDULE_MATRIX_PREFIX = "matrices/"
# CA bundles an endpoint's sslrootcert may name (s3://<bucket>/ca/<name>.pem): the functions and workers read them.
CA_BUNDLE_PREFIX = "ca/"
# The lifecycle rule expires raw output by this tag: S3 lifecycle filters match key prefixes, and
# raw output sits under a per-campaign prefix.
RAW_OUTPUT_TAG_KEY = "pgarena-kind"
RAW_OUTPUT_TAG_VALUE = "raw"
# The state machine's outcome items in the results table (partition `outcome#<campaign_id>`, see
# pgarena.aws.access): one per target that finished or failed, one per worker that failed, carrying
# the Catch's failure ({Error, Cause} as JSON) when there was one.
OUTCOME_TARGET_SK_PREFIX = "target#"
OUTCOME_SHARD_SK_PREFIX = "shard#"
OUTCOME_FAILURE_ATTRIBUTE = "failure"


def outcome_target_sk(phase: int | str, target: int | str) -> str:
    return f"{OUTCOME_TARGET_SK_PREFIX}{phase}#{target}"


def outcome_shard_sk(phase: int | str, target: int | str, step: int | str, shard: int | str) -> str:
    return f"{OUTCOME_SHARD_SK_PREFIX}{phase}#{target}#{step}#{shard}"


def campaign_prefix(campaign_id: str) -> str:
    """Everything a campaign wrote; its local folder mirrors the keys below this prefix."""
    return f"{campaign_id}/"


def raw_prefix(campaign_id: str) -> str:
    """All raw output of a campaign: every step's and every preflight's."""
    return f"{campaign_prefix(campaign_id)}{RAW_DIR}/"


def step_raw_prefix(campaign_id: str, step_id: str) -> str:
    """One step's raw output (no trailing slash: files are `<this>/<name>`)."""
    return f"{raw_prefix(campaign_id)}{step_id}"


def progress_key(campaign_id: str, step_id: str) -> str:
    """A step's progress series, which its summary's item points to (pgarena.aws.store): beside the
    states' records, not in the raw output (whose files are the worker's own evidence)."""
    return f"{campaign_prefix(campaign_id)}{STATE_DIR}/progress/{step_id}.json"


def raw_key(campaign_id: str, step_id: str, name: str) -> str:
    return f"{step_raw_prefix(campaign_id, step_id)}/{name}"


MANAGED_METRICS_FILE = "cloudwatch.json"


def managed_metrics_key(campaign_id: str, step_id: str) -> str:
    """A run's CloudWatch answer (GetMetricData over its window), which finalize reads and keeps beside the
    step's raw output."""
    return raw_key(campaign_id, step_id, MANAGED_METRICS_FILE)


def evidence_key(campaign_id: str, target: str) -> str:
    """Preflight's record of a target (the facts it read, or why it failed), beside the raw output."""
    return raw_key(campaign_id, target, PREFLIGHT_EVIDENCE_FILE)


def state_prefix(campaign_id: str) -> str:
    return f"{campaign_prefix(campaign_id)}{STATE_DIR}/"


def plan_key(campaign_id: str) -> str:
    """Validate And Plan's plan: every target's steps in every phase."""
    return f"{state_prefix(campaign_id)}{PLAN_FILE}"


def cost_key(campaign_id: str) -> str:
    """Check Cost Cap's decision: the estimate, the caps, whether it was booked."""
    return f"{state_prefix(campaign_id)}{COST_FILE}"


def decisions_key(campaign_id: str) -> str:
    """An adaptive campaign's decisions (Decide More Phases): each look, and the phases not needed."""
    return f"{state_prefix(campaign_id)}{DECISIONS_FILE}"


def preflight_key(campaign_id: str, phase: int | str, target: int | str) -> str:
    """Preflight's answer for the phase's target (by its index in the phase): the server it found and
    the steps to run, clamped to the budget and split into shards; launch_worker reads a shard's step here."""
    return f"{state_prefix(campaign_id)}p{phase}/t{target}.json"


def results_key(campaign_id: str) -> str:
    return f"{campaign_prefix(campaign_id)}{RESULTS_FILE}"


def report_key(campaign_id: str, name: str) -> str:
    return f"{campaign_prefix(campaign_id)}{name}"


def matrix_key(name: str) -> str:
    return f"{SCHEDULE_MATRIX_PREFIX}{name}"


def relative(campaign_id: str, key: str) -> str:
    """A key as a path relative to the campaign's folder."""
    return key.removeprefix(campaign_prefix(campaign_id))


class UnsafePath(ValueError):
    """A path a results folder's files name leads outside the folder (a tampered folder)."""


def inside(folder: Path, path: Path) -> Path:
    """`path`, resolved (symlinks too), if it stays within `folder`; UnsafePath otherwise. Every path a
    results folder's own files name (series, target and workload names) is read through here."""
    resolved, root = path.resolve(), folder.resolve()
    if not resolved.is_relative_to(root):
        raise UnsafePath(f"{path}: leads outside the results folder {folder}; refusing to read it (a tampered folder?)")
    return resolved
