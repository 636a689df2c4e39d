"""The worker image's build context (pgarena.worker_image): what the image installs, and the wheels' cache key."""

from pgarena import worker_image


def test_the_image_installs_the_projects_dependencies_and_the_worker_extra(tmp_path):
    # Given a pyproject with dependencies and a worker extra
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project]\ndependencies = ["pydantic>=2.7,<3", "boto3>=1.34"]\n'
        '[project.optional-dependencies]\nworker = ["numpy>=2"]\nlocal = ["moto"]\n'
    )

    # When reading what the image needs
    requirements = worker_image.worker_requirements(pyproject)

    # Then it is both, as spelled there, and no other extra
    assert requirements == ["boto3>=1.34", "numpy>=2", "pydantic>=2.7,<3"]


def test_the_wheels_are_keyed_by_the_requirements():
    # Given two sets of requirements / When keying them / Then each has its own wheelhouse
    assert worker_image.wheels_key(["numpy>=2"]) != worker_image.wheels_key(["numpy>=2.1"])
    assert worker_image.wheels_key(["numpy>=2"]) == worker_image.wheels_key(["numpy>=2"])
