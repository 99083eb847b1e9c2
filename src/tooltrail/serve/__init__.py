"""``tooltrail serve``: an OTLP receiver (gRPC and HTTP) that scores traces as they arrive.

Spans go into the live path's ``TraceBuffer``; complete traces are dumped, forwarded and
evaluated against a suite of policies, and the scores go out as evaluation events and to a
results file. See docs/serve.md.
"""

from tooltrail.serve.config import (
    DEFAULT_GRPC_PORT,
    DEFAULT_HOST,
    DEFAULT_HTTP_PORT,
    HEALTH_PATH,
    STATS_PATH,
    TRACES_PATH,
    ServeConfig,
)
from tooltrail.serve.service import RunningReceiver, TraceReceiver, start_in_thread

__all__ = [
    "DEFAULT_GRPC_PORT",
    "DEFAULT_HOST",
    "DEFAULT_HTTP_PORT",
    "HEALTH_PATH",
    "STATS_PATH",
    "TRACES_PATH",
    "RunningReceiver",
    "ServeConfig",
    "TraceReceiver",
    "start_in_thread",
]
