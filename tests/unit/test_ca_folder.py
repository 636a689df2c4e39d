"""Issue 34.9: fetched CA bundles go to a folder of the user's own (0700), never to a shared one another
local user could plant a CA or a symlink in."""

import os
import stat

import boto3
import pytest
from moto import mock_aws

from pgarena.model.matrix import Endpoint
from pgarena.server import credentials

PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.setattr(credentials, "_ca_dir", [])
    monkeypatch.setattr(credentials, "_ca_files", {})
    return tmp_path / f"pgarena-ca-{os.geteuid()}"


def _fetched(aws_credentials) -> str:
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="results")
        s3.put_object(Bucket="results", Key="ca/x.pem", Body=PEM.encode())
        endpoint = Endpoint(host="db", user="u", sslmode="verify-full", sslrootcert="s3://results/ca/x.pem")
        return credentials.local_ca(endpoint).sslrootcert


def test_a_fetched_ca_lands_in_the_users_own_folder(fresh, aws_credentials):
    path = _fetched(aws_credentials)
    info = os.lstat(fresh)
    assert os.path.dirname(path) == str(fresh) and open(path).read() == PEM
    assert info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) == 0o700


def test_a_folder_planted_under_its_name_is_not_used(fresh, aws_credentials, tmp_path):
    # Given the folder's name taken by a symlink to a folder another user controls
    elsewhere = tmp_path / "attacker"
    elsewhere.mkdir(mode=0o777)
    fresh.symlink_to(elsewhere)
    # When a CA is fetched / Then it goes to a new private folder, and nothing into theirs
    path = _fetched(aws_credentials)
    assert not path.startswith(str(fresh)) and os.listdir(elsewhere) == []
    assert stat.S_IMODE(os.lstat(os.path.dirname(path)).st_mode) == 0o700


def test_a_group_writable_folder_of_that_name_is_not_used(fresh, aws_credentials):
    fresh.mkdir(mode=0o777)
    fresh.chmod(0o777)
    assert not _fetched(aws_credentials).startswith(str(fresh) + "/")


def test_a_symlink_planted_as_the_ca_file_is_replaced_not_followed(fresh, tmp_path):
    folder = credentials.ca_dir()
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    (folder / "x.pem").symlink_to(victim)
    credentials._write_private(folder, "x.pem", PEM.encode())
    assert victim.read_text() == "keep me" and (folder / "x.pem").read_text() == PEM
    assert not (folder / "x.pem").is_symlink()
