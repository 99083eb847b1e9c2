"""``tooltrail serve``: receive OTLP, evaluate complete traces, send the scores back.

Prints where it listens (one line on stderr, once both listeners are bound), then one line per
evaluated trace (time, trace id, case, PASS/FAIL/ERROR/PARTIAL and the first failed check,
redacted; at most ``--console-rate`` a second, the rest counted; none with ``--quiet``) and
the counters at most once a minute when they moved (``serve.console``); runs until SIGTERM
or SIGINT, shuts down gracefully and prints the final counters as JSON on stderr.
Exit codes: 0 after a clean shutdown, 2 for a usage, suite, TLS file or listen (port in use)
error.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

import click
import orjson

from tooltrail.checks.plugins import ENV_PLUGINS, PluginError
from tooltrail.cli.error_lines import fail
from tooltrail.cli.judge_flags import judge_options
from tooltrail.serve import ServeConfig, TraceReceiver
from tooltrail.serve.auth import exposure_warning
from tooltrail.serve.config import (
    DEFAULT_GRPC_PORT,
    DEFAULT_HOST,
    DEFAULT_HTTP_PORT,
    HEALTH_PATH,
    LOGS_PATH,
    STATS_PATH,
    TRACES_PATH,
)
from tooltrail.serve.console import CounterLines
from tooltrail.serve.forward import PROTOCOLS
from tooltrail.serve.signals import StartCancelled, StopSignals
from tooltrail.suite import SuiteError

EXIT_OK, EXIT_USAGE = 0, 2
_DEFAULTS = ServeConfig()


@click.command("serve")
@click.option(
    "--suite",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Suite of policies (YAML or JSON) every complete trace is evaluated against.",
)
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="Address to listen on.")
@click.option(
    "--grpc-port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_GRPC_PORT,
    show_default=True,
    help="OTLP/gRPC port (0: any free port).",
)
@click.option(
    "--http-port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_HTTP_PORT,
    show_default=True,
    help="OTLP/HTTP port (0: any free port).",
)
@click.option("--no-grpc", is_flag=True, help="Do not listen for OTLP/gRPC.")
@click.option("--no-http", is_flag=True, help="Do not listen for OTLP/HTTP.")
@click.option(
    "--scores-endpoint",
    metavar="URL",
    help="OTLP endpoint for the gen_ai.evaluation.result events (default: none).",
)
@click.option(
    "--scores-protocol",
    type=click.Choice(PROTOCOLS),
    default=_DEFAULTS.scores_protocol,
    show_default=True,
)
@click.option(
    "--explanations",
    is_flag=True,
    help="Put score explanations on events and in results (they may quote argument values).",
)
@click.option(
    "--results",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Append one JSON line per evaluated trace to this file.",
)
@click.option(
    "--forward",
    metavar="ENDPOINT",
    help="Send every received trace on to this OTLP endpoint, tool spans tagged with tool_args.",
)
@click.option(
    "--forward-protocol",
    type=click.Choice(PROTOCOLS),
    default=_DEFAULTS.forward_protocol,
    show_default=True,
)
@click.option(
    "--forward-verdicts",
    is_flag=True,
    help="With --forward: send each trace on once judged, its verdict on its root span "
    "(tooltrail.verdict, tooltrail.failed_checks), for a collector's tail sampling.",
)
@click.option(
    "--evaluation-spans",
    is_flag=True,
    help="With --scores-endpoint: also one gen_ai.evaluation.internal span per evaluated "
    "trace, linked to its root span.",
)
@click.option(
    "--judge-budget-per",
    type=click.Choice(["hour", "day"]),
    help="--judge-budget is then US dollars per hour or day (UTC), for all workers together; "
    "past it the judge checks are JudgeBudget errors until the window turns.",
)
@click.option(
    "--test-traffic",
    type=click.Choice(["score", "skip"]),
    default=_DEFAULTS.test_traffic,
    show_default=True,
    help="A trace marked as a test run (tooltrail.test, test.case.name, test.suite.name, or a "
    "--test-environment): scored fully outside sampling and the spend window, or skipped.",
)
@click.option(
    "--test-environment",
    "test_environments",
    metavar="NAME",
    multiple=True,
    help="A deployment.environment whose traces are test runs. Repeatable.",
)
@click.option(
    "--dump",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Append every received trace to this OTLP file (collector file exporter format).",
)
@click.option(
    "--dump-format",
    type=click.Choice(["json", "proto"]),
    default=_DEFAULTS.dump_format,
    show_default=True,
)
@click.option(
    "--workers",
    type=click.IntRange(1),
    default=_DEFAULTS.workers,
    show_default=True,
    help="Evaluation processes; above 1, spans are routed to them by trace id.",
)
@click.option(
    "--max-request-bytes",
    type=click.IntRange(1024),
    default=_DEFAULTS.max_request_bytes,
    show_default=True,
    help="Largest request body, compressed and decompressed (413 above).",
)
@click.option(
    "--max-buffered-spans",
    type=click.IntRange(1),
    default=_DEFAULTS.max_buffered_spans,
    show_default=True,
    help="Spans held before requests get 503 / RESOURCE_EXHAUSTED.",
)
@click.option(
    "--max-traces",
    type=click.IntRange(1),
    default=_DEFAULTS.max_traces,
    show_default=True,
    help="Traces held before requests get 503 / RESOURCE_EXHAUSTED.",
)
@click.option(
    "--max-spans-per-trace",
    type=click.IntRange(1),
    default=_DEFAULTS.max_spans_per_trace,
    show_default=True,
    help="A trace past this many spans is evaluated partial.",
)
@click.option(
    "--grace",
    type=click.FloatRange(0),
    default=_DEFAULTS.grace,
    show_default=True,
    help="Seconds to wait for late children after a trace's root span arrived (one tick of "
    "the OpenTelemetry SDK's BatchSpanProcessor); later ones revise the verdict.",
)
@click.option(
    "--logs-grace",
    type=click.FloatRange(0),
    default=_DEFAULTS.logs_grace,
    show_default=True,
    help="Once logs have been received: seconds a complete trace waits for the log records "
    "that carry its content (exporters send logs on their own schedule).",
)
@click.option(
    "--revision-window",
    type=click.FloatRange(0),
    default=_DEFAULTS.revision_window,
    show_default=True,
    help="Seconds after its first verdict that late spans or log records of a trace are merged "
    "with it and judged again (a revision); 0: never.",
)
@click.option(
    "--max-revisions",
    type=click.IntRange(0),
    default=_DEFAULTS.max_revisions,
    show_default=True,
    help="Times a trace is judged again within the window; later data is counted and named in "
    "one late_unjudged results line.",
)
@click.option(
    "--revision-max-spans",
    type=click.IntRange(0),
    default=_DEFAULTS.revision_max_spans,
    show_default=True,
    help="Spans and log records kept of judged traces for revisions, all traces together; past "
    "it the oldest judged trace is let go.",
)
@click.option(
    "--max-age",
    type=click.FloatRange(0, min_open=True),
    default=_DEFAULTS.max_age,
    show_default=True,
    help="Seconds after which a trace whose root never arrived is evaluated partial.",
)
@click.option(
    "--shutdown-timeout",
    type=click.FloatRange(0),
    default=_DEFAULTS.shutdown_timeout,
    show_default=True,
    help="Seconds shutdown waits for requests in flight.",
)
@click.option(
    "--dump-flush-interval",
    type=click.FloatRange(0, min_open=True),
    default=_DEFAULTS.dump_flush_interval,
    show_default=True,
    help="Seconds between flushes of --dump: a killed process loses at most this much of it.",
)
@click.option(
    "--auth-token-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="File holding a token clients must send as 'Authorization: Bearer <token>' "
    "(HTTP header or gRPC metadata); /healthz stays open.",
)
@click.option(
    "--tls-cert",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="PEM certificate (chain): both listeners speak TLS (with --tls-key).",
)
@click.option(
    "--tls-key",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="PEM private key of --tls-cert.",
)
@click.option(
    "--max-connections",
    type=click.IntRange(1),
    default=_DEFAULTS.max_connections,
    show_default=True,
    help="Connections open at once on each listener (HTTP, gRPC); past it an idle one is closed "
    "(half-open first). Keep it well under the process's file-descriptor limit.",
)
@click.option(
    "--idle-timeout",
    type=click.FloatRange(0, min_open=True),
    default=_DEFAULTS.idle_timeout,
    show_default=True,
    help="Seconds a connection may wait between requests before it is closed.",
)
@click.option(
    "--header-timeout",
    type=click.FloatRange(0, min_open=True),
    default=_DEFAULTS.header_timeout,
    show_default=True,
    help="Seconds from a request's first byte to the end of its headers (and for the TLS or "
    "gRPC handshake, and a new gRPC connection's first byte).",
)
@click.option(
    "--body-timeout",
    type=click.FloatRange(0, min_open=True),
    default=_DEFAULTS.body_timeout,
    show_default=True,
    help="Seconds to read a request body (408 after).",
)
@click.option(
    "--plugin",
    "plugins",
    metavar="MODULE",
    multiple=True,
    help=f"Import this module's TOOLTRAIL_CHECKS (name -> check), on top of installed "
    f"plug-ins (entry points 'tooltrail.checks') and {ENV_PLUGINS}. Repeatable.",
)
@judge_options
@click.option(
    "--judge-queue",
    type=click.IntRange(min=1),
    default=_DEFAULTS.judge_queue,
    show_default=True,
    metavar="N",
    help="Traces waiting for a judge, per worker process; past it a trace's judge scores are "
    "errors ('judge queue full', counter judge_queue_full) and intake never waits.",
)
@click.option(
    "--quiet",
    "-q",
    is_flag=True,
    help="No line per evaluated trace (the counters still come, at most once a minute).",
)
@click.option(
    "--console-rate",
    type=click.IntRange(1),
    default=_DEFAULTS.console_rate,
    show_default=True,
    metavar="N",
    help="Verdict lines a second at most, all workers together; the rest are counted and said.",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="warning",
    show_default=True,
)
def serve_command(
    suite: Path | None,
    host: str,
    grpc_port: int,
    http_port: int,
    no_grpc: bool,
    no_http: bool,
    scores_endpoint: str | None,
    scores_protocol: str,
    explanations: bool,
    results: Path | None,
    forward: str | None,
    forward_protocol: str,
    forward_verdicts: bool,
    evaluation_spans: bool,
    judge_budget_per: str | None,
    test_traffic: str,
    test_environments: tuple[str, ...],
    dump: Path | None,
    dump_format: str,
    workers: int,
    max_request_bytes: int,
    max_buffered_spans: int,
    max_traces: int,
    max_spans_per_trace: int,
    grace: float,
    logs_grace: float,
    revision_window: float,
    max_revisions: int,
    revision_max_spans: int,
    max_age: float,
    shutdown_timeout: float,
    dump_flush_interval: float,
    auth_token_file: Path | None,
    tls_cert: Path | None,
    tls_key: Path | None,
    max_connections: int,
    idle_timeout: float,
    header_timeout: float,
    body_timeout: float,
    plugins: tuple[str, ...],
    judge_model: str | None,
    judge_cache_path: Path | None,
    no_judge_cache: bool,
    judge_concurrency: int | None,
    judge_budget: float | None,
    judge_queue: int,
    quiet: bool,
    console_rate: int,
    log_level: str,
) -> None:
    """Receive OTLP traces and logs (gRPC and HTTP), evaluate each complete trace, send the
    scores back.

    Listens on 127.0.0.1 by default: pass --host 0.0.0.0 to accept other machines.
    """
    logging.basicConfig(level=log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    if no_grpc and no_http:
        raise click.UsageError("--no-grpc and --no-http leave nothing to listen on")
    if (tls_cert is None) != (tls_key is None):
        raise click.UsageError("--tls-cert and --tls-key go together")
    config = ServeConfig(
        suite=suite,
        host=host,
        grpc_port=None if no_grpc else grpc_port,
        http_port=None if no_http else http_port,
        workers=workers,
        max_request_bytes=max_request_bytes,
        max_buffered_spans=max_buffered_spans,
        max_traces=max_traces,
        max_spans_per_trace=max_spans_per_trace,
        grace=grace,
        logs_grace=logs_grace,
        revision_window=revision_window,
        max_revisions=max_revisions,
        revision_max_spans=revision_max_spans,
        max_age=max_age,
        shutdown_timeout=shutdown_timeout,
        results=results,
        scores_endpoint=scores_endpoint,
        scores_protocol=scores_protocol,
        explanations=explanations,
        forward=forward,
        forward_protocol=forward_protocol,
        forward_verdicts=forward_verdicts,
        evaluation_spans=evaluation_spans,
        judge_budget_per=judge_budget_per,
        test_traffic=test_traffic,
        test_environments=test_environments,
        dump=dump,
        dump_format=dump_format,
        dump_flush_interval=dump_flush_interval,
        auth_token_file=auth_token_file,
        tls_cert=tls_cert,
        tls_key=tls_key,
        max_connections=max_connections,
        idle_timeout=idle_timeout,
        header_timeout=header_timeout,
        body_timeout=body_timeout,
        plugins=plugins,
        judge_model=judge_model,
        judge_cache_path=judge_cache_path,
        judge_cache=False if no_judge_cache else None,
        judge_concurrency=judge_concurrency,
        judge_budget=judge_budget,
        judge_queue=judge_queue,
        console=not quiet,
        console_rate=console_rate,
    )
    with StopSignals(restore=False) as signals:  # to the process's last moment
        _serve(config, signals)


def _serve(config: ServeConfig, signals: StopSignals) -> None:
    """Start, serve until a signal, stop; a signal during start-up stops what was started."""
    try:
        receiver = TraceReceiver(config, stop_requested=signals.requested)
    except StartCancelled:
        click.echo("tooltrail serve: stopped by a signal during start-up", err=True)
        sys.exit(EXIT_OK)
    except (SuiteError, PluginError, OSError, ValueError, RuntimeError) as exc:
        fail("serve", str(exc))

    counters = CounterLines(receiver.stats, lambda line: click.echo(line, err=True))

    def ready() -> None:
        click.echo(f"tooltrail serve: {_listening(receiver)}", err=True)
        counters.start()
        warning = exposure_warning(
            config.host,
            authenticated=config.auth_token_file is not None,
            tls=config.tls_cert is not None,
        )
        if warning is not None:
            click.echo(f"tooltrail serve: warning: {warning}", err=True)

    try:
        stats = asyncio.run(receiver.run_until_signal(on_ready=ready, signals=signals))
    except OSError as exc:
        fail("serve", f"cannot listen: {exc}")
    finally:
        counters.stop()
    click.echo(
        "tooltrail serve: stopped; " + orjson.dumps(stats, option=orjson.OPT_SORT_KEYS).decode(),
        err=True,
    )
    sys.exit(EXIT_OK)


def _listening(receiver: TraceReceiver) -> str:
    host = receiver.config.host
    where = f"[{host}]" if ":" in host else host
    parts = []
    if receiver.grpc_port is not None:
        parts.append(f"OTLP/gRPC on {where}:{receiver.grpc_port}")
    if receiver.http_port is not None:
        scheme = "https" if receiver.config.tls_cert is not None else "http"
        base = f"{scheme}://{where}:{receiver.http_port}"
        parts.append(
            f"OTLP/HTTP on {base}{TRACES_PATH} and {base}{LOGS_PATH} "
            f"(health {HEALTH_PATH}, counters {STATS_PATH})"
        )
    cases = len(receiver.suite.cases)
    workers = receiver.config.workers
    return "; ".join(parts) + (
        f"; {cases} case(s) from suite {receiver.suite.name!r}; {workers} worker(s)"
    )
