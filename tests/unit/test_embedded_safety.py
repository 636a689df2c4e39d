"""Issue 15.2 and 15.4: an embedded server's settings cannot run programs unless allowed, and are written
to postgresql.conf exactly as given; a start failure quotes the server, not the files it read."""

import copy
import json

import pytest

from pgarena.local.embedded import _conf_value, server_message
from pgarena.model.matrix_errors import MatrixError
from pgarena.planning.campaign import parse_campaign
from tests.conftest import FIXTURES

MINIMAL = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())


def with_embedded(**embedded) -> dict:
    data = copy.deepcopy(MINIMAL)
    data["targets"][1]["embedded"] = embedded
    return data


@pytest.mark.parametrize(
    "setting",
    [
        {"archive_command": "id > /tmp/x"},
        {"restore_command": "cp %f %p"},
        {"SSL_PASSPHRASE_COMMAND": "echo x"},
        {"include": "/etc/shadow"},
        {"include_dir": "/etc"},
        {"include_if_exists": "/etc/passwd"},
        {"shared_preload_libraries": "pg_stat_statements"},
        {"session_preload_libraries": "x"},
        {"local_preload_libraries": "x"},
        {"dynamic_library_path": "/tmp"},
    ],
)
def test_a_setting_that_runs_a_program_or_loads_code_is_refused(setting):
    # Given an embedded target setting something that runs a program or loads code
    with pytest.raises(MatrixError) as caught:
        parse_campaign(with_embedded(settings=setting))
    # Then the refusal names the settings field, the setting, and the explicit way to allow it
    (problem,) = caught.value.problems
    assert problem.path == "$.targets[1].embedded.settings"
    assert next(iter(setting)) in problem.message and '"allow_unsafe_settings": true' in problem.message


def test_replica_settings_are_checked_too():
    with pytest.raises(MatrixError) as caught:
        parse_campaign(with_embedded(replicas=1, replica_settings={"recovery_end_command": "id"}))
    assert [p.path for p in caught.value.problems] == ["$.targets[1].embedded.replica_settings"]


def test_an_unsafe_setting_is_accepted_when_the_target_allows_it():
    campaign = parse_campaign(
        with_embedded(allow_unsafe_settings=True, settings={"shared_preload_libraries": "pg_stat_statements"})
    )
    assert campaign.targets[1].embedded.settings == {"shared_preload_libraries": "pg_stat_statements"}


@pytest.mark.parametrize("name", ["listen_addresses", "port", "hba_file", "unix_socket_permissions"])
def test_settings_that_keep_the_server_private_are_pgarenas_even_when_unsafe_ones_are_allowed(name):
    with pytest.raises(MatrixError) as caught:
        parse_campaign(with_embedded(allow_unsafe_settings=True, settings={name: "*"}))
    assert "set by pgarena" in caught.value.problems[0].message


@pytest.mark.parametrize(
    ("value", "written"),
    [("ends\\", "'ends\\\\'"), ("it's", "'it''s'"), ("a\\'b", "'a\\\\''b'"), (True, "on"), (64, "'64'")],
)
def test_values_are_quoted_and_escaped_for_postgresql_conf(value, written):
    assert _conf_value(value) == written


def test_a_start_failure_quotes_the_server_not_the_files_it_read():
    # Given the log of a server that read a file it could not parse
    log = (
        '2026-01-01 00:00:00.000 UTC [1] LOG:  syntax error in file "/etc/passwd" line 1, near token "root:x:0:0"\n'
        "root:x:0:0:root:/root:/bin/bash\n"
        '2026-01-01 00:00:00.000 UTC [1] FATAL:  configuration file "/tmp/data/postgresql.conf" contains errors\n'
    )
    # When the start error is built / Then it keeps the server's messages and none of the file's text
    message = server_message(log)
    assert message == (
        'LOG: syntax error in file "/etc/passwd" line 1 | FATAL: configuration file "/tmp/data/postgresql.conf" contains errors'
    )


def test_a_setting_the_postmaster_refuses_before_logging_is_quoted():
    # Given max_connections 2 under the default 3 reserved slots: the postmaster says why and exits
    log = (
        'postgres: "superuser_reserved_connections" (3) plus "reserved_connections" (0) must be less than "max_connections" (2)\n'
    )
    # Then the start error quotes it, not "exit code 1"
    assert server_message(log) == (
        'FATAL: "superuser_reserved_connections" (3) plus "reserved_connections" (0) must be less than "max_connections" (2)'
    )
