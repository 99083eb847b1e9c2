"""The "agreement with labels" section of the reports (``tooltrail eval --labels FILE``): the
figures of each labelled check as the formats print them, and the section as plain text (the
text report, and the JUnit report's ``system-out``). Markdown and HTML lay the same figures out
in their own markup (``report.markdown``, ``report.html``); JSON writes
``Agreement.to_dict()``.

The human formats list at most ``MAX_LISTED_DISAGREEMENTS`` disagreeing runs per check and say
how many more there are; the JSON report lists them all.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (types only: a report without labels does not load the agreement)
    from tooltrail.agreement import Agreement, CheckAgreement, Disagreement

#: Disagreeing runs listed per check in the text, Markdown, HTML and JUnit reports.
MAX_LISTED_DISAGREEMENTS = 50
#: The section's title in every format.
TITLE = "Agreement with labels"
NOT_COMPUTED = "n/a"


@dataclass(frozen=True, slots=True)
class Figures:
    """One check's numbers as text: ``87.5% (42/48)``, ``0.750``, ``n/a``."""

    accuracy: str
    kappa: str
    true_positive_rate: str
    true_negative_rate: str
    self_agreement: str


def figures(check: CheckAgreement) -> Figures:
    """The printed form of ``check``'s numbers (``n/a`` for one that cannot be computed)."""
    kappa = check.kappa
    own = check.self_agreement
    return Figures(
        accuracy=_rate(check.accuracy, check.true_positive + check.true_negative, check.compared),
        kappa=NOT_COMPUTED if kappa is None else f"{kappa:.3f}",
        true_positive_rate=_rate(check.true_positive_rate, check.true_positive, check.human_passed),
        true_negative_rate=_rate(check.true_negative_rate, check.true_negative, check.human_failed),
        self_agreement=(
            NOT_COMPUTED
            if own is None
            else f"{own.mean:.3f} over {own.judgements} judgements of {own.samples} samples"
        ),
    )


def _rate(value: float | None, part: int, whole: int) -> str:
    return NOT_COMPUTED if value is None else f"{value:.1%} ({part}/{whole})"


def headline(agreement: Agreement) -> str:
    """``labels.csv: 144 labels, 144 matched a score`` (and how many did not)."""
    text = f"{agreement.source}: {agreement.labels} labels, {agreement.matched} matched a score"
    if agreement.unmatched_count:
        text += f", {agreement.unmatched_count} matched none"
    return text


def plural(count: int, noun: str) -> str:
    """``1 disagreeing run``, ``6 disagreeing runs``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def verdict_word(passed: bool) -> str:
    return "pass" if passed else "fail"


def disagreement_line(found: Disagreement) -> str:
    """``refund run 3 [trace 6b04...]: human fail, check pass; notes: ...; check: ...``."""
    text = f"{found.label}"
    if found.trace_id and found.trace_id != found.label:
        text += f" [trace {found.trace_id}]"
    text += f": human {verdict_word(found.human_passed)}, check {verdict_word(found.check_passed)}"
    if found.notes:
        text += f"; notes: {found.notes}"
    if found.explanation:
        text += f"; check: {found.explanation}"
    return text


def kind(check: CheckAgreement) -> str:
    return "judge" if check.judge else "check"


def text_lines(agreement: Agreement) -> Iterator[str]:
    """The section as plain text, a line (ending in a newline) at a time."""
    yield f"{TITLE.lower()} ({headline(agreement)})\n"
    if not agreement.checks:
        yield "    no label matched a score of this run\n"
    for check in agreement.checks:
        shown = figures(check)
        verdicts = plural(check.compared, "labelled verdict")
        yield (
            f"{check.check} ({kind(check)}): {verdicts}; accuracy "
            f"{shown.accuracy}, kappa {shown.kappa}, true positive rate "
            f"{shown.true_positive_rate}, true negative rate {shown.true_negative_rate}\n"
        )
        if check.self_agreement is not None:
            yield f"    self-agreement {shown.self_agreement}\n"
        yield f"    {'':<12}{'check pass':>12}{'check fail':>12}\n"
        yield f"    {'human pass':<12}{check.true_positive:>12}{check.false_negative:>12}\n"
        yield f"    {'human fail':<12}{check.false_positive:>12}{check.true_negative:>12}\n"
        if check.no_verdict:
            yield f"    {check.no_verdict} labelled scores without a verdict (errors, skipped)\n"
        if check.disagreements:
            yield f"    {plural(len(check.disagreements), 'disagreeing run')}:\n"
            for found in check.disagreements[:MAX_LISTED_DISAGREEMENTS]:
                yield "        " + disagreement_line(found).replace("\n", "\n          ") + "\n"
            more = len(check.disagreements) - MAX_LISTED_DISAGREEMENTS
            if more > 0:
                yield f"        ... and {more} more (the JSON report lists them all)\n"
    if agreement.unmatched:
        yield f"{plural(agreement.unmatched_count, 'label')} matched no score:\n"
        for unmatched in agreement.unmatched:
            yield f"    {unmatched.describe()}\n"


def render_agreement_text(agreement: Agreement) -> str:
    """The section as one string."""
    return "".join(text_lines(agreement))
