"""What an operator's tools read: --format json for list, params and index (one JSON document on stdout),
history/changes.json and `index --fail-on-change`, and a closed pipe said nothing of."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from secoverhead.app.cli import main
from secoverhead.suite import history
from tests.records import run_json

EXE = str(Path(sys.executable).with_name("secoverhead"))


def test_list_and_params_as_json(capsys):
    assert main(["list", "--format", "json"]) == 0
    studies = json.loads(capsys.readouterr().out)
    assert {"tls", "tde", "cost"} <= {s["id"] for s in studies} and all("params" in s for s in studies)
    assert main(["params", "tls", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {"name", "type", "default", "range", "help"} <= set(rows[0]) and any(
        r["name"] == "repetitions" for r in rows
    )
    assert main(["params", "tde", "--format", "json"]) == 0  # defaults typed as JSON types them, not as reprs
    defaults = {r["name"]: r["default"] for r in json.loads(capsys.readouterr().out)}
    assert defaults["profile"] is False and defaults["instances"] == ["4c16g"] and defaults["mysql_port"] == 3306


def _change(expected: str = "") -> history.Change:
    claim, target, cls = "4c16g:high-concurrency-loss", "this machine's servers", "RSA sign ~800 us"
    return history.Change("tde", claim, "c", "quick", target, "10.11", cls, "run-b", "2026-11-20", "abc",
                          0.98, 0.88, 0.001, "worse", expected)  # fmt: skip


def test_index_writes_changes_json_and_fails_on_a_change_only_when_asked(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(history, "changes", lambda df, root=None: [_change()])
    run = tmp_path / "tde" / "20261101T000000Z-vm-quick"
    (run / "results").mkdir(parents=True)
    (run / "run.json").write_text(run_json({"status": "ok", "params_name": "quick", "study": "tde"}))
    (run / "results" / "verdicts.json").write_text(json.dumps({"verdicts": [
        {"id": "x", "claim": "c", "verdict": "reproduced", "ratio": 0.9, "ci_low": 0.8, "ci_high": 1.0}]}))  # fmt: skip
    assert main(["index", "--reports", str(tmp_path)]) == 0
    assert "change: tde 4c16g:high-concurrency-loss (quick" in capsys.readouterr().err
    changes = json.loads((tmp_path / "history" / "changes.json").read_text())
    assert changes["schema"] >= 1 and changes["changes"][0]["direction"] == "worse"
    assert main(["index", "--reports", str(tmp_path), "--fail-on-change", "--format", "json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["counting"]["tde"] == run.name and len(out["unexpected_changes"]) == 1
    monkeypatch.setattr(history, "changes", lambda df, root=None: [_change("an upgrade")])
    assert main(["index", "--reports", str(tmp_path), "--fail-on-change"]) == 0  # marked expected


def test_a_closed_pipe_is_said_nothing_of():
    res = subprocess.run(f"'{EXE}' params tde | head -c 10 >/dev/null", shell=True, capture_output=True, text=True,
                         timeout=60, executable="/bin/bash")  # fmt: skip
    assert res.stderr == "", res.stderr


def test_scale_names_the_parameter_file_and_profile_is_its_deprecated_name_said_once(tmp_path, capsys):
    reports = str(tmp_path / "reports")
    assert main(["run", "tls", "--scale", "enormous", "--reports", reports]) == 2
    err = capsys.readouterr().err
    assert "no scale 'enormous'" in err and "deprecated" not in err
    assert main(["run", "tls", "--profile", "enormous", "--reports", reports]) == 2
    err = capsys.readouterr().err
    assert err.count("--profile is deprecated: use --scale") == 1 and "no scale 'enormous'" in err
    assert main(["run", "tls", "--profile", "quick", "--scale", "enormous", "--reports", reports]) == 2
    assert "no scale 'enormous'" in capsys.readouterr().err  # the new name wins when both are given


def test_python_dash_m_is_the_console_script():
    """A scheduler without the script on its PATH runs `python -m secoverhead`: same answers, same exit codes."""
    ok = subprocess.run([sys.executable, "-m", "secoverhead", "list"], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and "audit" in ok.stdout, ok.stderr
    bad = subprocess.run([sys.executable, "-m", "secoverhead", "run", "nosuch"], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "nosuch" in bad.stderr


def test_a_schedulers_log_says_when_each_line_came_and_a_refusal_stays_one_plain_line(capsys, monkeypatch):
    """stderr to a file or pipe: plans, notes and progress carry their UTC time; on a terminal they do not; the
    refusal line is `error: ...` alone, whatever stderr is."""
    import logging
    import re

    from secoverhead.app import stderr

    stderr.say("plan: tls: 24 rounds")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ plan: tls: 24 rounds\n", capsys.readouterr().err)
    record = logging.LogRecord("secoverhead", logging.INFO, "", 0, "running tls (quick) into x", None, None)
    ended = logging.LogRecord("secoverhead", logging.INFO, "", 0, "tls: failed (why)", None, None)
    ended.__dict__.update(stderr.PLAIN)
    assert stderr.log_format().format(ended) == "tls: failed (why)"  # how a run ended: one plain line
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ running tls \(quick\) into x", stderr.log_format().format(record)
    )
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    stderr.say("plan: tls: 24 rounds")
    assert capsys.readouterr().err == "plan: tls: 24 rounds\n"
    monkeypatch.undo()
    res = subprocess.run([EXE, "run", "tls", "-p", "repetitions", "0"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    assert res.stderr.splitlines()[-1] == "error: parameter 'repetitions' must be between 1 and 1000, got 0"
