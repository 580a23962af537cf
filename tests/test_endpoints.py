"""Endpoints: models.toml parsing, command-line flags, secrets never in files."""

from __future__ import annotations

import argparse
import os

import pytest

from core.engine.endpoints import (
    LOCAL_DEFAULT_URL,
    MODELS_FILE,
    Endpoint,
    EndpointError,
    add_endpoint_args,
    endpoint_from_args,
    load_endpoints,
    redact_url,
)


def write(tmp_path, text: str):
    path = tmp_path / "models.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _endpoint(args: argparse.Namespace, role: str) -> Endpoint:
    """The endpoint the flags define for `role` (a failed test when they define none)."""
    endpoint = endpoint_from_args(args, role)
    assert endpoint is not None, role
    return endpoint


def parse(argv: list[str], judge: bool = True) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_endpoint_args(parser, "model")
    if judge:
        add_endpoint_args(parser, "judge")
    return parser.parse_args(argv)


def test_shipped_models_file_parses_and_local_is_default(monkeypatch, tmp_path):
    monkeypatch.delenv("EHW_MODELS_FILE", raising=False)
    monkeypatch.delenv("EHW_LOCAL_URL", raising=False)
    monkeypatch.setenv("EHW_LOCAL_RECORD", str(tmp_path / "no-server-recorded.json"))
    endpoints = load_endpoints(MODELS_FILE)
    assert endpoints["local"].weak is True
    assert endpoints["local"].base_urls == (LOCAL_DEFAULT_URL,)
    replicas = [e for e in endpoints.values() if len(e.base_urls) > 1]
    assert replicas, "the example file documents a replicated endpoint"
    assert all(e.api_key_env is None or e.api_key_env.isupper() for e in endpoints.values())
    args = parse([], judge=False)
    assert _endpoint(args, "model").name == "local"


def test_file_with_replicas_prices_and_local_override(tmp_path, monkeypatch):
    path = write(
        tmp_path,
        """
[endpoints.pool]
base_urls = ["http://a:1/v1", "http://b:2/v1"]
model = "m"
api_key_env = "POOL_KEY"
max_concurrency = 32
price_in_per_mtok = 1.0
price_out_per_mtok = 4.0
max_retries = 2
""",
    )
    monkeypatch.setenv("EHW_LOCAL_URL", "http://127.0.0.1:9999/v1")
    endpoints = load_endpoints(path)
    pool = endpoints["pool"]
    assert pool.base_urls == ("http://a:1/v1", "http://b:2/v1")
    assert pool.max_concurrency == 32
    assert pool.max_retries == 2 and endpoints["local"].max_retries == 5
    # 1,000 prompt tokens at $1/M + 500 completion tokens at $4/M = 0.001 + 0.002
    assert pool.cost(1000, 500) == pytest.approx(0.003)
    assert endpoints["local"].base_urls == ("http://127.0.0.1:9999/v1",)
    assert Endpoint("x", ("u",), "m").cost(10, 10) is None  # unknown price is not "free"


@pytest.mark.parametrize(
    "body, message",
    [
        (
            '[endpoints.a]\nbase_url = "http://x/v1"\nmodel = "m"\napi_key = "sk-123"\n',
            "never written in files",
        ),
        ('[endpoints.a]\nbase_url = "http://x/v1"\nmodel = "m"\ncolour = 1\n', "unknown key"),
        ('[endpoints.a]\nmodel = "m"\n', "needs base_url"),
        ('[endpoints.a]\nbase_url = "http://x/v1"\n', "needs model"),
        ('[endpoints.a]\nbase_url = "http://x/v1"\nmodel = "m"\nmax_concurrency = 0\n', "≥ 1"),
        ('[endpoints.a]\nbase_url = "http://x/v1"\nmodel = "m"\nmax_retries = -1\n', "≥ 0"),
        ("[endpoints.a\n", "not valid TOML"),
    ],
)
def test_bad_files_are_refused_with_the_reason(tmp_path, body, message):
    path = write(tmp_path, body)
    with pytest.raises(EndpointError, match=message) as info:
        load_endpoints(path)
    assert "sk-123" not in str(info.value)


def test_models_file_from_environment(tmp_path, monkeypatch):
    path = write(tmp_path, '[endpoints.e]\nbase_url = "http://x/v1"\nmodel = "m"\n')
    monkeypatch.setenv("EHW_MODELS_FILE", str(path))
    assert "e" in load_endpoints()
    monkeypatch.setenv("EHW_MODELS_FILE", str(tmp_path / "missing.toml"))
    with pytest.raises(EndpointError, match="does not exist"):
        load_endpoints()


def test_flags_define_an_endpoint_on_the_spot_and_the_judge():
    args = parse(
        [
            "--base-url",
            "http://h:8000/v1,http://h:8001/v1",
            "--base-url",
            "http://h:8002/v1",
            "--model",
            "qwen",
            "--api-key-env",
            "MY_KEY",
            "--judge-base-url",
            "http://j:1/v1",
            "--judge-model",
            "judge-m",
        ]
    )
    model = _endpoint(args, "model")
    assert model.base_urls == ("http://h:8000/v1", "http://h:8001/v1", "http://h:8002/v1")
    assert (model.model, model.api_key_env) == ("qwen", "MY_KEY")
    judge = _endpoint(args, "judge")
    assert (judge.base_urls, judge.model, judge.api_key_env) == (
        ("http://j:1/v1",),
        "judge-m",
        None,
    )
    assert endpoint_from_args(parse([]), "judge") is None


def test_named_endpoint_with_model_override(tmp_path):
    path = write(tmp_path, '[endpoints.e]\nbase_url = "http://x/v1"\nmodel = "m"\n')
    args = parse(
        ["--models-file", str(path), "--endpoint", "e", "--model", "other", "--judge-endpoint", "e"]
    )
    assert _endpoint(args, "model").model == "other"
    assert _endpoint(args, "judge").model == "m"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--base-url", "http://x/v1"], "needs --model"),
        (["--endpoint", "nope"], "unknown endpoint 'nope'; known: .*local"),
        (["--endpoint", "local", "--base-url", "http://x/v1"], "not both"),
        (["--judge-base-url", "http://x/v1"], "needs --judge-model"),
    ],
)
def test_bad_flags_exit_with_a_clear_message(argv, message):
    args = parse(argv)
    with pytest.raises(SystemExit, match=message):
        endpoint_from_args(args, "judge" if argv[0].startswith("--judge") else "model")


def test_api_key_comes_from_the_environment_only(monkeypatch):
    endpoint = Endpoint("e", ("http://x/v1",), "m", api_key_env="EHW_TEST_KEY")
    monkeypatch.delenv("EHW_TEST_KEY", raising=False)
    with pytest.raises(EndpointError, match="EHW_TEST_KEY, which is not set"):
        endpoint.api_key()
    monkeypatch.setenv("EHW_TEST_KEY", "sk-live-123")
    assert endpoint.api_key() == "sk-live-123"
    assert "sk-live-123" not in repr(endpoint.public_dict())


def test_redact_url_drops_credentials():
    assert redact_url("https://user:sk-pass@host:8443/v1") == "https://host:8443/v1"
    assert redact_url("http://127.0.0.1:8077/v1") == "http://127.0.0.1:8077/v1"
    endpoint = Endpoint("e", ("https://u:secret@h/v1",), "m")
    assert "secret" not in repr(endpoint.public_dict())


def test_urls_hidden_from_a_command_line_come_back_from_the_environment(monkeypatch):
    """What start_cli_run does for a child: credential-bearing URLs (replicas, the judge's,
    the --flag=value form) are redacted in argv and put back from EHW_SECRET_URLS."""
    import json

    from core.engine.endpoints import SECRET_URLS_ENV_VAR, hide_url_secrets

    argv = [
        "--base-url",
        "http://a:1/v1?code=ka-1234,http://plain:2/v1",
        "--model",
        "m",
        "--judge-base-url=https://u:pw-9876@j/v1",
        "--judge-model",
        "jm",
    ]
    shown, hidden = hide_url_secrets(argv)
    assert shown[1] == "http://a:1/v1?code=***,http://plain:2/v1"
    assert shown[4] == "--judge-base-url=https://j/v1"
    assert "ka-1234" not in " ".join(shown) and "pw-9876" not in " ".join(shown)
    monkeypatch.setenv(SECRET_URLS_ENV_VAR, json.dumps(hidden))
    args = parse(shown)
    assert _endpoint(args, "model").base_urls == (
        "http://a:1/v1?code=ka-1234",
        "http://plain:2/v1",
    )
    assert _endpoint(args, "judge").base_urls == ("https://u:pw-9876@j/v1",)


@pytest.mark.parametrize("models", ["empty", "shipped"])
def test_a_cli_in_another_terminal_finds_the_model_serve_local_recorded(
    tmp_path, monkeypatch, models
):
    """start.sh starts serve-local on $EHW_LOCAL_PORT and exports EHW_LOCAL_URL to the app only;
    a CLI in a second terminal has neither, yet its 'local' endpoint must reach that server:
    serve-local records its URL and pid (the same function), the CLI reads the record. The
    "model" is the scripted server in its own process; a record whose process is gone is
    ignored (the default port again)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from core.engine.endpoints import local_endpoint, record_local_url
    from core.store import Store
    from tests.echo_task import create_item_set
    from tests.fake_openai import FakeProcess

    root = Path(__file__).resolve().parent.parent
    record = tmp_path / "local" / "serve-local.json"
    db = tmp_path / "r.duckdb"
    store = Store.open(db)
    create_item_set(store, "s", "echo", ["prompt 0", "prompt 1"])
    env = {k: v for k, v in os.environ.items() if k not in ("EHW_LOCAL_URL", "EHW_MODELS_FILE")}
    env["EHW_LOCAL_RECORD"] = str(record)
    # issue 31, point 2: the shipped models.toml names 'local' at port 8077; a live server's
    # record must still win over it (it went to 8077 and was refused)
    env["EHW_MODELS_FILE"] = str(write(tmp_path, "") if models == "empty" else MODELS_FILE)
    with FakeProcess({"latency": 0.01, "record": True}) as server:
        assert server.proc is not None
        monkeypatch.setenv("EHW_LOCAL_RECORD", str(record))
        record_local_url(server.url, server.proc.pid)
        second_terminal = subprocess.run(
            [sys.executable, "-m", "tests.echo_task", "--items", "s", "--run-name", "r"]
            + ["--quiet", "--db", str(db)],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert second_terminal.returncode == 0, second_terminal.stderr
    assert store.scalar("SELECT status FROM runs WHERE run_id = 'r'") == "done"
    assert store.scalar("SELECT endpoint FROM runs WHERE run_id = 'r'") == "local"
    params = store.scalar("SELECT json_extract_string(params, '$.endpoint.base_urls[0]') FROM runs")
    assert params == server.url
    # the server's process has ended: its record no longer moves 'local'
    monkeypatch.delenv("EHW_LOCAL_URL", raising=False)
    assert local_endpoint().base_urls == (LOCAL_DEFAULT_URL,)
    assert load_endpoints(MODELS_FILE)["local"].base_urls == (LOCAL_DEFAULT_URL,)


def test_local_endpoint_precedence_env_then_live_record_then_models_file(tmp_path, monkeypatch):
    """$EHW_LOCAL_URL > the URL a live serve-local recorded > [endpoints.local] in models.toml
    (its other settings — concurrency, timeout — stay the file's) > 127.0.0.1:8077."""
    from core.engine.endpoints import record_local_url

    models = write(
        tmp_path,
        '[endpoints.local]\nbase_url = "http://10.1.1.1:7000/v1"\nmodel = "m"\n'
        "max_concurrency = 3\n",
    )
    monkeypatch.delenv("EHW_LOCAL_URL", raising=False)
    monkeypatch.setenv("EHW_LOCAL_RECORD", str(tmp_path / "serve-local.json"))
    assert load_endpoints(models)["local"].base_urls == ("http://10.1.1.1:7000/v1",)
    record_local_url("http://127.0.0.1:9302/v1", os.getpid())  # a live process: this one
    local = load_endpoints(models)["local"]
    assert local.base_urls == ("http://127.0.0.1:9302/v1",) and local.max_concurrency == 3
    monkeypatch.setenv("EHW_LOCAL_URL", "http://127.0.0.1:9400/v1")
    assert load_endpoints(models)["local"].base_urls == ("http://127.0.0.1:9400/v1",)
