"""What a new user reads for a matrix's common mistakes: another tool's fields, a misspelt tool or value,
and one problem per mistake (no knock-on errors)."""

import copy
import json

import pytest

from pgarena.model.matrix_errors import MatrixError
from pgarena.model.schema_fields import fields_at, tags_at
from pgarena.planning.campaign import parse_campaign
from tests.conftest import ROOT

DEMO = json.loads((ROOT / "examples" / "local-demo.json").read_text())


def problems(change) -> dict[str, str]:
    data = copy.deepcopy(DEMO)
    change(data["workloads"][0])
    with pytest.raises(MatrixError) as caught:
        parse_campaign(data)
    return {p.path: p.message for p in caught.value.problems}


def test_fields_at_a_path_are_its_models_only():
    # Given a sysbench run's path as pydantic reports it (the tool's tag after the index)
    fields = fields_at(("workloads", 0, "sysbench", "run"))
    # Then its fields are sysbench's run's, not every field of the schema
    assert "threads" in fields and "clients" not in fields and "campaign" not in fields
    assert tags_at(("workloads", 0)) == ("pgbench", "sysbench")


def test_another_tools_fields_are_named_as_such_with_what_this_tool_takes():
    # Given the demo's pgbench workload switched to sysbench, its pgbench fields kept
    found = problems(lambda w: w.update(tool="sysbench"))
    # Then each is said to be pgbench's, with sysbench's own field where it has one
    assert found["$.workloads[0].run.clients"] == (
        "clients is a pgbench field, not sysbench's: sysbench's run takes threads (see `pgarena schema`)"
    )
    assert found["$.workloads[0].run.progress_s"].endswith("sysbench's run takes report_interval_s (see `pgarena schema`)")
    assert found["$.workloads[0].init"].startswith("init is a pgbench field, not sysbench's: sysbench's workload takes prepare")
    assert found["$.workloads[0].run.jobs"].startswith("jobs is a pgbench field, not sysbench's: remove it from sysbench's run")
    # And no message suggests the very name it refuses
    assert not any(f"did you mean {path.rsplit('.', 1)[-1]}?" in message for path, message in found.items())


def test_a_misspelt_field_is_matched_with_the_fields_valid_where_it_is():
    # Given 'thread' in a sysbench run: 'threads' is there
    found = problems(lambda w: (w.update(tool="sysbench", run={"duration_s": 5, "thread": 4}), w.pop("init")))
    assert found == {
        "$.workloads[0].run.thread": "unknown field (did you mean threads?): remove it or check its spelling (see `pgarena schema`)"
    }


def test_a_misspelt_tool_gets_the_closest_and_the_choices_at_its_field():
    found = problems(lambda w: w.update(tool="pgbnech"))
    assert found == {"$.workloads[0].tool": "no tool named 'pgbnech' (did you mean pgbench?): one of pgbench, sysbench"}


def test_a_missing_tool_lists_the_tools():
    found = problems(lambda w: w.pop("tool"))
    assert found == {"$.workloads[0].tool": "missing: give one of pgbench, sysbench"}


def test_a_misspelt_choice_gets_the_closest():
    found = problems(lambda w: w["run"].update(protocol="prepare"))
    assert found == {"$.workloads[0].run.protocol": "Input should be 'simple', 'extended' or 'prepared' (did you mean prepared?)"}


def test_a_misspelt_required_field_is_one_problem_not_also_its_absence():
    # Given duration_s misspelt in a pgbench run (one of duration_s and transactions is required)
    found = problems(lambda w: w["run"].update(durration_s=w["run"].pop("duration_s")))
    # Then the misspelling is the one problem: not also "set exactly one of 'duration_s' or 'transactions'"
    assert list(found) == ["$.workloads[0].run.durration_s"]


def test_a_misspelt_field_sysbench_requires_is_not_also_missing():
    def misspelt(w):
        w.update(tool="sysbench", run={"durration_s": 5})
        w.pop("init")

    assert list(problems(misspelt)) == ["$.workloads[0].run.durration_s"]


def test_a_misspelt_field_keeps_the_checks_it_does_not_cause():
    # Given a misspelt field beside duration_s, and warmup_s as long as duration_s
    found = problems(lambda w: w["run"].update(durration_s=3, warmup_s=8))
    # Then the warm-up check is still reported: duration_s is there, the misspelling changes nothing of it
    assert found["$.workloads[0].run"].startswith("warmup_s (8) must be shorter than duration_s (8)")


def test_a_bad_item_in_a_sweep_is_one_problem():
    found = problems(lambda w: w["run"].update(clients=[4, "8"]))
    assert found == {"$.workloads[0].run.clients[1]": "Input should be a valid integer"}


def test_a_misspelt_field_outside_the_workloads_is_matched_where_it_is():
    data = copy.deepcopy(DEMO)
    data["targets"][0]["embedded"]["setting"] = data["targets"][0]["embedded"].pop("settings")
    with pytest.raises(MatrixError) as caught:
        parse_campaign(data)
    assert [str(p) for p in caught.value.problems] == [
        "$.targets[0].embedded.setting: unknown field (did you mean settings?): remove it or check its spelling "
        "(see `pgarena schema`)"
    ]
