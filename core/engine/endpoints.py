"""Model endpoints: where a model lives, how hard it may be driven, what it costs.

Every model is reached through the OpenAI chat-completions protocol, so an endpoint is just a
base URL (or several replica URLs serving the same model), a model id, the *name* of the
environment variable holding its API key (never the key itself: keys must not reach the
database, logs or exports), a concurrency limit and optional prices.

Endpoints are named in ``data/models.toml`` (or the file in ``$EHW_MODELS_FILE``)::

    [endpoints.my-vllm]
    base_urls = ["http://10.0.0.5:8000/v1", "http://10.0.0.6:8000/v1"]   # replicas
    model = "Qwen/Qwen2.5-7B-Instruct"
    api_key_env = "VLLM_API_KEY"        # optional; the variable's NAME
    max_concurrency = 64                # total in-flight requests over all replicas
    price_in_per_mtok = 0.0             # optional, USD per million tokens
    price_out_per_mtok = 0.0
    timeout_s = 120
    max_retries = 5                     # retries of a failed call (backoff in between)
    weak = false

"local" (SmolLM2-135M-Instruct served by ``python -m core serve-local``) always exists and is
the default; ``$EHW_LOCAL_URL`` moves it, else the URL a running serve-local recorded in
data/local/serve-local.json (so a terminal without start.sh's environment finds the model
start.sh started on $EHW_LOCAL_PORT), else the URL `[endpoints.local]` of models.toml names,
else 127.0.0.1:8077 — in that order, also when models.toml names 'local'.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from core.store import PROJECT_ROOT

MODELS_FILE = PROJECT_ROOT / "data" / "models.toml"
MODELS_ENV_VAR = "EHW_MODELS_FILE"
LOCAL_URL_ENV_VAR = "EHW_LOCAL_URL"
LOCAL_NAME = "local"
LOCAL_MODEL = "SmolLM2-135M-Instruct"
LOCAL_DEFAULT_URL = "http://127.0.0.1:8077/v1"
LOCAL_RECORD_ENV_VAR = "EHW_LOCAL_RECORD"  # where serve-local records its URL (tests move it)
LOCAL_RECORD_FILE = PROJECT_ROOT / "data" / "local" / "serve-local.json"


class EndpointError(ValueError):
    """A misconfigured endpoint; the message names the file/flag and what to do."""


@dataclass(frozen=True)
class Endpoint:
    """One OpenAI-compatible model endpoint (possibly several replicas of it)."""

    name: str
    base_urls: tuple[str, ...]
    model: str
    api_key_env: str | None = None
    max_concurrency: int = 8
    price_in_per_mtok: float | None = None
    price_out_per_mtok: float | None = None
    weak: bool = False
    timeout_s: float = 60.0
    max_retries: int = 5

    def __post_init__(self) -> None:
        if isinstance(self.base_urls, str):  # forgiving: a single URL
            object.__setattr__(self, "base_urls", (self.base_urls,))
        else:
            object.__setattr__(self, "base_urls", tuple(self.base_urls))
        if not self.base_urls:
            raise EndpointError(f"endpoint {self.name!r} has no base URL")
        if not self.model:
            raise EndpointError(f"endpoint {self.name!r} has no model id")
        if int(self.max_concurrency) < 1:
            raise EndpointError(f"endpoint {self.name!r}: max_concurrency must be ≥ 1")
        if int(self.max_retries) < 0:
            raise EndpointError(f"endpoint {self.name!r}: max_retries must be ≥ 0")
        for url in self.base_urls:
            problem = url_problem(url)
            if problem:
                raise EndpointError(f"endpoint {self.name!r}: base URL {problem}")

    # -- secrets --------------------------------------------------------------------------
    def api_key(self) -> str | None:
        """The key from the environment, or None when the endpoint needs none.

        Raises EndpointError when a variable is named but unset, so a run fails before its
        first call instead of collecting hundreds of 401s.
        """
        if not self.api_key_env:
            return None
        value = os.environ.get(self.api_key_env)
        if not value:
            raise EndpointError(
                f"endpoint {self.name!r} reads its API key from the environment variable "
                f"{self.api_key_env}, which is not set. Export it (export {self.api_key_env}=…) "
                "and run again."
            )
        return value

    # -- accounting -----------------------------------------------------------------------
    def cost(self, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
        """USD for one call, or None when the endpoint has no prices (unknown ≠ free)."""
        if self.price_in_per_mtok is None and self.price_out_per_mtok is None:
            return None
        return (
            (prompt_tokens or 0) * (self.price_in_per_mtok or 0.0)
            + (completion_tokens or 0) * (self.price_out_per_mtok or 0.0)
        ) / 1e6

    def public_dict(self) -> dict[str, Any]:
        """What may be stored with a run: no key, no credentials embedded in URLs."""
        return {
            "name": self.name,
            "base_urls": [redact_url(u) for u in self.base_urls],
            "model": self.model,
            "api_key_env": self.api_key_env,
            "max_concurrency": self.max_concurrency,
            "price_in_per_mtok": self.price_in_per_mtok,
            "price_out_per_mtok": self.price_out_per_mtok,
            "weak": self.weak,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
        }


WEAK_MODEL_HINTS = ("smollm",)


def is_weak(endpoint: Any) -> bool:
    """The shipped SmolLM2 endpoint, or any endpoint serving a SmolLM model: too weak to judge
    (it marks every label true), so pages warn and a person judges by default."""
    if endpoint is None:
        return False
    return bool(getattr(endpoint, "weak", False)) or any(
        h in str(getattr(endpoint, "model", "")).lower() for h in WEAK_MODEL_HINTS
    )


# Query parameters that carry credentials (Azure's api-key, Google's key, signed URLs' sig,
# Azure Functions' code...): matched on the parameter's name, case-insensitively, with - or _
# between words. `code` only as the whole name: "country_code" is no key.
SECRET_QUERY_PARAM = re.compile(
    r"^(?:(.*[-_])?(api[-_]?key|apikey|key|token|access[-_]?token|id[-_]?token|auth|"
    r"authorization|sig|signature|secret|client[-_]?secret|password|passwd|pwd|"
    r"credentials?|session)|code)$",
    re.IGNORECASE,
)


def _query_pairs(query: str) -> list[tuple[str, str]]:
    return parse_qsl(query, keep_blank_values=True)


def redact_url(url: str) -> str:
    """The URL without user:password@ and with credential query values replaced by *** (a key
    can hide in either; the result may be stored, logged and printed)."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.username or parts.password:
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        netloc = host
    query = parts.query
    if query and any(SECRET_QUERY_PARAM.match(k) for k, _ in _query_pairs(query)):
        query = "&".join(
            f"{quote(k, safe='')}=***" if SECRET_QUERY_PARAM.match(k) else urlencode([(k, v)])
            for k, v in _query_pairs(query)
        )
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def url_problem(url: str) -> str | None:
    """Why `url` cannot be a base URL (e.g. port out of range, an unclosed IPv6 bracket), or
    None. Checked where URLs come in, so a bad one is one message, not a traceback from
    urllib later (redacting, naming the endpoint, sending)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port out of range or not a number
    except ValueError as exc:
        shown = re.sub(r"//[^/@?#]*@", "//", url).split("?", 1)[0]  # no user:pass, no query
        return f"{shown!r} is not a valid URL ({exc})"
    return None


def url_secrets(url: str) -> list[str]:
    """The credential values inside a URL (password, user, secret query values), raw and
    percent-encoded, so text that quotes the URL or the value can be scrubbed."""
    parts = urlsplit(url)
    values = [parts.password or "", parts.username or "" if parts.password else ""]
    values += [v for k, v in _query_pairs(parts.query) if SECRET_QUERY_PARAM.match(k)]
    out: list[str] = []
    for value in values:
        if len(value) >= 4:  # "1" or "" would scrub half of every message
            out += [value] + ([quote(value, safe="")] if quote(value, safe="") != value else [])
    return out


# The app starts runs as child processes whose command line every local user can read
# (/proc/PID/cmdline, ps): a base URL with a key in it travels in this environment variable
# (readable by the child's owner only), the command line shows it redacted.
SECRET_URLS_ENV_VAR = "EHW_SECRET_URLS"
URL_FLAGS = ("--base-url", "--judge-base-url")


def hide_url_secrets(args: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """`args` with every base URL that carries credentials redacted, and those URLs in full
    per flag (in order), for SECRET_URLS_ENV_VAR: `endpoint_from_args` puts them back."""
    out = list(args)
    hidden: dict[str, list[str]] = {}
    for n, arg in enumerate(out):
        flag, eq, value = arg.partition("=")
        if eq and flag in URL_FLAGS:
            prefix = flag + "="
        elif n and out[n - 1] in URL_FLAGS and not arg.startswith("-"):
            flag, prefix, value = out[n - 1], "", arg
        else:
            continue
        chunks = []
        for chunk in value.split(","):
            shown = redact_url(chunk.strip()) if chunk.strip() else chunk
            if shown != chunk.strip():
                hidden.setdefault(flag, []).append(chunk.strip())
                chunk = shown
            chunks.append(chunk)
        out[n] = prefix + ",".join(chunks)
    return out, hidden


def _reveal_urls(flag: str, urls: list[str]) -> list[str]:
    """The URLs given after `flag` with the redacted ones the parent hid (hide_url_secrets)
    put back from SECRET_URLS_ENV_VAR; unchanged without it."""
    raw = os.environ.get(SECRET_URLS_ENV_VAR)
    if not raw:
        return urls
    try:
        pending = [str(u) for u in (json.loads(raw) or {}).get(flag) or []]
    except (ValueError, AttributeError):
        return urls
    out = []
    for url in urls:
        if pending and url == redact_url(pending[0]):
            url = pending.pop(0)
        out.append(url)
    return out


def split_query(url: str) -> tuple[str, dict[str, str]]:
    """(URL without its query, query parameters): the openai client appends paths to its
    base URL, so a query (Azure's ?api-version=, a ?key=) must travel as default_query."""
    parts = urlsplit(url)
    if not parts.query:
        return url, {}
    return (
        urlunsplit((parts.scheme, parts.netloc, parts.path, "", parts.fragment)),
        dict(_query_pairs(parts.query)),
    )


ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def looks_like_key(value: str) -> bool:
    """A value given where a variable NAME belongs that is probably the key itself: not a valid
    name, or long, mixed-case and with digits (names are by convention UPPER_CASE words)."""
    if not ENV_NAME_RE.match(value):
        return True
    return (
        len(value) >= 20
        and any(c.isdigit() for c in value)
        and any(c.islower() for c in value)
        and any(c.isupper() for c in value)
    )


def check_key_env_name(value: str | None, where: str) -> str | None:
    """Refuse an API key given where its variable's name belongs, without echoing it."""
    if value is None or value == "":
        return None
    if looks_like_key(str(value)):
        raise EndpointError(
            f"the value given to {where} is not a valid environment variable name (it looks "
            "like a key; pass the NAME of the variable that holds the key, e.g. "
            "OPENAI_API_KEY, after `export OPENAI_API_KEY=…`)"
        )
    return str(value)


def local_record_path() -> Path:
    return Path(os.environ.get(LOCAL_RECORD_ENV_VAR) or LOCAL_RECORD_FILE)


def record_local_url(url: str, pid: int | None = None) -> Path:
    """serve-local's note of where it serves (and its pid): a CLI in another terminal, which
    lacks start.sh's $EHW_LOCAL_URL, reads it to find the model on a non-default port."""
    path = local_record_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(path.name + f".{os.getpid()}.tmp")
    temp.write_text(json.dumps({"url": url, "pid": pid or os.getpid()}), encoding="utf-8")
    os.replace(temp, path)  # whole or absent: a reader never sees half a record
    return path


def forget_local_url(pid: int | None = None) -> None:
    """Remove the record when it is this server's (another serve-local may have replaced it)."""
    path = local_record_path()
    try:
        if json.loads(path.read_text(encoding="utf-8")).get("pid") == (pid or os.getpid()):
            path.unlink()
    except (OSError, ValueError, AttributeError):
        pass


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True
    except (OSError, ValueError, OverflowError):
        return False
    return True


def recorded_local_url() -> str | None:
    """The URL a running serve-local recorded; None without a record or when its process is
    gone (a crashed server leaves a stale record behind)."""
    try:
        record = json.loads(local_record_path().read_text(encoding="utf-8"))
        url, pid = str(record["url"]), int(record["pid"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return url if url and _process_alive(pid) else None


def local_endpoint() -> Endpoint:
    """The shipped SmolLM2 server: weak, 2 slots (it runs on the same 2-core machine).
    Where: $EHW_LOCAL_URL, else what a running serve-local recorded, else port 8077."""
    return Endpoint(
        name=LOCAL_NAME,
        base_urls=(os.environ.get(LOCAL_URL_ENV_VAR) or recorded_local_url() or LOCAL_DEFAULT_URL,),
        model=LOCAL_MODEL,
        max_concurrency=2,
        weak=True,
        timeout_s=120.0,
    )


_FIELDS = {
    "base_url",
    "base_urls",
    "model",
    "api_key_env",
    "max_concurrency",
    "price_in_per_mtok",
    "price_out_per_mtok",
    "weak",
    "timeout_s",
    "max_retries",
}


def _endpoint_from_table(name: str, table: dict[str, Any], origin: str) -> Endpoint:
    where = f"{origin}: [endpoints.{name}]"
    if not isinstance(table, dict):
        raise EndpointError(f"{where} must be a table")
    secret_like = [k for k in table if re.search(r"(^|_)(api_?key|token|secret|password)$", k)]
    if secret_like:
        raise EndpointError(
            f"{where} has {', '.join(secret_like)}: API keys are never written in files. Put "
            "the key in an environment variable and name that variable with api_key_env."
        )
    unknown = sorted(set(table) - _FIELDS)
    if unknown:
        raise EndpointError(
            f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_FIELDS))}"
        )
    urls: list[str] = []
    if "base_url" in table:
        urls.append(str(table["base_url"]))
    if "base_urls" in table:
        if not isinstance(table["base_urls"], list):
            raise EndpointError(f"{where}: base_urls must be a list of URLs")
        urls.extend(str(u) for u in table["base_urls"])
    if not urls:
        raise EndpointError(f"{where}: needs base_url (or base_urls for replicas)")
    if "model" not in table:
        raise EndpointError(f"{where}: needs model (the id the server expects)")
    try:
        return Endpoint(
            name=name,
            base_urls=tuple(urls),
            model=str(table["model"]),
            api_key_env=check_key_env_name(
                table.get("api_key_env") or None, f"{where} api_key_env"
            ),
            max_concurrency=int(table.get("max_concurrency", 8)),
            price_in_per_mtok=_opt_float(table.get("price_in_per_mtok")),
            price_out_per_mtok=_opt_float(table.get("price_out_per_mtok")),
            weak=bool(table.get("weak", False)),
            timeout_s=float(table.get("timeout_s", 60.0)),
            max_retries=int(table.get("max_retries", 5)),
        )
    except (TypeError, ValueError) as exc:
        raise EndpointError(f"{where}: {exc}") from exc


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


def models_file(path: str | os.PathLike[str] | None = None) -> Path:
    if path:
        return Path(path)
    env = os.environ.get(MODELS_ENV_VAR)
    return Path(env) if env else MODELS_FILE


def load_endpoints(path: str | os.PathLike[str] | None = None) -> dict[str, Endpoint]:
    """Named endpoints from models.toml; "local" is always present (the file may override it)."""
    endpoints: dict[str, Endpoint] = {LOCAL_NAME: local_endpoint()}
    file = models_file(path)
    if not file.exists():
        if path or os.environ.get(MODELS_ENV_VAR):
            raise EndpointError(f"models file {file} does not exist")
        return endpoints
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise EndpointError(f"{file} is not valid TOML: {exc}") from exc
    tables = data.get("endpoints", {})
    if not isinstance(tables, dict):
        raise EndpointError(f"{file}: [endpoints] must be a table of tables")
    for name, table in tables.items():
        endpoint = _endpoint_from_table(name, table, str(file))
        if name == LOCAL_NAME:
            # where the local model is: $EHW_LOCAL_URL, else the URL a live serve-local
            # recorded (start.sh on $EHW_LOCAL_PORT, seen from another terminal), else the
            # file's; the file's other settings (concurrency, timeout) stay
            where = os.environ.get(LOCAL_URL_ENV_VAR) or recorded_local_url()
            if where:
                endpoint = replace(endpoint, base_urls=(where,))
        endpoints[name] = endpoint
    return endpoints


# -- command-line flags ---------------------------------------------------------------------


def _flag(role: str, name: str) -> str:
    return f"--{name}" if role == "model" else f"--{role}-{name}"


def _dest(role: str, name: str) -> str:
    return name.replace("-", "_") if role == "model" else f"{role}_{name.replace('-', '_')}"


def add_endpoint_args(parser: argparse.ArgumentParser, role: str = "model") -> None:
    """--endpoint NAME | --base-url URL --model ID [--api-key-env VAR] (judge: --judge-…)."""
    if role not in ("model", "judge"):
        raise ValueError("role must be 'model' or 'judge'")
    what = "model under test" if role == "model" else "judge model"
    group = parser.add_argument_group(f"{what} endpoint")
    default_note = (
        f" (default: {LOCAL_NAME}, the shipped SmolLM2 server)"
        if role == "model"
        else " (default: the model's endpoint)"
    )
    group.add_argument(
        _flag(role, "endpoint"),
        dest=_dest(role, "endpoint"),
        metavar="NAME",
        help=f"a name from data/models.toml or ${MODELS_ENV_VAR}{default_note}",
    )
    group.add_argument(
        _flag(role, "base-url"),
        dest=_dest(role, "base_url"),
        metavar="URL",
        action="append",
        help="OpenAI-compatible base URL, e.g. http://host:8000/v1; repeat (or "
        "separate by commas) for replicas",
    )
    group.add_argument(
        _flag(role, "model"),
        dest=_dest(role, "model"),
        metavar="ID",
        help="model id (with --base-url; overrides a named endpoint's model)",
    )
    group.add_argument(
        _flag(role, "api-key-env"),
        dest=_dest(role, "api_key_env"),
        metavar="VAR",
        help="name of the environment variable holding the key",
    )
    if role == "model" and not any(a.dest == "models_file" for a in parser._actions):
        parser.add_argument(
            "--models-file",
            default=None,
            metavar="PATH",
            help=f"endpoints file (default: ${MODELS_ENV_VAR} or data/models.toml)",
        )


def endpoint_from_args(args: argparse.Namespace, role: str = "model") -> Endpoint | None:
    """The endpoint the flags describe.

    model: defaults to "local". judge: None when no judge flag was given (the caller decides;
    `spec_from_args` then uses the model's endpoint). A bad flag exits with a clear message,
    since this is only called from command mains.
    """
    try:
        return _endpoint_from_args(args, role)
    except EndpointError as exc:
        raise SystemExit(f"error: {exc}") from exc


def _endpoint_from_args(args: argparse.Namespace, role: str) -> Endpoint | None:
    name = getattr(args, _dest(role, "endpoint"), None)
    urls_raw = getattr(args, _dest(role, "base_url"), None) or []
    model = getattr(args, _dest(role, "model"), None)
    key_env = check_key_env_name(
        getattr(args, _dest(role, "api_key_env"), None), _flag(role, "api-key-env")
    )
    urls = [u.strip() for chunk in urls_raw for u in str(chunk).split(",") if u.strip()]
    urls = _reveal_urls(_flag(role, "base-url"), urls)
    if name and urls:
        raise EndpointError(
            f"give either {_flag(role, 'endpoint')} or {_flag(role, 'base-url')}, not both"
        )
    for url in urls:
        problem = url_problem(url)
        if problem:
            raise EndpointError(f"{_flag(role, 'base-url')} {problem}")
    if urls:
        if not model:
            raise EndpointError(
                f"{_flag(role, 'base-url')} needs {_flag(role, 'model')} ID "
                "(the model id the server expects)"
            )
        host = urlsplit(urls[0]).hostname or "adhoc"
        port = urlsplit(urls[0]).port
        return Endpoint(
            name=f"{host}:{port}" if port else host,
            base_urls=tuple(urls),
            model=model,
            api_key_env=key_env or None,
        )
    if not name:
        if role == "judge" and not model and not key_env:
            return None
        name = LOCAL_NAME
    endpoints = load_endpoints(getattr(args, "models_file", None))
    if name not in endpoints:
        raise EndpointError(
            f"unknown endpoint {name!r}; known: {', '.join(sorted(endpoints))} "
            f"(defined in {models_file(getattr(args, 'models_file', None))})"
        )
    endpoint = endpoints[name]
    if model:
        endpoint = replace(endpoint, model=model)
    if key_env:
        endpoint = replace(endpoint, api_key_env=key_env)
    return endpoint


__all__ = [
    "Endpoint",
    "EndpointError",
    "load_endpoints",
    "local_endpoint",
    "add_endpoint_args",
    "endpoint_from_args",
    "redact_url",
    "url_secrets",
    "hide_url_secrets",
    "split_query",
    "check_key_env_name",
]
