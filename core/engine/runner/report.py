"""What a run reports: its summary (counts, tokens, cost, time), the printed report, its end."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.engine.client import ModelClient
from core.engine.runner.spec import RunError, RunSpec

if TYPE_CHECKING:  # named in annotations only (execute imports this module)
    pass


@dataclass
class RunSummary:
    """What a run did: this session's work and the run's totals in the database."""

    run_id: str
    status: str
    planned: int
    done: int  # units complete in the database (all sessions)
    failed: int  # units whose last attempt failed (retried on re-run)
    skipped: int  # already done before this session
    processed: int  # units processed in this session
    calls: int = 0  # model + judge requests of this session (cached included)
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    latency_ms_p50: float | None = None
    latency_ms_p95: float | None = None
    elapsed_s: float = 0.0

    @property
    def units_per_s(self) -> float:
        return self.processed / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def calls_per_s(self) -> float:
        return self.calls / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def table(self) -> str:
        """The end-of-run summary printed by the CLI."""
        cost = "n/a (no prices)" if self.cost_usd is None else f"${self.cost_usd:.4f}"
        lat = (
            "n/a"
            if self.latency_ms_p50 is None
            else f"p50 {self.latency_ms_p50:.0f} ms, p95 {self.latency_ms_p95:.0f} ms"
        )
        rows = [
            ("run", self.run_id),
            ("status", self.status),
            ("done / planned", f"{self.done} / {self.planned}"),
            ("failed (re-run to retry)", str(self.failed)),
            ("skipped (already done)", str(self.skipped)),
            (
                "processed now",
                f"{self.processed} in {self.elapsed_s:.1f} s ({self.units_per_s:.1f} units/s)",
            ),
            (
                "calls now",
                f"{self.calls} ({self.cached_calls} from cache, {self.calls_per_s:.1f}/s)",
            ),
            ("tokens now", f"{self.prompt_tokens} in + {self.completion_tokens} out"),
            ("cost now", cost),
            ("latency (answered calls)", lat),
        ]
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"  {k.ljust(width)}  {v}" for k, v in rows)

    def __str__(self) -> str:
        return (
            f"run {self.run_id}: {self.status}, {self.done}/{self.planned} done, "
            f"{self.failed} failed"
        )


def _circuit_notes(*clients: ModelClient | None) -> list[str]:
    """Each endpoint that stopped answering (refused connections in a row), said once."""
    return list(
        dict.fromkeys(
            note for c in clients if c is not None for note in [c.circuit_message()] if note
        )
    )


def unsaved_error(spec: RunSpec, exc: BaseException, n_unsaved: int) -> RunError:
    """The run's last flush failed for good: one line with the cause and how to resume."""
    return RunError(
        f"run {spec.run_id!r} stopped (status interrupted): {n_unsaved} finished "
        f"item(s) could not be saved ({exc}). They will be asked again: re-run with "
        f"--run-name {spec.run_id} to resume"
    )


def _report(summary: RunSummary, progress: bool, *clients: ModelClient | None) -> None:
    """What the person at the terminal needs: endpoints that stopped answering, the summary
    table and how to retry or resume."""
    for note in _circuit_notes(*clients):
        print(f"error: {note}", file=sys.stderr)
    if not progress:
        return
    print(summary.table(), file=sys.stderr)
    if summary.status == "failed":
        print(
            f"  {summary.failed} item(s) failed; re-run with --run-name {summary.run_id} "
            "to retry them",
            file=sys.stderr,
        )
    elif summary.status == "cancelled":
        print(f"  resume with --run-name {summary.run_id}", file=sys.stderr)
