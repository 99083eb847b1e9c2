"""Checks from outside the package: the example plug-in (``examples/plugin``), installed with
pip into a temporary target, and plug-in modules (``--plugin``, ``TOOLTRAIL_PLUGINS``), found by
``tooltrail eval``, ``tooltrail serve``, ``live.install`` and the pytest plugin.

Everything that imports the plug-ins runs in a child process (or loads into a registry of its
own), so the process-wide registry of the other tests never sees them."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import REFUND_DUMP, ROOT

from tooltrail.checks import Registry
from tooltrail.checks.plugins import PluginError, load_plugins, plugin_modules

TOOLTRAIL = [sys.executable, "-c", "from tooltrail.cli import main; main()"]
LISTENING = re.compile(r"OTLP/HTTP on http://127\.0\.0\.1:(\d+)")

WRONG_AMOUNT = (
    "argument_at_most:issue_refund.amount: 'issue_refund' was called with amount=499.9, over "
    "the limit of 100 (1 such call(s))."
)
WEB_SEARCH = "no_web_search: web_search was called 1 time(s)."

#: The suite every run uses: the example plug-in's check and the plug-in module's.
SUITE = """\
name: plugin-checks
cases:
  - id: refund_limits
    match: {agent_name: refund_agent}
    evaluators:
      - name: argument_at_most
        config: {tool: issue_refund, argument: amount, limit: 100}
      - name: no_web_search
"""

#: A plug-in module: a plain scorer function in ``TOOLTRAIL_CHECKS``.
PLUGIN_MODULE = '''\
"""Checks of this team: registered through TOOLTRAIL_CHECKS."""

from tooltrail import Score


def no_web_search(trace, case, config):
    calls = [c for c in trace.tool_calls if c.name == "web_search"]
    if not calls:
        return Score.passing("no_web_search", "no_web_search", "web_search was not called.")
    return Score.failing(
        "no_web_search",
        "no_web_search",
        f"web_search was called {len(calls)} time(s).",
        span_ids=tuple(c.span_id for c in calls if c.span_id),
    )


TOOLTRAIL_CHECKS = {"no_web_search": no_web_search}
'''

#: A scripted refund agent on the real SDK: ``wrong_amount`` refunds 499.9, ``looping``
#: searches the web. Imported by the child processes (live, serve's client, pytest).
AGENT_MODULE = """\
from tooltrail.live import ToolCallSpan


def refund_agent(tracer, run):
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "refund_agent"}
    with tracer.start_as_current_span("invoke_agent refund_agent", attributes=attributes) as root:
        with ToolCallSpan("lookup_order", {"order_id": "ORD-7731"}, tracer=tracer):
            pass
        if run == "looping":
            with ToolCallSpan("web_search", {"query": "refund policy"}, tracer=tracer):
                pass
        amount = 499.9 if run == "wrong_amount" else 49.99
        refund = {"order_id": "ORD-7731", "amount": amount}
        with ToolCallSpan("issue_refund", refund, tracer=tracer):
            pass
        return f"{root.get_span_context().trace_id:032x}"
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example plug-in installed with pip into a directory of its own (a copy is built, so
    the checkout gets no build/ or egg-info)."""
    base = tmp_path_factory.mktemp("plugin")
    source = base / "source"
    shutil.copytree(ROOT / "examples" / "plugin", source)
    target = base / "site"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", str(target),
         str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert (target / "tooltrail_example_checks" / "__init__.py").is_file()
    return target


@pytest.fixture
def modules(tmp_path: Path) -> Path:
    """A directory holding the plug-in module ``team_checks`` and the scripted agent."""
    folder = tmp_path / "modules"
    folder.mkdir()
    (folder / "team_checks.py").write_text(PLUGIN_MODULE)
    (folder / "scripted_agent.py").write_text(AGENT_MODULE)
    return folder


def child_env(*paths: Path, plugins: str | None = None) -> dict[str, str]:
    env = dict(os.environ)
    inherited = [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []
    env["PYTHONPATH"] = os.pathsep.join([*(str(p) for p in paths), *inherited])
    env.pop("TOOLTRAIL_PLUGINS", None)
    if plugins is not None:
        env["TOOLTRAIL_PLUGINS"] = plugins
    return env


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def failures_by_case(report: dict) -> dict[str, list[str]]:
    """Case label (the refund dump's tooltrail.case_id) -> explanations of failing scores."""
    found: dict[str, list[str]] = {}
    for row in report["cases"]:
        label = row["label"]
        found[label] = [
            f"{s['name']}: {s['explanation']}" for s in row["scores"] if not s["passed"]
        ]
    return found


# -- load_plugins itself, on registries of the test's own ------------------------------------


def test_entry_point_of_the_installed_example_is_registered_under_its_name(
    installed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(installed))
    monkeypatch.delenv("TOOLTRAIL_PLUGINS", raising=False)
    registry = Registry.with_builtins()
    assert "argument_at_most" not in registry
    load_plugins(registry=registry)
    load_plugins(registry=registry)  # again: nothing changes, nothing raises
    registered = registry.get("argument_at_most")
    assert registered is not None
    assert f"{registered.__module__}.{registered.__name__}" == (
        "tooltrail_example_checks.ArgumentAtMost"
    )


def test_module_paths_come_from_the_option_then_the_environment() -> None:
    environ = {"TOOLTRAIL_PLUGINS": " team_checks, ,other.checks,team_checks"}
    assert plugin_modules(["mine"], environ) == ("mine", "team_checks", "other.checks")
    assert plugin_modules((), {}) == ()


def test_a_plugin_module_registers_its_tooltrail_checks(
    modules: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(modules))
    monkeypatch.setenv("TOOLTRAIL_PLUGINS", "team_checks")
    registry = Registry.with_builtins()
    load_plugins(registry=registry)
    load_plugins(["team_checks"], registry=registry)
    registered = registry.get("no_web_search")
    assert registered is not None and registered.__name__ == "no_web_search"


def test_plugin_problems_name_the_plugin_and_the_reason(
    modules: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(modules))
    monkeypatch.delenv("TOOLTRAIL_PLUGINS", raising=False)
    write(modules / "no_dict.py", "CHECKS = {}\n")
    write(modules / "broken_import.py", "import not_a_module_anywhere\n")
    write(modules / "not_a_check.py", "TOOLTRAIL_CHECKS = {'answer': 42}\n")
    write(
        modules / "taken_name.py",
        "def recall(trace, case, config):\n    return []\n"
        "TOOLTRAIL_CHECKS = {'tool_call_recall': recall}\n",
    )
    expected = {
        "no_such_module": "plug-in module 'no_such_module' cannot be imported: "
        "ModuleNotFoundError: No module named 'no_such_module'",
        "broken_import": "plug-in module 'broken_import' cannot be imported: "
        "ModuleNotFoundError: No module named 'not_a_module_anywhere'",
        "no_dict": "plug-in module 'no_dict' must define TOOLTRAIL_CHECKS, a dict of check "
        "name -> check class or function; it has none",
        "not_a_check": "plug-in module 'not_a_check': 'answer' is not a check: scorer "
        "'answer' must be callable",
        "taken_name": "plug-in module 'taken_name': the check name 'tool_call_recall' is "
        "already taken by tooltrail.checks.scorers.ToolCallRecall",
    }
    for module, message in expected.items():
        with pytest.raises(PluginError) as raised:
            load_plugins([module], registry=Registry.with_builtins())
        assert str(raised.value) == message


def test_an_entry_point_that_cannot_load_is_named_with_its_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An installed distribution (its dist-info as pip writes it) whose entry point names a
    module that is not there."""
    info = tmp_path / "broken_checks-1.2.dist-info"
    info.mkdir()
    write(info / "METADATA", "Metadata-Version: 2.1\nName: broken-checks\nVersion: 1.2\n")
    write(info / "entry_points.txt", "[tooltrail.checks]\nstrict_refunds = gone_module:Strict\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginError) as raised:
        load_plugins(registry=Registry.with_builtins())
    assert str(raised.value) == (
        "plug-in 'strict_refunds' (entry point 'gone_module:Strict' of broken-checks 1.2) "
        "cannot be loaded: ModuleNotFoundError: No module named 'gone_module'"
    )


# -- tooltrail eval --------------------------------------------------------------------------


def run_eval(
    tmp_path: Path, env: dict[str, str], *extra: str, suite: str = SUITE
) -> subprocess.CompletedProcess[str]:
    suite_path = write(tmp_path / "suite.yaml", suite)
    return subprocess.run(
        [*TOOLTRAIL, "eval", str(suite_path), str(REFUND_DUMP), "--format", "json",
         "--workers", "2", "-q", *extra],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip


def test_eval_runs_the_installed_plugin_and_a_plugin_option_module(
    tmp_path: Path, installed: Path, modules: Path
) -> None:
    done = run_eval(tmp_path, child_env(installed, modules), "--plugin", "team_checks")
    assert done.returncode == 1, done.stderr
    failures = failures_by_case(json.loads(done.stdout))
    assert failures == {
        "correct": [],
        "skipped-verification": [],
        "wrong-amount": [WRONG_AMOUNT],
        "looping": [WEB_SEARCH],
    }


def test_eval_reads_plugin_modules_from_the_environment(
    tmp_path: Path, installed: Path, modules: Path
) -> None:
    done = run_eval(tmp_path, child_env(installed, modules, plugins="team_checks"))
    assert done.returncode == 1, done.stderr
    assert failures_by_case(json.loads(done.stdout))["looping"] == [WEB_SEARCH]


def test_eval_names_a_plugin_that_cannot_be_imported_without_a_traceback(
    tmp_path: Path, installed: Path, modules: Path
) -> None:
    write(modules / "bad_checks.py", "raise RuntimeError('needs a licence key')\n")
    done = run_eval(tmp_path, child_env(installed, modules), "--plugin", "bad_checks")
    assert done.returncode == 2
    assert done.stderr == (
        "tooltrail eval: plug-in module 'bad_checks' cannot be imported: RuntimeError: "
        "needs a licence key\n"
    )


def test_eval_suggests_the_installed_plugin_for_a_misspelled_name(
    tmp_path: Path, installed: Path
) -> None:
    suite = SUITE.replace("name: argument_at_most", "name: argument_at_mots")
    done = run_eval(tmp_path, child_env(installed), suite=suite)
    assert done.returncode == 2
    assert re.fullmatch(
        r"tooltrail eval: \S+suite\.yaml:6: cases\[0\]\.evaluators\[0\]\.name: unknown scorer "
        r"'argument_at_mots' \(did you mean 'argument_at_most'\?\)\n",
        done.stderr,
    ), done.stderr


def test_a_check_no_plugin_provides_fails_its_case_listing_the_installed_ones(
    tmp_path: Path, installed: Path
) -> None:
    """``no_web_search`` is close to no registered name: the suite loads, and each case
    naming it fails with the list of what is registered, the plug-in's check among them."""
    done = run_eval(tmp_path, child_env(installed))
    assert done.returncode == 1, done.stderr
    failures = failures_by_case(json.loads(done.stdout))
    message = failures["correct"][0]
    assert message.startswith("no_web_search: Unknown scorer 'no_web_search'; registered: [")
    assert "'argument_at_most'" in message and "'tool_call_recall'" in message
    assert failures["wrong-amount"] == [WRONG_AMOUNT, message]


# -- tooltrail serve -------------------------------------------------------------------------

SEND_RUNS = """\
import sys
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from scripted_agent import refund_agent

provider = TracerProvider()
provider.add_span_processor(
    SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{sys.argv[1]}/v1/traces"))
)
tracer = provider.get_tracer("refund-agent")
for run in ("correct", "wrong_amount", "looping"):
    print(run, refund_agent(tracer, run))
provider.shutdown()
"""


@pytest.mark.parametrize("workers", [1, 2])
def test_serve_runs_the_installed_plugin_and_a_plugin_option_module(
    tmp_path: Path, installed: Path, modules: Path, workers: int
) -> None:
    """A real receiver on loopback, fed by the real SDK's OTLP/HTTP exporter; with two
    workers the checks must reach the spawned worker processes too."""
    env = child_env(installed, modules)
    suite_path = write(tmp_path / "suite.yaml", SUITE)
    results = tmp_path / "results.jsonl"
    process = subprocess.Popen(
        [*TOOLTRAIL, "serve", "--suite", str(suite_path), "--no-grpc", "--http-port", "0",
         "--grace", "0.1", "--results", str(results), "--explanations",
         "--workers", str(workers), "--plugin", "team_checks"],
        stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = LISTENING.search(line)
        assert found is not None, line
        sent = subprocess.run(
            [sys.executable, "-c", SEND_RUNS, found.group(1)],
            capture_output=True, text=True, timeout=120, env=env,
        )  # fmt: skip
        assert sent.returncode == 0, sent.stderr
    finally:
        process.send_signal(signal.SIGTERM)
        _, rest = process.communicate(timeout=120)
    assert process.returncode == 0, rest
    runs = dict(line.split() for line in sent.stdout.splitlines())
    verdicts = {}
    for raw in results.read_text().splitlines():
        row = json.loads(raw)
        scores = [s for result in row["results"] for s in result["scores"]]
        verdicts[row["trace_id"]] = [
            f"{s['name']}: {s['explanation']}" for s in scores if not s["passed"]
        ]
    assert verdicts == {
        runs["correct"]: [],
        runs["wrong_amount"]: [WRONG_AMOUNT],
        runs["looping"]: [WEB_SEARCH],
    }


def test_serve_names_a_plugin_that_cannot_be_imported(tmp_path: Path, installed: Path) -> None:
    done = subprocess.run(
        [*TOOLTRAIL, "serve", "--no-grpc", "--http-port", "0", "--plugin", "no_such_checks"],
        capture_output=True, text=True, timeout=120, env=child_env(installed),
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == (
        "tooltrail serve: plug-in module 'no_such_checks' cannot be imported: "
        "ModuleNotFoundError: No module named 'no_such_checks'\n"
    )


# -- live.install ----------------------------------------------------------------------------

LIVE_AGENT = """\
import json, sys
from opentelemetry.sdk.trace import TracerProvider
from tooltrail import live
from scripted_agent import refund_agent

verdicts = {}

def on_result(trace, results):
    verdicts[trace.trace_id] = [
        f"{s.name}: {s.explanation}" for r in results for s in r.scores if not s.passed
    ]

provider = TracerProvider()
live.install(provider=provider, suite=sys.argv[1], on_result=on_result, grace_ms=0,
             handle_sigterm=False)
tracer = provider.get_tracer("refund-agent")
runs = {run: refund_agent(tracer, run) for run in ("correct", "wrong_amount", "looping")}
provider.force_flush()
provider.shutdown()
print(json.dumps({run: verdicts.get(trace_id) for run, trace_id in runs.items()}))
"""


def test_live_install_runs_the_installed_plugin_and_environment_modules(
    tmp_path: Path, installed: Path, modules: Path
) -> None:
    suite_path = write(tmp_path / "suite.yaml", SUITE)
    done = subprocess.run(
        [sys.executable, "-c", LIVE_AGENT, str(suite_path)],
        capture_output=True, text=True, timeout=120,
        env=child_env(installed, modules, plugins="team_checks"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "correct": [],
        "wrong_amount": [WRONG_AMOUNT],
        "looping": [WEB_SEARCH],
    }


def test_live_install_raises_for_a_plugin_that_cannot_be_imported(
    tmp_path: Path, installed: Path, modules: Path
) -> None:
    suite_path = write(tmp_path / "suite.yaml", SUITE)
    code = (
        "import sys\nfrom opentelemetry.sdk.trace import TracerProvider\n"
        "from tooltrail import live\nfrom tooltrail.checks.plugins import PluginError\n"
        "try:\n"
        "    live.install(provider=TracerProvider(), suite=sys.argv[1], handle_sigterm=False)\n"
        "except PluginError as error:\n    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(suite_path)],
        capture_output=True, text=True, timeout=120,
        env=child_env(installed, modules, plugins="no_such_checks"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "plug-in module 'no_such_checks' cannot be imported: ModuleNotFoundError: "
        "No module named 'no_such_checks'\n"
    )


# -- the pytest plugin -----------------------------------------------------------------------

PYTEST_FILE = """\
from tooltrail.suite.case import EvaluatorConfig, TestCase
from scripted_agent import refund_agent

CASE = TestCase(
    id="refund_limits",
    evaluators=[
        EvaluatorConfig("argument_at_most", config=dict(tool="issue_refund",
                                                        argument="amount", limit=100)),
        EvaluatorConfig("no_web_search"),
    ],
)


def test_correct(trail):
    refund_agent(trail.tracer, "correct")
    trail.assert_passes(CASE)


def test_wrong_amount(trail):
    refund_agent(trail.tracer, "wrong_amount")
    failing = [f"{s.name}: {s.explanation}" for s in trail.check(CASE) if not s.passed]
    assert failing == [WRONG]


def test_looping(trail):
    refund_agent(trail.tracer, "looping")
    failing = [f"{s.name}: {s.explanation}" for s in trail.check(CASE) if not s.passed]
    assert failing == [WEB]
"""


def run_agent_tests(
    tmp_path: Path, installed: Path, modules: Path, plugins: str
) -> subprocess.CompletedProcess[str]:
    """pytest run in a child process on the refund tests, with ``plugins`` in the environment."""
    tests = tmp_path / "agent_tests"
    tests.mkdir()
    write(
        tests / "test_refunds.py",
        f"WRONG = {WRONG_AMOUNT!r}\nWEB = {WEB_SEARCH!r}\n{PYTEST_FILE}",
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests)],
        capture_output=True, text=True, timeout=300, cwd=tests,
        env=child_env(installed, modules, plugins=plugins),
    )  # fmt: skip
    return done


def test_pytest_plugin_runs_the_installed_plugin_and_environment_modules(
    tmp_path: Path, installed: Path, modules: Path
) -> None:
    done = run_agent_tests(tmp_path, installed, modules, plugins="team_checks")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout


def test_pytest_plugin_fails_tests_naming_a_plugin_that_cannot_be_imported(
    tmp_path: Path, installed: Path, modules: Path
) -> None:
    done = run_agent_tests(tmp_path, installed, modules, plugins="no_such_checks")
    assert done.returncode == 1
    assert "3 errors" in done.stdout
    assert (
        "plug-in module 'no_such_checks' cannot be imported: ModuleNotFoundError: "
        "No module named 'no_such_checks'"
    ) in done.stdout
    assert "Traceback" not in done.stdout
