"""collector-config/: every file parses, wires defined components, and points at tooltrail serve."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from tooltrail.serve.config import DEFAULT_GRPC_PORT, DEFAULT_HTTP_PORT, TRACES_PATH

CONFIG_DIR = Path(__file__).resolve().parents[2] / "collector-config"
CONFIGS = sorted(CONFIG_DIR.glob("*.yaml"))

_CORE = "https://github.com/open-telemetry/opentelemetry-collector/blob/main/"
_CONTRIB = "https://github.com/open-telemetry/opentelemetry-collector-contrib/blob/main/"

#: Component type -> (the README that documents it, the settings that README lists).
DOCUMENTED: dict[str, dict[str, tuple[str, set[str]]]] = {
    "receivers": {
        "otlp": (_CORE + "receiver/otlpreceiver/README.md", {"protocols"}),
    },
    "processors": {
        "memory_limiter": (
            _CORE + "processor/memorylimiterprocessor/README.md",
            {
                "check_interval",
                "limit_mib",
                "spike_limit_mib",
                "limit_percentage",
                "spike_limit_percentage",
            },
        ),
        "batch": (
            _CORE + "processor/batchprocessor/README.md",
            {"timeout", "send_batch_size", "send_batch_max_size", "metadata_keys"},
        ),
        "groupbytrace": (
            _CONTRIB + "processor/groupbytraceprocessor/README.md",
            {"wait_duration", "num_traces", "num_workers", "discard_orphans", "store_on_disk"},
        ),
        "tail_sampling": (
            _CONTRIB + "processor/tailsamplingprocessor/README.md",
            {
                "decision_wait",
                "num_traces",
                "expected_new_traces_per_sec",
                "decision_cache",
                "sample_on_first_match",
                "drop_pending_traces_on_shutdown",
                "policies",
            },
        ),
    },
    "exporters": {
        "file": (
            _CONTRIB + "exporter/fileexporter/README.md",
            {
                "path",
                "format",
                "compression",
                "rotation",
                "append",
                "flush_interval",
                "group_by",
                "encoding",
            },
        ),
        "otlphttp": (
            _CORE + "exporter/otlphttpexporter/README.md",
            {
                "endpoint",
                "traces_endpoint",
                "compression",
                "timeout",
                "headers",
                "tls",
                "encoding",
                "retry_on_failure",
                "sending_queue",
            },
        ),
        "otlp": (
            _CORE + "exporter/otlpexporter/README.md",
            {"endpoint", "compression", "timeout", "headers", "tls", "retry_on_failure"},
        ),
        "loadbalancing": (
            _CONTRIB + "exporter/loadbalancingexporter/README.md",
            {"routing_key", "protocol", "resolver", "timeout", "retry_on_failure", "sending_queue"},
        ),
        "debug": (_CORE + "exporter/debugexporter/README.md", {"verbosity"}),
    },
    "extensions": {
        "health_check": (_CONTRIB + "extension/healthcheckextension/README.md", {"endpoint"}),
    },
    "connectors": {
        "count": (
            _CONTRIB + "connector/countconnector/README.md",
            {"spans", "spanevents", "metrics", "datapoints", "logs"},
        ),
    },
}
#: Where a pipeline's receivers and exporters may be defined: a connector is both.
_DEFINED_IN = {
    "receivers": ("receivers", "connectors"),
    "processors": ("processors",),
    "exporters": ("exporters", "connectors"),
}
#: Values the file exporter and loadbalancing exporter READMEs document.
FILE_FORMATS = {"json", "proto"}
FILE_COMPRESSIONS = {"zstd"}
ROTATION_KEYS = {"max_megabytes", "max_days", "max_backups", "localtime"}
LOADBALANCING_ROUTING_KEYS = {"traceID", "service", "resource", "metric", "streamID", "attributes"}
LOADBALANCING_RESOLVERS = {"static", "dns", "k8s", "aws_cloud_map"}


def load(path: Path) -> dict:
    with path.open(encoding="utf-8") as f:
        return yaml.safe_load(f)


def component_type(component_id: str) -> str:
    """``otlphttp/tooltrail`` -> ``otlphttp`` (the collector's type/name syntax)."""
    return component_id.split("/", 1)[0]


def components(config: dict, kind: str, type_: str) -> list[dict]:
    return [
        settings or {}
        for cid, settings in (config.get(kind) or {}).items()
        if component_type(cid) == type_
    ]


def test_the_documented_configs_exist() -> None:
    assert {p.name for p in CONFIGS} == {
        "single.yaml",
        "gateway.yaml",
        "evaluator.yaml",
        "sampling.yaml",
    }


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_pipeline_references_defined_components(path: Path) -> None:
    config = load(path)
    pipelines = config["service"]["pipelines"]
    assert pipelines
    for name, pipeline in pipelines.items():
        assert pipeline.get("receivers") and pipeline.get("exporters"), name
        for kind in ("receivers", "processors", "exporters"):
            for cid in pipeline.get(kind, []):
                defined = any(cid in (config.get(where) or {}) for where in _DEFINED_IN[kind])
                assert defined, f"{path.name}: {name}.{kind}: {cid}"
    for cid in config["service"].get("extensions", []):
        assert cid in config["extensions"], f"{path.name}: extension {cid}"


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_defined_component_is_used(path: Path) -> None:
    config = load(path)
    used = {
        cid
        for pipeline in config["service"]["pipelines"].values()
        for kind in ("receivers", "processors", "exporters")
        for cid in pipeline.get(kind, [])
    } | set(config["service"].get("extensions", []))
    for kind in DOCUMENTED:
        for cid in config.get(kind) or {}:
            assert cid in used, f"{path.name}: {kind}.{cid} is defined but not used"


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_component_type_and_setting_is_documented(path: Path) -> None:
    config = load(path)
    for kind, documented in DOCUMENTED.items():
        for cid, settings in (config.get(kind) or {}).items():
            type_ = component_type(cid)
            assert type_ in documented, f"{path.name}: {kind}.{cid}: undocumented type {type_}"
            unknown = set(settings or {}) - documented[type_][1]
            assert not unknown, f"{path.name}: {kind}.{cid}: settings {unknown} not in README"


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_memory_limiter_is_the_first_processor(path: Path) -> None:
    for pipeline in load(path)["service"]["pipelines"].values():
        processors = pipeline.get("processors", [])
        assert processors and component_type(processors[0]) == "memory_limiter"


@pytest.mark.parametrize("name", ["single.yaml", "evaluator.yaml"])
def test_traces_are_grouped_before_they_reach_tooltrail(name: str) -> None:
    config = load(CONFIG_DIR / name)
    (groupbytrace,) = components(config, "processors", "groupbytrace")
    assert groupbytrace["wait_duration"].endswith("s")
    assert int(groupbytrace["wait_duration"][:-1]) >= 10, "agent episodes need a long wait"
    assert groupbytrace["num_traces"] > 0
    assert "groupbytrace" in config["service"]["pipelines"]["traces"]["processors"]


@pytest.mark.parametrize("name", ["single.yaml", "evaluator.yaml"])
def test_a_logs_pipeline_takes_scores_and_content_to_tooltrail(name: str) -> None:
    """``tooltrail serve --scores-endpoint`` pointed at this collector sends OTLP logs (gRPC
    by default): a collector without a logs pipeline refuses them. The same pipeline carries
    the agents' content log records to tooltrail serve and into the dump."""
    config = load(CONFIG_DIR / name)
    logs = config["service"]["pipelines"].get("logs")
    assert logs, f"{name}: no logs pipeline: evaluation events would be refused"
    (receiver,) = [config["receivers"][cid] for cid in logs["receivers"]]
    assert receiver["protocols"]["grpc"]["endpoint"].endswith(f":{DEFAULT_GRPC_PORT}")
    assert "groupbytrace" not in logs["processors"], "groupbytrace takes spans only"
    exporters = {component_type(cid): cid for cid in logs["exporters"]}
    assert exporters.keys() == {"file", "otlphttp"}
    traces = config["service"]["pipelines"]["traces"]
    assert exporters["otlphttp"] in traces["exporters"], "content reaches the same serve"


def test_gateway_routes_log_records_with_their_traces() -> None:
    config = load(CONFIG_DIR / "gateway.yaml")
    logs = config["service"]["pipelines"].get("logs")
    assert logs and logs["exporters"] == config["service"]["pipelines"]["traces"]["exporters"]


@pytest.mark.parametrize("name", ["single.yaml", "evaluator.yaml"])
def test_otlphttp_exporter_targets_tooltrail_serve_defaults(name: str) -> None:
    (exporter,) = components(load(CONFIG_DIR / name), "exporters", "otlphttp")
    url = urlsplit(exporter["endpoint"])
    assert url.scheme == "http"
    assert url.port == DEFAULT_HTTP_PORT
    # otlphttp appends /v1/traces to a bare endpoint: the path tooltrail serve listens on.
    assert url.path in ("", "/")
    assert TRACES_PATH == "/v1/traces"
    assert exporter.get("compression") in (None, "gzip", "none")


@pytest.mark.parametrize("name", ["single.yaml", "evaluator.yaml"])
def test_file_exporter_writes_a_format_tooltrail_eval_reads(name: str) -> None:
    (exporter,) = components(load(CONFIG_DIR / name), "exporters", "file")
    assert exporter["format"] in FILE_FORMATS
    assert exporter.get("compression", "zstd") in FILE_COMPRESSIONS
    assert set(exporter.get("rotation") or {}) <= ROTATION_KEYS
    assert Path(exporter["path"]).is_absolute()


def test_gateway_routes_every_span_of_a_trace_to_one_evaluator() -> None:
    (exporter,) = components(load(CONFIG_DIR / "gateway.yaml"), "exporters", "loadbalancing")
    assert exporter["routing_key"] == "traceID"
    assert exporter["routing_key"] in LOADBALANCING_ROUTING_KEYS
    assert set(exporter["protocol"]) == {"otlp"}
    assert set(exporter["resolver"]) <= LOADBALANCING_RESOLVERS


def test_gateway_targets_the_evaluators_grpc_receiver() -> None:
    gateway = load(CONFIG_DIR / "gateway.yaml")
    evaluator = load(CONFIG_DIR / "evaluator.yaml")
    (exporter,) = components(gateway, "exporters", "loadbalancing")
    (receiver,) = components(evaluator, "receivers", "otlp")
    evaluator_port = int(receiver["protocols"]["grpc"]["endpoint"].rsplit(":", 1)[1])
    hostnames = exporter["resolver"]["static"]["hostnames"]
    assert len(hostnames) >= 2
    assert {int(h.rsplit(":", 1)[1]) for h in hostnames} == {evaluator_port}


@pytest.mark.parametrize("name", ["single.yaml", "gateway.yaml"])
def test_agents_find_the_collector_on_the_standard_otlp_ports(name: str) -> None:
    (receiver,) = components(load(CONFIG_DIR / name), "receivers", "otlp")
    protocols = receiver["protocols"]
    assert protocols["grpc"]["endpoint"].endswith(f":{DEFAULT_GRPC_PORT}")
    assert protocols["http"]["endpoint"].endswith(f":{DEFAULT_HTTP_PORT}")


def test_readme_names_every_config_and_the_eval_command() -> None:
    readme = (CONFIG_DIR / "README.md").read_text(encoding="utf-8")
    for path in CONFIGS:
        assert path.name in readme
    for config in (load(CONFIG_DIR / "single.yaml"), load(CONFIG_DIR / "evaluator.yaml")):
        (exporter,) = components(config, "exporters", "file")
        assert str(Path(exporter["path"]).parent) in readme
    assert "tooltrail eval" in readme
    assert "wait_duration" in readme
