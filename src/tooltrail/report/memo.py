"""What a report writer spells once per distinct text, for one walk of its rows.

The rows of a run repeat themselves: a check's name and its usual explanations are one shared
string in every row (``batch.compact.RowCompactor``, the checks' texts spelled once), and
the scores about the whole trace are one shared object. Escaping each of them again on every
row was most of the Markdown writer's time and half of the JUnit writer's (issue 38), so a
writer asks a memo made for its walk instead: the escape of each distinct text is worked out
once, and the rest of the walk looks it up.

A memo belongs to one walk (``iter_markdown``, ``iter_junit``): nothing outlives the report,
and two threads writing two reports share nothing. It holds at most ``limit`` texts; past
that it starts again empty, so a run of distinct texts (tool arguments quoted in failing
explanations) costs a lookup and no memory beyond the bound.
"""

from __future__ import annotations

from collections.abc import Callable

#: Distinct texts one memo holds before it starts again.
MEMO_TEXTS = 1 << 16


def text_memo(spell: Callable[[str], str], limit: int = MEMO_TEXTS) -> Callable[[str], str]:
    """``spell`` (a pure function of its text) remembered per distinct text, at most
    ``limit`` of them at a time."""
    known: dict[str, str] = {}
    lookup = known.get

    def spelled(text: str) -> str:
        found = lookup(text)
        if found is None:
            found = spell(text)
            if len(known) >= limit:
                known.clear()
            known[text] = found
        return found

    return spelled
