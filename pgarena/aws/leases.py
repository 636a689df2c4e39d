"""Connection leases: campaigns sharing a server never take more slots together than its budget allows.

One record per server (host:port) lists the holders and their slots; every change is a conditional
write on the record's version, so two campaigns racing for the last slots cannot both win. In AWS the
record is a DynamoDB item (LeaseStore); local campaigns, each with its own in-memory moto, share a
JSON file per server under one directory, guarded by flock (FileLeases): two `pgarena run --local`
processes see each other's leases as two executions in one AWS account do.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError
from pydantic import BaseModel, TypeAdapter

from pgarena.aws import access
from pgarena.aws.items import marshal, unmarshal
from pgarena.model.matrix import Endpoint

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class Holder(BaseModel):
    holder: str
    slots: int
    expires_at: float


_HOLDERS = TypeAdapter(list[Holder])


def lease_key(endpoint: Endpoint) -> str:
    return f"{endpoint.host}:{endpoint.port}"


def holder_id(campaign_id: str, target: str) -> str:
    return f"{campaign_id}/{target}"


def campaign_of(holder: str) -> str:
    """The campaign id a holder id starts with (campaign ids hold no '/')."""
    return holder.split("/", 1)[0]


class Leases(ABC):
    """One interface, two stores: `read` a server's live holders with the record's version, and
    `_write` them back only if the version is still the one read."""

    clock = staticmethod(time.time)

    @abstractmethod
    def _read_all(self, key: str) -> tuple[list[Holder], int]:
        """Every holder recorded (expired ones too) and the record's version (0 when there is none)."""

    @abstractmethod
    def _write(self, key: str, holders: list[Holder], version: int) -> bool:
        """Replace the holders if the record is still at `version`; False if another writer was first."""

    def read(self, key: str) -> tuple[list[Holder], int]:
        """Live holders (expired ones dropped) and the record's version (0 when there is no record)."""
        holders, version = self._read_all(key)
        now = self.clock()
        return [h for h in holders if h.expires_at > now], version

    def holders(self, key: str) -> dict[str, int]:
        """Live holder id -> slots."""
        holders, _ = self.read(key)
        return {h.holder: h.slots for h in holders}

    def held_by_others(self, key: str, holder: str) -> int:
        return sum(slots for name, slots in self.holders(key).items() if name != holder)

    def acquire(self, key: str, holder: str, slots: int, capacity: int, ttl_s: float) -> bool:
        """Take `slots` if, with the other holders, they fit in `capacity`; False if they do not (yet)."""
        while True:
            holders, version = self.read(key)
            others = [h for h in holders if h.holder != holder]
            if sum(h.slots for h in others) + slots > capacity:
                return False
            mine = Holder(holder=holder, slots=slots, expires_at=self.clock() + ttl_s)
            if self._write(key, [*others, mine], version):
                return True

    def release(self, key: str, holder: str) -> None:
        while True:
            holders, version = self.read(key)
            if version == 0 or not any(h.holder == holder for h in holders):
                return
            if self._write(key, [h for h in holders if h.holder != holder], version):
                return


class LeaseStore(Leases):
    """Leases in the results table (AWS, and a single local runtime's moto)."""

    def __init__(self, dynamodb: DynamoDBClient, table: str, clock: Callable[[], float] = time.time):
        self.dynamodb = dynamodb
        self.table = table
        self.clock = clock

    def _read_all(self, key: str) -> tuple[list[Holder], int]:
        item = self.dynamodb.get_item(TableName=self.table, Key=access.lease_item_key(key), ConsistentRead=True).get("Item")
        if not item:
            return [], 0
        values = unmarshal(item)
        return _HOLDERS.validate_json(values["holders"]), int(values["version"])

    def _write(self, key: str, holders: list[Holder], version: int) -> bool:
        item = {
            **access.lease_item_key(key),
            **marshal({"holders": _HOLDERS.dump_json(holders).decode(), "version": version + 1}),
        }
        try:
            if version == 0:
                self.dynamodb.put_item(TableName=self.table, Item=item, ConditionExpression="attribute_not_exists(pk)")
            else:
                self.dynamodb.put_item(
                    TableName=self.table,
                    Item=item,
                    ConditionExpression="version = :v",
                    ExpressionAttributeValues=marshal({":v": version}),
                )
        except ClientError as error:
            if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True


class FileLeases(Leases):
    """Leases shared by every local runtime on this machine: `<directory>/<host>_<port>.json`, each
    change made under an exclusive flock of a lock file beside it (the JSON file is replaced whole)."""

    def __init__(self, directory: Path, clock: Callable[[], float] = time.time):
        self.directory = directory
        self.clock = clock
        directory.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.directory / (re.sub(r"[^A-Za-z0-9_.-]", "_", key) + ".json")

    @contextmanager
    def _locked(self, key: str, mode: int) -> Iterator[Path]:
        path = self._path(key)
        with open(path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, mode)
            try:
                yield path
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    @staticmethod
    def _load(path: Path) -> tuple[list[Holder], int]:
        if not path.exists():
            return [], 0
        record = json.loads(path.read_text())
        return _HOLDERS.validate_python(record["holders"]), int(record["version"])

    def _read_all(self, key: str) -> tuple[list[Holder], int]:
        with self._locked(key, fcntl.LOCK_SH) as path:
            return self._load(path)

    def _write(self, key: str, holders: list[Holder], version: int) -> bool:
        with self._locked(key, fcntl.LOCK_EX) as path:
            if self._load(path)[1] != version:
                return False
            record = {"holders": _HOLDERS.dump_python(holders, mode="json"), "version": version + 1}
            fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(fd, "w") as out:
                json.dump(record, out)
            os.replace(tmp, path)  # readers see the old record or the new one, never half of one
        return True


def default_lease_dir() -> Path:
    """Where local runtimes keep their shared leases: the user's runtime dir, else /tmp."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return Path(runtime) / "pgarena-leases" if runtime else Path(tempfile.gettempdir()) / "pgarena-leases"


def lease_store(dynamodb: DynamoDBClient, table: str, lease_dir: str | None) -> Leases:
    """The file store when a lease directory is set (the local runtime sets one), else DynamoDB's."""
    return FileLeases(Path(lease_dir)) if lease_dir else LeaseStore(dynamodb, table)
