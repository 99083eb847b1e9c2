"""One console line per evaluated trace, for a person watching a receiver or an agent run.

    14:03:22 5953b3e8788098ffd609159f8008ba53 refund FAIL required_tool:verify_identity:
        Required tool 'verify_identity' was not called. (+1 more)      (one line, cut here)

``ConsoleVerdicts`` is a result callback of the inline evaluator (``pipeline.inline``): ``tooltrail
serve`` writes its lines on standard error (``serve.console``), the live path through the
``tooltrail.verdicts`` logger when the application gave it a handler (``live.install``).

Three promises:

- **The structure is the program's.** A line's fields are the local time, the trace id (hex),
  the case ids, the verdict word and the first failed check with its explanation. The
  explanation quotes a trace's arguments, so it is redacted first (``Redaction.redact_text``,
  with the runner's rules) and then every control, format or line-breaking character is written
  as an escape (``\\n``, ``\\x1b``, ``\\u202e``): a trace's text cannot end a line, colour the
  terminal or forge a line of its own. It is cut at ``MAX_EXPLANATION_CHARS``.
- **Bounded.** At most ``rate`` lines in each second of the clock printed on them (a shared
  ``RateWindow`` makes that a bound across worker processes); what is left out is counted, and
  the count is written before the next line that gets through (and by ``close``).
- **Never in the way.** Formatting or writing a line never raises into the evaluator.
"""

from __future__ import annotations

import logging
import threading
import time
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from tooltrail.model import EvalTrace
from tooltrail.redact import DEFAULT_REDACTION, Redaction
from tooltrail.results import CaseResult

_log = logging.getLogger(__name__)

#: Verdict lines a second, at most, unless the runner says otherwise (``--console-rate``).
DEFAULT_CONSOLE_RATE = 10
#: Characters of an explanation a line shows; the rest is cut (the results file has it all).
MAX_EXPLANATION_CHARS = 300
#: Characters of a case id a line shows (suite files are the operator's, but ids are free text).
MAX_CASE_CHARS = 80
#: Unicode categories written as escapes: controls, format characters (bidirectional
#: overrides, zero-width joiners), surrogates, private use, unassigned, line and paragraph
#: separators.
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def console_safe(text: str, limit: int = MAX_EXPLANATION_CHARS) -> str:
    """``text`` on one line, every character that could change a terminal's lines or colours
    written as an escape, cut to ``limit`` characters (before escaping) with ``...``."""
    cut = len(text) > limit
    if cut:
        text = text[:limit]
    if text.isascii() and text.isprintable():  # the common case: nothing to escape
        return text + ("..." if cut else "")
    out: list[str] = []
    for char in text:
        if char in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[char])
        elif char.isprintable() and unicodedata.category(char) not in _ESCAPED_CATEGORIES:
            out.append(char)  # (``isprintable`` is false for every escaped category but Cf)
        else:
            code = ord(char)
            if code < 0x100:
                out.append(f"\\x{code:02x}")
            else:
                out.append(f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "".join(out) + ("..." if cut else "")


def verdict_word(eval_trace: EvalTrace, results: Sequence[CaseResult]) -> str:
    """``ERROR`` when a failing score is a check's error (a misconfigured check, a judge that
    could not answer), else ``FAIL`` or ``PASS``; ``PARTIAL`` for a piece of a trace handed on
    before it was complete, whose missing calls prove nothing."""
    failures = [score for result in results for score in result.failures]
    if any(score.error for score in failures):
        return "ERROR"
    if eval_trace.partial:
        return "PARTIAL"
    return "FAIL" if failures else "PASS"


def verdict_line(
    eval_trace: EvalTrace,
    results: Sequence[CaseResult],
    *,
    redaction: Redaction = DEFAULT_REDACTION,
    now: float | None = None,
) -> str:
    """The line of one evaluated trace (no newline): ``HH:MM:SS TRACE CASES VERDICT`` and, when
    a check failed, ``CHECK: EXPLANATION`` of the first (``case/check`` when the trace met
    several cases) and how many more failed."""
    stamp = time.strftime("%H:%M:%S", time.localtime(time.time() if now is None else now))
    cases = ",".join(dict.fromkeys(result.case_id for result in results)) or "-"
    parts = [
        stamp,
        console_safe(str(eval_trace.trace_id), 64),
        console_safe(cases, MAX_CASE_CHARS),
        verdict_word(eval_trace, results),
    ]
    revision = eval_trace.metadata.get("revision")
    if isinstance(revision, int) and not isinstance(revision, bool) and revision > 0:
        parts.append(f"(revision {revision})")
    failed = [(result.case_id, score) for result in results for score in result.failures]
    if failed:
        case_id, first = failed[0]
        name = f"{case_id}/{first.name}" if len(results) > 1 else first.name
        explanation = redaction.redact_text(first.explanation or "")
        parts.append(f"{console_safe(name, MAX_CASE_CHARS * 2)}: {console_safe(explanation)}")
        if len(failed) > 1:
            parts.append(f"(+{len(failed) - 1} more)")
    return " ".join(parts)


class RateWindow(Protocol):
    """Admits at most ``limit`` lines in each second (all writers that share it together)."""

    limit: int

    def admit(self, second: int) -> bool: ...


class LocalRateWindow:
    """A ``RateWindow`` for the threads of one process."""

    def __init__(self, limit: int = DEFAULT_CONSOLE_RATE) -> None:
        self.limit = limit
        self._second = -1
        self._count = 0
        self._lock = threading.Lock()

    def admit(self, second: int) -> bool:
        with self._lock:
            if second != self._second:
                self._second, self._count = second, 0
            if self._count >= self.limit:
                return False
            self._count += 1
            return True


class SharedRateWindow:
    """A ``RateWindow`` over a shared array of two integers (``multiprocessing.Array("q", 2)``:
    the second and the lines admitted in it), so the router's worker processes share one
    bound."""

    def __init__(self, shared: Any, limit: int = DEFAULT_CONSOLE_RATE) -> None:
        self.limit = limit
        self._shared = shared

    def admit(self, second: int) -> bool:
        with self._shared.get_lock():
            values = self._shared.get_obj()
            if values[0] != second:
                values[0], values[1] = second, 0
            if values[1] >= self.limit:
                return False
            values[1] += 1
            return True


class ConsoleVerdicts:
    """A result callback ``(eval_trace, results)`` writing one ``verdict_line`` per trace
    through ``write`` (one line, no newline), at most ``window.limit`` a second; the lines left
    out are counted (``left_out``) and said, in one line, before the next one written.

    ``enabled``: asked before each trace (the live path: whether the logger has a handler
    now); ``clock``: seconds since the epoch (tests pass their own)."""

    def __init__(
        self,
        write: Callable[[str], None],
        *,
        redaction: Redaction | None = None,
        window: RateWindow | None = None,
        enabled: Callable[[], bool] | None = None,
        clock: Callable[[], float] = time.time,
        who: str = "tooltrail",
    ) -> None:
        self._write = write
        self._redaction = redaction or DEFAULT_REDACTION
        self.window: RateWindow = window or LocalRateWindow()
        self._enabled = enabled
        self._clock = clock
        self._who = who
        self._lock = threading.Lock()
        #: Lines written, and lines left out by the rate limit (since the start).
        self.written = 0
        self.left_out = 0
        self._unsaid = 0

    def __call__(self, eval_trace: EvalTrace, results: list[CaseResult]) -> None:
        if self._enabled is not None and not self._enabled():
            return
        now = self._clock()
        if not self.window.admit(int(now)):
            with self._lock:
                self.left_out += 1
                self._unsaid += 1
            return
        try:
            line = verdict_line(eval_trace, results, redaction=self._redaction, now=now)
        except Exception as exc:  # noqa: BLE001 - a console line never breaks evaluation
            _log.debug("tooltrail: no console line for a trace (%s)", type(exc).__name__)
            return
        with self._lock:
            unsaid, self._unsaid = self._unsaid, 0
            self.written += 1
        if unsaid:
            self._say(self._left_out_line(unsaid, now))
        self._say(line)

    def _left_out_line(self, count: int, now: float) -> str:
        stamp = time.strftime("%H:%M:%S", time.localtime(now))
        plural = "" if count == 1 else "s"
        return (
            f"{stamp} {self._who}: {count} verdict line{plural} left out (at most "
            f"{self.window.limit} a second; every verdict is counted, and written to the "
            "results file when there is one)"
        )

    def _say(self, line: str) -> None:
        try:
            self._write(line)
        except Exception as exc:  # noqa: BLE001 - a broken console never breaks evaluation
            _log.debug("tooltrail: console line not written (%s)", type(exc).__name__)

    def close(self) -> None:
        """Say how many lines were left out since the last one written, if any."""
        with self._lock:
            unsaid, self._unsaid = self._unsaid, 0
        if unsaid:
            self._say(self._left_out_line(unsaid, self._clock()))

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    def shutdown(self) -> None:
        self.close()


#: The logger the live path writes verdict lines to (``live.install``): silent until the
#: application gives it (or the root logger) a handler at INFO.
VERDICTS_LOGGER = "tooltrail.verdicts"


def logger_verdicts(
    logger: logging.Logger | None = None,
    *,
    redaction: Redaction | None = None,
    rate: int = DEFAULT_CONSOLE_RATE,
) -> ConsoleVerdicts:
    """``ConsoleVerdicts`` writing to ``logger`` (default ``tooltrail.verdicts``) at INFO,
    only while a handler of it (or of a logger above it) would print an INFO record: an
    application that configured no logging sees nothing and pays for one check per trace."""
    target = logger or logging.getLogger(VERDICTS_LOGGER)

    def enabled() -> bool:
        return target.isEnabledFor(logging.INFO) and target.hasHandlers()

    return ConsoleVerdicts(
        target.info,
        redaction=redaction,
        window=LocalRateWindow(rate),
        enabled=enabled,
    )
