"""Text from a matrix, a server or a results folder reaches the terminal as written: rich never reads it as markup."""

from io import StringIO

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from pgarena import cli
from pgarena.model.comparison import Change, Comparison, SettingChange
from pgarena.model.errors import ErrorInfo
from pgarena.model.results import CampaignResults, RankEntry, StepSummary, TargetResult, WorkloadResult
from pgarena.remote.follow import Event

# Markup-like pieces mixed with any text: rich raises MarkupError on a closing tag nothing opened.
MARKUP = st.sampled_from(["[/x]", "[bold]", "[/]", "[red]", "[link=x]", "\\[", "[", "]", ":smile:"])
TEXT = st.lists(st.one_of(MARKUP, st.text(max_size=8)), max_size=6).map("".join)


def _render(*renderables: object) -> str:
    out = Console(file=StringIO(), width=300, color_system=None)
    for renderable in renderables:
        out.print(renderable)
    assert isinstance(out.file, StringIO)
    return out.file.getvalue()


def _results(name: str, provider: str, message: str) -> CampaignResults:
    ranked = TargetResult(
        name=f"{name}-a",
        provider=provider,
        status="succeeded",
        workloads=[WorkloadResult(name=name, tool="pgbench", clients=1, repetition=1, status="succeeded", tps=1.0)],
    )
    failed = TargetResult(
        name=name, provider=provider, status="failed", error=ErrorInfo(kind="connection_failed", message=message)
    )
    ranking = [RankEntry(rank=1, target=ranked.name, score=1.0, basis="tps")]
    return CampaignResults(
        campaign_id=name, campaign=name, started_at="", finished_at="", targets=[ranked, failed], ranking=ranking
    )


@settings(max_examples=150, deadline=None)
@given(name=TEXT, provider=TEXT, message=TEXT, setting=TEXT)
def test_names_errors_and_settings_never_crash_the_terminal_output(name, provider, message, setting):
    # Given a provider, a target, an error message and a setting value that may look like markup
    results = _results(name, provider, message)
    change = Change(target=name, workload=name, clients=1, verdict="regression", reasons=[message])
    comparison = Comparison(
        a=name, b=provider, threshold=0.1, changes=[change], settings=[SettingChange(target=name, name=setting, b=setting)]
    )
    summary = StepSummary(
        campaign_id=name, step_id=name, target=name, workload=name, kind="run", tool="pgbench", status="failed",
        started_at="", finished_at="", wall_s=1.0, error=ErrorInfo(kind="tool_failed", message=message),
    )  # fmt: skip
    # When the ranking, the comparison, the settings and the progress lines are rendered
    text = _render(cli.ranking_table(results), cli.comparison_table(comparison), cli.settings_table(comparison))
    printed = Console(file=StringIO(), width=300, color_system=None)
    cli.console, saved = printed, cli.console
    try:
        cli.show_event(Event(elapsed_s=1.0, kind="step", text=name, summary=summary))
        cli.show_event(Event(elapsed_s=1.0, kind="state", text=message))
    finally:
        cli.console = saved
    # Then nothing crashes and printable text is shown as written (control codes are dropped)
    assert isinstance(printed.file, StringIO)
    lines = printed.file.getvalue()
    for value in (name, message):
        if value.strip() and value.isprintable() and len(value) < 20:
            assert value.strip() in lines
    assert text
