"""Every command the README gives runs as written, in order, against servers this test starts on loopback and
hands over as the README's: db.internal (MariaDB with TLS), db-encrypted.internal (MariaDB with encryption at
rest), mongo.internal (FerretDB with SCRAM). Placeholders a user would fill in are filled in the same way:
host and port, the CA file, the run directories. The secret scan of every report is on (the pipeline's)."""

from __future__ import annotations

import concurrent.futures
import html
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from secoverhead.core import paths
from secoverhead.reporting import browser
from secoverhead.reporting.summary import on_the_first_screen
from secoverhead.servers import FerretDBServer, MariaDBServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]
README = paths.ROOT / "README.md"
# the pages a user follows, in order: the README, then the topics whose commands continue it
PAGES = (README, paths.ROOT / "docs" / "your-own-server.md")
BENCH_PW = "Readme-Bench-Pw-1977"
DBA_PW = "Readme-Dba-Pw-2024"
# the run the README's --resume continues: small (one workload, one thread level), so resuming it is quick; what
# --resume must do at full size is test_faults.py's
SMALL_TDE = ["-p", "run_seconds", "1", "-p", "workloads", "[oltp_read_only]", "-p", "threads", "[1]"]


def commands() -> list[str]:
    """The shell lines of the user pages' sh blocks that run secoverhead or export a variable, page by page."""
    out = []
    for block in re.findall(r"```sh\n(.*?)```", "\n".join(p.read_text() for p in PAGES), re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("  #")[0].strip() if "secoverhead" in line else line.strip()
            if line.startswith((".venv/bin/secoverhead", "export ")):
                out.append(line)
    return out


def test_the_readme_gives_commands_to_check():
    cmds = commands()
    assert any("compare" in c for c in cmds) and any("--resume" in c for c in cmds)
    assert any("mysql_host" in c for c in cmds) and any("mongo_uri" in c for c in cmds)


@pytest.fixture(scope="module")
def servers():
    with (
        MariaDBServer(tls="on") as plain,
        MariaDBServer(encryption=True) as encrypted,
        FerretDBServer(auth=True) as mongo,
    ):
        for db in (plain, encrypted):  # the README gives one BENCH_PW for both
            conn = db.admin()
            cur = conn.cursor()
            cur.execute(f"ALTER USER 'bench'@'%' IDENTIFIED BY '{BENCH_PW}'")
            cur.execute(f"CREATE USER 'dba'@'%' IDENTIFIED BY '{DBA_PW}'")
            cur.execute("GRANT ALL PRIVILEGES ON *.* TO 'dba'@'%'")
            conn.close()
        client = mongo.endpoint.client(mechanism="SCRAM-SHA-256")
        client.admin.command("createUser", "bench", pwd=BENCH_PW, roles=[], mechanisms=["SCRAM-SHA-256"])
        client.close()
        yield {"db": plain, "db-encrypted": encrypted, "mongo": mongo}


def _fill(cmd: str, servers: dict, runs: dict[str, Path], cwd: Path) -> list[str]:
    """The README's placeholders, filled in as a user fills them in for their own servers."""
    for name in ("db-encrypted", "db"):
        db = servers[name]
        cmd = re.sub(
            rf"-p mysql_host {name}\.internal( -p mysql_port \d+)?",
            f"-p mysql_host 127.0.0.1 -p mysql_port {db.endpoint.port}",
            cmd,
        )
    cmd = cmd.replace("/etc/ssl/db-ca.pem", str(servers["db"].endpoint.ca_file))
    cmd = cmd.replace("mongodb://mongo.internal:27017/", f"mongodb://127.0.0.1:{servers['mongo'].endpoint.port}/")
    for key, run in runs.items():
        cmd = cmd.replace(f"reports/tde/<{key}>", str(run))
    argv = shlex.split(cmd)
    argv[0] = str(Path(sys.executable).with_name("secoverhead"))
    return argv


def _latest(cwd: Path, study: str) -> Path:
    """The run just made (the newest directory: `latest` names the run that counts, which may be older)."""
    return max(p for p in (cwd / "reports" / study).iterdir() if p.is_dir() and not p.is_symlink())


def _interrupted_tde(cwd: Path, env: dict) -> Path:
    """A TDE run stopped by SIGTERM after its first completed run: what --resume continues."""
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("secoverhead")), "run", "tde", *SMALL_TDE], cwd=cwd, env=env
    )
    deadline = time.monotonic() + 180
    while not list(cwd.glob("reports/tde/*/results/*/runs/*.json")) and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(120) == 143
    return _latest(cwd, "tde")


def _lane(cmds: list[str], servers: dict, cwd: Path, env: dict, runs: dict[str, Path]) -> None:
    """The README's commands in order, in one checkout-like directory (relative paths as a user types them)."""
    tde_runs: list[Path] = [runs["run"]] if "run" in runs else []
    for cmd in cmds:
        if cmd.startswith("export "):
            name = cmd.split()[1].split("=")[0]
            env[name] = {"BENCH_PW": BENCH_PW, "DBA_PW": DBA_PW}[name]
            continue
        if "compare" in cmd and "<run A>" in cmd:  # the last two TDE runs (off vs on) the README made so far
            runs |= {"run A": tde_runs[-2], "run B": tde_runs[-1]}
        argv = _fill(cmd, servers, runs, cwd)
        res = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        ok = (0, 1) if argv[1] == "compare" else (0,)  # compare exits 1 when B is worse beyond the noise
        assert res.returncode in ok, f"{cmd}\n{res.stdout[-1500:]}\n{res.stderr[-1500:]}"
        if argv[1:3] == ["run", "tde"] and "aa" not in argv:  # an A/A run has other arms: not for compare
            tde_runs.append(_latest(cwd, "tde"))
        if "mysql_encryption off" in cmd:
            runs["run off"] = _latest(cwd, "tde")
        if "mysql_encryption on" in cmd:
            runs["run on"] = _latest(cwd, "tde")
        if argv[1] == "compare" and "<run off>" in cmd:
            assert "encryption off -> encryption on" in res.stdout
            assert "claims on the two runs together" in res.stdout
            assert "inconclusive" in res.stdout or "reproduced" in res.stdout  # a verdict table


def test_the_readme_runs_the_notebooks_nbval_leaves_to_it():
    """conftest.py leaves notebooks to this test that the README runs at their defaults: it must still do so."""
    import conftest

    cmds = commands()
    for command in conftest.COVERED_BY_README.values():
        assert any(c.split("#")[0].strip().endswith(command) or f"{command} " in c for c in cmds), command


def test_the_files_make_test_sends_first_exist():
    """conftest.py names the longest files to send first: a renamed one would fall back to xdist's order unseen."""
    import conftest

    root = Path(conftest.__file__).parent
    files = {p.name for d in ("tests", "notebooks") for p in (root / d).rglob("*") if p.suffix in (".py", ".ipynb")}
    assert set(conftest.LONGEST_FIRST) <= files, set(conftest.LONGEST_FIRST) - files


@pytest.mark.timeout(1200)  # ~20 commands, studies among them: 484-608 s on the 2-core VM, past the suite's 600
def test_every_readme_command_runs_as_written(servers, tmp_path):
    """Two lanes at once: the commands on this machine's own servers, and from the first `export` on, those on
    "your own server" (each lane in order, in a directory of its own). No figure of these runs is read, so
    running them side by side costs no assertion anything; it halves the time the test takes."""
    cmds = commands()
    split = next(i for i, c in enumerate(cmds) if c.startswith("export "))
    lanes = {"embedded": cmds[:split], "own-server": cmds[split:]}
    env = os.environ.copy() | {
        "SECOVERHEAD_RUN_BASE": str(tmp_path / "base"),
        "SECOVERHEAD_STATE": str(tmp_path / "state"),
        "SECOVERHEAD_SCREENS": "on",
    }
    env.pop("PYTEST_CURRENT_TEST", None)
    dirs = {}
    for lane in lanes:
        dirs[lane] = tmp_path / lane
        dirs[lane].mkdir()
        (dirs[lane] / "papermill-params").symlink_to(paths.PARAMS)  # the README's paths are relative to the checkout
    runs: dict[str, dict[str, Path]] = {"embedded": {}, "own-server": {}}

    def embedded(cmds: list[str], lane_env: dict) -> None:  # the run its --resume continues, made in its lane
        runs["embedded"]["run"] = _interrupted_tde(dirs["embedded"], lane_env)
        _lane(cmds, servers, dirs["embedded"], lane_env, runs["embedded"])

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        done = [
            pool.submit(embedded, lanes["embedded"], dict(env)),
            pool.submit(_lane, lanes["own-server"], servers, dirs["own-server"], dict(env), runs["own-server"]),
        ]
        for f in done:
            f.result()
    for f in [f for d in dirs.values() for f in (d / "reports").rglob("*")]:
        if f.is_file():
            data = f.read_bytes()
            assert BENCH_PW.encode() not in data and DBA_PW.encode() not in data, f
    general_log = servers["db"].variables(["general_log"])["general_log"]
    assert general_log == "OFF"  # the audit arm's change was undone
    _check_first_screens([d / "reports" for d in dirs.values()])
    _check_printed_evidence([d / "reports" for d in dirs.values()], tmp_path)


def _squeezed(text: str) -> str:
    """Text as a PDF's and a page's can be compared: no whitespace (a printed line breaks where it must), the
    ligatures a font draws spelled out."""
    return re.sub(r"\s+", "", text.replace("\ufb01", "fi").replace("\ufb02", "fl"))


def _check_printed_evidence(roots: list[Path], tmp_path: Path) -> None:
    """A TLS report printed as a reviewer prints it (A4, Chromium) holds every verdict's evidence its page holds:
    Chromium prints a closed <details> as its summary alone, and a 19-page TLS PDF once held none of them."""
    runs = [p.parent for root in roots for p in sorted(root.glob("tls/*/run.json")) if not p.parent.is_symlink()]
    run = next(r for r in runs if json.loads((r / "run.json").read_text()).get("status") == "ok")
    page = _squeezed(html.unescape(re.sub(r"<[^>]+>", " ", (run / "report.html").read_text())))
    verdicts = json.loads((run / "results" / "verdicts.json").read_text())["verdicts"]
    evidence = [_squeezed(v["evidence"])[:80] for v in verdicts if v.get("evidence")]
    shown = [e for e in evidence if e in page]
    pdf = browser.pdf(run / "report.html", tmp_path / "tls-report.pdf")
    printed = _squeezed(subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout)
    assert shown and len(shown) == len(evidence), (len(shown), len(evidence))  # the page holds them all
    missing = [e for e in shown if e not in printed]
    assert missing == [], f"{len(missing)} of {len(shown)} evidence lines not printed: {missing[:3]}"


def figure_overlaps(notebook: Path) -> list[str]:
    """Labels that overlapped in any figure of an executed report (recorded by display.show as it drew them)."""
    nb = json.loads(notebook.read_text())
    return [
        clash
        for cell in nb["cells"]
        for out in cell.get("outputs", [])
        for clash in (out.get("metadata", {}).get("image/png", {}) or {}).get("overlaps", [])
    ]


EXPONENT = re.compile(r"(?<![\w.])\d+(?:\.\d+)?e[+-]\d{1,3}\b")


def exponents(page: Path) -> list[str]:
    """Numbers in e notation in what a reader sees of a page (its text, not its scripts, styles or images)."""
    text = re.sub(r"<(script|style)\b[^>]*>.*?</\1>", " ", page.read_text(), flags=re.S | re.I)
    text = html.unescape(re.sub(r"<[^>]+>", " ", text))
    return [text[max(0, m.start() - 50) : m.end()] for m in EXPONENT.finditer(text)]


def _check_first_screens(roots: list[Path]) -> None:
    """Every finished report, as Chromium showed it to a reviewer at 1280x800: every verdict on the first
    screen, no sideways scrolling in the summary, every embedded flame graph with its root frame drawn,
    nothing fetched from the network, the page under 2 MB, the screenshot kept with the run; and the index likewise."""
    checked = with_verdicts = costs = 0
    for run_json in sorted(p for root in roots for p in root.glob("*/*/run.json")):
        meta = json.loads(run_json.read_text())
        if meta.get("status") != "ok":
            continue
        seen = meta.get("first_screen") or {}
        where = f"{run_json.parent}: {seen}"
        assert "error" not in seen and "verdicts" in seen, where
        assert (run_json.parent / "report.html").stat().st_size < 2_000_000, where  # flame graphs included
        assert exponents(run_json.parent / "report.html") == [], where  # 13.4k or 0.00023, never 1.34e+04
        if meta.get("study") == "cost":  # no verdicts: its answer is a sentence per feature and the total
            assert seen["headlines"] >= 2 and seen["headlines_visible"] == seen["headlines"], where
            assert seen["summary_overflow"] <= 1 and seen["external_requests"] == [], where
            assert seen["print_cut_tables"] == [] and seen["print_split_words"] == [], where
            costs += 1
            continue
        assert figure_overlaps(run_json.parent / "report.ipynb") == [], where  # every label readable
        recorded = json.loads((run_json.parent / "results" / "verdicts.json").read_text())["verdicts"]
        recorded = [v for v in recorded if on_the_first_screen(v)]  # the builds beside fold under one line
        assert seen["verdicts"] == len(recorded), where  # every verdict the run decided is on its page
        assert seen["verdicts_visible"] == seen["verdicts"], where
        assert seen["misread"] == [], where  # each number a line shows, read back, is the one recorded
        assert seen["summary_overflow"] <= 1, where
        assert seen["flamegraphs_root_visible"] == seen["flamegraphs"], where
        assert seen["external_requests"] == [], where
        assert seen["print_cut_tables"] == [], where  # printed on A4, no table runs off the page
        assert seen["print_split_words"] == [], where  # nor cuts a word or a number across lines
        assert (run_json.parent / "results" / "screens" / "first-screen.png").stat().st_size > 10_000
        checked += 1
        with_verdicts += bool(recorded)
    assert checked >= 5 and with_verdicts >= 3 and costs >= 1
    # one report opened in JupyterLab, as a DBA would: signed by the pipeline, its flame graphs drawn there too
    profiled = [p.parent for root in roots for p in root.glob("*/*/run.json")
                if (json.loads(p.read_text()).get("first_screen") or {}).get("flamegraphs")]  # fmt: skip
    assert profiled
    lab = browser.in_jupyterlab(profiled[0] / "report.ipynb", profiled[0] / "results" / "screens" / "jupyterlab.png")
    assert lab.flamegraphs >= 1 and lab.first_visible and lab.errors == [], lab
    index = browser.first_screen(roots[0] / "index.html")
    assert index.verdicts >= 1 and index.verdicts_visible >= 1 and index.external_requests == []
    assert index.summary_overflow <= 1 and index.scroll_width <= index.client_width  # a wide table scrolls alone
    assert index.print_cut_tables == [] and index.print_split_words == []  # and prints whole on A4
    assert [e for root in roots for e in exponents(root / "index.html")] == []
