"""The generic resumable runner, in four steps: `spec` (what a run is, its name and flags),
`plan` (its items, what is done, its run row), `execute` (the workers, flushes and signals) and
`report` (its summary). `execute_run` is the entry point; the task contract is core.engine.task."""

from core.engine.runner.checks import pid_alive
from core.engine.runner.execute import (
    execute_run,
    heartbeat_due,
    install_stop_signals,
    progress_bar,
    remove_stop_signals,
)
from core.engine.runner.report import RunSummary, unsaved_error
from core.engine.runner.spec import (
    RUN_NAME_RE,
    RunError,
    RunSpec,
    add_run_args,
    check_resume,
    default_run_name,
    secret_values,
    spec_from_args,
)
from core.engine.task import RunContext, Task, UnitResult, WorkUnit

__all__ = [
    "RUN_NAME_RE",
    "RunContext",
    "RunError",
    "RunSpec",
    "RunSummary",
    "Task",
    "UnitResult",
    "WorkUnit",
    "add_run_args",
    "check_resume",
    "default_run_name",
    "execute_run",
    "heartbeat_due",
    "install_stop_signals",
    "pid_alive",
    "progress_bar",
    "remove_stop_signals",
    "secret_values",
    "spec_from_args",
    "unsaved_error",
]
