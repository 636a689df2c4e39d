"""The one way pgarena opens a SQL connection (pg8000) to a target."""

from __future__ import annotations

import functools
import os
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pg8000.dbapi

from pgarena.model.errors import ErrorKind, error_info, failure
from pgarena.model.matrix import Endpoint
from pgarena.server.credentials import local_ca, resolve_password, variable_of

CONNECT_TIMEOUT_S = 10
# The Amazon RDS CA certificates (RDS global bundle, RDS Proxy roots), shipped in the package: the
# functions' asset and the worker image hold it (vendored: tools/vendor-rds-ca-bundle.sh).
RDS_CA_BUNDLE = Path(__file__).with_name("rds-global-bundle.pem")

# Client sessions in pg_stat_activity. Without pg_read_all_stats a role sees other roles' backend_type
# as NULL; such rows with a database and a user are counted as client sessions (an autovacuum worker
# may be counted too: the budget errs on the safe side).
CLIENT_SESSIONS = (
    "(backend_type = 'client backend' or (backend_type is null and datid is not null and usesysid is not null))"
    " and pid <> pg_backend_pid()"
)


def _ssl_context(sslmode: str, sslrootcert: str | None = None) -> ssl.SSLContext | None:
    """libpq's sslmode for pg8000. A verifying mode trusts the endpoint's `sslrootcert` alone, as libpq does;
    without one, the system CAs and the RDS bundle (libpq in the worker image: PGSSLROOTCERT, the same two).
    None: TLS only if the server offers it (allow, prefer) or never (disable): `_open`."""
    if sslmode in ("disable", "allow", "prefer"):
        return None
    context = ssl.create_default_context(cafile=sslrootcert)
    if sslmode == "require":
        # libpq's "require" encrypts without verifying the certificate.
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    if sslrootcert is None:
        context.load_verify_locations(cafile=RDS_CA_BUNDLE)
    context.check_hostname = sslmode == "verify-full"
    return context


# A context loads the system's CAs when it is made (about 20 ms of CPU), and a worker connects several times
# a step (the server's start time before and after, its facts, the monitor): one per sslmode and CA file
# for the process, a CA file read again when it changes.
@functools.lru_cache(maxsize=16)
def _shared_context(sslmode: str, sslrootcert: str | None, changed: tuple[int, int] | None) -> ssl.SSLContext | None:
    return _ssl_context(sslmode, sslrootcert)


def _context(sslmode: str, sslrootcert: str | None) -> ssl.SSLContext | None:
    try:
        changed = (os.stat(sslrootcert).st_mtime_ns, os.stat(sslrootcert).st_size) if sslrootcert else None
    except OSError:  # no such file: ssl says so when the context is made
        changed = None
    return _shared_context(sslmode, sslrootcert, changed)


def _encrypting_if_offered() -> ssl.SSLContext:
    """allow's and prefer's TLS, unverified as libpq's: pg8000 makes one with the system's CAs loaded,
    unused, at every connection."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


_IF_OFFERED = _encrypting_if_offered()
# pg8000's answer to a server that refuses TLS when it was given a context.
_REFUSED = "Server refuses SSL"


def credential_of(endpoint: Endpoint) -> str:
    """The credential a failed login points at, by reference (never its value)."""
    if endpoint.password_env:
        return f"environment variable {endpoint.password_env}"
    if endpoint.password_secret_arn:
        variable = variable_of(endpoint.password_secret_arn)  # a local run's copy of an exported password
        return f"environment variable {variable}" if variable else f"secret {endpoint.password_secret_arn}"
    return "the endpoint's password reference (none is set)"


@contextmanager
def connect(endpoint: Endpoint, application_name: str = "pgarena") -> Iterator[pg8000.dbapi.Connection]:
    conn = open_connection(endpoint, application_name)
    try:
        yield conn
    finally:
        conn.close()


def open_connection(endpoint: Endpoint, application_name: str = "pgarena") -> pg8000.dbapi.Connection:
    """A connection in autocommit, its failure classified (connect's, for a caller that closes it itself:
    a loader handing connections to its tasks)."""
    password = resolve_password(endpoint)
    try:
        conn = _open(endpoint, password, application_name)
    except Exception as error:  # pg8000 and socket errors: classify by their text
        # pg8000 wraps socket errors; their cause says what went wrong (refused, DNS, ...).
        detail = f"{describe(error)} {error.__cause__ or ''}".strip()
        message = f"could not connect to {endpoint.host}:{endpoint.port} as {endpoint.user}: {detail}"
        info = error_info(detail, ErrorKind.CONNECTION_FAILED, message)
        if password is None and (info.kind == ErrorKind.AUTHENTICATION or isinstance(error, AttributeError)):
            # pg8000 answers a SCRAM request without a password with an AttributeError on None.
            raise failure(
                ErrorKind.AUTHENTICATION,
                f"{endpoint.host}:{endpoint.port} asks {endpoint.user} for a password but the endpoint gives none: "
                "set password_env (local runs) or password_secret_arn (AWS)",
            ) from None
        if info.kind == ErrorKind.AUTHENTICATION:  # this endpoint's own credential, not the generic hint
            raise failure(info.kind, f"{message}; check {credential_of(endpoint)} (the password of {endpoint.user})") from None
        raise failure(info.kind, info.message) from None
    # Autocommit: inside one transaction pg_stat_activity would keep returning its first snapshot.
    conn.autocommit = True
    return conn


def _open(endpoint: Endpoint, password: str | None, application_name: str) -> pg8000.dbapi.Connection:
    """A connection with TLS as the endpoint's sslmode asks: verified, required, or (allow, prefer) used
    when the server offers it, a plain connection when it refuses."""
    context: ssl.SSLContext | bool | None = _context(endpoint.sslmode, local_ca(endpoint).sslrootcert)
    if context is None:
        context = False if endpoint.sslmode == "disable" else _IF_OFFERED

    def opened(ssl_context: ssl.SSLContext | bool) -> pg8000.dbapi.Connection:
        return pg8000.dbapi.connect(
            host=endpoint.host,
            port=endpoint.port,
            database=endpoint.dbname,
            user=endpoint.user,
            password=password,
            ssl_context=ssl_context,
            timeout=CONNECT_TIMEOUT_S,
            application_name=application_name,
        )

    if context is not _IF_OFFERED:
        return opened(context)
    try:
        return opened(context)
    except pg8000.dbapi.InterfaceError as error:
        if str(error) != _REFUSED:
            raise
    return opened(False)


def describe(error: Exception) -> str:
    """A driver error as a sentence: pg8000 gives a server error as a dict of its fields."""
    fields = error.args[0] if error.args and isinstance(error.args[0], dict) else None
    if fields is None:
        return str(error)
    return f"{fields.get('S', 'ERROR')}: {fields.get('M', '')} (SQLSTATE {fields.get('C', '?')})"
