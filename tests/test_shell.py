"""The shell reader behind deny rules, checked against a real grammar and a real bash.

Two properties over generated command lines:
- tree-sitter-bash (a real bash grammar) finds as many simple commands as `parse_script`;
- whatever program bash really starts (stub programs on PATH log their argv) is among
  the programs `analyse` reports, with its arguments: nothing runs unseen.
"""

from __future__ import annotations

import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import tree_sitter_bash
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tree_sitter import Language, Node, Parser

from todo_agent.core.permissions.command_forms import analyse
from todo_agent.core.permissions.shell import parse_script

PROGRAMS = ("p1", "p2", "p3")
_BASH = Parser(Language(tree_sitter_bash.language()))


# --- generated command lines ----------------------------------------------------------

_plain = st.text(alphabet="abcxyz019._-/", min_size=1, max_size=6).filter(lambda s: not s.startswith("-"))


def _render(value: str, style: int) -> str:
    if style == 0 and value not in ("{", "}", "!"):
        return value
    if style == 1:
        return "'" + value + "'"
    if style == 2:
        return '"' + value + '"'
    if style == 3:
        return "".join("\\" + ch for ch in value)
    if style == 4:
        return "$'" + "".join(f"\\x{ord(ch):02x}" for ch in value) + "'"
    half = len(value) // 2
    return f"'{value[:half]}'\"{value[half:]}\"" if half else f'"{value}"'


@st.composite
def words(draw: st.DrawFn, values: st.SearchStrategy[str]) -> str:
    return _render(draw(values), draw(st.integers(0, 5)))


_WRAPPERS = ("nice -n 5", "timeout 5", "env A=1", "env -u HOME", "stdbuf -o0", "command", "timeout -s KILL 9", "nohup")


@st.composite
def simple_commands(draw: st.DrawFn) -> str:
    wrappers = draw(st.lists(st.sampled_from(_WRAPPERS), max_size=2))
    program = draw(words(st.sampled_from(PROGRAMS)))
    args = draw(st.lists(words(_plain), max_size=3))
    if draw(st.booleans()):
        return "echo a | xargs " + " ".join([program, *args])
    return " ".join([*wrappers, program, *args])


def _single_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(inner, st.sampled_from([" && ", " || ", "; ", " | ", "\n"]), inner).map("".join),
        inner.map(lambda c: "{ " + c + "; }"),
        inner.map(lambda c: "( " + c + " )"),
        # `!` before a simple command only: tree-sitter-bash misreads `! for …` (bash does not).
        simple_commands().map(lambda c: "! " + c),
        st.tuples(inner, inner, inner).map(lambda t: f"if {t[0]}; then {t[1]}; else {t[2]}; fi"),
        inner.map(lambda c: f"for v in a b; do {c}; done"),
        inner.map(lambda c: f"case w in w) {c};; esac"),
        inner.map(lambda c: f"p1 $( {c} )"),
        inner.map(lambda c: f"p2 <( {c} )"),
        inner.map(lambda c: f"fn() {{ {c}; }}; fn"),
        inner.map(lambda c: f"sh -c {_single_quote(c)}"),
        inner.map(lambda c: f"eval {_single_quote(c)}"),
    )


command_lines = st.recursive(simple_commands(), _extend, max_leaves=5)


# --- a real bash grammar ----------------------------------------------------------------


def _for_tree_sitter(line: str) -> str:
    """`line` as bash reads it, spelled so that tree-sitter-bash reads it the same way.

    tree-sitter-bash takes a backslash at the start of a line for a line continuation of
    the line before (`p1⏎\\p1` is one command to it); bash ends the command at the newline
    and runs two (`test_every_program_bash_runs_is_one_the_analysis_reports` checks ours
    against a real bash). A blank before the backslash changes nothing for bash. Only
    quotes could tell the difference, and the generated lines have newlines inside single
    quotes only, which tree-sitter does not look into.
    """
    return line.replace("\n\\", "\n \\")


def _tree_sitter_commands(node: Node) -> Iterator[Node]:
    if node.type == "command":
        yield node
    for child in node.children:
        yield from _tree_sitter_commands(child)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(command_lines)
@example(line="p1\n\\p\\1")  # found by Hypothesis: two commands to bash, one to tree-sitter-bash
def test_as_many_simple_commands_as_tree_sitter_bash_finds(line: str) -> None:
    tree = _BASH.parse(_for_tree_sitter(line).encode())
    assert not tree.root_node.has_error, line
    script = parse_script(line)
    assert not script.unknown, (line, script.unknown)
    assert len(script.commands) == len(list(_tree_sitter_commands(tree.root_node))), line


# --- what a real bash runs ----------------------------------------------------------------


@pytest.fixture(scope="module")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Programs p1..p3 that log their argv (NUL-separated, one record per line) and exit 0."""
    bin_dir = tmp_path_factory.mktemp("stubs")
    for name in PROGRAMS:
        stub = bin_dir / name
        stub.write_text('#!/bin/sh\n{ printf "%s\\0" "${0##*/}" "$@"; printf "\\n"; } >> "$STUB_LOG"\n')
        stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    return bin_dir


def _bash_runs(line: str, stubs: Path, log: Path) -> list[list[str]]:
    log.write_text("")
    env = {"PATH": f"{stubs}:/usr/bin:/bin", "STUB_LOG": str(log), "HOME": str(log.parent)}
    subprocess.run(["/bin/bash", "-c", line], env=env, cwd=log.parent, capture_output=True, timeout=20, check=False)
    records = log.read_bytes().split(b"\n")
    return [[part.decode() for part in record.split(b"\0")[:-1]] for record in records if record]


def _seen(run: list[str], line: str) -> bool:
    """Some normalised form names this program with these first arguments."""
    for command in analyse(line).commands:
        for form in command.forms:
            values = [w.value for w in form]
            if (
                values
                and values[0] == run[0]
                and all(v is None or (i < len(run) and v == run[i]) for i, v in enumerate(values))
            ):
                return True
    return False


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(line=command_lines)
@example(line="p1\n\\p\\1")
def test_every_program_bash_runs_is_one_the_analysis_reports(line: str, stubs: Path, tmp_path: Path) -> None:
    analysis = analyse(line)
    # `sh -c` is dash here: a bash-only construct inside it is rightly unreadable as POSIX.
    assert analysis.complete or "sh -c" in line, (line, analysis.unknown)
    for run in _bash_runs(line, stubs, tmp_path / "log"):
        assert _seen(run, line), (line, run)


# --- a table of constructs ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("$'\\x72\\155' f", [["rm", "f"]]),
        ("$'\\u0072m' f", [["rm", "f"]]),
        ("'r'\"m\" f", [["rm", "f"]]),
        ("r\\\nm f", [["rm", "f"]]),
        ("p1\n\\r\\m f", [["p1"], ["rm", "f"]]),  # a backslash after a newline continues nothing
        ("echo \"a;b\" 'c|d'", [["echo", "a;b", "c|d"]]),
        ("echo \\; rm", [["echo", ";", "rm"]]),
        ("echo a#b # rm f", [["echo", "a#b"]]),
        ("git status #'\nrm f #'", [["git", "status"], ["rm", "f"]]),
        ("A=1 B=$(p1) p2 x", [["p1"], ["p2", "x"]]),
        ("p1 2>&1 >/dev/null | p2", [["p1"], ["p2"]]),
        ("cat <<'EOF'\n$(rm f)\nEOF\np1", [["cat"], ["p1"]]),
        ("cat <<EOF\n$(rm f)\nEOF\np1", [["rm", "f"], ["cat"], ["p1"]]),
        ("case $x in (a|b) p1;; *) p2;& esac", [["p1"], ["p2"]]),
        ('while read -r l; do p1 "$l"; done < list', [["read", "-r", "l"], ["p1", None]]),
        ("for ((;;)); do p1; done", [["p1"]]),
        ("[[ -f x && $y == z ]] && p1", [["p1"]]),
        ("function f { p1; }", [["p1"]]),
        ("time ! p1 | p2", [["p1"], ["p2"]]),
        ("echo `p1 \\`p2\\``", [["p2"], ["p1", None], ["echo", None]]),
    ],
)
def test_commands_are_read_as_bash_reads_them(line: str, expected: list[list[str | None]]) -> None:
    script = parse_script(line)
    assert not script.unknown, script.unknown
    assert [[w.value for w in c.words] for c in script.commands] == expected


@pytest.mark.parametrize(
    "line",
    [
        "echo 'open",
        'echo "open',
        "echo $(p1",
        "if p1; then p2",
        "p1 &&",
        "case x in a) p1",
        "(( x )) && p1",
        "echo $(( y + 1 ))",
        "echo ${!name}",
        "echo ${x@P}",
        "echo ${a[$i]}",
        "[[ $x -eq 1 ]]",
        "{ p1; ",
        "p1 )",
    ],
)
def test_what_cannot_be_read_is_said(line: str) -> None:
    assert parse_script(line).unknown


def test_deep_nesting_is_unknown_not_a_crash() -> None:
    line = "$(" * 2000 + "p1" + ")" * 2000
    assert parse_script(line).unknown
    nested = "p1"
    for _ in range(10):
        nested = "sh -c " + _single_quote(nested)
    assert "nests command lines too deeply" in " ".join(analyse(nested).unknown)
