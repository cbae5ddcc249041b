"""An Airflow DAG that runs the fleet every night, fails the night when a report steps out of its series
(`index --fail-on-change`), and prunes old runs: a recipe (copy it into your DAG folder and
set the paths). Each task is a BashOperator running the CLI, so Airflow needs nothing of secoverhead's own: the
checkout's .venv runs it. A failed fleet is retried by Airflow (the fleet itself retries each failed job once with
--resume); the index and history are rebuilt by the fleet at its end.

Environment: the passwords the fleet file names (mysql_password_env) must be set for the Dask workers, not here.
"""

from __future__ import annotations

import datetime as dt

from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import DAG

CHECKOUT = "/opt/secoverhead"  # where `make setup` ran
FLEET = f"{CHECKOUT}/fleet.yaml"  # your targets, client hosts and studies
SCHEDULER = "tcp://dask-scheduler:8786"  # your Dask scheduler (workers: one per client host, --resources load=1)
REPORTS = "/srv/secoverhead/reports"  # shared by the workers (a retry resumes a run where it was left)
CLI = f"{CHECKOUT}/.venv/bin/secoverhead"

with DAG(
    dag_id="secoverhead_nightly",
    description="every study against every target, then retention",
    schedule="0 2 * * *",
    start_date=dt.datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,  # two fleets at once would load the same targets from the same hosts
    default_args={"retries": 2, "retry_delay": dt.timedelta(minutes=10)},
    tags=["secoverhead"],
) as dag:
    fleet = BashOperator(
        task_id="fleet",
        bash_command=f"{CLI} fleet {FLEET} --scheduler {SCHEDULER} --reports {REPORTS}",
        execution_timeout=dt.timedelta(hours=6),
    )
    alarm = BashOperator(  # fails the night when a series' newest report steps out of what its history predicts
        task_id="alarm",
        bash_command=f"{CLI} index --fail-on-change --reports {REPORTS}",
        retries=0,  # a step is news, not a fault to retry
    )
    prune = BashOperator(
        task_id="prune",
        bash_command=f"{CLI} prune --keep 30 --reports {REPORTS}",
        trigger_rule="all_done",  # keep the disk in check even after a failed night
    )
    fleet >> [alarm, prune]
