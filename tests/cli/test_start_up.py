"""What the command loads lazily to start fast still behaves as if everything were loaded.

The parser registers only the command named first, `tunegate` and `tunegate.output` load their
names on first use, a check runs with pydantic's plugin look-up off (tunegate.cli.start_up) and
numpy's OpenBLAS on one thread (tunegate.overlap.numeric; docs/benchmarks.md, issue 15's start-up
targets). None of that
may change what a user sees, nor leak into the environment of a caller or of a training run.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys

import pytest

from tests.support.paths import ROOT
from tunegate.cli.main import COMMANDS, build_parser, main
from tunegate.cli.start_up import SETTINGS, is_static

PLUGINS_ENV = "PYDANTIC_DISABLE_PLUGINS"


def _help_of(parser, command: str) -> str:
    return parser._subparsers._group_actions[0].choices[command].format_help()


@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_named_first_gets_the_same_flags_and_help_as_in_the_full_parser(command):
    alone = build_parser([command, "--help"])
    assert _help_of(alone, command) == _help_of(build_parser(), command)


def test_the_top_level_help_still_lists_every_command():
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main(["--help"])
    listed = out.getvalue()
    assert all(f"    {name}" in listed for name in COMMANDS)


def test_a_misspelt_command_still_gets_the_list_of_every_command(capsys):
    with pytest.raises(SystemExit):
        main(["chek", "examples/quickstart.yaml"])
    assert "invalid choice: 'chek' (choose from 'check', 'lint'," in capsys.readouterr().err


def test_a_check_leaves_none_of_its_settings_behind(monkeypatch, capsys):
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(ROOT)
    assert main(["check", "examples/broken.yaml"]) == 1
    assert not set(SETTINGS) & set(os.environ)


def test_a_setting_the_user_made_is_kept(monkeypatch, capsys):
    monkeypatch.setenv(PLUGINS_ENV, "")  # empty: the user wants pydantic's plugins on
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    monkeypatch.chdir(ROOT)
    assert main(["check", "examples/broken.yaml"]) == 1
    assert os.environ[PLUGINS_ENV] == "" and os.environ["OPENBLAS_NUM_THREADS"] == "4"


@pytest.mark.parametrize("argv", [["check", "spec.yaml", "--mini-run"], ["check", "spec.yaml", "--mini"],
                                  ["check", "--mi", "spec.yaml"], ["preflight", "spec.yaml"], ["sweep", "spec.yaml"],
                                  ["--help"], []])
def test_a_command_that_trains_or_starts_other_programs_gets_no_settings(argv):
    assert not is_static(argv)


@pytest.mark.parametrize("argv", [["check", "spec.yaml"], ["check", "--train", "t.jsonl", "--json"],
                                  ["lint", "t.jsonl"]])
def test_a_static_check_gets_the_settings(argv):
    assert is_static(argv)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="counts threads through /proc")
def test_approving_the_quickstart_leaves_the_process_with_one_thread():
    # numpy's OpenBLAS would start a thread per core at import (~85 ms of CPU on 2 cores); the
    # static stages multiply no matrices, so the check runs on the main thread alone
    # (tunegate.overlap.numeric), and leaves no setting behind for a trainer started later.
    code = ("import os, re\nos.environ.pop('OPENBLAS_NUM_THREADS', None)\n"
            "from tunegate.cli.main import main\nassert main(['check', 'examples/quickstart.yaml']) == 0\n"
            "print(re.search(r'Threads:\\s+(\\d+)', open('/proc/self/status').read())[1])\n"
            "print(os.environ.get('OPENBLAS_NUM_THREADS'))")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         check=True)
    assert run.stdout.splitlines()[-2:] == ["1", "None"]


def _fresh(code: str) -> list[str]:
    run = subprocess.run([sys.executable, "-c", f"{code}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    return json.loads(run.stdout.splitlines()[-1])


def test_the_package_and_the_output_formats_still_export_every_name_in_a_fresh_process():
    loaded = _fresh("from tunegate import Finding, GateReport, StageResult, check\n"
                    "from tunegate.output import FORMATS, charts_section, html_page, markdown_with_charts, render_as\n"
                    "import tunegate, tunegate.output\n"
                    "assert all(getattr(m, n) for m in (tunegate, tunegate.output) for n in m.__all__)\n"
                    "assert check.__module__ == 'tunegate.gate' and html_page.__module__ == 'tunegate.output.html'")
    assert {"tunegate.gate", "tunegate.output.html", "tunegate.output.markdown"} <= set(loaded)


def test_an_unknown_name_of_the_package_is_an_attribute_error():
    import tunegate
    import tunegate.output

    with pytest.raises(AttributeError):
        tunegate.no_such_name  # noqa: B018
    with pytest.raises(AttributeError):
        tunegate.output.no_such_name  # noqa: B018


def _entry_in_a_fresh_process(argv: list[str]) -> list[str]:
    # What the console script does (tunegate.cli.main.entry), then what the exit would find frozen.
    # A thread still runs, so a static command's entry returns rather than ending the process
    # at once (tunegate.cli.fast_exit), and the exit's collections are what is left to spare.
    code = (f"import gc, sys, threading\nsys.argv = ['tunegate', *{argv!r}]\n"
            "held = threading.Event()\nthreading.Thread(target=held.wait, args=(60,)).start()\n"
            "from tunegate.cli.main import entry\n"
            "code = entry()\nheld.set()\nprint(code, gc.get_freeze_count() > 0, gc.isenabled())")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    return run.stdout.splitlines()[-1].split()


def test_where_it_cannot_end_at_once_the_entry_freezes_its_objects_after_a_static_command():
    # and collection is back on: held only while the command's modules load
    assert _entry_in_a_fresh_process(["check", "examples/broken.yaml", "--quiet"]) == ["1", "True", "True"]


def test_a_static_command_collects_its_garbage_once_its_modules_are_loaded():
    code = ("import gc, sys\nsys.argv = ['tunegate', 'check', 'examples/broken.yaml']\n"
            "import tunegate.cli.check as command\nrun = command.run\n"
            "command.run = lambda args: print([gc.isenabled()], file=sys.stderr) or run(args)\n"
            "from tunegate.cli.main import entry\nentry()\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.stderr.splitlines()[0] == "[True]" and done.returncode == 1


def test_the_process_entry_leaves_every_object_collectable_after_a_command_that_is_not_static():
    assert _entry_in_a_fresh_process(["gpus"]) == ["0", "False", "True"]


def test_main_itself_never_freezes_its_caller(monkeypatch, capsys):
    import gc

    monkeypatch.chdir(ROOT)
    before = gc.get_freeze_count()
    assert main(["check", "examples/broken.yaml"]) == 1
    assert gc.get_freeze_count() == before


def test_a_static_command_run_as_a_program_writes_its_whole_report_and_files_before_it_exits(tmp_path):
    page = tmp_path / "report.html"
    run = subprocess.run([sys.executable, "-m", "tunegate", "check", "examples/broken.yaml", "--json",
                          "--html", str(page)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    report = json.loads(run.stdout)
    assert report["gates_passed"] is False and len(report["findings"]) == 7
    assert page.read_text(encoding="utf-8").rstrip().endswith("</html>")


def test_every_mutable_default_of_the_report_and_the_spec_is_a_new_object_per_instance():
    from tunegate.report import GateReport, StageResult
    from tunegate.spec.model import LoraSpec, SweepSpec

    first, second = StageResult(name="spec", status="passed"), StageResult(name="spec", status="passed")
    first.stats["x"], first.totals_by_code["TG101"] = 1, 1
    first.findings.append(None)
    assert (second.stats, second.findings, second.totals_by_code) == ({}, [], {})
    report = GateReport.from_stages([second])
    report.fingerprints["spec"], report.caveats[:] = "d", []
    assert GateReport.from_stages([second]).caveats
    assert GateReport.from_stages([second]).fingerprints == {}
    a, b = SweepSpec(), SweepSpec()
    a.candidates.append({"lora.r": 8})
    a.grid["lora.r"] = [8]
    assert (b.candidates, b.grid) == ([], {})
    lora = LoraSpec()
    lora.modules_to_save.append("lm_head")
    assert LoraSpec().modules_to_save == []


def test_a_section_left_out_of_the_spec_gets_its_defaults_a_new_one_per_spec():
    from tunegate.spec.model import GateSpec, LoraSpec, Spec, SweepSpec

    data = {"train": "t.jsonl", "validation": "v.jsonl"}
    first, second = Spec(data=data), Spec(data=data)
    assert (first.lora, first.gate, first.sweep) == (LoraSpec(), GateSpec(), SweepSpec())
    assert first.lora is not second.lora and first.gate.overlap is not second.gate.overlap


def _last_line(code: str, **env: str) -> str:
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         check=True, env={**os.environ, **env})
    return run.stdout.splitlines()[-1]


CHECK_BOTH = ("import io, contextlib, sys\nfrom tunegate.cli.main import main\n"
              "with contextlib.redirect_stdout(io.StringIO()):\n"
              "    assert main(['check', 'examples/broken.yaml']) == 1\n"
              "    assert main(['check', 'examples/quickstart.yaml']) == 0\n")


@pytest.fixture(scope="module")
def after_both_checks() -> dict:
    """What a fresh process that rejected broken.yaml and approved quickstart.yaml has loaded."""
    code = CHECK_BOTH + ("import json, tokenize\nloaded = {'metadata': 'importlib.metadata' in sys.modules,\n"
                         "          'tokenizer_regexes': tokenize._compile.cache_info().currsize,\n"
                         "          'config_map': 'tunegate.spec.importers.config_map' in sys.modules}\n"
                         "from pydantic import BaseModel\nclass Later(BaseModel):\n    x: int\n"
                         "loaded['later'] = [Later(x=1).x, sys.modules['pydantic.plugin._loader'].__file__[-10:]]\n"
                         "print(json.dumps(loaded))")
    return json.loads(_last_line(code))


def test_a_rejection_and_an_approval_never_compile_the_tokenizer(after_both_checks):
    # pydantic reads each default factory's signature; a builtin's (dict, list) goes through the
    # tokenizer, whose first use compiles its regexes (~5 ms): the models' factories are functions.
    assert after_both_checks["tokenizer_regexes"] == 0


def test_a_check_with_the_plugin_look_up_off_never_imports_importlib_metadata(after_both_checks):
    # pydantic's loader imports it (~5 % of a rejection's instructions) only to return no plugins
    assert after_both_checks["metadata"] is False


def test_a_tunegate_spec_loads_none_of_the_mapping_of_other_tools_configs(after_both_checks):
    # tunegate.spec.importers.config_map (axolotl, TRL) loads when such a config is checked: ~1 % of a rejection
    assert after_both_checks["config_map"] is False


def test_after_a_check_the_callers_own_models_get_pydantics_own_loader(after_both_checks):
    assert after_both_checks["later"] == [1, "_loader.py"]


def test_a_check_where_the_user_turned_plugins_on_uses_pydantics_own_loader():
    code = ("import io, contextlib, sys\nfrom tunegate.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    main(['check', 'examples/broken.yaml'])\n"
            "print(sys.modules['pydantic.plugin._loader'].get_plugins.__module__)")
    assert _last_line(code, **{PLUGINS_ENV: ""}) == "pydantic.plugin._loader"


def test_any_other_name_asked_of_the_stand_in_loader_comes_from_pydantics_own():
    code = ("import sys\nfrom tunegate.cli.start_up import PLUGIN_LOADER, static_settings\n"
            "with static_settings(['check', 'spec.yaml']):\n"
            "    group = sys.modules[PLUGIN_LOADER].PYDANTIC_ENTRY_POINT_GROUP\n"
            "    real = sys.modules[PLUGIN_LOADER].__file__.endswith('_loader.py')\n"
            "print(group, real)")
    assert _last_line(code) == "pydantic True"


def test_the_models_every_check_builds_hold_real_types_not_annotation_strings():
    # A string annotation (`from __future__ import annotations`) is compiled and evaluated by
    # pydantic at every start-up, ~2 % of a rejection's instructions over these models; the
    # report's dataclasses are built into a parsed spec's model too (its spec stage's result).
    from pydantic import BaseModel

    import tunegate.facts
    import tunegate.report
    import tunegate.spec.check
    import tunegate.spec.gpus
    import tunegate.spec.model
    import tunegate.spec.search_space
    from tunegate.plain_record import PlainRecord

    modules = (tunegate.facts, tunegate.report, tunegate.spec.model, tunegate.spec.search_space,
               tunegate.spec.gpus, tunegate.spec.check)
    models = [m for module in modules for m in vars(module).values()
              if isinstance(m, type) and issubclass(m, (BaseModel, PlainRecord)) and m.__module__ == module.__name__]
    assert len(models) >= 30
    strings = {f"{m.__name__}.{k}" for m in models for k, v in m.__dict__.get("__annotations__", {}).items()
               if isinstance(v, str)}
    assert not strings
