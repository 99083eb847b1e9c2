"""Every fenced Python and shell example of README.md and docs/*.md runs as printed.

A new user copies these blocks verbatim, so each one runs here, from the repository root of a
temporary copy (nothing is written into the checkout):

- ```python blocks run with this interpreter, the blocks of one file in one process and one
  namespace, in order (a block may use what an earlier block of its file defined);
- ```bash / ```sh blocks run line by line (``\\`` continues a line; ``#`` lines are comments);
  the install steps of a line (``python3 -m venv``, ``. .venv/bin/activate``, ``pip install``)
  are left out, since this runs inside the installed environment, and the rest of the line runs;
  a ```text block right after a shell block is the expected stdout of its last command;
- ```console blocks: ``$ `` lines are commands, the lines after each one its expected stdout.

Expected output may elide with ``...`` (any text, as doctest's ELLIPSIS). Every command must
exit 0 unless the doc says otherwise. An HTML comment on the line before a block, invisible on
the rendered page, tells this test what the prose already tells the reader:

- ``<!-- docs-test: skip (reason) -->``: not run here; the reason is required (a server, a
  network, a Dask cluster, a long run) and is reported as the pytest skip reason;
- ``<!-- docs-test: exit 0 1 -->``: the exit status of each command of the block, in order;
- ``<!-- docs-test: file PATH -->``: the block is the content of the repository file PATH.

Each block is one test item, so pytest's summary says how many blocks ran and why each
skipped one did not.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from fixtures import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = ("bash", "sh")
RUNNABLE = ("python", *SHELL, "console")
#: Every fence says what it holds, so no command hides in an untagged block.
KNOWN_LANGS = (*RUNNABLE, "text", "yaml", "json", "toml")
INSTALL_STEP = re.compile(r"^(python3? -m venv\b|(\.|source) \S*activate$|pip3? install\b)")
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.S | re.M)
MARKER = re.compile(r"<!--\s*docs-test:\s*(.*?)\s*-->")
TIMEOUT_S = 300


@dataclass(frozen=True)
class Block:
    """One fenced block of a doc, with the docs-test marker on the line before it."""

    doc: str  # path relative to the repository root
    line: int  # line of the opening fence, 1-based
    lang: str
    body: str
    marker: str  # the marker's text after "docs-test:", "" when there is none

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def skip_reason(self) -> str | None:
        found = re.fullmatch(r"skip\s*\((.+)\)", self.marker)
        return found.group(1) if found else None

    def exit_codes(self, n_commands: int) -> list[int]:
        found = re.fullmatch(r"exit((?:\s+\d+)+)", self.marker)
        codes = [int(c) for c in found.group(1).split()] if found else [0] * n_commands
        assert len(codes) == n_commands, (
            f"{self.where}: docs-test marker gives {len(codes)} exit codes "
            f"for {n_commands} commands"
        )
        return codes


def _blocks(doc: Path) -> list[Block]:
    text = doc.read_text(encoding="utf-8")
    blocks = []
    for fence in FENCE.finditer(text):
        before = text[: fence.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.fullmatch(before.strip())
        blocks.append(
            Block(
                doc=doc.relative_to(ROOT).as_posix(),
                line=text.count("\n", 0, fence.start()) + 1,
                lang=fence.group(1).strip(),
                body=fence.group(2),
                marker=marker.group(1) if marker else "",
            )
        )
    return blocks


ALL_BLOCKS = [block for doc in DOCS for block in _blocks(doc)]
RUN_BLOCKS = [block for block in ALL_BLOCKS if block.lang in RUNNABLE]


def _expected_output(block: Block) -> Block | None:
    """The ```text block that directly follows a shell block: its last command's stdout."""
    following = ALL_BLOCKS[ALL_BLOCKS.index(block) + 1 : ALL_BLOCKS.index(block) + 2]
    if following and following[0].doc == block.doc and following[0].lang == "text":
        return following[0]
    return None


def _command_lines(body: str) -> list[str]:
    """Shell lines of a block: continuations joined, comment lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", body)
    return [line.strip() for line in joined.splitlines() if line.strip() and line[0] != "#"]


def _without_install_steps(line: str) -> str:
    """``python3 -m venv .venv && . .venv/bin/activate && pip install -e . && CMD`` -> ``CMD``."""
    steps = [step.strip() for step in line.split("&&")]
    while steps and INSTALL_STEP.match(steps[0]):
        steps.pop(0)
    return " && ".join(steps)


def _matches(expected: str, actual: str) -> bool:
    """Exact text, where ``...`` in ``expected`` stands for any text."""
    pattern = ".*?".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, actual, re.S) is not None


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the repository's top level (the installed package is imported from src/)."""
    copy = tmp_path_factory.mktemp("checkout")
    skip = {".git", ".venv", "src", "tests", "build", "dist"}
    ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache", "*.egg-info")
    for entry in ROOT.iterdir():
        if entry.name in skip or entry.name.endswith(".egg-info"):
            continue
        if entry.is_dir():
            shutil.copytree(entry, copy / entry.name, ignore=ignore)
        else:
            shutil.copy2(entry, copy / entry.name)
    return copy


def _environment() -> dict[str, str]:
    """This venv's ``python`` and ``tooltrail`` first on PATH; no tooltrail settings inherited;
    judge models answered by the loopback judge."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOOLTRAIL_", "OTEL_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(_loopback_judge())
    return env


@functools.cache
def _loopback_judge() -> dict[str, str]:
    """The SDKs' variables pointing at a scripted judge model on loopback (tests/judge_server.py,
    started once, a daemon thread), so that docs/judge.md's ``openai:`` and ``anthropic:``
    examples run as printed; judge caches under a temporary directory, not the user's."""
    from judge_server import JudgeServer

    server = JudgeServer().start()
    return {
        "OPENAI_BASE_URL": server.openai_url,
        "OPENAI_API_KEY": "docs-test",
        "ANTHROPIC_BASE_URL": server.anthropic_url,
        "ANTHROPIC_API_KEY": "docs-test",
        "NO_PROXY": "127.0.0.1,localhost",
        "XDG_CACHE_HOME": tempfile.mkdtemp(prefix="tooltrail-docs-cache-"),
    }


def _run_shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        cwd=cwd,
        env=_environment(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )


# Runs a doc's Python blocks in one namespace; a JSON line per block says how it went.
DRIVER = """
import json, sys, traceback
blocks = json.load(open(sys.argv[1], encoding="utf-8"))
with open(sys.argv[2], "w", encoding="utf-8") as report:
    namespace = {"__name__": "__main__"}
    for where, code in blocks:
        try:
            exec(compile(code, where, "exec"), namespace)
        except BaseException:
            report.write(json.dumps([where, traceback.format_exc()]) + "\\n")
            break
        report.write(json.dumps([where, None]) + "\\n")
        report.flush()
"""


@dataclass(frozen=True)
class PythonRun:
    """What running one doc's Python blocks gave: per block None (ran) or its traceback."""

    outcome: dict[str, str | None]
    stdout: str
    stderr: str


@functools.cache
def _run_python_blocks(doc: str, cwd: Path) -> PythonRun:
    blocks = [(b.where, b.body) for b in RUN_BLOCKS if b.doc == doc and b.lang == "python"]
    scratch = cwd.parent / f"{cwd.name}-python-{doc.replace('/', '-')}"
    scratch.mkdir()
    (scratch / "blocks.json").write_text(json.dumps(blocks), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, str(scratch / "blocks.json"), str(scratch / "report")],
        cwd=cwd,
        env=_environment(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    report = scratch / "report"
    lines = report.read_text(encoding="utf-8").splitlines() if report.exists() else []
    outcome = dict(json.loads(line) for line in lines)
    return PythonRun(outcome=outcome, stdout=proc.stdout, stderr=proc.stderr)


#: Blocks that ran and passed in this session, by doc (reported once the module is done).
RAN: Counter[str] = Counter()


class _BlockCountReport:
    """A plugin object: at the end of the session, one line saying how many blocks ran."""

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        skipped = sum(1 for b in RUN_BLOCKS if b.skip_reason is not None)
        per_doc = ", ".join(f"{doc} {n}" for doc, n in sorted(RAN.items()))
        terminalreporter.write_line(
            f"docs examples: {sum(RAN.values())} of {len(RUN_BLOCKS)} blocks ran and passed "
            f"({per_doc}); {skipped} marked skip, each with its reason (-rs)"
        )


@pytest.fixture(scope="module", autouse=True)
def _report_block_count(request: pytest.FixtureRequest) -> None:
    plugins = request.config.pluginmanager
    if not any(isinstance(p, _BlockCountReport) for p in plugins.get_plugins()):
        plugins.register(_BlockCountReport())


@pytest.mark.parametrize("block", RUN_BLOCKS, ids=lambda b: f"{b.where} {b.lang}")
def test_example_runs_as_printed(block: Block, checkout: Path) -> None:
    if block.skip_reason is not None:
        pytest.skip(f"{block.where}: {block.skip_reason}")
    _run_block(block, checkout)
    RAN[block.doc] += 1


def _run_block(block: Block, checkout: Path) -> None:
    if block.lang == "python":
        run = _run_python_blocks(block.doc, checkout)
        assert block.where in run.outcome, (
            f"{block.where} never ran (an earlier block of the file failed, or the process "
            f"died):\n{run.stderr}"
        )
        assert run.outcome[block.where] is None, run.outcome[block.where]
    elif block.lang == "console":
        _check_console(block, checkout)
    else:
        _check_shell(block, checkout)


def _check_shell(block: Block, cwd: Path) -> None:
    commands = [_without_install_steps(line) for line in _command_lines(block.body)]
    assert all(commands), f"{block.where}: a line that only installs: mark the block skip"
    expected = _expected_output(block)
    for n, (command, code) in enumerate(
        zip(commands, block.exit_codes(len(commands)), strict=True)
    ):
        proc = _run_shell(command, cwd)
        assert proc.returncode == code, (
            f"{block.where}: `{command}` exited {proc.returncode}, the doc says {code}\n"
            f"{proc.stderr}"
        )
        if expected is not None and n == len(commands) - 1:
            assert _matches(expected.body, proc.stdout), (
                f"{block.where}: `{command}` printed\n{proc.stdout}\n"
                f"not what {expected.where} shows\n{expected.body}"
            )


def _check_console(block: Block, cwd: Path) -> None:
    sessions = re.split(r"^\$ ", block.body, flags=re.M)
    assert sessions[0] == "", f"{block.where}: a console block starts with a `$ ` command"
    commands = [session.split("\n", 1) for session in sessions[1:]]
    for (command, shown), code in zip(commands, block.exit_codes(len(commands)), strict=True):
        proc = _run_shell(command, cwd)
        assert proc.returncode == code, f"{block.where}: `{command}`\n{proc.stderr}"
        assert _matches(shown, proc.stdout), (
            f"{block.where}: `{command}` printed\n{proc.stdout}\nnot\n{shown}"
        )


def test_readme_api_screen_prints_its_verdicts(checkout: Path) -> None:
    run = _run_python_blocks("README.md", checkout)
    assert set(run.outcome.values()) == {None}, run.outcome
    assert "Required tool 'verify_identity' was not called." in run.stdout
    assert "0/1 runs passed" in run.stdout


def test_readme_main_command_is_checked_with_its_output() -> None:
    """The README's first command is run (install steps left out) and its output compared."""
    first = next(b for b in RUN_BLOCKS if b.doc == "README.md")
    assert _without_install_steps(first.body.strip()) == (
        "tooltrail eval examples/refund/suite.yaml examples/refund/"
    )
    assert first.skip_reason is None and first.exit_codes(1) == [1]
    expected = _expected_output(first)
    assert expected is not None and expected.body.startswith("correct ")


def test_every_block_says_what_it_holds_and_every_marker_is_understood() -> None:
    problems = [
        f"{b.where}: fence language {b.lang!r}" for b in ALL_BLOCKS if b.lang not in KNOWN_LANGS
    ]
    for block in ALL_BLOCKS:
        marker = block.marker
        if not marker:
            continue
        if marker.startswith("skip"):
            if not block.skip_reason or block.lang not in RUNNABLE:
                problems.append(f"{block.where}: skip needs a runnable block and a (reason)")
        elif marker.startswith("file "):
            path = ROOT / marker.removeprefix("file ").strip()
            if not path.is_file() or path.read_text(encoding="utf-8") != block.body:
                problems.append(f"{block.where}: block differs from {path.relative_to(ROOT)}")
        elif not re.fullmatch(r"exit(\s+\d+)+", marker) or block.lang not in RUNNABLE:
            problems.append(f"{block.where}: marker {marker!r} not understood here")
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        stray = len(MARKER.findall(text)) - sum(
            1 for b in ALL_BLOCKS if b.doc == doc.relative_to(ROOT).as_posix() and b.marker
        )
        if stray:
            problems.append(f"{doc.name}: {stray} docs-test marker(s) not right before a block")
    assert not problems, "\n".join(problems)


#: Paths outside the checkout the docs name on purpose, each with why.
OUTSIDE_ON_PURPOSE = {
    "../shared/external/agentevals-otlp": "agentevals' corpus (docs/convert.md), read by "
    "tests/convert/test_external_corpus.py when it lies beside the checkout, never copied into it",
}


def test_every_toml_block_parses() -> None:
    """A ``toml`` block (a ``pyproject.toml`` table to copy) is valid TOML as printed."""
    import tomllib

    problems = []
    for block in (b for b in ALL_BLOCKS if b.lang == "toml"):
        try:
            tomllib.loads(block.body)
        except tomllib.TOMLDecodeError as problem:
            problems.append(f"{block.where}: {problem}")
    assert problems == []


def test_relative_links_stay_inside_the_repository() -> None:
    """A link or a quoted path that leaves the checkout is broken for everyone who clones it."""
    problems = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+)[^)]*\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            resolved = (doc.parent / target).resolve()
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                problems.append(f"{doc.relative_to(ROOT)}: link {target}")
        for quoted in re.findall(r"`(\.\./[^`\s]*)`", text):
            if quoted not in OUTSIDE_ON_PURPOSE:
                problems.append(f"{doc.relative_to(ROOT)}: {quoted} is outside the repository")
    assert not problems, "\n".join(problems)
