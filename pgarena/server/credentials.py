"""Passwords by reference: an environment variable locally, a Secrets Manager secret in AWS. The CA bundle an
endpoint verifies its server with (sslrootcert) likewise: a file, a Secrets Manager secret or an S3 object."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tempfile
from pathlib import Path

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from pgarena.model.errors import ErrorKind, failure
from pgarena.model.matrix import CA_SECRET_PREFIX, CA_URL_PREFIX, Endpoint

# A password the user exported reaches a local run's functions and workers as a Secrets Manager secret of the
# local runtime's own, as it would in AWS; the secret's name keeps the variable's, so that a failed login
# names the variable the user set, not a secret they never made.
LOCAL_SECRET_PREFIX = "pgarena/local-env-"
_LOCAL_SECRET = re.compile(
    r":secret:" + re.escape(LOCAL_SECRET_PREFIX) + r"([A-Za-z_][A-Za-z0-9_]*)-[0-9a-f]{8}(-[A-Za-z0-9]{6})?$"
)


def local_secret_name(variable: str, unique: str) -> str:
    """The local runtime's secret for the password in environment variable `variable`."""
    return f"{LOCAL_SECRET_PREFIX}{variable}-{unique}"


def variable_of(secret_arn: str) -> str | None:
    """The environment variable a local runtime's secret was made from; None for any other secret."""
    match = _LOCAL_SECRET.search(secret_arn)
    return match.group(1) if match else None


def resolve_password(endpoint: Endpoint) -> str | None:
    if endpoint.password_env:
        value = os.environ.get(endpoint.password_env)
        if value is None:
            raise failure(
                ErrorKind.AUTHENTICATION,
                f"environment variable {endpoint.password_env} is not set: export it with the password of {endpoint.user}",
            )
        return value
    if endpoint.password_secret_arn:
        # The secret's own region (its ARN's fourth field), whichever region's site reads it.
        region = endpoint.password_secret_arn.split(":")[3] or None
        secretsmanager = boto3.client("secretsmanager", region_name=region)
        secret = secretsmanager.get_secret_value(SecretId=endpoint.password_secret_arn)["SecretString"]
        # RDS-managed secrets are JSON with a "password" key; plain strings are accepted too.
        try:
            decoded = json.loads(secret)
        except ValueError:
            return secret
        return decoded["password"] if isinstance(decoded, dict) else secret
    return None


# Fetched CA bundles, named by their content's hash: the tools (libpq's PGSSLROOTCERT) and pg8000 read files.
# They go to a folder of this user's own (0700): a shared /tmp/pgarena-ca let another local user plant the
# CA a connection would trust, or a symlink that made the coordinator write where it points.
CA_DIR_PREFIX = "pgarena-ca-"
_ca_files: dict[str, str] = {}  # a reference -> its file, fetched once per process
_ca_dir: list[Path] = []  # this process's folder, once made


def _own_private_dir(folder: Path) -> bool:
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(folder)  # lstat: a symlink in its place is refused, not followed
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o077


def ca_dir() -> Path:
    """This user's CA folder (`<runtime or temp dir>/pgarena-ca-<uid>`, 0700); when that name is taken by
    anything else, a new private folder of this process's own."""
    if not _ca_dir:
        base = Path(os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir())
        folder = base / f"{CA_DIR_PREFIX}{os.geteuid()}"
        _ca_dir.append(folder if _own_private_dir(folder) else Path(tempfile.mkdtemp(prefix=CA_DIR_PREFIX)))
    return _ca_dir[0]


def _write_private(folder: Path, name: str, data: bytes) -> Path:
    """Write `data` to folder/name through a new file renamed into place: never through a planted link."""
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".ca-")
    with os.fdopen(handle, "wb") as out:
        out.write(data)
    os.chmod(temporary, 0o644)  # a CA is public; the folder keeps others out anyway
    os.replace(temporary, folder / name)
    return folder / name


def _fetch_ca(reference: str) -> bytes:
    if reference.startswith(CA_SECRET_PREFIX):
        region = reference.split(":")[3] or None  # the secret's own region, as for passwords
        secret = boto3.client("secretsmanager", region_name=region).get_secret_value(SecretId=reference)
        return secret["SecretString"].encode()
    bucket, _, key = reference.removeprefix(CA_URL_PREFIX).partition("/")
    body: bytes = boto3.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
    return body


def local_ca(endpoint: Endpoint) -> Endpoint:
    """The endpoint with its sslrootcert as a file on this machine: a Secrets Manager secret's PEM or an S3
    object is fetched (a Cloud SQL server CA exists neither in the worker image nor in the functions); a
    path is kept as it is."""
    reference = endpoint.sslrootcert
    if reference is None or not reference.startswith((CA_SECRET_PREFIX, CA_URL_PREFIX)):
        return endpoint
    if reference not in _ca_files:
        try:
            pem = _fetch_ca(reference)
        except (BotoCoreError, ClientError) as error:
            raise failure(
                ErrorKind.CONNECTION_FAILED,
                f"sslrootcert {reference} could not be read ({error}): check that it exists and that pgarena's "
                "roles may read it (secrets named pgarena/..., objects under ca/ in the results bucket)",
            ) from None
        path = _write_private(ca_dir(), f"{hashlib.sha256(pem).hexdigest()}.pem", pem)
        _ca_files[reference] = str(path)
    return endpoint.model_copy(update={"sslrootcert": _ca_files[reference]})
