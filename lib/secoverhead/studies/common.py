"""What every study shares: its design parameters, how an external MySQL target is named, and running an
interleaved experiment into the study's output directory."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..experiment import Experiment
from ..measurement import Measurement
from ..results import ResultStore, default_output_dir
from ..servers import ExternalMySQL


@dataclass
class StudyParams:
    """Design parameters common to every study (each notebook's parameters cell repeats them)."""

    output_dir: str = ""
    experiment_id: str = ""
    seed: int = 0
    repetitions: int = 3
    warmup: int = 1
    max_minutes: float = 30

    def __post_init__(self) -> None:
        if not self.output_dir:
            self.output_dir = str(default_output_dir(self.experiment_id or "study"))
        if self.repetitions < 1 or self.warmup < 0 or self.max_minutes <= 0:
            raise ValueError("repetitions must be >= 1, warmup >= 0 and max_minutes > 0")


@dataclass
class ExternalMySQLParams:
    """How a study names a MySQL-protocol server it did not start (empty mysql_host: start MariaDB)."""

    mysql_host: str = ""
    mysql_port: int = 3306
    mysql_user: str = ""
    mysql_password_env: str = ""
    mysql_database: str = "sbtest"

    def external_mysql(self, *, tls: bool = False, ca_file: str = "", instance_class: str = "") -> ExternalMySQL:
        return ExternalMySQL(
            host=self.mysql_host,
            port=self.mysql_port,
            user=self.mysql_user,
            password_env=self.mysql_password_env or None,
            database=self.mysql_database or None,
            ca_file=ca_file or None,
            tls=tls,
            instance_class=instance_class or None,
        )


def run_experiment(
    p: StudyParams,
    experiment_id: str,
    *,
    arms: Sequence[str],
    measure: Callable[[str, dict], Measurement],
    servers: Mapping[str, Any],
    factors: Mapping[str, Sequence[Any]] | None = None,
    progress: bool = True,
) -> ResultStore:
    """Run (or resume) one interleaved experiment under p.output_dir and return its store."""
    store = ResultStore(Path(p.output_dir), experiment_id)
    Experiment(
        experiment_id,
        arms=list(arms),
        factors=factors,
        repetitions=p.repetitions,
        warmup=p.warmup,
        seed=p.seed,
        max_seconds=p.max_minutes * 60,
        store=store,
        parameters=vars(p),
        servers=servers,
        progress=progress,
    ).run(measure)
    return store
