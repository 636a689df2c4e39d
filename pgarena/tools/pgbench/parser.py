"""Parse what pgbench prints (stdout and stderr merged) into typed models.

Everything here is pure: text in, models out, no I/O. `parse_pgbench` never
raises on a string, whatever it holds; text it does not recognise is ignored.
Every number is `float()`/`int()` of the token pgbench printed, never rounded
or recomputed, so a parsed value compares equal to the printed one.

Formats covered: pgbench 9.6-13 ("tps = ... (including/excluding connections
establishing)", progress lines without "failed"), 14 ("initial connection
time", "tps = ... (without initial connection time)"), 15-18 ("maximum number
of tries", "number of failed transactions", ", N failed" in progress lines).
Rate and latency-limit runs add the schedule lag, skipped and late transactions
(and from 15, with --max-tries, the retried ones) to the summary.
Init: the summary "done in X s (phase Y s, ...)." of 13+; before 13 pgbench
prints only its steps ("creating tables...", "vacuum...") and "N of M tuples
(P%) done (elapsed E s, remaining R s)" lines, then a bare "done." (checked in
pgbench.c at 9.6.0, 10.4 and 11.17; tests/fixtures/pgbench/README.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from pgarena.tools.tokens import lines_of, to_float, to_int

# A number as C's printf writes it; glibc spells non-finite values nan/-nan/inf.
_N = r"(?:[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf))"


class _Frozen(BaseModel):
    # Parsed output is a record of what was printed: it should not change after.
    model_config = ConfigDict(frozen=True, extra="forbid")


class ProgressPoint(_Frozen):
    """One `-P` line: "progress: 1.0 s, 1318.9 tps, lat 2.980 ms stddev 2.185, 0 failed"."""

    elapsed_s: float  # seconds since start, or epoch seconds with --progress-timestamp
    tps: float
    latency_avg_ms: float | None = None
    latency_stddev_ms: float | None = None
    failed: int | None = None  # printed by pgbench 15+
    lag_ms: float | None = None  # printed with --rate
    skipped: int | None = None  # printed with --rate and --latency-limit
    retried: int | None = None  # printed by 15+ when --max-tries is not 1
    retries: int | None = None


class InitPhases(_Frozen):
    """What `pgbench -i` printed: 13+ ends with "done in 0.30 s (drop tables 0.02 s, ...).",
    9.6-12 with a bare "done." after step and row-count lines, which carry no total."""

    total_s: float | None = None  # None before 13: no total is printed
    # Phase label exactly as printed -> seconds, in printed order. The printed
    # total is pgbench's own unrounded sum, so it may differ from the sum of these.
    phases_s: dict[str, float] = {}
    steps: list[str] = []  # step announcements without their "...", e.g. "creating tables", "vacuum"
    rows_generated: int | None = None  # N of the last "N of M tuples (P%) done (elapsed E s, ...)" line
    rows_total: int | None = None  # its M
    # Its E: the only load timing pgbench 9.6-12 print (data generation alone, no vacuum or keys).
    generate_elapsed_s: float | None = None
    completed: bool = False  # "done." or "done in ..." was printed


class StatementLatency(_Frozen):
    """One row of the `-r` per-statement report."""

    script: int | None  # N of the enclosing "SQL script N:" block; None with a single script
    latency_ms: float
    failures: int | None  # column printed by pgbench 15+
    retries: int | None  # column printed by 15+ when --max-tries is not 1
    command: str


class PgbenchSummary(_Frozen):
    """The end-of-run report. A field is None when its line was not printed."""

    pgbench_version: str | None = None  # client version, e.g. "18.6" or "15.20 (Debian 15.20-0+deb12u1)"
    server_version: str | None = None  # printed (14+) only when it differs from the client's
    transaction_type: str | None = None
    scaling_factor: int | None = None
    query_mode: str | None = None
    clients: int | None = None
    threads: int | None = None
    max_tries: int | None = None
    duration_s: float | None = None
    transactions: int | None = None
    transactions_expected: int | None = None  # the "/400" of "400/400" in -t mode
    failed_transactions: int | None = None
    transactions_retried: int | None = None  # 15+ with --max-tries not 1: transactions retried at least once
    total_retries: int | None = None  # their retries, summed
    transactions_skipped: int | None = None  # --rate with --latency-limit: late before they started
    latency_limit_ms: float | None = None  # the --latency-limit, as the "above the X ms" line printed it
    transactions_above_latency_limit: int | None = None  # completed, but late
    latency_avg_ms: float | None = None
    latency_stddev_ms: float | None = None
    initial_connection_time_ms: float | None = None
    schedule_lag_avg_ms: float | None = None  # --rate: scheduled to actual start, "avg X (max Y) ms"
    schedule_lag_max_ms: float | None = None
    tps: float | None = None
    tps_including_connections: float | None = None
    tps_excluding_connections: float | None = None


class PgbenchReport(_Frozen):
    summary: PgbenchSummary | None = None
    progress: list[ProgressPoint] = []
    init: InitPhases | None = None
    errors: list[str] = []
    statements: list[StatementLatency] = []
    # pgbench printed "Run was aborted; the above results are incomplete."
    aborted: bool = False


# --- end-of-run summary -------------------------------------------------------

_Handler = Callable[[re.Match[str]], dict[str, object]]


def _version_header(m: re.Match[str]) -> dict[str, object]:
    # "pgbench (18.6, server 15.20 (Debian ...))" or, versions equal, "pgbench (18.6)".
    client, sep, server = m.group(1).partition(", server ")
    return {"pgbench_version": client, "server_version": server if sep else None}


def _processed(m: re.Match[str]) -> dict[str, object]:
    fields: dict[str, object] = {"transactions": to_int(m.group(1))}
    if m.group(2) is not None:
        fields["transactions_expected"] = to_int(m.group(2))
    return fields


def _above_limit(m: re.Match[str]) -> dict[str, object]:
    return {"latency_limit_ms": to_float(m.group(1)), "transactions_above_latency_limit": to_int(m.group(2))}


def _schedule_lag(m: re.Match[str]) -> dict[str, object]:
    return {"schedule_lag_avg_ms": to_float(m.group(1)), "schedule_lag_max_ms": to_float(m.group(2))}


def _tps(m: re.Match[str]) -> dict[str, object]:
    value, qualifier = to_float(m.group(1)), (m.group(2) or "")
    if qualifier.startswith("including"):
        return {"tps_including_connections": value}
    if qualifier.startswith("excluding"):
        return {"tps_excluding_connections": value}
    # 14+ prints a single "(without initial connection time)" figure.
    return {"_tps_without": value}


# Anchored at column 0 on purpose: the per-script blocks of a multi-script run
# repeat these labels behind " - ", and those must not overwrite the totals.
_SUMMARY_RULES: list[tuple[re.Pattern[str], _Handler]] = [
    # `pgbench --version`, if the caller printed it too; must precede the run header.
    (re.compile(r"^pgbench \(PostgreSQL\) (\S.*)$"), lambda m: {"pgbench_version": m.group(1)}),
    (re.compile(r"^pgbench \((.+)\)$"), _version_header),
    (re.compile(r"^transaction type: (.+)$"), lambda m: {"transaction_type": m.group(1)}),
    (re.compile(r"^scaling factor: (\d+)$"), lambda m: {"scaling_factor": to_int(m.group(1))}),
    (re.compile(r"^query mode: (\S+)$"), lambda m: {"query_mode": m.group(1)}),
    (re.compile(r"^number of clients: (\d+)$"), lambda m: {"clients": to_int(m.group(1))}),
    (re.compile(r"^number of threads: (\d+)$"), lambda m: {"threads": to_int(m.group(1))}),
    (re.compile(r"^maximum number of tries: (\d+)$"), lambda m: {"max_tries": to_int(m.group(1))}),
    (re.compile(rf"^duration: ({_N}) s$"), lambda m: {"duration_s": to_float(m.group(1))}),
    (re.compile(r"^number of transactions actually processed: (\d+)(?:/(\d+))?$"), _processed),
    (
        re.compile(r"^number of failed transactions: (\d+)\b"),
        lambda m: {"failed_transactions": to_int(m.group(1))},
    ),
    # 15+ with --max-tries: "number of transactions retried: 3 (0.244%)", then "total number of retries: 4".
    (re.compile(r"^number of transactions retried: (\d+)\b"), lambda m: {"transactions_retried": to_int(m.group(1))}),
    (re.compile(r"^total number of retries: (\d+)$"), lambda m: {"total_retries": to_int(m.group(1))}),
    # The percentage is "(0.083 %)" before 15, "(0.000%)" from 15 on: only the count is read.
    (re.compile(r"^number of transactions skipped: (\d+)\b"), lambda m: {"transactions_skipped": to_int(m.group(1))}),
    # "...: 1 (0.083 %)" before 12, "...: 1/1224 (0.082 %)" from 12 (of the processed), "(0.000%)" from 15.
    (re.compile(rf"^number of transactions above the ({_N}) ms latency limit: (\d+)(?:/\d+)?\b"), _above_limit),
    # 9.5 wrote "latency average: X ms"; 9.6+ writes "latency average = X ms".
    (re.compile(rf"^latency average\s*[=:]\s*({_N}) ms$"), lambda m: {"latency_avg_ms": to_float(m.group(1))}),
    (re.compile(rf"^latency stddev\s*[=:]\s*({_N}) ms$"), lambda m: {"latency_stddev_ms": to_float(m.group(1))}),
    (
        re.compile(rf"^initial connection time = ({_N}) ms$"),
        lambda m: {"initial_connection_time_ms": to_float(m.group(1))},
    ),
    # The same spelling in 9.5-18.
    (re.compile(rf"^rate limit schedule lag: avg ({_N}) \(max ({_N})\) ms$"), _schedule_lag),
    (re.compile(rf"^tps = ({_N})(?: \((.*)\))?$"), _tps),
]


def parse_summary(lines: list[str]) -> PgbenchSummary | None:
    """The end-of-run report, or None when no line of it was printed.

    When a label appears twice (several runs in one log) the last one wins.
    """
    found: dict[str, object] = {}
    for line in lines:
        for pattern, handler in _SUMMARY_RULES:
            m = pattern.match(line)
            if m:
                # An unreadable number (e.g. past int()'s digit limit) counts as not printed.
                found.update((k, v) for k, v in handler(m).items() if v is not None)
                break
    if not found:
        return None
    without = found.pop("_tps_without", None)
    # The headline figure: 14+ prints only "without initial connection time";
    # 12/13 print two, of which "excluding connections establishing" is the comparable one.
    found["tps"] = without if without is not None else found.get("tps_excluding_connections")
    return PgbenchSummary.model_validate(found)


# --- progress lines -----------------------------------------------------------

_PROGRESS = re.compile(rf"^progress: ({_N}) s, ({_N}) tps(.*)$")
_LAT = re.compile(rf"lat ({_N}) ms(?: stddev ({_N}))?")
_LAG = re.compile(rf"lag ({_N}) ms")
_COUNT = re.compile(r"(\d+) (failed|skipped|retried|retries)")


def parse_progress_line(line: str) -> ProgressPoint | None:
    """One "progress: ..." line, or None if the line is not one."""
    m = _PROGRESS.match(line)
    if not m:
        return None
    elapsed, tps = to_float(m.group(1)), to_float(m.group(2))
    if elapsed is None or tps is None:
        return None
    fields: dict[str, object] = {"elapsed_s": elapsed, "tps": tps}
    # The tail is ", "-separated and which items appear depends on version and options.
    for item in (part.strip() for part in m.group(3).split(",")):
        if lat := _LAT.fullmatch(item):
            fields["latency_avg_ms"] = to_float(lat.group(1))
            if lat.group(2) is not None:
                fields["latency_stddev_ms"] = to_float(lat.group(2))
        elif lag := _LAG.fullmatch(item):
            fields["lag_ms"] = to_float(lag.group(1))
        elif count := _COUNT.fullmatch(item):
            fields[count.group(2)] = to_int(count.group(1))
    return ProgressPoint.model_validate(fields)


def parse_progress(lines: list[str]) -> list[ProgressPoint]:
    """All progress points, in printed order."""
    points = (parse_progress_line(line) for line in lines)
    return [p for p in points if p is not None]


# --- init timings -------------------------------------------------------------

_INIT_DONE = re.compile(rf"^done in ({_N}) s \((.*)\)\.$")
# Not printed by any pgbench 9.6-18 (checked in its source history), but the managed-services
# study recorded its load test this way (METHODOLOGY.md section 1), so its logs are read too.
_STUDY_TOTAL = re.compile(rf"^total time: ({_N}) s \((.*)\)\.?$")
_INIT_PHASE = re.compile(rf"(.+?) ({_N}) s")
_INIT_STEP = re.compile(
    r"^(dropping old tables|creating tables|generating data(?: \((?:client|server)-side\))?"
    r"|vacuum|vacuuming|set primary keys|creating primary keys|set foreign keys|creating foreign keys)\.\.\.$"
)
# 18 names the table: "100000 of 100000 tuples (100%) of pgbench_accounts done (elapsed ...)";
# 9.5 and earlier closed the line with a ".".
_INIT_ROWS = re.compile(rf"^(\d+) of (\d+) tuples \(\d+%\)(?: of \S+)? done \(elapsed ({_N}) s, remaining {_N} s\)\.?$")


def _phases(text: str) -> dict[str, float]:
    phases: dict[str, float] = {}
    for item in text.split(", "):
        if phase := _INIT_PHASE.fullmatch(item):
            seconds = to_float(phase.group(2))
            if seconds is not None:
                phases[phase.group(1)] = seconds
    return phases


def parse_init(lines: list[str]) -> InitPhases | None:
    """The last `pgbench -i` output in the text, or None when there is none.

    A step line after a completed init starts a new one (several inits in one log).
    """
    found: dict[str, object] = {}
    result: InitPhases | None = None
    for line in lines:
        if (m := _INIT_DONE.match(line) or _STUDY_TOTAL.match(line)) and (total := to_float(m.group(1))) is not None:
            found.update(total_s=total, phases_s=_phases(m.group(2)), completed=True)
        elif m := _INIT_STEP.match(line):
            if found.get("completed"):
                found = {}
            steps = found.get("steps")
            found["steps"] = [*(steps if isinstance(steps, list) else []), m.group(1)]
        elif m := _INIT_ROWS.match(line):
            rows = {
                "rows_generated": to_int(m.group(1)),
                "rows_total": to_int(m.group(2)),
                "generate_elapsed_s": to_float(m.group(3)),
            }
            found.update((k, v) for k, v in rows.items() if v is not None)
        elif line == "done." and found:
            found["completed"] = True
        else:
            continue
        result = InitPhases.model_validate(found)
    return result


# --- per-statement latencies (-r) ---------------------------------------------

# "statement latencies in milliseconds:" (12-14), "... and failures:" (15+),
# "..., failures and retries:" (15+ with --max-tries); " - " prefixed per script.
_STATEMENTS_HEADER = re.compile(r"^(?: - )?statement latencies in milliseconds(.*):$")
_SCRIPT_HEADER = re.compile(r"^SQL script (\d+): ")


def _statement_row(failures: bool, retries: bool) -> re.Pattern[str]:
    # Column count is fixed by the header; spacing differs by version (15: two
    # spaces before the command, 18: one), so any run of blanks separates.
    return re.compile(rf"^\s+({_N})" + (r"\s+(\d+)" if failures else "") + (r"\s+(\d+)" if retries else "") + r"\s+(\S.*)$")


def parse_statements(lines: list[str]) -> list[StatementLatency]:
    """Rows of every per-statement latency block, in printed order."""
    rows: list[StatementLatency] = []
    script: int | None = None
    row: re.Pattern[str] | None = None
    has_failures = has_retries = False
    for line in lines:
        if row is not None:
            m = row.match(line)
            if m:
                groups = list(m.groups())
                latency = to_float(groups.pop(0))
                command = groups.pop()
                failures = to_int(groups.pop(0)) if has_failures else None
                retries = to_int(groups.pop(0)) if has_retries else None
                if latency is not None:
                    rows.append(
                        StatementLatency(script=script, latency_ms=latency, failures=failures, retries=retries, command=command)
                    )
                continue
            row = None  # the first non-row line ends the block
        if sm := _SCRIPT_HEADER.match(line):
            script = to_int(sm.group(1))
        elif hm := _STATEMENTS_HEADER.match(line):
            has_failures, has_retries = "failures" in hm.group(1), "retries" in hm.group(1)
            row = _statement_row(has_failures, has_retries)
    return rows


# --- errors -------------------------------------------------------------------

_ERROR = re.compile(
    r"pgbench: (?:error|fatal):"  # pgbench's own log prefix (12+; "fatal" until 14)
    r"|\b(?:FATAL|PANIC|ERROR):"  # server messages, also pre-12 "client N aborted ...; ERROR: ..."
    r"|could not translate host name"
    r"|could not connect to server"  # libpq before 14
    r"|^connection to database \"[^\"]*\" failed"  # pgbench before 12, before libpq's message
    r"|connection to server\b"  # libpq 14+: 'connection to server at "h", port p failed: ...'
    r"|server closed the connection unexpectedly"
    r"|Run was aborted"
    r"|^client \d+ aborted"
)
# A -r row: SQL text in it must not be mistaken for an error message.
_STATEMENT_ROW = re.compile(rf"^\s+{_N}\s")


# stdout and stderr interleave mid-line: "starting vacuum...pgbench: error: ...".
_LOG_PREFIX = re.compile(r"pgbench: (?:error|fatal):")


def _error_text(line: str) -> str:
    prefix = _LOG_PREFIX.search(line)
    return (line[prefix.start() :] if prefix else line).strip()


def parse_errors(lines: list[str]) -> list[str]:
    """Lines that look like errors, stripped, in printed order, duplicates kept.

    Includes errors pgbench goes on past (e.g. the vacuum of missing pgbench
    tables before a custom script, followed by "(ignoring this error ...)").
    """
    return [_error_text(line) for line in lines if not _STATEMENT_ROW.match(line) and _ERROR.search(line)]


# --- entry point --------------------------------------------------------------


def parse_pgbench(text: str) -> PgbenchReport:
    """Parse one pgbench invocation's merged output (or several, concatenated)."""
    if not isinstance(text, str):
        return PgbenchReport()
    lines = lines_of(text)
    return PgbenchReport(
        summary=parse_summary(lines),
        progress=parse_progress(lines),
        init=parse_init(lines),
        errors=parse_errors(lines),
        statements=parse_statements(lines),
        aborted=any("Run was aborted" in line for line in lines),
    )
