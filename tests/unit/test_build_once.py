"""build_once: a directory built aside and renamed into place, reused once complete."""

import json

import pytest

from pgarena.build_once import build_once


def test_a_complete_build_is_reused_and_an_interrupted_one_leaves_nothing(tmp_path):
    target = tmp_path / "cache" / "thing"
    calls = []

    def build(staging):
        calls.append(staging)
        (staging / "payload").write_text("built")
        return {"version": 1}

    # Given a build that fails half-way
    def broken(staging):
        (staging / "payload").write_text("half")
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        build_once(target, "done.json", broken)
    # Then nothing is taken for complete, and no staging directory is left
    assert not target.exists() and list(target.parent.iterdir()) == []

    # When it is built, then asked again
    assert build_once(target, "done.json", build) == target
    assert build_once(target, "done.json", build) == target

    # Then it was built once, holding its payload and the build's manifest under the marker
    assert len(calls) == 1 and (target / "payload").read_text() == "built"
    assert json.loads((target / "done.json").read_text()) == {"version": 1}


def test_a_directory_without_the_marker_is_replaced(tmp_path):
    # Given a directory of the target's name that no build of this function made (an older layout)
    target = tmp_path / "boto3-1.0"
    target.mkdir()
    (target / "stale").write_text("old")

    # When it is built
    build_once(target, "done.json", lambda staging: (staging / "payload").write_text("new") and {})

    # Then the build replaced it
    assert sorted(p.name for p in target.iterdir()) == ["done.json", "payload"]
    assert [p.name for p in tmp_path.iterdir()] == ["boto3-1.0"]
