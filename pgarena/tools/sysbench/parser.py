"""Parse what sysbench prints (stdout and stderr merged) into typed models.

Everything here is pure: text in, models out, no I/O. `parse_sysbench` never
raises on a string, whatever it holds; text it does not recognise is ignored.
Every number is `float()`/`int()` of the token sysbench printed, never rounded
or recomputed, so a parsed value compares equal to the printed one.

Formats covered:
- sysbench 1.0 (`oltp_*.lua`, `select_random_*.lua`): "[ 1s ] thds: 4 tps: ..."
  interval lines, "SQL statistics:" / "Latency (ms):" summary, `--histogram`,
  `--percentile` (0 prints "percentile stats: disabled"), `--rate` queue lines,
  `--forced-shutdown`, prepare/cleanup progress.
- sysbench 0.5 (`oltp.lua`): "[  10s] threads: 8, tps: ..., reads: ..." interval
  lines, "OLTP test statistics:" with "read/write requests" and "other
  operations", "response time:" in ms with an "approx.  95 percentile" line.

Quirks of sysbench 1.0.20 with the pgsql driver, seen in the fixtures:
- It segfaults (exit 139) when a server connection drops mid-query, printing no
  error at all: the output just stops. `finished` is then False.
- A write that touches no row (e.g. the DELETE of an already deleted id) is
  counted under "other", not "write".
- Repeated log messages collapse into "(last message repeated N times)"; the
  repeats are not in `errors`.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from pgarena.tools.tokens import lines_of, to_float, to_int

# A number as C's printf writes it; glibc spells non-finite values nan/-nan/inf.
_N = r"(?:[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf))"


class _Frozen(BaseModel):
    # Parsed output is a record of what was printed: it should not change after.
    model_config = ConfigDict(frozen=True, extra="forbid")


class SysbenchInterval(_Frozen):
    """One `--report-interval` line.

    1.0: "[ 1s ] thds: 4 tps: 16.96 qps: 423.92 (r/w/o: 307.22/75.81/40.90) lat (ms,95%): 10.27 err/s: 1.00 reconn/s: 0.00"
    0.5: "[  10s] threads: 8, tps: 1003.21, reads: 0.00, writes: 4012.84, response time: 13.52ms (95%), errors: 0.10, reconnects:  0.00"
    """

    elapsed_s: float
    threads: int | None = None
    tps: float
    qps: float | None = None  # 1.0 only
    read_qps: float | None = None
    write_qps: float | None = None
    other_qps: float | None = None  # 1.0 only
    # None when percentiles are off (--percentile=0 prints "lat (ms,0%): 0.00").
    latency_pct_ms: float | None = None
    percentile: float | None = None
    err_per_s: float | None = None
    reconn_per_s: float | None = None
    # The "[ 1s ] queue length: 0, concurrency: 0" line that follows with --rate.
    queue_length: int | None = None
    concurrency: int | None = None


class SysbenchSummary(_Frozen):
    """The run header and end-of-run statistics. A field is None when its line was not printed."""

    sysbench_version: str | None = None  # e.g. "1.0.20", "0.5"
    threads: int | None = None
    report_interval_s: float | None = None
    target_rate_per_s: float | None = None  # --rate
    forced_shutdown_at_s: float | None = None  # "Forcing shutdown in N seconds": --time plus the grace period
    queries_read: int | None = None
    queries_write: int | None = None
    queries_other: int | None = None
    queries_total: int | None = None
    transactions: int | None = None
    tps: float | None = None
    queries: int | None = None  # 1.0: read + write + other
    qps: float | None = None
    read_write_requests: int | None = None  # 0.5: read + write
    read_write_requests_per_s: float | None = None
    other_operations: int | None = None  # 0.5
    other_operations_per_s: float | None = None
    ignored_errors: int | None = None
    ignored_errors_per_s: float | None = None
    reconnects: int | None = None
    reconnects_per_s: float | None = None
    unfinished_transactions: int | None = None  # transactions cut off by --forced-shutdown
    total_time_s: float | None = None
    total_events: int | None = None
    event_execution_time_s: float | None = None  # 0.5's "total time taken by event execution"
    latency_min_ms: float | None = None
    latency_avg_ms: float | None = None
    latency_max_ms: float | None = None
    latency_pct_ms: float | None = None
    percentile: float | None = None
    latency_sum_ms: float | None = None  # 1.0
    events_avg: float | None = None  # per thread
    events_stddev: float | None = None
    exec_time_avg_s: float | None = None  # per thread
    exec_time_stddev_s: float | None = None


class SysbenchHistogramBucket(_Frozen):
    """One `--histogram` row: "       0.954 |*                                        1"."""

    value_ms: float
    count: int


class SysbenchPrepareLog(_Frozen):
    """What `prepare` printed, table names as printed, in printed order."""

    tables_created: list[str] = []  # "Creating table 'sbtest1'..."
    # "Inserting 1000 records into 'sbtest1'" is printed before the rows are sent:
    # it announces the load, it does not confirm it.
    rows_announced: dict[str, int] = {}
    # "Creating a secondary index on 'sbtest1'..." (0.5: "Creating secondary indexes on ...").
    # Printed after that table's rows went in, so it marks the load of that table done.
    secondary_indexes: list[str] = []


class SysbenchReport(_Frozen):
    summary: SysbenchSummary | None = None
    intervals: list[SysbenchInterval] = []
    histogram: list[SysbenchHistogramBucket] = []
    prepare: SysbenchPrepareLog | None = None
    dropped_tables: list[str] = []  # cleanup: "Dropping table 'sbtest1'..."
    errors: list[str] = []
    # "FATAL: The --max-time limit has expired, forcing shutdown..."
    forced_shutdown: bool = False
    # The closing "Threads fairness:" block was printed: the run got to its report.
    finished: bool = False


# --- header and end-of-run statistics -----------------------------------------

# Label -> (int field, per-second field) for "label:   N   (R per sec.)" rows.
_COUNTED = {
    "transactions": ("transactions", "tps"),
    "queries": ("queries", "qps"),
    "read/write requests": ("read_write_requests", "read_write_requests_per_s"),
    "other operations": ("other_operations", "other_operations_per_s"),
    "ignored errors": ("ignored_errors", "ignored_errors_per_s"),
    "reconnects": ("reconnects", "reconnects_per_s"),
}
_COUNTED_ROW = re.compile(rf"^({'|'.join(re.escape(k) for k in _COUNTED)}):\s+(\d+)\s+\(({_N}) per sec\.\)$")
# The "queries performed:" breakdown, and 1.0's bare-number latency rows.
_PLAIN_ROW = re.compile(rf"^(read|write|other|total|min|avg|max|sum):\s+({_N})(ms)?$")
_PLAIN_FIELDS = {
    "read": "queries_read",
    "write": "queries_write",
    "other": "queries_other",
    "total": "queries_total",
    "min": "latency_min_ms",
    "avg": "latency_avg_ms",
    "max": "latency_max_ms",
    "sum": "latency_sum_ms",
}
_INT_FIELDS = {"queries_read", "queries_write", "queries_other", "queries_total"}
# 1.0: "95th percentile:   10.84"; 0.5: "approx.  95 percentile:   71.69ms".
_PERCENTILE_ROW = re.compile(rf"^(?:approx\.\s+)?({_N})(?:st|nd|rd|th)? percentile:\s+({_N})(?:ms)?$")
_AVG_STDDEV = re.compile(rf"^(events|execution time) \(avg/stddev\):\s+({_N})/({_N})$")
_SIMPLE_RULES: list[tuple[re.Pattern[str], str, type]] = [
    (re.compile(r"^Number of threads: (\d+)$"), "threads", int),
    (re.compile(rf"^Report intermediate results every ({_N}) second\(s\)$"), "report_interval_s", float),
    (re.compile(rf"^Target transaction rate: ({_N})/sec$"), "target_rate_per_s", float),
    (re.compile(rf"^Forcing shutdown in ({_N}) seconds$"), "forced_shutdown_at_s", float),
    (re.compile(r"^Number of unfinished transactions on forced shutdown: (\d+)$"), "unfinished_transactions", int),
    (re.compile(rf"^total time:\s+({_N})s$"), "total_time_s", float),
    (re.compile(r"^total number of events:\s+(\d+)$"), "total_events", int),
    (re.compile(rf"^total time taken by event execution:\s+({_N})s$"), "event_execution_time_s", float),
]
# "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)", "sysbench 0.5:  multi-threaded ...",
# or `sysbench --version`'s bare "sysbench 1.0.20".
_VERSION = re.compile(r"^sysbench (\d[0-9A-Za-z.+~-]*?)(?::|\s|$)")


def _summary_fields(line: str) -> dict[str, object]:
    """Fields one (stripped) line contributes; empty if it is not a summary line."""
    if m := _COUNTED_ROW.match(line):
        count_field, rate_field = _COUNTED[m.group(1)]
        return {count_field: to_int(m.group(2)), rate_field: to_float(m.group(3))}
    if m := _PLAIN_ROW.match(line):
        field = _PLAIN_FIELDS[m.group(1)]
        if field in _INT_FIELDS:
            return {field: to_int(m.group(2))}
        return {field: to_float(m.group(2))}
    if m := _PERCENTILE_ROW.match(line):
        return {"percentile": to_float(m.group(1)), "latency_pct_ms": to_float(m.group(2))}
    if m := _AVG_STDDEV.match(line):
        if m.group(1) == "events":
            return {"events_avg": to_float(m.group(2)), "events_stddev": to_float(m.group(3))}
        return {"exec_time_avg_s": to_float(m.group(2)), "exec_time_stddev_s": to_float(m.group(3))}
    for pattern, field, kind in _SIMPLE_RULES:
        if m := pattern.match(line):
            return {field: to_int(m.group(1)) if kind is int else to_float(m.group(1))}
    return {}


def parse_summary(lines: list[str]) -> SysbenchSummary | None:
    """The run header and end-of-run statistics, or None when no line of them was printed.

    When a label appears twice (several runs in one log) the last one wins.
    """
    found: dict[str, object] = {}
    for raw in lines:
        if m := _VERSION.match(raw):
            found["sysbench_version"] = m.group(1)
            continue
        # The statistics are indented by nesting level; labels are unique across blocks.
        fields = _summary_fields(raw.strip())
        # An unreadable number (e.g. past int()'s digit limit) counts as not printed.
        found.update((k, v) for k, v in fields.items() if v is not None)
    if not found:
        return None
    return SysbenchSummary.model_validate(found)


# --- interval lines -----------------------------------------------------------

_INTERVAL = re.compile(rf"^\[\s*({_N})s\s*\]\s*(.*)$")
# Items of an interval line, 1.0 and 0.5 spellings side by side.
_INTERVAL_ITEMS: list[tuple[re.Pattern[str], tuple[str, ...]]] = [
    (re.compile(r"\b(?:thds|threads): (\d+)"), ("threads",)),
    (re.compile(rf"\btps: ({_N})"), ("tps",)),
    (re.compile(rf"\bqps: ({_N})"), ("qps",)),
    (re.compile(rf"\(r/w/o: ({_N})/({_N})/({_N})\)"), ("read_qps", "write_qps", "other_qps")),
    (re.compile(rf"\breads: ({_N})"), ("read_qps",)),
    (re.compile(rf"\bwrites: ({_N})"), ("write_qps",)),
    (re.compile(rf"\blat \(ms,({_N})%\): ({_N})"), ("percentile", "latency_pct_ms")),
    (re.compile(rf"\bresponse time: ({_N})ms \(({_N})%\)"), ("latency_pct_ms", "percentile")),
    (re.compile(rf"\b(?:err/s|errors):\s+({_N})"), ("err_per_s",)),
    (re.compile(rf"\b(?:reconn/s|reconnects):\s+({_N})"), ("reconn_per_s",)),
]
_QUEUE = re.compile(r"^queue length: (\d+), concurrency: (\d+)$")
_INT_INTERVAL_FIELDS = {"threads"}


def _interval_fields(body: str) -> dict[str, object]:
    fields: dict[str, object] = {}
    for pattern, names in _INTERVAL_ITEMS:
        if m := pattern.search(body):
            for name, token in zip(names, m.groups()):
                fields[name] = to_int(token) if name in _INT_INTERVAL_FIELDS else to_float(token)
    if fields.get("percentile") == 0:
        # --percentile=0 turns the statistic off; sysbench still prints 0.00 for it.
        fields["latency_pct_ms"] = None
    return fields


def parse_intervals(lines: list[str]) -> list[SysbenchInterval]:
    """All interval points, in printed order."""
    points: list[dict[str, object]] = []
    for line in lines:
        m = _INTERVAL.match(line)
        if not m:
            continue
        elapsed = to_float(m.group(1))
        if elapsed is None:
            continue
        if queue := _QUEUE.match(m.group(2)):
            # Belongs to the interval line just before it, which has the same timestamp.
            if points and points[-1]["elapsed_s"] == elapsed:
                points[-1]["queue_length"] = to_int(queue.group(1))
                points[-1]["concurrency"] = to_int(queue.group(2))
            continue
        fields = _interval_fields(m.group(2))
        if fields.get("tps") is None:
            continue
        points.append({"elapsed_s": elapsed, **fields})
    return [SysbenchInterval.model_validate(p) for p in points]


# --- histogram ----------------------------------------------------------------

_HISTOGRAM_HEADER = re.compile(r"^Latency histogram \(values are in milliseconds\)$")
_HISTOGRAM_ROW = re.compile(rf"^\s*({_N})\s*\|\**\s*(\d+)$")


def parse_histogram(lines: list[str]) -> list[SysbenchHistogramBucket]:
    """The `--histogram` rows, in printed (ascending) order; the last histogram if there are several."""
    buckets: list[SysbenchHistogramBucket] = []
    inside = False
    for line in lines:
        if _HISTOGRAM_HEADER.match(line):
            buckets, inside = [], True
            continue
        if not inside:
            continue
        if m := _HISTOGRAM_ROW.match(line):
            value, count = to_float(m.group(1)), to_int(m.group(2))
            if value is not None and count is not None:
                buckets.append(SysbenchHistogramBucket(value_ms=value, count=count))
        elif "distribution" not in line:
            inside = False  # the column header line is skipped; anything else ends the block
    return buckets


# --- prepare and cleanup ------------------------------------------------------

_CREATING = re.compile(r"^Creating table '([^']+)'\.\.\.$")
_INSERTING = re.compile(r"^Inserting (\d+) records into '([^']+)'$")
_INDEXING = re.compile(r"^Creating (?:a secondary index|secondary indexes) on '([^']+)'\.\.\.$")
_DROPPING = re.compile(r"^Dropping table '([^']+)'\.\.\.$")


def parse_prepare(lines: list[str]) -> SysbenchPrepareLog | None:
    """The prepare progress lines, or None when none was printed."""
    created: list[str] = []
    announced: dict[str, int] = {}
    indexed: list[str] = []
    for line in lines:
        if m := _CREATING.match(line):
            created.append(m.group(1))
        elif m := _INSERTING.match(line):
            rows = to_int(m.group(1))
            if rows is not None:
                announced[m.group(2)] = rows
        elif m := _INDEXING.match(line):
            indexed.append(m.group(1))
    if not (created or announced or indexed):
        return None
    return SysbenchPrepareLog(tables_created=created, rows_announced=announced, secondary_indexes=indexed)


def parse_dropped(lines: list[str]) -> list[str]:
    return [m.group(1) for line in lines if (m := _DROPPING.match(line))]


# --- errors -------------------------------------------------------------------

_ERROR = re.compile(
    r"^(?:FATAL|ALERT):"  # sysbench's own log levels for failures
    r"|\b(?:FATAL|PANIC|ERROR):"  # server messages quoted anywhere in a line
    r"|could not translate host name"
    r"|could not connect to server"  # libpq before 14
    r"|connection to server\b.*\bfailed"  # libpq 14+
    r"|server closed the connection unexpectedly"
    r"|too many clients already"
    r"|remaining connection slots are reserved"
)
# Printed when --forced-shutdown fires; the report that follows still comes, with unfinished transactions.
_FORCED_SHUTDOWN = re.compile(r"^FATAL: The --max-time limit has expired, forcing shutdown")


def parse_errors(lines: list[str]) -> list[str]:
    """Lines that look like errors, stripped, in printed order, duplicates kept.

    Continuation lines (libpq's indented hint, the server's "LINE 1:" and caret)
    are not errors of their own and are left out. The forced-shutdown notice is
    kept: sysbench logs it as FATAL, and the run did end by force.
    """
    return [line.strip() for line in lines if _ERROR.search(line)]


# --- entry point --------------------------------------------------------------


def parse_sysbench(text: str) -> SysbenchReport:
    """Parse one sysbench invocation's merged output (or several, concatenated)."""
    if not isinstance(text, str):
        return SysbenchReport()
    lines = lines_of(text)
    return SysbenchReport(
        summary=parse_summary(lines),
        intervals=parse_intervals(lines),
        histogram=parse_histogram(lines),
        prepare=parse_prepare(lines),
        dropped_tables=parse_dropped(lines),
        errors=parse_errors(lines),
        forced_shutdown=any(_FORCED_SHUTDOWN.match(line) for line in lines),
        finished=any(line == "Threads fairness:" for line in lines),
    )
