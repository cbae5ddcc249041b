"""`run --format json` as a tool reads it: one document that validates against the published schema
(docs/schemas/run-output.schema.json), each run with its id, scale, status and verdict counts; a refused command
an error object on stdout, exit 2."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import jsonschema

from secoverhead.app import cli, commands
from secoverhead.app.pipeline import RunOutcome
from secoverhead.core import paths
from tests.records import run_json

SCHEMA = json.loads((paths.ROOT / "docs" / "schemas" / "run-output.schema.json").read_text())


def _stdout(fn, *args) -> tuple[object, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        got = fn(*args)
    return got, out.getvalue()


def test_a_run_document_validates_and_counts_its_verdicts(tmp_path):
    run = tmp_path / "https" / "20261127T000000Z-vm-quick"
    (run / "results").mkdir(parents=True)
    (run / "run.json").write_text(run_json({"study": "https", "status": "ok", "params_name": "quick"}))
    verdicts = [{"id": "a", "verdict": "reproduced"}, {"id": "b", "verdict": "reproduced"},
                {"id": "c", "verdict": "not testable here"}]  # fmt: skip
    (run / "results" / "verdicts.json").write_text(json.dumps({"verdicts": verdicts}))
    failed = RunOutcome("tls", tmp_path / "tls" / "x", "failed", "a server did not start")
    _, text = _stdout(lambda: commands._say_index(tmp_path, [RunOutcome("https", run, "ok"), failed], text=False))
    doc = json.loads(text)
    jsonschema.validate(doc, SCHEMA)
    first = doc["runs"][0]
    assert first["id"] == run.name and first["scale"] == "quick" and first["status"] == "ok"
    assert first["verdicts"] == {"reproduced": 2, "not testable here": 1}
    assert doc["runs"][1]["verdicts"] == {} and doc["runs"][1]["error"] == "a server did not start"
    bad = {**doc, "runs": [{**first, "status": "done"}]}
    try:
        jsonschema.validate(bad, SCHEMA)
    except jsonschema.ValidationError:
        pass
    else:
        raise AssertionError("a status the schema does not know validated")


def test_a_refused_run_prints_an_error_object_when_json_was_asked_for(tmp_path):
    code, text = _stdout(cli.main, ["run", "nosuch", "--format", "json", "--reports", str(Path(tmp_path) / "r")])
    doc = json.loads(text)
    jsonschema.validate(doc, SCHEMA)
    assert code == 2 and "unknown study" in doc["error"]
