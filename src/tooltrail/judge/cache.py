"""The verdict cache: judging the same prompt again calls no model.

A local SQLite file (stdlib ``sqlite3``), one row per judged prompt: the key is a SHA-256 of
the model, its endpoint, the prompt, the number of samples and the parameters; the value the
verdicts the model gave. Only answers are kept (an error or a skipped judgement is asked again
next time). The file is created 0600 in a directory created 0700. One connection, used under a
lock, so any thread may read and write. A file that is not a readable SQLite cache raises
:class:`JudgeCacheError` naming the path when the cache is opened; a failure while reading or
writing later (a full disk) is counted in ``errors`` and the judgement goes on uncached.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from tooltrail.judge.config_errors import JudgeCacheError
from tooltrail.judge.outcome import JudgeVerdict

_SCHEMA = "CREATE TABLE IF NOT EXISTS verdicts (key TEXT PRIMARY KEY, value TEXT NOT NULL)"


def default_cache_path() -> Path:
    """``$XDG_CACHE_HOME/tooltrail/judge-cache.sqlite3``, else under ``~/.cache``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tooltrail" / "judge-cache.sqlite3"


def cache_key(
    *, model: str, endpoint: str, prompt: str, samples: int, params: dict[str, Any] | None
) -> str:
    """The key of one judgement: what changes the answer, hashed."""
    material = json.dumps(
        [model, endpoint, prompt, samples, params or {}],
        sort_keys=True,
        default=str,
        ensure_ascii=False,
    )
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


class VerdictCache:
    """The verdicts already had, by :func:`cache_key`."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        self.errors = 0
        self._lock = threading.Lock()
        db: sqlite3.Connection | None = None
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.close(os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600))
            db = sqlite3.connect(self.path, check_same_thread=False, timeout=10)
            db.execute(_SCHEMA)
            db.execute("SELECT key, value FROM verdicts LIMIT 1").fetchall()
            db.commit()
            self._db = db
        except (OSError, sqlite3.Error) as exc:
            if db is not None:
                db.close()
            raise JudgeCacheError(
                f"judge cache {str(self.path)!r} cannot be used ({exc}): delete it, choose "
                "another cache_path, or turn the cache off"
            ) from None

    def get(self, key: str) -> tuple[JudgeVerdict, ...] | None:
        """The verdicts stored under ``key``, else ``None``."""
        try:
            with self._lock:
                row = self._db.execute(
                    "SELECT value FROM verdicts WHERE key = ?", (key,)
                ).fetchone()
            if row is None:
                return None
            return tuple(
                JudgeVerdict(passed=bool(v[0]), score=float(v[1]), reasoning=str(v[2]))
                for v in json.loads(row[0])
            )
        except (sqlite3.Error, ValueError, TypeError, IndexError):
            with self._lock:
                self.errors += 1
            return None

    def put(self, key: str, verdicts: tuple[JudgeVerdict, ...]) -> None:
        """Keep ``verdicts`` under ``key``."""
        value = json.dumps([[v.passed, v.score, v.reasoning] for v in verdicts])
        try:
            with self._lock:
                self._db.execute(
                    "INSERT OR REPLACE INTO verdicts (key, value) VALUES (?, ?)", (key, value)
                )
                self._db.commit()
        except sqlite3.Error:
            with self._lock:
                self.errors += 1

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
