"""The parsers read whatever a tool printed, including output cut short, garbled or hostile: they never
raise, and what they return is always a report (possibly empty)."""

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pgarena.tools.pgbench.parser import PgbenchReport, parse_pgbench
from pgarena.tools.sysbench.parser import SysbenchReport, parse_sysbench

FIXTURES = Path(__file__).parents[1] / "fixtures"
PGBENCH = sorted((FIXTURES / "pgbench").glob("*.txt"))
SYSBENCH = sorted((FIXTURES / "sysbench").glob("*.txt"))
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Numbers a tool could print in place of the real ones: huge, negative, exotic, not numbers at all.
NUMBERS = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.sampled_from(["nan", "inf", "-", "", "1e400", "0x1F", "١٢٣", "1,000.5", ".", "-0", "NaN%"]),
)
# Characters the tools' output is made of: a single one out of place turns a number or a separator into another.
TOKEN_CHARS = "0123456789.,:=()[]|*-/ \nnaNinf%s"


@st.composite
def damaged(draw, files):  # noqa: C901, PLR0912  # one branch per kind of damage
    """A real output file, then lines dropped, duplicated, cut, garbled or with their numbers replaced, then
    characters dropped, replaced or duplicated, and perhaps the end cut off."""
    lines = draw(st.sampled_from(files)).read_text().splitlines()
    for _ in range(draw(st.integers(0, 8))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["drop", "dup", "cut", "numbers", "garbage"]))
        if action == "drop":
            del lines[i]
        elif action == "dup":
            lines.insert(i, lines[i])
        elif action == "cut":
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
        elif action == "numbers":
            words = lines[i].split(" ")
            lines[i] = " ".join(draw(NUMBERS) if any(c.isdigit() for c in w) else w for w in words)
        else:
            lines[i] = draw(st.text(max_size=80))
    chars = list("\n".join(lines))
    for _ in range(draw(st.integers(0, 30))):
        if not chars:
            break
        i = draw(st.integers(0, len(chars) - 1))
        action = draw(st.sampled_from(["drop", "replace", "dup"]))
        if action == "drop":
            del chars[i]
        elif action == "replace":
            chars[i] = draw(st.sampled_from(TOKEN_CHARS))
        else:
            chars.insert(i, chars[i])
    text = "".join(chars)
    if draw(st.booleans()):  # the tool was killed mid-write
        return text[: draw(st.integers(0, len(text)))]
    return text


@FUZZ
@given(text=st.one_of(st.text(max_size=2000), damaged(PGBENCH)))
def test_any_or_damaged_pgbench_output_parses_to_a_report(text):
    assert isinstance(parse_pgbench(text), PgbenchReport)


@FUZZ
@given(text=st.one_of(st.text(max_size=2000), damaged(SYSBENCH)))
def test_any_or_damaged_sysbench_output_parses_to_a_report(text):
    assert isinstance(parse_sysbench(text), SysbenchReport)
