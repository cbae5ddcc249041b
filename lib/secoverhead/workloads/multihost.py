"""One run's load from several client hosts at once (one client host cannot load a big server: a SCRAM connection
costs the client 4.7x the server's CPU). The load step runs on N Dask workers that start together at a barrier;
each records its own throughput, client CPU, samples and latency histogram; the run's result merges them:
operations and throughput summed, histograms merged (percentiles from the merged counts, never averaged), client
CPU summed. Server CPU stays measured where the server is (the coordinator's meter, over the whole barrier span).
A host that started late or stopped early (by more than `max_skew`) would have loaded the server alone for a while:
the run is invalid and says so, rather than averaging two different loads.

The barrier: each host prepares its load (processes forked, connections made where pooled), sets its `ready`
event, and waits for `go`; the coordinator sets `go` once every host is ready, so the hosts' clocks start within
the event's delivery time of one another."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from secoverhead.core.errors import SecoverheadError
from secoverhead.core.paths import SCHEDULER_ENV
from secoverhead.host.metrics import CpuMeter, CpuSource
from secoverhead.workloads.histogram import Histogram
from secoverhead.workloads.measurement import Measurement

MAX_SKEW_FRACTION = 0.10  # of the run's span: hosts must start, and stop, within this of one another
MIN_SKEW_S = 0.25
READY_TIMEOUT_S = 120.0


class InvalidRun(SecoverheadError):
    """The hosts did not load the server together: the run is not a measurement of their joint load."""


@dataclass
class HostLoad:
    """What one host measured in one run."""

    host: str
    metrics: dict[str, Any]
    histogram: dict[str, int]
    started: float  # wall clock (time.time) when its load started
    ended: float
    samples: pd.DataFrame | None = None


def _on_host(run_id: str, load: Callable[..., Measurement], args: tuple, kwargs: dict) -> HostLoad:
    """Runs on a worker: prepare, meet the others at the barrier, load, report."""
    from distributed import Event, get_worker  # deferred: only on a Dask worker

    host = str(get_worker().name)

    def ready() -> None:
        Event(f"{run_id}-ready-{host}").set()
        if not Event(f"{run_id}-go").wait(READY_TIMEOUT_S):
            raise InvalidRun(f"{host}: the other hosts never got ready")

    m = load(*args, ready=ready, **kwargs)
    lat = m.samples["latency_ms"] if m.samples is not None and "latency_ms" in m.samples else []
    return HostLoad(
        host, m.metrics, Histogram.of(lat).to_dict(), m.info["wall_started"], m.info["wall_ended"], m.samples
    )


def run_on_hosts(
    hosts: Sequence[str],
    load: Callable[..., Measurement],
    *args: Any,
    server_cpu: CpuSource | Sequence[int] | None = None,
    client: Any = None,
    **kwargs: Any,
) -> Measurement:
    """The load function on every host at once (it must call its `ready` before its clock starts and record
    wall_started / wall_ended in its info), merged. client: a Dask client (default: the current one)."""
    client = client or cluster_client()
    run_id = f"secoverhead-load-{uuid.uuid4().hex[:12]}"
    futures = [
        client.submit(
            _on_host,
            run_id,
            load,
            args,
            kwargs,
            workers=[h],
            allow_other_workers=False,
            pure=False,
            key=f"{run_id}-{h}",
        )
        for h in hosts
    ]
    from distributed import Event  # deferred: Dask is heavy

    with CpuMeter(server_cpu) as meter:
        for h in hosts:
            if not Event(f"{run_id}-ready-{h}", client=client).wait(READY_TIMEOUT_S):
                for f in futures:
                    f.cancel()
                raise InvalidRun(f"host {h} never got ready to load")
        Event(f"{run_id}-go", client=client).set()
        results = client.gather(futures)
    return merge(results, meter)


_CLIENT: Any = None


def cluster_client() -> Any:
    """A Dask client of the scheduler the fleet named (SECOVERHEAD_SCHEDULER), made once per process."""
    global _CLIENT
    from distributed import Client  # deferred: Dask is heavy

    if _CLIENT is None:
        address = os.environ.get(SCHEDULER_ENV)
        if not address:
            raise SecoverheadError(f"a load from several hosts needs a Dask scheduler: {SCHEDULER_ENV} is not set")
        _CLIENT = Client(address, timeout=30, set_as_default=False)
    return _CLIENT


def merge(results: Sequence[HostLoad], meter: CpuMeter | None = None) -> Measurement:
    """Throughput and operations summed, histograms merged, client CPU summed; invalid if the hosts' spans
    disagree. Server CPU per operation over all of them, from the coordinator's meter."""
    if not results:
        raise InvalidRun("no host reported")
    starts = [r.started for r in results]
    ends = [r.ended for r in results]
    span = max(ends) - min(starts)
    allowed = max(MIN_SKEW_S, MAX_SKEW_FRACTION * span)
    late = [r.host for r in results if r.started - min(starts) > allowed]
    early = [r.host for r in results if max(ends) - r.ended > allowed]
    if late or early:
        why = "; ".join(
            [f"{h} started {max(starts) - min(starts):.2f} s late" for h in late]
            + [f"{h} stopped {max(ends) - min(ends):.2f} s early" for h in early]
        )
        raise InvalidRun(f"the hosts did not load together ({why}; allowed {allowed:.2f} s): run not counted")
    hist = Histogram().merge(*(Histogram.from_dict(r.histogram) for r in results))
    ops = sum(float(r.metrics.get("operations", 0)) for r in results)
    client_cpu = sum(float(r.metrics.get("client_cpu_total_s", 0.0)) for r in results)
    metrics: dict[str, Any] = {
        "operations": ops,
        "errors": sum(float(r.metrics.get("errors", 0)) for r in results),
        "ops_per_s": sum(float(r.metrics.get("ops_per_s", 0.0)) for r in results),
        "wall_s": span,
        "latency_median_ms": hist.percentile(50),
        "latency_p99_ms": hist.percentile(99),
        "latency_count": hist.count,
        "client_cpu_total_s": client_cpu,
        "client_cpu_us_per_op": client_cpu / ops * 1e6 if ops else float("nan"),
        "load_hosts": len(results),
        "start_skew_s": max(starts) - min(starts),
    }
    if meter is not None:
        server = {k: v for k, v in meter.metrics(int(ops)).items() if k.startswith("server_")}
        metrics |= server
    samples = (
        pd.concat(
            [r.samples.assign(host=r.host) for r in results if r.samples is not None and len(r.samples)],
            ignore_index=True,
        )
        if any(r.samples is not None for r in results)
        else None
    )
    info = {
        "hosts": {
            r.host: {k: r.metrics.get(k) for k in ("operations", "ops_per_s", "client_cpu_total_s")} for r in results
        },
        "histogram": hist.to_dict(),
    }
    return Measurement(metrics, samples=samples, info=info)
