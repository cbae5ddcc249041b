"""The study protocol: every study is one instance of it.

A study module exposes the same names:

    Params            its parameters, a dataclass that is also their schema (see params.py)
    ARMS              a declarative arm table
    run(p)            start (or check) servers, run the interleaved experiments, return a StudyResult
    claims(result)    the published claims checked against the runs: ClaimVerdicts
    ...               its tables and figures, functions of a StudyResult or of a Part

A StudyResult holds one Part per experiment (an engine, an instance profile, or the whole study). Claims are
functions of run tables, so they are unit-tested on synthetic runs.

This module is light (standard library only at import): the CLI imports study modules to check parameters
before anything heavy loads. Heavy parts of the library are imported where they are used.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

from .. import paths
from ..design import SPENDING_POWER
from ..errors import ConfigError
from ..params import ID_PATTERN, build, param
from ..servers import ExternalMongo, ExternalMySQL, Server

if TYPE_CHECKING:
    import pandas as pd

    from ..design import Looks
    from ..measurement import Measurement
    from ..results import ResultStore
    from ..verdicts import ClaimVerdict

_LABEL = r"[A-Za-z0-9]([A-Za-z0-9\-]{0,61}[A-Za-z0-9])?"
HOST_PATTERN = rf"(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*\.?|\[?[0-9A-Fa-f:.]+\]?"  # a DNS name or an IP address
MAX_MINUTES = 7 * 24 * 60


@dataclass
class StudyParams:
    """Design parameters every study has."""

    output_dir: str = param("", "where results go; the pipeline sets it (empty: results/interactive/)", internal=True)
    experiment_id: str = param("study", "name of the experiment directories", pattern=ID_PATTERN)
    seed: int = param(0, "seed of the randomised arm order (recorded)", min=0, max=2**31 - 1)
    repetitions: int = param(3, "measured rounds at most (each runs every arm once per cell)", min=1, max=1000)
    min_rounds: int = param(3, "rounds before the first look at the claims (sequential design)", min=2, max=1000)
    looks: int = param(3, "planned looks at the claims; rounds stop when all are decided", min=1, max=10)
    spending: float = param(
        SPENDING_POWER,
        "alpha spending over the looks: look k of K has spent alpha * (k/K)^spending; higher keeps more of it for "
        "the last look (narrower final intervals, early looks that decide only large effects)",
        min=0.5,
        max=8.0,
    )
    warmup: int = param(1, "warm-up rounds, kept and marked, never analysed", min=0, max=10)
    max_minutes: float = param(10.0, "time budget: no run starts after it", min=0.05, max=MAX_MINUTES)
    profile: bool = param(
        False, "take CPU profiles (perf, flame graphs) in a round of their own, outside the statistics"
    )
    design: str = param(
        "interleaved",
        "interleaved (arms one after another, a round a block) or duet (the baseline and each arm at the same "
        "time, where every arm has its own server)",
        choices=("interleaved", "duet"),
    )
    aa: bool = param(False, "A/A calibration, the baseline against an identical copy of itself (the noise floor)")
    plan_check: str = param(
        "warn",
        "before running, can the plan decide its claims (A/A noise priors)? size-up raises repetitions to what "
        "they need (the time budget still bounds the run), warn only says so, refuse stops with exit 2",
        choices=("size-up", "warn", "refuse"),
    )
    progress: str = param("auto", "progress bar: auto (when interactive), on, off", choices=("auto", "on", "off"))
    claim_errors: str = param(
        "per-claim",
        "error rate of the verdicts: per-claim (each claim spends alpha) or holm (Holm over the study's claims: "
        "at most alpha that any verdict of the study is wrong; fewer decide)",
        choices=("per-claim", "holm"),
    )

    DUET_ABLE = False  # whether every arm runs on a server of its own, so two arms can run at once

    def __post_init__(self) -> None:
        if self.design == "duet" and not self.DUET_ABLE:
            raise ConfigError("design duet needs a server per arm; in this study arms share servers (use interleaved)")
        if self.min_rounds > self.repetitions:
            self.min_rounds = self.repetitions if self.repetitions >= 2 else 2
        if self.repetitions < 2 and self.looks > 1:
            self.looks = 1

    @classmethod
    def from_namespace(cls, namespace: Mapping[str, Any], *, study: str = "") -> StudyParams:
        """Build from a notebook's globals (its parameters cell and papermill's injected cell), checked by the
        same schema the pipeline used."""
        names = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in namespace.items() if k in names}
        output_dir = values.pop("output_dir", "")
        p = build(cls, values, study=study or cls.__module__.rsplit(".", 1)[-1])
        p.output_dir = output_dir
        return p

    # -- what the pipeline asks before anything starts ----------------------------------------
    def external_servers(self) -> list[Server]:
        """Servers the user named (unstarted): preflight enters each to check reachability and credentials."""
        return []

    def check_clients(self) -> None:
        """After the external servers answered: log in with every client tool the run uses besides the Python
        drivers (sysbench), so credentials a tool cannot use fail before any load."""

    # part -> its share of the time budget, relative to the others (default 1): parts whose runs are slow get more
    PART_WEIGHTS: ClassVar[dict[str, float]] = {}

    def planned_runs(self) -> int:
        """Upper bound of the runs this plan can take (each study counts its arms and cells)."""
        return 0

    def claim_plans(self) -> list:
        """What the study's claims need (its module's PLANS: A/A noise priors and precisions); none for A/A
        runs and external servers, whose claims differ."""
        import sys

        if self.aa or self.external_servers():
            return []
        return list(getattr(sys.modules[type(self).__module__], "PLANS", ()))

    def feasibility(self) -> list:
        from ..design import check

        plans = self.claim_plans()
        return check(plans, self.look_schedule()) if plans and self.repetitions >= 2 else []

    def check_plan(self) -> list[str]:
        """Before anything starts: say which claims the plan cannot decide and, with plan_check size-up, raise
        repetitions (at most 1000) to what they need; refuse raises ConfigError. Returns the lines to print."""
        from ..design import size_up

        short = [f for f in self.feasibility() if not f.feasible]
        if not short:
            return []
        lines = [f.message(self.repetitions) for f in short]
        if self.plan_check == "refuse":
            raise ConfigError(lines[0] + " (plan_check: refuse)")
        if self.plan_check == "size-up":
            need = size_up(self.claim_plans(), self.look_schedule())
            if need is not None and need > self.repetitions:
                lines.append(
                    f"repetitions raised from {self.repetitions} to {need} (rounds still stop when the claims are "
                    f"decided, and no run starts after max_minutes={self.max_minutes:g})"
                )
                self.repetitions = need
            elif need is None:
                lines.append("no plan of at most 1000 rounds can decide it on this noise: running as planned")
        return lines

    def results_dir(self) -> Path:
        if self.output_dir:
            return Path(self.output_dir)
        import datetime as dt

        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
        self.output_dir = str(paths.interactive_results() / f"{self.experiment_id}-{stamp}")
        return Path(self.output_dir)

    def show_progress(self) -> bool:
        if self.progress != "auto":
            return self.progress == "on"
        return os.environ.get("SECOVERHEAD_HEADLESS") != "1" and "PYTEST_CURRENT_TEST" not in os.environ

    def part_design(self, part: str) -> str:
        """The design one part runs in (a study whose parts differ in servers may keep some interleaved)."""
        return self.design

    def budget(self) -> Budget:
        return Budget(self.max_minutes * 60)

    def look_schedule(self) -> Looks:
        from ..design import fixed, schedule

        if self.repetitions < 2:
            return fixed(self.repetitions)
        return schedule(self.min_rounds, self.repetitions, self.looks, power=self.spending)


def _check_host(name: str, host: str) -> None:
    import re

    if host and not re.fullmatch(HOST_PATTERN, host):
        raise ConfigError(f"{name} {host[:80]!r} is not a host name or address")


@dataclass
class ExternalMySQLParams:
    """How a study names a MySQL-protocol server it did not start (empty mysql_host: start MariaDB)."""

    mysql_host: str = param("", "your MySQL/MariaDB host (empty: an embedded MariaDB)", pattern=r"[^\s/@]*")
    mysql_port: int = param(3306, "its port", min=1, max=65535)
    mysql_user: str = param("", "user the load runs as", pattern=r"[^\s]{0,80}")
    mysql_password_env: str = param(
        "", "environment variable holding that user's password", pattern=r"[A-Za-z_][A-Za-z0-9_]*"
    )
    mysql_password_file: str = param("", "or a file holding it (first line)")
    mysql_database: str = param(
        "sbtest", "database the load uses (created tables only there)", pattern=r"[A-Za-z0-9_$]{1,64}"
    )
    mysql_ca_file: str = param(
        "", "CA certificate to verify TLS with (without one, TLS is not verified: said in the report)"
    )
    mysql_tls: bool = param(
        False, "TDE and audit: run the load on your server over TLS (the tls and auth studies run both ways)"
    )
    mysql_client_cert_file: str = param(
        "", "with mysql_tls: a client certificate your server's CA signed (sysbench 1.0 connects over TLS only so)"
    )
    mysql_client_key_file: str = param("", "with mysql_tls: that certificate's key")

    def check_mysql(self) -> None:
        _check_host("mysql_host", self.mysql_host)
        if self.mysql_tls and not (self.mysql_ca_file and self.mysql_client_cert_file and self.mysql_client_key_file):
            raise ConfigError(
                "mysql_tls: sysbench 1.0 connects over TLS only with your server's CA and a client certificate and "
                "key that CA signed: set mysql_ca_file, mysql_client_cert_file and mysql_client_key_file"
            )
        if self.mysql_host and not self.mysql_user:
            raise ConfigError("with mysql_host, set mysql_user (and mysql_password_env or mysql_password_file)")
        if self.mysql_host and not (self.mysql_password_env or self.mysql_password_file):
            raise ConfigError(
                "with mysql_host, name where the password lives: mysql_password_env or mysql_password_file"
            )

    def external_mysql(
        self,
        *,
        tls: bool | None = None,
        plain_too: bool = False,
        tables: Sequence[str] = (),
        instance_class: str = "",
        user: str = "",
        password_env: str = "",
        password_file: str = "",
    ) -> ExternalMySQL:
        """The user's server, unstarted. tls: None for mysql_tls; tables: what the run creates there (entering
        refuses when one of them exists and is not the project's)."""
        return ExternalMySQL(
            host=self.mysql_host,
            port=self.mysql_port,
            user=user or self.mysql_user,
            password_env=(password_env or self.mysql_password_env) or None,
            password_file=(password_file or self.mysql_password_file) or None,
            database=self.mysql_database or None,
            ca_file=self.mysql_ca_file or None,
            client_cert=self.mysql_client_cert_file or None,
            client_key=self.mysql_client_key_file or None,
            tls=self.mysql_tls if tls is None else tls,
            plain_too=plain_too,
            tables=tables,
            instance_class=instance_class or None,
        )


@dataclass
class ExternalMongoParams:
    """How a study names a MongoDB it did not start (empty mongo_uri: start FerretDB)."""

    mongo_uri: str = param(
        "", "mongodb://host:port/ of your MongoDB, without credentials (empty: an embedded FerretDB)"
    )
    mongo_username: str = param("", "user to authenticate as", pattern=r"[^\s]{0,80}")
    mongo_password_env: str = param("", "environment variable holding its password", pattern=r"[A-Za-z_][A-Za-z0-9_]*")
    mongo_password_file: str = param("", "or a file holding it (first line)")
    mongo_ca_file: str = param("", "CA certificate to verify TLS with")

    def check_mongo(self) -> None:
        if not self.mongo_uri:
            return
        try:
            parts = urlsplit(self.mongo_uri)
            port = parts.port
        except ValueError as exc:
            raise ConfigError(f"mongo_uri is not a valid URI: {exc}") from None
        if parts.scheme not in ("mongodb", "mongodb+srv"):
            raise ConfigError(
                f"mongo_uri must start with mongodb:// or mongodb+srv://, got {parts.scheme or 'no'} scheme"
            )
        if "@" in parts.netloc:
            raise ConfigError("mongo_uri must not hold credentials: use mongo_username and mongo_password_env")
        if not parts.hostname:
            raise ConfigError("mongo_uri names no host")
        _check_host("mongo_uri host", parts.hostname)
        if port is not None and not 0 < port < 65536:
            raise ConfigError(f"mongo_uri port {port} is outside 1..65535")
        if self.mongo_username and not (self.mongo_password_env or self.mongo_password_file):
            raise ConfigError(
                "with mongo_username, name where the password lives: mongo_password_env or mongo_password_file"
            )

    def external_mongo(self, mechanisms: Sequence[str] = ("SCRAM-SHA-256",)) -> ExternalMongo:
        return ExternalMongo(
            uri=self.mongo_uri,
            username=self.mongo_username or None,
            password_env=self.mongo_password_env or None,
            password_file=self.mongo_password_file or None,
            mechanisms=tuple(mechanisms),
            ca_file=self.mongo_ca_file or None,
        )


def aa_copy(arm: str) -> str:
    """The name of an A/A run's second arm: the same configuration as `arm`."""
    return f"{arm} (A/A copy)"


class Budget:
    """A study's time budget shared by its experiments: each gets its weight's share of what is left, so time
    an early-decided experiment did not need goes to the next."""

    def __init__(self, total_s: float) -> None:
        import time

        self.total_s, self._start, self._time = total_s, time.monotonic(), time.monotonic

    def left(self) -> float:
        return max(0.0, self.total_s - (self._time() - self._start))

    def share(self, weight: float = 1.0, weight_left: float = 1.0) -> float:
        return self.left() * weight / weight_left if weight_left > 0 else self.left()


class BothEngines(ExternalMySQLParams, ExternalMongoParams):
    """A study of MongoDB and MySQL: each engine embedded, or the user's server when named."""

    mongo_enabled: bool
    mysql_enabled: bool

    def mongo_mechanisms_used(self) -> tuple[str, ...]:
        raise NotImplementedError

    # tables the study creates in the user's MySQL database
    MYSQL_TABLES: ClassVar[tuple[str, ...]] = ()

    def both_ways_mysql(self) -> ExternalMySQL:
        """The user's MySQL for a study with plain and TLS arms: both must get through."""
        return self.external_mysql(tls=True, plain_too=True, tables=self.MYSQL_TABLES)

    def external_servers(self) -> list:
        out = []
        if self.mysql_enabled and self.mysql_host:
            out.append(self.both_ways_mysql())
        if self.mongo_enabled and self.mongo_uri:
            out.append(self.external_mongo(self.mongo_mechanisms_used()))
        return out

    def check_engines(self, *others: str) -> None:
        flags = ["mongo_enabled", "mysql_enabled", *others]
        if not any(getattr(self, f) for f in flags):
            raise ConfigError(f"enable at least one of {', '.join(flags)}")
        if self.mysql_tls:
            raise ConfigError("mysql_tls is for TDE and audit: this study runs its own plain and TLS arms")
        self.check_mysql()
        self.check_mongo()


# -- results ------------------------------------------------------------------------------------------
@dataclass
class Part:
    """One experiment of a study: an engine, an instance profile, or the whole study."""

    name: str
    store: ResultStore
    arms: list[str]
    servers: dict[str, dict[str, Any]]
    notes: list[str] = dataclasses.field(default_factory=list)
    extras: dict[str, Any] = dataclasses.field(default_factory=dict)

    def runs(self, include_profiling: bool = False) -> pd.DataFrame:
        return self.store.runs(include_profiling=include_profiling)

    def samples(self) -> pd.DataFrame:
        return self.store.samples()

    def metadata(self) -> dict[str, Any]:
        return self.store.metadata()

    @property
    def alpha(self) -> float:
        """The error budget the final evaluation spends (the runner records it; 0.05 for a fixed design)."""
        return float(self.metadata().get("final_alpha") or 0.05)


@dataclass
class StudyResult:
    """What run(p) returns: the parameters and one Part per experiment, in order."""

    study: str
    params: StudyParams
    parts: dict[str, Part]

    def __iter__(self) -> Iterator[Part]:
        return iter(self.parts.values())

    def __getitem__(self, name: str) -> Part:
        return self.parts[name]

    def __contains__(self, name: str) -> bool:
        return name in self.parts

    def items(self):
        return self.parts.items()

    @property
    def first(self) -> Part:
        return next(iter(self.parts.values()))

    def servers(self) -> dict[str, dict[str, Any]]:
        return {name: facts for part in self for name, facts in part.servers.items()}

    def notes(self) -> dict[str, str]:
        return {f"{part.name}: note {i + 1}": n for part in self for i, n in enumerate(part.notes)}


def judged(
    part: Part, judge: Callable[[pd.DataFrame, float], list[ClaimVerdict]], runs: pd.DataFrame | None = None
) -> list[ClaimVerdict]:
    """The part's claims on all its runs (`runs`, when the caller has read them already): the verdicts. Where
    duets were recorded as one-offs (outliers.py), each verdict carries what the same rule gives without them,
    labelled as a sensitivity check: it never decides."""
    runs = part.runs() if runs is None else runs
    verdicts = judge(runs, part.alpha)
    strays = part.metadata().get("outlier_duets") or []
    blocks = {d.get("block") for d in strays}
    if not verdicts or not blocks or "block" not in runs:
        return verdicts
    without = {v.id: v for v in judge(runs[~runs["block"].isin(blocks)], part.alpha)}
    fell = ", ".join(sorted({str(d.get("low_arm")) for d in strays}))
    for v in verdicts:
        if v.id in without:
            v.sensitivity = (
                f"without the {len(blocks)} one-off duet(s) (metric fell in: {fell}): {without[v.id].verdict} "
                "(a check, not the verdict)"
            )
    return verdicts


def study_verdicts(
    result: StudyResult, judge_of: Callable[[Part], Callable[[pd.DataFrame, float], list[ClaimVerdict]] | None]
) -> list[ClaimVerdict]:
    """Every claim of the study, each part judged by judge_of(part) (None: the part has no claims). With
    claim_errors=holm, Holm's step-down over all the study's claims: with k claims still undecided, each is
    judged at alpha/k (alpha: its part's final alpha); those decided leave, and the rest are judged again at
    alpha over the claims still left, until none more decides. A claim is decided at the first level where its
    rule decides, which is Holm's procedure on the level at which each claim first decides."""
    pairs = [(part, j, part.runs()) for part in result if (j := judge_of(part)) is not None]  # read once
    first = {(part.name, v.id): v for part, j, runs in pairs for v in judged(part, j, runs)}
    if result.params.claim_errors != "holm" or not first:
        return list(first.values())
    m, settled = len(first), {}
    latest: dict[tuple[str, str], ClaimVerdict] = {}
    while len(settled) < m:
        k = m - len(settled)
        latest = {(part.name, v.id): v for part, j, runs in pairs for v in j(runs, part.alpha / k)}
        newly = {key: v for key, v in latest.items() if key not in settled and v.decided}
        if not newly:
            break
        for v in newly.values():
            v.evidence += f" [Holm over the study's {m} claims: decided at alpha/{k}]"
        settled |= newly
    out = []
    for key, v in first.items():
        w = settled.get(key) or latest.get(key) or v
        if key not in settled:
            w.evidence += f" [Holm over the study's {m} claims: undecided at alpha/{m - len(settled)}]"
        w.sensitivity = v.sensitivity
        out.append(w)
    return out


# -- running ------------------------------------------------------------------------------------------
ClaimsFn = Callable[[Any, float], "list[ClaimVerdict]"]


def run_experiment(
    p: StudyParams,
    study: str,
    experiment_id: str,
    *,
    arms: Sequence[str],
    measure: Callable[[str, dict], Measurement],
    servers: Mapping[str, Any],
    factors: Mapping[str, Sequence[Any]] | None = None,
    judge: Callable[[pd.DataFrame, float], list[ClaimVerdict]] | None = None,
    profiler: Any = None,
    profile_factors: Sequence[Mapping[str, Any]] | None = None,
    profile_measure: Callable[[str, dict], Measurement] | None = None,
    calibration: Mapping[str, Any] | None = None,
    max_seconds: float | None = None,
    design: str | None = None,
    outlier: tuple[str, float] | None = None,
) -> ResultStore:
    """Run (or resume) one interleaved experiment under p's results directory and return its store.

    judge(runs, alpha): the part's claims at a look; their `needs` steer later rounds (sequential design).
    profiler: a profiling.Profiler, given when p.profile is on. max_seconds: this experiment's share of the
    study's time budget (default: all of it)."""
    from ..experiment import Experiment
    from ..results import ResultStore

    store = ResultStore(p.results_dir(), experiment_id)
    exp = Experiment(
        experiment_id,
        arms=list(arms),
        factors=factors,
        repetitions=p.repetitions,
        warmup=p.warmup,
        seed=p.seed,
        max_seconds=p.max_minutes * 60 if max_seconds is None else max_seconds,
        store=store,
        study=study,
        parameters={f.name: getattr(p, f.name) for f in dataclasses.fields(p)},
        servers=servers,
        calibration=calibration,
        progress=p.show_progress(),
        max_retakes=max(1, p.planned_runs() // 20),  # a noisy run may be taken again, within the budget
        design=design or p.design,
        outlier=outlier,
        min_rounds=p.look_schedule().rounds[0],  # a part without claims still gets the rounds of a first look
    )
    looks = p.look_schedule()

    def decide(index: int, alpha: float):
        verdicts = judge(store.runs(), alpha)
        from ..experiment import cell_of

        needed = set()
        for v in verdicts:
            if not v.decided:
                for need in v.needs:
                    need = dict(need)
                    needed.add(cell_of(need.pop("arm"), need))
        return needed

    if profiler is not None:
        profiler.bind(store.path / "profiles")
    exp.run(
        measure,
        looks=looks if judge is not None else None,
        decide=decide if judge is not None else None,
        profile=profiler.attach if profiler is not None else None,
        profile_factors=profile_factors,
        profile_measure=profile_measure,
    )
    return store


@dataclass
class PartPlan:
    """What one experiment of a study needs, built by the study inside the part's server stack."""

    arms: list[str]  # the baseline first
    measure: Callable[[str, dict], Measurement]
    facts: dict[str, Any]
    notes: list[str] = dataclasses.field(default_factory=list)
    factors: dict[str, Sequence[Any]] = dataclasses.field(default_factory=dict)
    servers: dict[str, Any] = dataclasses.field(default_factory=dict)  # arm -> server it ran on (profiles)
    judge: Callable[[pd.DataFrame, float], list[ClaimVerdict]] | None = None
    profile_factors: list[dict[str, Any]] | None = None
    ops_metric: str = "operations"  # the run metric counting operations (to express profiles per operation)
    profile_measure: Callable[[str, dict], Measurement] | None = None  # what a profiling run does, if not measure
    extras: dict[str, Any] = dataclasses.field(default_factory=dict)
    finish: Callable[[ResultStore], dict[str, Any]] | None = None  # while the servers still run: more extras
    outlier: tuple[str, float] | None = None  # duets: (metric, log deviation) marking a one-off duet (Experiment)


def run_parts(
    p: StudyParams, study: str, names: Sequence[str], plan: Callable[[str, contextlib.ExitStack], PartPlan]
) -> StudyResult:
    """The protocol's run: one machine-speed calibration, the time budget shared by the parts, and per part its
    servers (stopped when the part ends), its interleaved experiment, and its Part."""
    from .. import calibration
    from ..profiling import profiler_for

    cal = calibration.shared()
    budget = p.budget()
    weights = [p.PART_WEIGHTS.get(name, 1.0) for name in names]
    parts: dict[str, Part] = {}
    for i, name in enumerate(names):
        with contextlib.ExitStack() as stack:
            pp = plan(name, stack)
            exp_id = p.experiment_id if name == study else f"{p.experiment_id}-{name.lower()}"
            store = run_experiment(
                p,
                study,
                exp_id,
                arms=pp.arms,
                measure=pp.measure,
                servers=pp.facts,
                factors=pp.factors,
                judge=None if p.aa else pp.judge,  # an A/A run has no claims: it runs every planned round
                profiler=profiler_for(p, pp.servers, ops_metric=pp.ops_metric) if pp.servers else None,
                profile_factors=pp.profile_factors,
                profile_measure=pp.profile_measure,
                calibration=cal,
                max_seconds=budget.share(weights[i], sum(weights[i:])),
                design=p.part_design(name),
                outlier=pp.outlier,
            )
            extras = {"calibration": cal, **pp.extras, **(pp.finish(store) if pp.finish else {})}
            store.update_metadata(
                notes=pp.notes, **{k: v for k, v in extras.items() if k != "calibration" and _plain(v)}
            )
            parts[name] = Part(name, store, pp.arms, pp.facts, pp.notes, extras)
    return StudyResult(study, p, parts)


def _plain(value: Any) -> bool:
    return isinstance(value, dict | list | str | int | float | bool)


def published(study: str) -> pd.DataFrame:
    """The original study's figures, one row per figure, with units and sources."""
    import pandas as pd

    return pd.read_csv(paths.PUBLISHED / f"{study}.csv")
