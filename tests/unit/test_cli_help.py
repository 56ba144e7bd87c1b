"""`phalanx run --help` is readable at 80 columns: every option has a sentence, its env var and
its default; enums list their values; and the defaults it shows are the configuration's."""

from __future__ import annotations

import re
from typing import Any

import typer
from typer.testing import CliRunner

from phalanx.cli import app
from phalanx.config import OperatorConfig, parse_topology


def _run_command() -> Any:
    # Typer brings its own copy of click: its objects are read by their click attributes.
    return typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]


def _options() -> list[Any]:
    return [
        p
        for p in _run_command().params
        if p.param_type_name == "option" and p.name != "help" and not p.hidden
    ]


def test_every_run_option_has_a_sentence_its_env_var_and_its_default() -> None:
    cmd = _run_command()
    ctx = cmd.context_class(cmd, info_name="run")
    options = _options()
    assert len(options) >= 20
    for opt in options:
        assert opt.help and opt.help.endswith("."), f"{opt.name}: no sentence of help"
        assert isinstance(opt.envvar, str) and opt.envvar, f"{opt.name}: no env var"
        record = opt.get_help_record(ctx)
        assert record is not None
        text = record[1]
        assert f"env var: {opt.envvar}" in text, f"{opt.name}: env var not shown: {text}"
        assert "default: " in text, f"{opt.name}: default not shown: {text}"
        if opt.envvar != "KUBECONFIG":
            assert opt.envvar == "PHALANX_" + opt.opts[-1].lstrip("-").upper().replace("-", "_")


def test_the_member_failure_option_lists_its_values_and_refuses_others() -> None:
    (opt,) = [o for o in _options() if o.name == "member_failure"]
    cmd = _run_command()
    assert opt.get_help_record(cmd.context_class(cmd, info_name="run"))[0] == (
        "--member-failure <evict|keep>"
    )
    got = CliRunner().invoke(app, ["run", "--member-failure", "sometimes"])
    assert got.exit_code == 2
    assert "'sometimes' is not one of 'evict', 'keep'" in got.output


def test_run_help_fits_80_columns_and_cuts_nothing() -> None:
    got = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    assert got.exit_code == 0, got.output
    assert max(len(line) for line in got.output.splitlines()) <= 80
    assert "…" not in got.output
    flat = re.sub(r"\s+", " ", got.output)
    for opt in _options():
        assert str(opt.envvar) in flat, f"{opt.envvar} is cut or missing"
    assert "<evict|keep>" in flat


def test_the_defaults_shown_are_the_configurations() -> None:
    fields = OperatorConfig.model_fields
    checked = 0
    for opt in _options():
        name = str(opt.name)
        field = next((f for f in (name, f"{name}_s") if f in fields), None)
        if field is None:
            continue  # kubeconfig, verbose: not operator configuration
        default = opt.default.value if hasattr(opt.default, "value") else opt.default
        if field == "topology_levels":
            default = parse_topology(str(default))
        elif field == "namespaces":
            default = tuple(n for n in str(default).split(",") if n)
        assert default == fields[field].default, f"--{name}: {default!r}"
        checked += 1
    assert checked == len(_options()) - 2
