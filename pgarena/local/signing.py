"""The local endpoints (Lambda, ECS, moto) answer only the runtime's own callers: requests SigV4-signed
with a key the runtime handed out for this run (a fresh random one, and under enforced IAM its users').

They listen on 127.0.0.1, where any local user can reach them: without this, one unsigned RunTask started
a worker holding the servers' passwords, and one GET listed the results bucket. The signature is
recomputed with botocore from the request as received (its method, raw path and query, the headers it
names as signed, its body) and compared in constant time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import io
import re
import secrets
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as SigningCredentials

from pgarena.local.iam import Credentials

RUN_USER = "pgarena-local-run"
# Authorization: AWS4-HMAC-SHA256 Credential=AKID/20240101/us-east-1/ecs/aws4_request, SignedHeaders=a;b, Signature=hex
_AUTHORIZATION = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/,\s]+)/(?P<date>\d{8})/(?P<region>[^/,\s]+)/(?P<service>[^/,\s]+)/aws4_request,"
    r"\s*SignedHeaders=(?P<headers>[a-z0-9;-]+),\s*Signature=(?P<signature>[0-9a-f]{64})$"
)
_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")


# Access key ids encode their account (as AWS's do): bytes 4-12 are base32 of account // 2 plus this offset,
# the 13th character's half of the alphabet its last bit. LocalStack (with PARITY_AWS_ACCESS_KEY_ID) reads
# the account from the key, as AWS does; moto ignores it.
_KEY_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_ACCOUNT_OFFSET = 549_755_813_888


def access_key_id(account: str) -> str:
    """A random access key id of `account` (12 digits)."""
    number = int(account)
    encoded = base64.b32encode((number // 2 + _ACCOUNT_OFFSET).to_bytes(5, "big")).decode()
    half = _KEY_ALPHABET[16:] if number % 2 else _KEY_ALPHABET[:16]
    return "AKIA" + encoded + secrets.choice(half) + "".join(secrets.choice(_KEY_ALPHABET) for _ in range(7))


def new_credentials(account: str = "123456789012") -> Credentials:
    """A random key for one run, of `account` (the local runtime's): an access key id as AWS spells them,
    and a 40-character secret."""
    return Credentials(user=RUN_USER, access_key_id=access_key_id(account), secret_access_key=secrets.token_urlsafe(30))


class RunKeys:
    """The keys this run's callers sign with, by access key id; more are added as IAM users are made."""

    def __init__(self, credentials: Iterable[Credentials] = ()) -> None:
        self._secrets: dict[str, str] = {}
        self._lock = threading.Lock()
        for each in credentials:
            self.add(each)

    def add(self, credentials: Credentials) -> None:
        with self._lock:
            self._secrets[credentials.access_key_id] = credentials.secret_access_key

    def refusal(self, method: str, uri: str, headers: Callable[[str], str | None], body: bytes) -> str | None:
        """Why the request is not one of this run's callers' (None when it is). `uri`: the path and query
        as sent; `headers`: a header's value by its lower-case name."""
        match = _AUTHORIZATION.match(headers("authorization") or "")
        if match is None:
            return "the request is not SigV4-signed"
        with self._lock:
            secret = self._secrets.get(match["key"])
        if secret is None:
            return "the request is signed with a key this run did not issue"
        timestamp = headers("x-amz-date") or ""
        if not timestamp.startswith(match["date"]):
            return "the request's X-Amz-Date does not match its credential scope"
        declared = headers("x-amz-content-sha256")
        if declared is not None and _SHA256_HEX.match(declared) and declared != hashlib.sha256(body).hexdigest():
            return "the request's body is not the one signed"
        signed: dict[str, str] = {}
        for name in match["headers"].split(";"):
            value = headers(name)
            if value is None:
                return f"the signed header {name} is missing"
            signed[name] = value
        request = AWSRequest(method=method, url=f"http://{signed.get('host', '')}{uri}", headers=signed, data=body)
        request.context["timestamp"] = timestamp
        signer_class = S3SigV4Auth if match["service"] == "s3" else SigV4Auth
        signer = signer_class(SigningCredentials(match["key"], secret), match["service"], match["region"])
        expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
        if not hmac.compare_digest(expected, match["signature"]):
            return "the request's signature does not match"
        return None


def refusing_unsigned(app: Callable[..., Iterable[bytes]], keys: RunKeys) -> Callable[..., Iterable[bytes]]:
    """A WSGI middleware: `app` (moto's server) answers only requests signed with one of `keys`; any other
    gets 403 with the reason."""

    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        body = _read_body(environ)
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        uri = environ.get("REQUEST_URI") or environ.get("PATH_INFO", "")
        reason = keys.refusal(environ["REQUEST_METHOD"], uri, lambda name: environ.get(_environ_key(name)), body)
        if reason is None:
            return app(environ, start_response)
        message = f"refused by the local runtime: {reason}".encode()
        start_response("403 Forbidden", [("Content-Type", "text/plain"), ("Content-Length", str(len(message)))])
        return [message]

    return guarded


def _environ_key(header: str) -> str:
    name = header.upper().replace("-", "_")
    return name if name in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{name}"


def _read_body(environ: Mapping[str, Any]) -> bytes:
    stream = environ["wsgi.input"]
    length = environ.get("CONTENT_LENGTH")
    if length:
        data: bytes = stream.read(int(length))
        return data
    # A chunked body: the server decodes it and ends the stream where it ends.
    return b"".join(_chunks(stream)) if environ.get("wsgi.input_terminated") else b""


def _chunks(stream: Any) -> Iterator[bytes]:
    while chunk := stream.read(65536):
        yield chunk
