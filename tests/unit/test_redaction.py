"""Secrets never reach what pgarena keeps: raw output, error messages, logs, results."""

import json
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pgarena.campaign.step.tool_run import ToolRun, run_tool
from pgarena.model.errors import ErrorInfo
from pgarena.model.redact import MASK, MIN_SECRET_LEN, Redactor, redact
from pgarena.model.results import LoadResult
from pgarena.worker.processes import Subprocesses


@pytest.mark.parametrize(
    "text, kept, gone",
    [
        (
            "could not connect: postgresql://bench:s3cr3t@db.example:5432/app",
            ["could not connect: postgresql://bench:", "@db.example:5432/app"],
            "s3cr3t",
        ),
        ("postgres://u:p%40ss@h/db", ["postgres://u:", "@h/db"], "p%40ss"),
        ("host=db user=bench password=s3cr3t dbname=app", ["host=db user=bench password=", " dbname=app"], "s3cr3t"),
        ("host=db password = 'it''s secret' port=5432", ["host=db password = ", " port=5432"], "secret"),
        ("export PGPASSWORD=s3cr3t; pgbench", ["export PGPASSWORD=", "; pgbench"], "s3cr3t"),
        ('{"PGPASSWORD": "s3cr3t", "PGUSER": "bench"}', ['{"PGPASSWORD": ', ', "PGUSER": "bench"}'], "s3cr3t"),
        ('{"password": "s3cr3t"}', ['{"password": '], "s3cr3t"),
        ("pgbench --password=s3cr3t -c 4", ["pgbench --password=", " -c 4"], "s3cr3t"),
    ],
)
def test_patterns_mask_passwords_and_keep_the_rest(text, kept, gone):
    masked = redact(text)
    assert gone not in masked
    assert [part in masked for part in kept] == [True] * len(kept)


@pytest.mark.parametrize(
    "text",
    [
        'FATAL:  password authentication failed for user "bench"',
        "fe_sendauth: no password supplied",
        "tps = 1234.567890 (without initial connection time)",
        'endpoint {"password_env": "PGARENA_PW_A", "password_secret_arn": "arn:aws:secretsmanager:x"}',
        "Password:\nprogress: 1.0 s, 700.0 tps",
    ],
)
def test_ordinary_output_is_left_alone(text):
    assert redact(text) == text


def test_known_secret_values_are_masked_anywhere_and_the_text_around_them_kept():
    # Given a known secret in a string inside a list inside a dict, and as a key
    masked = redact({"message": ["echoed hunter2-pw back"], "hunter2-pw": "x"}, ["hunter2-pw"])
    # Then it is nowhere, and the text and the keys around it are kept
    assert "hunter2-pw" not in json.dumps(masked)
    (line,) = masked["message"]
    assert line.startswith("echoed ") and line.endswith(" back")
    assert list(masked.values())[1] == "x"


def test_short_secrets_are_not_masked_by_value_lest_figures_be_garbled():
    # Given a known value too short to mask by value, appearing in a figure
    short = "1234567"[: MIN_SECRET_LEN - 1]
    text = f"tps = {short}.4"
    # Then the figure is kept whole
    assert redact(text, [short]) == text


def test_a_four_character_password_never_erases_figures():
    # Given the parsed output of a run whose password is "2024" (the case: figures were erased)
    text = "latency average = 2.024 ms\ntps = 12024.5 (without initial connection time)\nnumber of transactions: 20240"
    # Then every figure is kept
    assert redact(text, ["2024"]) == text
    # But the password standing alone, or after password=, is still masked
    assert redact("echo 2024 done; password=2024", ["2024"]) == f"echo {MASK} done; password={MASK}"


@settings(max_examples=300, deadline=None)
@given(
    secret=st.text(min_size=MIN_SECRET_LEN, max_size=24).filter(lambda s: s.strip() == s and "\n" not in s),
    before=st.text(max_size=40),
    after=st.text(max_size=40),
)
def test_a_known_secret_never_survives(secret, before, after):
    assert secret not in redact(before + secret + after, [secret])


def test_masking_cannot_join_characters_into_the_secret_again():
    # Given a secret that ends like the mask: masking it once leaves "a" + mask, the secret again
    prefix = "a" * (MIN_SECRET_LEN - 1)
    secret = prefix + MASK
    assert secret not in redact(prefix + secret, [secret])


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=200))
def test_redaction_is_idempotent(text):
    once = redact(text)
    assert redact(once) == once


def test_error_messages_are_redacted_when_recorded():
    error = ErrorInfo(kind="connection_refused", message="connection to postgres://bench:s3cr3t@db failed")
    assert "s3cr3t" not in error.message and "s3cr3t" not in error.model_dump_json()


def test_the_raw_output_a_worker_keeps_has_no_secret(tmp_path):
    # Given a tool that echoes its connection string and its environment's password
    script = "import os; print('dsn postgresql://bench:' + os.environ['PGPASSWORD'] + '@db/app'); print('pw', os.environ['PGPASSWORD'])"
    raw = tmp_path / "tool.log"
    # When the worker runs it
    run = ToolRun([sys.executable, "-c", script], {"PGPASSWORD": "s3cr3t-pw"}, raw, 30, redactor=Redactor(["s3cr3t-pw"]))
    code = run_tool(Subprocesses(), run)
    # Then the file kept as evidence has the output, without the password
    text = raw.read_text()
    assert code == 0 and "dsn postgresql://bench:***@db/app" in text and "pw ***" in text
    assert "s3cr3t-pw" not in text


def test_results_carry_no_secret_from_a_tool_message():
    load = LoadResult(
        workload="w", status="failed", error=ErrorInfo(kind="tool_failed", message="psql: password=s3cr3t rejected")
    )
    assert "s3cr3t" not in json.dumps(load.model_dump(mode="json"))
