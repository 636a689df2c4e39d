"""Settings read as PostgreSQL's SHOW prints them, and compare lists only differences of configuration."""

import pytest

from pgarena.analysis.compare import setting_changes
from pgarena.model.budget import ConnectionFacts
from pgarena.model.matrix import ConnectionPolicy
from pgarena.model.results import CampaignResults, ServerInfo, ServerSetting, TargetResult
from pgarena.planning.budget import compute_budget


@pytest.mark.parametrize(
    ("setting", "unit", "shown"),
    [
        ("16384", "8kB", "128MB"),  # shared_buffers 128MB, as pg_settings counts it: 16384 pages of 8kB
        ("2048", "8kB", "16MB"),
        ("3", "8kB", "24kB"),
        ("4096", "kB", "4MB"),
        ("1024", "MB", "1GB"),
        ("64", "16MB", "1GB"),
        ("1000", "B", "1000B"),
        ("300", "s", "5min"),
        ("1500", "ms", "1500ms"),
        ("200", "min", "200min"),
        ("-1", "ms", "-1"),  # off
        ("0", "kB", "0"),
        ("2.5", "ms", "2.5ms"),  # a real setting: as given
        ("off", None, "off"),
        ("100", None, "100"),
    ],
)
def test_a_setting_reads_as_show_prints_it(setting, unit, shown):
    assert ServerSetting(name="x", setting=setting, unit=unit, source="configuration file").shown == shown


def _campaign(campaign_id: str, settings: dict[str, tuple[str, str | None]]) -> CampaignResults:
    facts = ConnectionFacts(max_connections=100, role="u", database="d", role_is_superuser=True)
    server = ServerInfo(
        version="PostgreSQL 17",
        version_num=170000,
        max_connections=100,
        facts=facts,
        budget=compute_budget(facts, ConnectionPolicy(safety_margin=0)),
        allowed=90,
        connections_needed=4,
        settings=[ServerSetting(name=n, setting=v, unit=u, source="command line") for n, (v, u) in settings.items()],
    )
    target = TargetResult(name="a", provider="embedded", status="succeeded", server=server)
    return CampaignResults(
        campaign_id=campaign_id, campaign="c", status="completed", started_at="s", finished_at="f", targets=[target], ranking=[]
    )


def test_compare_lists_configuration_not_the_instance():
    # Given two campaigns of one target whose servers differ in shared_buffers and in where they ran
    a = _campaign("a", {"shared_buffers": ("16384", "8kB"), "port": ("5433", None), "unix_socket_directories": ("/tmp/a", None)})
    b = _campaign("b", {"shared_buffers": ("32768", "8kB"), "port": ("5434", None), "unix_socket_directories": ("/tmp/b", None)})

    # When their settings are compared
    changes = setting_changes(a, b)

    # Then only the configuration differs, in PostgreSQL's units
    assert [(c.name, c.a, c.b) for c in changes] == [("shared_buffers", "128MB", "256MB")]
