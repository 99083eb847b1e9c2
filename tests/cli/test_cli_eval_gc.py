"""``tooltrail eval`` writes its report with the cyclic garbage collector paused (the rows are
walked, read back from disk past ``spill_rows``, and make no cycles), and turns it back on
after: the report writers run unchanged, and are only watched here."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fixtures import REFUND_DUMP, REFUND_SUITE

import tooltrail.cli.eval as eval_cli
from tooltrail.cli import main


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_the_report_is_written_with_the_collector_paused(
    collector_on: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fmt: str
) -> None:
    seen: list[bool] = []
    name = "write_text_summarizing" if fmt == "text" else "write_rich_report"
    real = getattr(eval_cli, name)

    def watched(*args: Any, **kwargs: Any) -> None:
        seen.append(gc.isenabled())
        real(*args, **kwargs)

    monkeypatch.setattr(eval_cli, name, watched)
    out = tmp_path / f"report.{fmt}"
    result = CliRunner().invoke(
        main,
        ["eval", "--workers", "1", "--format", fmt, "--out", str(out)]
        + [str(REFUND_SUITE), str(REFUND_DUMP)],
    )
    assert result.exit_code == 1, result.output  # the example has failing rows
    assert seen == [False]
    assert out.read_text().strip()
    assert gc.isenabled()
