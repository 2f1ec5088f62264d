"""A dataset format is one module: the registry finds it, and detection, the spec's `data.format`,
the CLI's choices, `tunegate schema` and docs/formats.md all read the registry.

The proof: a toy format module dropped into a copy of the package is detected, checked, accepted
by the spec and the CLI, listed by the schema and named by the docs check, with nothing else
changed. (That every finding code is produced by one module is tests/test_layout.py's.)
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from tests.formats import docs_table
from tests.support.paths import DATA, EXAMPLES, ROOT
from tunegate import formats
from tunegate.cli.main import build_parser
from tunegate.formats import registry
from tunegate.formats.format_info import FormatInfo
from tunegate.spec.model import DataSpec

BUILT_IN = ("messages", "sharegpt", "alpaca", "prompt_completion")

TOY_MODULE = '''"""Toy chat records: {"dialogue": [{"speaker": "human"|"bot", "text": ...}, ...]}."""
from __future__ import annotations

from typing import Any

from tunegate.formats import shape
from tunegate.formats.format_info import FormatInfo
from tunegate.formats.problem import Problem
from tunegate.formats.turns import Names, Turn, source_rules

FORMAT = FormatInfo(name="toy_chat", label="toy chat ('dialogue')", keys=("dialogue",), order=9, priority=9)
NAMES = Names(turns="dialogue", role="speaker", text="text", turn="line")
ROLES = {"human": "user", "bot": "assistant"}


def problems(record: dict[str, Any]) -> list[Problem]:
    lines = record.get("dialogue")
    if type(lines) is not list:
        return [shape.not_a_list("dialogue", lines, "Write 'dialogue' as a list of lines.")]
    out: list[Problem] = []
    turns = []
    for i, line in enumerate(lines):
        where = ("dialogue", i)
        if line.get("speaker") not in ROLES:
            out.append(shape.bad_role(where, line, "speaker", "A speaker is 'human' or 'bot'."))
        turns.append(Turn(ROLES.get(line.get("speaker")), line.get("text"), where + ("speaker",),
                          where + ("text",), shown_role=str(line.get("speaker"))))
    return out + source_rules(turns, NAMES, ("dialogue",))


def to_messages(record: dict[str, Any]) -> dict[str, Any]:
    rest = {k: v for k, v in record.items() if k != "dialogue"}
    return {"messages": [{"role": ROLES[t["speaker"]], "content": t["text"]} for t in record["dialogue"]], **rest}
'''


def toy_line(*turns: tuple[str, str]) -> str:
    return json.dumps({"dialogue": [{"speaker": s, "text": t} for s, t in turns]}) + "\n"


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """A copy of the package with tunegate/formats/toy_chat.py added, and toy data files."""
    root = tmp_path_factory.mktemp("toy")
    shutil.copytree(ROOT / "tunegate", root / "tunegate", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "tunegate" / "formats" / "toy_chat.py").write_text(TOY_MODULE)
    (root / "good.jsonl").write_text(toy_line(("human", "Hi!"), ("bot", "Hello!"))
                                     + toy_line(("human", "Name a prime."), ("bot", "7.")))
    (root / "val.jsonl").write_text(toy_line(("human", "Another prime?"), ("bot", "11.")))
    (root / "bad.jsonl").write_text(toy_line(("human", "Hi!"), ("robot", "Beep.")))
    return root


def in_copy(toy: Path, *args: str) -> subprocess.CompletedProcess:
    """Run `python *args` with the copy's tunegate first on the path (the tests' helpers after it)."""
    env = {**os.environ, "PYTHONPATH": f"{toy}{os.pathsep}{ROOT}"}
    return subprocess.run([sys.executable, *args], cwd=toy, env=env, capture_output=True, text=True, timeout=120)


def check_json(toy: Path, *args: str) -> tuple[int, dict]:
    run = in_copy(toy, "-m", "tunegate", "check", *args, "--json")
    return run.returncode, json.loads(run.stdout)


# -- the toy format, in a copy of the package with nothing else changed ----------------------


def test_a_new_format_module_is_detected_and_its_file_passes(toy):
    code, report = check_json(toy, "--train", "good.jsonl")
    [dataset] = [s for s in report["stages"] if s["name"] == "dataset"]
    assert (code, dataset["status"], dataset["stats"]["train"]["format"]) == (0, "passed", "toy_chat")


def test_a_new_format_rejects_a_bad_record_with_its_own_finding(toy):
    code, report = check_json(toy, "--train", "bad.jsonl")
    assert code == 1
    assert [(f["code"], f["line"], f["message"]) for f in report["findings"]] == [
        ("TG205", 1, "dialogue[1].speaker is 'robot'")]


def test_a_new_format_is_a_data_format_choice_of_the_cli(toy):
    code, report = check_json(toy, "--train", "good.jsonl", "--data-format", "toy_chat")
    assert code == 0 and report["stages"][1]["stats"]["train"]["format"] == "toy_chat"


@pytest.mark.parametrize(("declared", "spec_status"), [("toy_chat", "passed"), ("toy_chit", "failed")])
def test_a_new_format_is_accepted_as_the_specs_data_format(toy, declared, spec_status):
    spec = (EXAMPLES / "quickstart.yaml").read_text()
    spec = spec.replace("data/train.jsonl", "good.jsonl").replace("data/validation.jsonl", "val.jsonl")
    (toy / f"{declared}.yaml").write_text(spec.replace("  version: support-v1", f"  format: {declared}"))
    _, report = check_json(toy, f"{declared}.yaml")
    assert report["stages"][0]["status"] == spec_status
    if spec_status == "passed":
        assert report["stages"][1]["stats"]["train"]["format"] == "toy_chat"


def test_a_new_format_is_listed_by_tunegate_schema(toy):
    schema = json.loads(in_copy(toy, "-m", "tunegate", "schema").stdout)["$defs"]["DataSpec"]["properties"]["format"]
    assert schema["enum"] == ["auto", *BUILT_IN, "toy_chat"]
    assert "prompt_completion (TRL), toy_chat, or auto" in schema["description"]


def test_the_docs_check_names_a_new_format_missing_from_the_table(toy):
    run = in_copy(toy, "-m", "tests.formats.docs_table", "--check", str(docs_table.PAGE))
    assert run.returncode == 1 and "toy_chat is missing from" in run.stdout


def test_the_docs_table_writer_adds_a_new_formats_row(toy):
    page = toy / "formats.md"
    shutil.copy(docs_table.PAGE, page)
    assert in_copy(toy, "-m", "tests.formats.docs_table", str(page)).returncode == 0
    assert "| `toy_chat` | toy chat ('dialogue') | `dialogue` | every token |" in page.read_text()
    assert in_copy(toy, "-m", "tests.formats.docs_table", "--check", str(page)).returncode == 0


# -- the registry ---------------------------------------------------------------------------


def test_the_registry_lists_every_format_module_in_its_declared_order():
    assert formats.FORMATS == BUILT_IN
    assert formats.CHOICES == ("auto", *BUILT_IN)
    assert formats.LABELS["sharegpt"] == "ShareGPT ('conversations')"


def test_only_modules_that_declare_a_format_are_registered():
    found = registry.discover("tunegate.formats", Path(registry.__file__).parent)
    assert sorted(m.FORMAT.name for m in found) == sorted(BUILT_IN)


@pytest.mark.parametrize(("record", "expected"), [
    ({"messages": [], "conversations": []}, "messages"),
    ({"conversations": []}, "sharegpt"),
    ({"prompt": "a", "completion": "b", "instruction": "c", "output": "d"}, "prompt_completion"),
    ({"instruction": "c", "input": "", "output": "d"}, "alpaca"),
    ({"instruction": "c"}, None),
    ({"text": "x"}, None),
])
def test_detection_tries_the_more_specific_signature_first(record, expected):
    assert formats.detect(record) == expected


def test_detection_is_written_out_for_any_keys_a_format_declares():
    detect = registry.written_out((("quoted", ("it's", 'say "hi"')), ("plain", ("a",))))
    assert detect({"it's": 1, 'say "hi"': 2, "a": 3}) == "quoted"
    assert (detect({"it's": 1, "a": 3}), detect({"b": 1})) == ("plain", None)


def test_a_record_with_some_of_a_formats_keys_shares_them():
    assert formats.shares_keys({"instruction": "c"}, "alpaca") and not formats.shares_keys({"x": 1}, "alpaca")


def test_the_first_record_whose_format_is_known_fixes_the_files_format():
    file_format = formats.FileFormat("auto")
    assert file_format.of({"x": 1}, 1) == (None, None)
    assert file_format.of({"conversations": []}, 2) == ("sharegpt", "sharegpt")
    assert file_format.of({"messages": []}, 3) == ("sharegpt", "messages")
    assert file_format.first_line == 2


def test_a_declared_format_is_the_files_whatever_its_records_hold():
    assert formats.FileFormat("alpaca").of({"messages": []}) == ("alpaca", "messages")


def test_only_a_format_that_trains_its_completion_only_is_completion_only():
    assert [f for f in BUILT_IN if formats.completion_only(f)] == ["prompt_completion"]
    assert not formats.completion_only(None)


def test_every_format_converts_its_good_file_to_the_chat_form():
    from tunegate.dataset.records import iter_records

    for name, fmt in [("openai_tools.jsonl", "messages"), ("sharegpt.jsonl", "sharegpt"),
                      ("alpaca.json", "alpaca"), ("prompt_completion.jsonl", "prompt_completion")]:
        for _, _, record in iter_records(DATA / "formats" / "good" / name):
            assert formats.problems(record, fmt) == []
            assert isinstance(formats.to_messages(record, fmt)["messages"], list)


def module(name: str, info: FormatInfo | None, **functions) -> types.ModuleType:
    made = types.ModuleType(name)
    made.FORMAT = info
    for key, value in functions.items():
        setattr(made, key, value)
    return made


def info(name: str = "toy", **changes) -> FormatInfo:
    return FormatInfo(**{"name": name, "label": "toy", "keys": ("dialogue",), "order": 9, "priority": 9, **changes})


HOOKS = {"problems": lambda r: [], "to_messages": lambda r: r}


def test_two_modules_declaring_one_name_is_an_error_naming_both():
    with pytest.raises(ValueError, match="declared by a_toy too"):
        registry.build([module("a_toy", info(), **HOOKS), module("b_toy", info(), **HOOKS)])


def test_a_format_module_without_its_functions_is_an_error():
    with pytest.raises(TypeError, match="has no to_messages"):
        registry.build([module("toy", info(), problems=HOOKS["problems"])])


@pytest.mark.parametrize("changes", [{"name": "auto"}, {"name": "two words"}, {"keys": ()}])
def test_a_format_declared_with_an_unusable_name_or_no_keys_is_an_error(changes):
    with pytest.raises(ValueError):
        registry.build([module("toy", info(**changes), **HOOKS)])


def test_the_registry_is_ordered_by_declared_order_and_detection_by_priority():
    first, second = info("first", order=1, priority=2), info("second", order=2, priority=1)
    assert list(registry.build([module("b", second, **HOOKS), module("a", first, **HOOKS)])) == ["first", "second"]
    assert [name for name, _ in registry.signatures([first, second])] == ["second", "first"]


def test_the_specs_data_format_choices_and_their_description_are_the_registrys():
    schema = DataSpec.model_json_schema()["properties"]["format"]
    assert schema["enum"] == list(formats.CHOICES) and schema["default"] == "auto"
    assert schema["description"].startswith("Record format: messages (OpenAI chat), sharegpt, alpaca, "
                                            "prompt_completion (TRL), or auto")


@pytest.mark.parametrize(("command", "flag"), [("check", "--data-format"), ("convert", "--from")])
def test_the_clis_format_choices_are_the_registrys(command, flag):
    parser = build_parser([command])
    [sub] = [a for a in parser._actions if a.dest == "command"]
    [action] = [a for a in sub.choices[command]._actions if flag in a.option_strings]
    assert tuple(action.choices) == formats.CHOICES


def test_docs_formats_md_lists_exactly_the_registrys_formats():
    assert docs_table.problems(docs_table.PAGE.read_text(encoding="utf-8")) == []
