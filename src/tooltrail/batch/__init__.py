"""The batch pass over OTLP dumps: chunks of files evaluated in this process, on a local
process pool, or on a Dask cluster, with traces split across chunks merged before evaluation.
"""

from tooltrail.batch.chunks import DEFAULT_CHUNK_BYTES, Chunk, InputError, plan_chunks
from tooltrail.batch.driver import BatchResult, run_batch
from tooltrail.batch.executors import DaskUnavailableError, default_workers
from tooltrail.batch.matching import UnmatchedTrace

__all__ = [
    "DEFAULT_CHUNK_BYTES",
    "BatchResult",
    "Chunk",
    "DaskUnavailableError",
    "InputError",
    "UnmatchedTrace",
    "default_workers",
    "plan_chunks",
    "run_batch",
]
