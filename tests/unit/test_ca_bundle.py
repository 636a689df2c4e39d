"""The Amazon RDS CA bundle pgarena ships, what a verifying connection trusts with and without an
endpoint's own sslrootcert (pg8000's TLS context, as libpq's sslmode means it), and TLS asked for as the
sslmode says, with a context made once per process."""

from __future__ import annotations

import datetime
import ssl

import pg8000.dbapi
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from pgarena.model.matrix import Endpoint
from pgarena.server import postgres
from pgarena.server.postgres import RDS_CA_BUNDLE, _ssl_context


def _common_names(certificates: list[x509.Certificate]) -> set[str]:
    return {str(c.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value) for c in certificates}


# Starfield Services Root CA G2 (RDS Proxy's chain) has serial number 0, which cryptography warns about.
@pytest.mark.filterwarnings("ignore:Parsed a serial number")
def test_the_shipped_bundle_holds_the_rds_roots_of_every_kind():
    # Given the vendored bundle / When parsing it
    certificates = x509.load_pem_x509_certificates(RDS_CA_BUNDLE.read_bytes())

    # Then it holds the regional roots of the current CAs (rds-ca-rsa2048-g1, rsa4096, ecc384) and RDS Proxy's
    names = _common_names(certificates)
    assert {
        "Amazon RDS us-east-1 Root CA RSA2048 G1",
        "Amazon RDS eu-west-1 Root CA RSA4096 G1",
        "Amazon RDS ap-southeast-2 Root CA ECC384 G1",
        "Amazon Root CA 1",
    } <= names
    assert all(c.extensions.get_extension_for_class(x509.BasicConstraints).value.ca for c in certificates)


def test_verify_full_without_sslrootcert_trusts_the_rds_bundle_and_checks_the_name():
    # Given an endpoint asking for verify-full with no CA file of its own / When building its TLS context
    context = _ssl_context("verify-full", None)

    # Then the RDS roots are trusted (besides the system CAs) and the host name is verified
    assert context is not None
    loaded = {dict(entry[0] for entry in ca["subject"]).get("commonName") for ca in context.get_ca_certs()}
    assert "Amazon RDS us-east-1 Root CA RSA2048 G1" in loaded
    assert (context.verify_mode, context.check_hostname) == (ssl.CERT_REQUIRED, True)


def test_an_endpoints_own_sslrootcert_is_the_only_trust(tmp_path):
    # Given a CA file of the endpoint's own
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "own CA")])
    now = datetime.datetime.now(datetime.UTC)
    ca = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    path = tmp_path / "ca.pem"
    path.write_bytes(ca.public_bytes(serialization.Encoding.PEM))

    # When building verify-ca's context with it
    context = _ssl_context("verify-ca", str(path))

    # Then that CA alone is trusted, and the name is not checked (verify-ca)
    assert context is not None
    assert [dict(entry[0] for entry in c["subject"])["commonName"] for c in context.get_ca_certs()] == ["own CA"]
    assert (context.verify_mode, context.check_hostname) == (ssl.CERT_REQUIRED, False)


def test_a_context_is_made_once_per_process_and_again_when_its_ca_file_changes(tmp_path):
    # Given verify-full without a CA file of its own: a context loads the system's CAs when it is made
    # When two connections ask for it, Then they share one
    assert postgres._context("verify-full", None) is postgres._context("verify-full", None)
    # And given an endpoint's own CA file, When the file changes, Then the next connection reads it again
    path = tmp_path / "ca.pem"
    path.write_bytes(RDS_CA_BUNDLE.read_bytes())
    first = postgres._context("verify-ca", str(path))
    assert postgres._context("verify-ca", str(path)) is first
    path.write_bytes(RDS_CA_BUNDLE.read_bytes() + b"\n")
    assert postgres._context("verify-ca", str(path)) is not first


@pytest.mark.parametrize(
    ("sslmode", "server_offers_tls", "tried"),
    [
        ("prefer", True, ["if offered"]),
        ("prefer", False, ["if offered", "plain"]),  # refused: a plain connection, as libpq's prefer
        ("allow", False, ["if offered", "plain"]),
        ("disable", True, ["plain"]),  # libpq's disable never asks for TLS
        ("require", True, ["require"]),
    ],
)
def test_tls_is_asked_for_as_the_sslmode_says(monkeypatch, sslmode, server_offers_tls, tried):
    # Given a server that offers TLS or refuses it (pg8000's answer when it was given a context)
    seen: list[str] = []

    def connect(**kwargs):
        context = kwargs["ssl_context"]
        seen.append("plain" if context is False else "if offered" if context is postgres._IF_OFFERED else "require")
        if context is not False and not server_offers_tls:
            raise pg8000.dbapi.InterfaceError("Server refuses SSL")
        return "connection"

    monkeypatch.setattr(postgres.pg8000.dbapi, "connect", connect)
    endpoint = Endpoint(host="db", port=5432, dbname="d", user="u", sslmode=sslmode)
    # When a connection is opened, Then TLS was asked for as libpq would, and a connection made
    assert postgres._open(endpoint, None, "pgarena") == "connection"
    assert seen == tried
