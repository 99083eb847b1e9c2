"""The cyclic garbage collector set for a receiver process (``tooltrail serve``, each worker).

A receiver's heap is two things: what start-up loaded (modules, the suite, the web server:
hundreds of thousands of objects that live as long as the process) and the spans it holds
until their trace is judged (each decoded span is a few tracked containers that survive a
young collection or two, then die by reference count). With CPython's defaults (a young
collection every 700 new containers, a full one every 100 young ones and when the heap grew
by a quarter) the collector walked both again and again: 15% of the server's CPU time under
``benchmarks/bench_serve.py --spans 200000``. The data path leaves next to no reference
cycles behind (the objects of a judged trace are freed by reference count), so collecting
less often loses little:

- ``gc.freeze()`` once start-up is done moves what it loaded out of the collector's sight
  (full collections no longer walk it; it is never freed, and never was going to be);
- young collections every ``YOUNG_THRESHOLD`` new containers (about 10 requests of 500
  spans), older ones ``OLDER_THRESHOLD`` times less often each: the collector still runs,
  so a cycle left behind (a check keeping an exception with its traceback) is still freed.

Measured (``gc.callbacks`` timing each collection, same benchmark): 0.75 s of the server's
4.9 s before, 0.10 s of 4.3 s after (docs/serve.md, Workers and throughput). Young collections
every 10,000 containers instead cost 11% more CPU per span than every 50,000 (interleaved
``bench_serve_ab.py`` rounds): each one walks the spans the buffer holds that are still young.
"""

from __future__ import annotations

import gc

#: New tracked containers between two young collections (CPython's default: 700).
YOUNG_THRESHOLD = 50_000
#: Collections of one generation between two of the next (CPython's default: 10).
OLDER_THRESHOLD = 20


def set_for_serving() -> None:
    """Freeze what start-up made and collect less often. Call once per process, when its
    receiver (or worker pipeline) is built and before it takes requests; process-wide, so only
    where tooltrail owns the process (the CLI, a worker), never from a library call."""
    gc.collect()  # start-up's own garbage is freed, not frozen
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, OLDER_THRESHOLD, OLDER_THRESHOLD)
