"""The one way pgarena opens a SQL connection (pg8000) to a target."""

from __future__ import annotations

import os
import ssl
from collections.abc import Iterator
from contextlib import contextmanager

import pg8000.dbapi

from pgarena.model.errors import ErrorKind, classify, failure, with_hint
from pgarena.model.matrix import Endpoint
from pgarena.target.credentials import resolve_password

CONNECT_TIMEOUT_S = 10
CA_BUNDLE_ENV = "PGARENA_CA_BUNDLE"

# Client sessions in pg_stat_activity. Without pg_read_all_stats a role sees other roles' backend_type
# as NULL; such rows with a database and a user are counted as client sessions (an autovacuum worker
# may be counted too: the budget errs on the safe side).
CLIENT_SESSIONS = (
    "(backend_type = 'client backend' or (backend_type is null and datid is not null and usesysid is not null))"
    " and pid <> pg_backend_pid()"
)


def ca_bundle(endpoint: Endpoint) -> str | None:
    """The CA file a verifying connection trusts: the endpoint's, else the one shipped where pgarena
    runs (PGARENA_CA_BUNDLE: the worker image's RDS global bundle plus the system CAs), else None."""
    return endpoint.sslrootcert or os.environ.get(CA_BUNDLE_ENV) or None


def _ssl_context(sslmode: str, cafile: str | None = None) -> ssl.SSLContext | None:
    if sslmode in ("disable", "allow", "prefer"):
        return None
    context = ssl.create_default_context(cafile=cafile)
    if sslmode == "require":
        # libpq's "require" encrypts without verifying the certificate.
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif sslmode == "verify-ca":
        context.check_hostname = False
    return context


def credential_of(endpoint: Endpoint) -> str:
    """The credential a failed login points at, by reference (never its value)."""
    if endpoint.password_env:
        return f"environment variable {endpoint.password_env}"
    if endpoint.password_secret_arn:
        return f"secret {endpoint.password_secret_arn}"
    return "the endpoint's password reference (none is set)"


@contextmanager
def connect(endpoint: Endpoint, application_name: str = "pgarena") -> Iterator[pg8000.dbapi.Connection]:
    password = resolve_password(endpoint)
    try:
        conn = pg8000.dbapi.connect(
            host=endpoint.host,
            port=endpoint.port,
            database=endpoint.dbname,
            user=endpoint.user,
            password=password,
            ssl_context=_ssl_context(endpoint.sslmode, ca_bundle(endpoint)),
            timeout=CONNECT_TIMEOUT_S,
            application_name=application_name,
        )
    except Exception as error:  # pg8000 and socket errors: classify by their text
        # pg8000 wraps socket errors; their cause says what went wrong (refused, DNS, ...).
        detail = f"{describe(error)} {error.__cause__ or ''}".strip()
        message = f"could not connect to {endpoint.host}:{endpoint.port} as {endpoint.user}: {detail}"
        kind = classify(detail) or ErrorKind.CONNECTION_FAILED
        if password is None and (kind == ErrorKind.AUTHENTICATION or isinstance(error, AttributeError)):
            # pg8000 answers a SCRAM request without a password with an AttributeError on None.
            raise failure(
                ErrorKind.AUTHENTICATION,
                f"{endpoint.host}:{endpoint.port} asks {endpoint.user} for a password but the endpoint gives none: "
                "set password_env (local runs) or password_secret_arn (AWS)",
            ) from None
        if kind == ErrorKind.AUTHENTICATION:
            message = f"{message}; check {credential_of(endpoint)} (the password of {endpoint.user})"
        else:
            message = with_hint(kind, message)
        raise failure(kind, message) from None
    # Autocommit: inside one transaction pg_stat_activity would keep returning its first snapshot.
    conn.autocommit = True
    try:
        yield conn
    finally:
        conn.close()


def describe(error: Exception) -> str:
    """A driver error as a sentence: pg8000 gives a server error as a dict of its fields."""
    fields = error.args[0] if error.args and isinstance(error.args[0], dict) else None
    if fields is None:
        return str(error)
    return f"{fields.get('S', 'ERROR')}: {fields.get('M', '')} (SQLSTATE {fields.get('C', '?')})"
