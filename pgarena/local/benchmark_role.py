"""The role an embedded target is benchmarked as: not a superuser, so a matrix's SQL cannot run a program
or read or write a server file (COPY ... TO PROGRAM, pg_read_file) on this machine.

It logs in with its own password and owns the benchmark database, where pgbench -i and sysbench prepare
create their tables (on PostgreSQL 15+ schema public belongs to the database's owner). It may read every
session's activity (pg_read_all_stats), as the monitor and the connection budget need; it gets none of
pg_execute_server_program, pg_read_server_files, pg_write_server_files, and no superuser-only setting
(a standby's primary_conninfo holds the superuser's password)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

import pg8000.dbapi

from pgarena.server.postgres import describe

ROLE = "pgarena"
DATABASE = "pgarena"
SUPERUSER = "postgres"
# Every statement a constant (tests/unit/test_fuzz_sql.py): the verifier travels as a bind parameter, into
# a setting of this session that the role's creation reads (CREATE ROLE takes no parameter).
SET_VERIFIER_SQL = "select set_config('pgarena.verifier', %s, false)"
CREATE_ROLE_SQL = (
    "do $$ begin execute format('create role " + ROLE + " login password %L', current_setting('pgarena.verifier')); end $$"
)
GRANT_SQL = "grant pg_read_all_stats to " + ROLE
CREATE_DATABASE_SQL = "create database " + DATABASE + " owner " + ROLE
# PostgreSQL's own default for the verifiers it makes (scram_iterations).
SCRAM_ITERATIONS = 4096
CONNECT_TIMEOUT_S = 10


class SetupError(RuntimeError):
    """The server started but would not take the benchmark role (e.g. no connection slot left for it)."""


def scram_verifier(password: str, salt: bytes | None = None, iterations: int = SCRAM_ITERATIONS) -> str:
    """The SCRAM-SHA-256 verifier PostgreSQL stores for `password` (RFC 5802, 7677): given to CREATE ROLE in
    its place, the password itself never reaches the server, its logs (log_statement) or its statistics."""
    salt = salt or secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    stored_key = hashlib.sha256(hmac.digest(salted, b"Client Key", "sha256")).digest()
    server_key = hmac.digest(salted, b"Server Key", "sha256")

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    return f"SCRAM-SHA-256${iterations}:{b64(salt)}${b64(stored_key)}:{b64(server_key)}"


def create_benchmark_role(port: int, superuser_password: str, password: str) -> None:
    """As the superuser, on the server at 127.0.0.1:`port`: the benchmark role and its database."""
    try:
        conn = pg8000.dbapi.connect(
            host="127.0.0.1",
            port=port,
            user=SUPERUSER,
            database="postgres",
            password=superuser_password,
            timeout=CONNECT_TIMEOUT_S,
            application_name="pgarena-setup",
        )
        try:
            conn.autocommit = True  # create database refuses to run in a transaction
            cursor = conn.cursor()
            cursor.execute(SET_VERIFIER_SQL, (scram_verifier(password),))
            cursor.execute(CREATE_ROLE_SQL)
            cursor.execute(GRANT_SQL)
            cursor.execute(CREATE_DATABASE_SQL)
        finally:
            conn.close()
    except pg8000.dbapi.Error as error:
        raise SetupError(f"creating the benchmark role failed: {describe(error)}") from None
