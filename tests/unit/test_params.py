"""Parameters: the Params dataclass is the schema and the smoke scale. The notebook cell shows some of it; every
parameter can be set with -p; every range error is exit 2 with one line before anything starts."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import pytest
import yaml

from secoverhead.app.cli import main
from secoverhead.core.errors import ConfigError
from secoverhead.core.params import accept, build, coerce, layer, read_file, specs
from secoverhead.studies import STUDIES
from secoverhead.suite.notebooks import NOTEBOOKS
from tests.records import run_json


def notebook_cell(study) -> dict:
    """name -> literal value of the notebook's `parameters` cell (typed assignments)."""
    nb = json.loads(study.notebook_path.read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    tree = ast.parse("".join(cell["source"]))
    assert all(isinstance(n, ast.AnnAssign) for n in tree.body), "every parameter in the cell has a type"
    return {n.target.id: ast.literal_eval(n.value) for n in tree.body}


@pytest.mark.parametrize("study_id", list(STUDIES))
def test_the_notebook_cell_shows_declared_parameters_at_their_defaults(study_id):
    """The cell is a view of the Params declaration (one place): its names exist there, with the same values,
    and papermill --help-notebook lists each with a type and help. The smoke scale is the defaults."""
    import papermill

    study = STUDIES[study_id]
    schema = specs(study.Params)
    cell = notebook_cell(study)
    assert set(cell) <= set(schema), f"cell names unknown to {study_id}.Params: {set(cell) - set(schema)}"
    assert {"output_dir", "params_from"} <= set(cell)
    for name, value in cell.items():
        assert value == schema[name].default, f"{study_id}.{name}: cell {value!r} != default {schema[name].default!r}"
    listed = papermill.inspect_notebook(str(study.notebook_path))
    assert set(listed) == set(cell)
    for name, info in listed.items():
        assert info["inferred_type_name"] not in ("None", "") and info["help"], (name, info)
    smoke = study.params_dir / "smoke.yaml"  # optional: smoke is the defaults, named by a file or not
    assert not smoke.is_file() or not yaml.safe_load(smoke.read_text()), "smoke values live in Params only"


def test_the_pipeline_injects_only_names_the_cell_declares(tmp_path, monkeypatch):
    """Every other value reaches the notebook through run.json (params_from): papermill never warns of an unknown
    parameter, and the notebook builds the same Params the pipeline checked. Paths are the report's own (the
    kernel runs in the report's folder), so the report can move."""
    from secoverhead.app.pipeline import notebook_parameters

    study = STUDIES["tde"]
    values = {"workloads": ["oltp_read_only"], "tables": 3, "commit_flush": 2, "plan_check": "warn"}
    record = tmp_path / "run.json"
    record.write_text(run_json({"parameters": values}))
    injected = notebook_parameters(study, values, tmp_path / "results", record)
    assert set(injected) == {"workloads", "output_dir", "params_from"}
    assert (injected["output_dir"], injected["params_from"]) == ("results", "run.json")
    monkeypatch.chdir(tmp_path)
    cell = notebook_cell(study)
    namespace = cell | injected
    p = study.Params.from_namespace(namespace, study="tde")
    assert (p.workloads, p.tables, p.commit_flush, p.plan_check) == (["oltp_read_only"], 3, 2, "warn")
    assert p.output_dir == "results" and not p.replays()  # a run.json with no status: the pipeline's, running


@pytest.mark.parametrize("study_id", list(STUDIES))
def test_every_scale_file_builds(study_id):
    """Every study has a quick scale (what make reports runs); one that reproduces an original has its full scale,
    with the expected duration at the top."""
    study = STUDIES[study_id]
    assert {"smoke", "quick"} <= set(study.scales())
    for f in study.parameter_files():
        p = build(study.Params, read_file(f), study=study_id)
        assert p.planned_runs() > 0
    if study.seed != "none":
        assert "Expected duration" in (study.params_dir / "full.yaml").read_text()


def _text(value) -> str:
    """How a user types a value after -p."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return json.dumps(value)
    return str(value)


@pytest.mark.parametrize("study_id", list(STUDIES))
def test_every_parameter_can_be_set_with_p(study_id):
    cls = STUDIES[study_id].Params
    schema = specs(cls)
    for name, spec in schema.items():
        if spec.internal:
            continue
        values = layer(overrides=[(name, _text(spec.default))], schema=schema)
        p = build(cls, values, study=study_id)
        resolved = {"client_cpus": getattr(p, name), "experiment_id": cls.STUDY}  # auto: a core; empty: the study's id
        assert getattr(p, name) == resolved.get(name, spec.default), name
        if spec.kind == "int" and spec.max is not None and spec.max > (spec.default or 0):
            target = min(spec.max, (spec.default or 0) + 1)
            if name not in ("min_rounds",):
                assert (
                    getattr(build(cls, layer(overrides=[(name, str(target))], schema=schema), study=study_id), name)
                    == target
                )


def _numeric(study_id):
    schema = specs(STUDIES[study_id].Params)
    for s in schema.values():
        if s.kind in ("int", "float") and not s.internal:
            if s.min is not None:
                yield s.name, str(s.min - 1)
            if s.max is not None:
                yield s.name, str(s.max + 1 if s.kind == "int" else s.max * 2)
        elif s.item_kind in ("int", "float") and s.max is not None:
            yield s.name, f"[{s.max + 1}]"


@pytest.mark.parametrize("study_id", list(STUDIES))
def test_every_range_error_is_exit_2_before_anything_starts(study_id, tmp_path, capsys):
    cases = list(_numeric(study_id))
    assert cases
    for name, text in cases:
        assert main(["run", study_id, "-p", name, text, "--reports", str(tmp_path)]) == 2, (name, text)
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err
        assert name in err
    assert not any(tmp_path.iterdir())  # no run directory: no kernel, no server


def test_a_range_error_prints_its_bounds_as_a_reader_takes_them(tmp_path, capsys):
    assert main(["run", "cost", "-p", "new_connections_per_s", "-5", "--reports", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "between 0 and 1,000,000,000" in err and "e+" not in err, err


@pytest.mark.parametrize(
    "name, text, kind, expected",
    [
        ("mysql_encryption", "on", "str", "on"),  # stays text: YAML would have made it True
        ("flag", "off", "bool", False),
        ("flag", "YES", "bool", True),
        ("n", "1_000", "int", 1000),
        ("x", "2.5", "float", 2.5),
        ("levels", "1,8,16", "list[int]", [1, 8, 16]),
        ("levels", "[1, 8]", "list[int]", [1, 8]),
        ("names", "[a, 'b c']", "list[str]", ["a", "b c"]),
    ],
)
def test_p_values_are_coerced_to_the_declared_type(name, text, kind, expected):
    from secoverhead.core.params import Spec

    assert coerce(Spec(name, kind, None), text) == expected


@pytest.mark.parametrize(
    "kind, value, message",
    [
        ("bool", "maybe", "true or false"),
        ("int", "many", "integer"),
        ("int", True, "integer"),
        ("float", float("inf"), "finite"),
        ("str", "x" * 2000, "longer"),
        ("list[int]", "[1, 1]", "twice"),
        ("list[int]", "{a: 1}", "integer"),
        ("list[int]", "[{a: 1}]", "integer"),
        ("dict", "[1]", "mapping"),
        ("int", "[unclosed", "integer"),
        ("list[str]", "[unclosed", "not valid YAML"),
    ],
)
def test_bad_values_are_one_line_config_errors(kind, value, message):
    from secoverhead.core.params import Spec

    with pytest.raises(ConfigError, match=message) as e:
        accept(Spec("p", kind, None), value)
    assert "\n" not in str(e.value)


def test_yaml_files_are_read_safely_as_yaml_1_2(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("mysql_encryption: on\nrepetitions: 3\n")
    assert read_file(f) == {"mysql_encryption": "on", "repetitions": 3}
    for content, message in (
        ("!!python/object/apply:os.system ['true']", "not valid YAML"),
        ("- a\n- b\n", "mapping"),
        ("a: [1, 2\n", "not valid YAML"),
    ):
        f.write_text(content)
        with pytest.raises(ConfigError, match=message):
            read_file(f)
    f.write_bytes(b"repetitions: \xff\xfe\n")
    with pytest.raises(ConfigError, match="UTF-8"):
        read_file(f)
    with pytest.raises(ConfigError, match="does not exist"):
        read_file(tmp_path / "missing.yaml")


def test_files_layer_in_order_and_p_wins(tmp_path):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("repetitions: 4\nwarmup: 2\n")
    b.write_text("repetitions: 6\n")
    schema = specs(STUDIES["tls"].Params)
    assert layer(files=[a, b], overrides=[("warmup", "0")], schema=schema) == {"repetitions": 6, "warmup": 0}


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "tls", "-p", "mysql_password", "x"], "mysql_password_env"),
        (["run", "https", "-p", "output_dir", "/tmp"], "set by the pipeline"),
        (["run", "tls", "-p", "nosuch", "1"], "unknown parameter"),
        (["run", "tls", "-p", "mongo_uri", "mongodb://h:99999/"], "mongo_uri"),
        (["run", "tls", "-p", "mongo_uri", "mongodb://[::1/"], "IPv6"),
        (["run", "tls", "-p", "mysql_host", "a" * 70 + ".example"], "host"),
        (
            [
                "run",
                "tde",
                "-p",
                "mysql_host",
                "127.0.0.1",
                "-p",
                "mysql_user",
                "u",
                "-p",
                "mysql_password_env",
                "HOME",
            ],
            "mysql_encryption",
        ),
        (["run", "audit", "-p", "arms", "[general_log]"], "baseline"),
        (["run", "tls", "-p", "experiment_id", "../up"], "experiment_id"),
        (["run", "tls", "-p", "mysql_port", "0"], "mysql_port"),
        (["run", "auth", "-p", "concurrency", "[]"], "concurrency"),
        (["run", "tde", "-p", "instances", "[8c64g]"], "instances"),
    ],
)
def test_cross_field_and_format_errors_are_exit_2(args, message, tmp_path, capsys):
    assert main([*args, "--reports", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not any(tmp_path.iterdir())


def test_study_modules_and_the_cli_import_light():
    code = (
        "import sys, secoverhead.app.cli, secoverhead.core.params\n"
        "from secoverhead.studies import tls, auth, tde, https, audit\n"
        "heavy = [m for m in ('pandas', 'numpy', 'scipy', 'matplotlib', "
        "'papermill', 'pymongo', 'mysql.connector') if m in sys.modules]\n"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_unknown_study_answers_in_well_under_a_second_of_cpu():
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = subprocess.run([sys.executable, "-m", "secoverhead.app.cli", "run", "nosuch"], capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert (
        res.returncode == 2 and res.stderr.strip() == f"error: unknown study 'nosuch'; studies: {', '.join(NOTEBOOKS)}"
    )
    assert cpu < 1.0, cpu


@pytest.mark.parametrize(
    "study_id, values, kinds",
    [
        ("tls", {"mysql_host": "127.0.0.1", "mysql_user": "u", "mysql_password_env": "HOME"}, ["ExternalMySQL"]),
        ("tls", {"mongo_uri": "mongodb://127.0.0.1:1/"}, ["ExternalMongo"]),
        (
            "auth",
            {"mysql_host": "127.0.0.1", "mysql_user": "u", "mysql_password_file": "/etc/hostname"},
            ["ExternalMySQL"],
        ),
        (
            "tde",
            {"mysql_host": "127.0.0.1", "mysql_user": "u", "mysql_password_env": "HOME", "mysql_encryption": "on"},
            ["ExternalMySQL"],
        ),
        (
            "audit",
            {
                "mysql_host": "127.0.0.1",
                "mysql_user": "u",
                "mysql_password_env": "HOME",
                "external_arms": {
                    "general_log": {"enable": ["SET GLOBAL general_log=ON"], "disable": ["SET GLOBAL general_log=OFF"]}
                },
                "mysql_admin_user": "root",
                "mysql_admin_password_env": "HOME",
            },
            ["ExternalMySQL", "ExternalMySQL"],
        ),
        ("https", {}, []),
    ],
)
def test_each_study_declares_the_external_servers_preflight_checks(study_id, values, kinds):
    p = build(STUDIES[study_id].Params, values, study=study_id)
    assert [type(s).__name__ for s in p.external_servers()] == kinds


def test_the_pipeline_sizes_a_plan_up_and_hands_the_kernel_the_new_repetitions():
    from secoverhead.app.pipeline import prepare

    prepared = prepare("tde", scale="quick", overrides=[("repetitions", "7")], check_servers=False)
    assert prepared.values["repetitions"] == prepared.params.repetitions > 7
    assert any(n.startswith("tde: ") and "raised from 7" in n for n in prepared.plan_notes)
    smoke = prepare("tde", check_servers=False)  # smoke warns only: a software check, not a measurement
    assert smoke.params.repetitions == 2
    with pytest.raises(ConfigError):
        prepare("tde", scale="quick", overrides=[("repetitions", "7"), ("plan_check", "refuse")], check_servers=False)


def test_a_study_budget_is_shared_by_part_weight_and_passes_on_what_a_part_left():
    from secoverhead.studies.auth import Params as AuthParams
    from secoverhead.studies.protocol.params import Budget

    clock = [0.0]
    b = Budget(100.0)
    b._start, b._time = 0.0, lambda: clock[0]
    weights = [AuthParams.PART_WEIGHTS.get(n, 1.0) for n in ("MongoDB", "MySQL", "nonce")]
    assert weights == [2.0, 1.5, 1.0]
    assert b.share(weights[0], sum(weights)) == pytest.approx(100 * 2.0 / 4.5)
    clock[0] = 30.0  # MongoDB decided its claims early: the other parts split the remaining 70 s by weight
    assert b.share(weights[1], sum(weights[1:])) == pytest.approx(70 * 1.5 / 2.5)
    clock[0] = 120.0
    assert b.share(1.0, 1.0) == 0.0 and b.left() == 0.0


def test_an_aa_copy_of_the_nonce_arm_still_names_a_real_source():
    from secoverhead.studies.auth import declarations as auth_declarations
    from secoverhead.workloads.nonce import SOURCES

    arms = auth_declarations.Params(aa=True).arms("nonce")
    assert arms[1].name != arms[0].name and {a.mechanism for a in arms} <= set(SOURCES)


def test_a_renamed_parameter_is_read_under_its_old_name_and_said_once(capsys, monkeypatch):
    from secoverhead.core import params as params_mod
    from secoverhead.studies import STUDIES

    monkeypatch.setattr(params_mod, "_SAID_RENAMED", set())
    cls = STUDIES["tde"].Params
    for _ in range(2):
        p = params_mod.build(cls, {"profiles": ["8c32g"], "interleaved_profiles": ["8c32g"]}, study="tde")
        assert p.instances == ["8c32g"] and p.interleaved_instances == ["8c32g"]
    err = capsys.readouterr().err
    assert err.count("parameter profiles is now instances") == 1
    p = params_mod.build(cls, {"profiles": ["8c32g"], "instances": ["4c16g"]}, study="tde")
    assert p.instances == ["4c16g"]  # the new name wins
