"""The README's Airflow recipe is a DAG Airflow itself loads: Airflow 3.3.2 in a virtualenv of its own (make test
installs it, scripts/install-airflow.sh), a scratch AIRFLOW_HOME, no example DAGs, no scheduler or database."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from secoverhead.core import paths

pytestmark = [pytest.mark.integration]
RECIPES = paths.ROOT / "docs" / "recipes"
AIRFLOW = Path(os.environ.get("SECOVERHEAD_CACHE") or Path.home() / ".cache" / "secoverhead") / "airflow-3.3.2"

LOAD = """
import json, sys
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder=sys.argv[1])
dag = bag.dags.get("secoverhead_nightly")
print(json.dumps({"errors": {k: str(v)[:500] for k, v in bag.import_errors.items()},
                  "dags": sorted(bag.dags),
                  "tasks": {t.task_id: {"cmd": t.bash_command, "retries": t.retries,
                                        "down": sorted(t.downstream_task_ids)} for t in dag.tasks} if dag else {}}))
"""


@pytest.mark.skipif(not (AIRFLOW / "bin" / "python").exists(), reason="Airflow's virtualenv is not installed")
def test_the_nightly_dag_loads_in_airflow_and_runs_the_fleet_then_prunes(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env |= {"AIRFLOW_HOME": str(tmp_path), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
    res = subprocess.run(
        [str(AIRFLOW / "bin" / "python"), "-c", LOAD, str(RECIPES)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["errors"] == {} and out["dags"] == ["secoverhead_nightly"]
    tasks = out["tasks"]
    assert "secoverhead fleet " in tasks["fleet"]["cmd"] and "--scheduler" in tasks["fleet"]["cmd"]
    assert tasks["fleet"]["retries"] == 2 and tasks["fleet"]["down"] == ["alarm", "prune"]
    assert "secoverhead index --fail-on-change" in tasks["alarm"]["cmd"] and tasks["alarm"]["retries"] == 0
    assert "secoverhead prune --keep" in tasks["prune"]["cmd"]
