"""The README's promises: its main command prints the block it shows, its API screen runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks(lang: str) -> list[str]:
    """Fenced blocks of one info string, read fence by fence (closing fences are not openers)."""
    fences = re.findall(r"^```(\w*)\n(.*?)^```$", README, re.S | re.M)
    return [body for info, body in fences if info == lang]


def test_main_command_prints_the_report_the_readme_shows():
    command = next(b for b in _blocks("bash") if "tooltrail eval" in b).strip()
    args = command.split("&& ")[-1].split()
    assert args[:2] == ["tooltrail", "eval"]
    shown = next(b for b in _blocks("") if b.startswith("correct "))
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("tooltrail")), *args[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stdout == shown, proc.stderr
    assert proc.returncode == 1  # three of the four runs fail the policy


def test_python_api_screen_runs(capsys):
    code = _blocks("python")[0]
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "Required tool 'verify_identity' was not called." in out
    assert "0/1 runs passed" in out
