"""Where serve's CPU goes per span: ``bench_serve.py``'s requests through a whole
``TracePipeline`` (intake, trace buffer, evaluator, results file, release), under ``cProfile``
on every thread (the buffer evaluates on a thread of its own).

    python benchmarks/profile_serve.py [REQUESTS] [--top 30]

HTTP is left out (``bench_serve.py`` measures it with the rest). The garbage collector is set
as a ``tooltrail serve`` process sets it (``serve.collector``): with CPython's defaults its
collections, charged to whatever function allocates, would be most of the picture. Prints the
functions by their own time, and by cumulative time, with microseconds per span.
``TOOLTRAIL_CORE=python`` profiles the Python reading path.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench_serve import SPANS_PER_TRACE, SUITE, TRACES_PER_REQUEST, build_requests

from tooltrail.serve.collector import set_for_serving
from tooltrail.serve.config import ServeConfig
from tooltrail.serve.outcome import Throttled
from tooltrail.serve.stages import TracePipeline
from tooltrail.suite import TestSuite


def profiled_threads() -> list[cProfile.Profile]:
    """Every thread started from now on runs under a profiler of its own (listed here)."""
    profiles: list[cProfile.Profile] = []
    run = threading.Thread.run

    def profiled(self: threading.Thread) -> None:
        profile = cProfile.Profile()
        profiles.append(profile)
        profile.enable()
        try:
            run(self)
        finally:
            profile.disable()

    threading.Thread.run = profiled  # type: ignore[method-assign]
    return profiles


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("requests", type=int, nargs="?", default=100)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument(
        "--no-profile", action="store_true", help="CPU time per span only, without the profiler"
    )
    args = parser.parse_args()
    bodies, _ = build_requests(args.requests, seed=1)
    spans = args.requests * TRACES_PER_REQUEST * SPANS_PER_TRACE
    profiles = [] if args.no_profile else profiled_threads()
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "suite.yaml").write_text(SUITE, encoding="utf-8")
        suite = TestSuite.load(Path(tmp, "suite.yaml"))
        config = ServeConfig(grace=0.2, results=Path(tmp, "results.jsonl"))
        pipeline = TracePipeline(config, suite)
        set_for_serving()
        main_profile = cProfile.Profile()
        if not args.no_profile:
            profiles.append(main_profile)
            main_profile.enable()
        started = time.process_time()
        for body in bodies:
            while True:  # as a collector does when told the buffer is full: retry later
                try:
                    pipeline.ingest("protobuf", body)
                    break
                except Throttled:
                    time.sleep(0.01)
        main_profile.disable()
        pipeline.shutdown()
        cpu = time.process_time() - started
    label = "unprofiled" if args.no_profile else "profiled"
    print(f"{spans} spans, CPU {cpu:.2f} s = {cpu / spans * 1e6:.1f} us per span ({label})")
    if args.no_profile:
        return 0
    stats: Any = pstats.Stats(profiles[0])
    for profile in profiles[1:]:
        stats.add(profile)
    stats.sort_stats("tottime").print_stats(args.top)
    stats.sort_stats("cumulative").print_stats(args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
