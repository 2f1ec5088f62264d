"""Every `tunegate ...` command the README, the docs and the shipped workflow name, with the flags
they name, parses with the real command line; the static ones are run. Docs that cite a flag that
does not exist (`--advisor` for `--advise`) or a tag that was never made fail here.

Commands are taken from fenced code blocks, inline code spans and the workflow's `run:` lines.
Usage lines are expanded: `[--json]` is included, `[--spec SPEC | --tracking-uri URI]` gives one
command per alternative, and placeholders (SPEC, CONFIG, FILE..., N) become the repository's examples.
The flow commands (preflight, sweep, launch, runs) are parsed here and run by the demo test.
"""
from __future__ import annotations

import glob
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from tunegate.cli.main import build_parser

SOURCES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "deployments" / "README.md",
           *sorted((ROOT / ".github" / "workflows").glob("*.yml"))]
PLACEHOLDERS = {"SPEC": "examples/quickstart.yaml", "SPEC|CONFIG": "examples/quickstart.yaml",
                "CONFIG": "tests/data/configs/axolotl/lora-1b.yml", "FILE": "examples/data/validation.jsonl",
                "FILE...": "examples/data/validation.jsonl", "N": "5", "NAME": "tunegate",
                "URI": "sqlite:///mlflow.db", "RUN_ID": "0" * 32, "RUN_A": "0" * 32, "RUN_B": "1" * 32,
                "PATH": "examples/data/validation.jsonl"}
RUN = {"check", "lint", "fingerprint", "estimate", "advise", "schema", "gpus"}
_ENV = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)+")
_INLINE = re.compile(r"`(tunegate [^`]+)`")
_ASSIGN = re.compile(r"^([A-Z_][A-Z0-9_]*)=(\S+)$")
_DATA = (".jsonl", ".jsonl.gz", ".json", ".parquet")


def _segments(line: str) -> list[str]:
    """The tunegate invocations in one shell line (after &&, |, ;, xargs -r)."""
    line = re.split(r"\s#\s", line, maxsplit=1)[0]
    line = re.sub(r"\[[^\[\]]*\]", lambda m: m.group(0).replace("|", "\0"), line)  # a usage line's [A | B]
    out = []
    for part in (p.replace("\0", "|") for p in re.split(r"&&|\|\||\||;", line)):
        part = _ENV.sub("", part.strip().removeprefix("$ "))
        part = re.sub(r"^xargs(\s+-r)?\s+", "", part)
        if part.startswith("tunegate "):
            out.append(re.sub(r"\s+\d?>\s*\S+", "", part).strip())  # redirections are the shell's
    return out


def documented() -> list[tuple[str, str]]:
    """(source:line, command) for every tunegate command the docs name."""
    found = []
    for source in SOURCES:
        fenced, names = False, {}
        for n, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
            where = f"{source.relative_to(ROOT)}:{n}"
            if line.strip().startswith("```"):
                fenced = not fenced
                continue
            assigned = _ASSIGN.match(line.strip())
            if fenced and assigned:  # `F=tests/data/formats/good` and then `$F/alpaca.json`
                names[assigned.group(1)] = assigned.group(2)
                continue
            line = re.sub(r"\$(\w+)", lambda m: names.get(m.group(1), m.group(0)), line)
            if source.suffix == ".yml":
                found += [(where, c) for c in _segments(line.strip().removeprefix("- ").removeprefix("run: "))]
            elif fenced:
                found += [(where, c) for c in _segments(line)]
            else:
                found += [(where, c) for span in _INLINE.findall(line) for c in _segments(span)]
    return found


def variants(command: str) -> list[list[str]]:
    """argv lists for a command or a usage line: optional groups included, one per alternative."""
    groups = re.findall(r"\[([^\[\]]+)\]", command)
    bare = re.sub(r"\s*\[[^\[\]]+\]", "", command)
    chosen = [g.split(" | ")[0] for g in groups]
    out = [" ".join([bare, *chosen])]
    for i, g in enumerate(groups):
        for alternative in g.split(" | ")[1:]:
            out.append(" ".join([bare, *chosen[:i], alternative, *chosen[i + 1:]]))
    return [[_real(token) for token in shlex.split(v)[1:]] for v in out]


def _real(token: str) -> str:
    """A placeholder or a path the docs use as an example, as a file of this repository."""
    if token in PLACEHOLDERS:
        return PLACEHOLDERS[token]
    if not token.endswith((*_DATA, ".yaml", ".yml")) and "*" not in token:
        return token
    for candidate in (token, f"examples/{token}"):
        matches = sorted(glob.glob(str(ROOT / candidate)))
        if matches:
            return str(Path(matches[0]).relative_to(ROOT))
    same_name = _tracked(Path(token).name)  # `lora-1b.yml` in prose is tests/data/configs/axolotl/lora-1b.yml
    if same_name:
        return same_name
    return PLACEHOLDERS["FILE"] if token.endswith(_DATA) else PLACEHOLDERS["SPEC"]


def _tracked(name: str) -> str | None:
    """The repository's file of that name (examples/ first), if there is exactly one place to look."""
    files = subprocess.run(["git", "ls-files", f"*{name}"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    files = [f for f in files if Path(f).name == name]
    return sorted(files, key=lambda f: (not f.startswith("examples/"), f))[0] if files else None


DOCUMENTED = documented()
# Prose that names a command without arguments ("`tunegate lint` runs ...") is a mention: the
# command must exist, but there are no flags to check.
MENTIONS = [(w, c.split()[1]) for w, c in DOCUMENTED if len(c.split()) == 2]
COMMANDS = [(w, argv) for w, c in DOCUMENTED if len(c.split()) > 2 or c.split()[1] in ("schema", "gpus")
            for argv in variants(c)]


def test_the_docs_name_the_commands_we_expect():
    named = {argv[0] for _, argv in COMMANDS}
    assert len(COMMANDS) >= 35
    assert {"check", "lint", "fingerprint", "preflight", "sweep", "launch", "estimate", "advise", "runs",
            "schema", "gpus"} <= named
    assert any(argv[0] == "check" and "--advise" in argv for _, argv in COMMANDS)


def test_every_command_the_docs_mention_exists():
    from tunegate.cli.main import COMMANDS as REAL

    assert MENTIONS and sorted({name for _, name in MENTIONS} - set(REAL)) == []


def test_a_flag_that_does_not_exist_fails_to_parse():
    with pytest.raises(SystemExit):
        build_parser().parse_args(["check", "examples/quickstart.yaml", "--advisor"])


@pytest.mark.parametrize(("where", "argv"), COMMANDS, ids=[f"{w} {' '.join(a)}" for w, a in COMMANDS])
def test_every_documented_command_parses(where, argv, capsys):
    try:
        build_parser().parse_args(argv)
    except SystemExit as exc:
        pytest.fail(f"{where}: `tunegate {' '.join(argv)}` does not parse: {capsys.readouterr().err}")
        raise exc


# --emit-event needs a Prefect server to take the event: parsed here, run by tests/flows/test_e2e_triggers.py.
RUNNABLE = [(w, a) for w, a in COMMANDS if a[0] in RUN and "--mini-run" not in a and "--emit-event" not in a]


@pytest.mark.parametrize(("where", "argv"), RUNNABLE, ids=[f"{w} {' '.join(a)}" for w, a in RUNNABLE])
def test_every_documented_static_command_runs_to_a_verdict(where, argv, tmp_path):
    argv = [str(tmp_path / "report.html") if i and argv[i - 1] == "--html" else a for i, a in enumerate(argv)]
    run = subprocess.run([sys.executable, "-m", "tunegate", *argv], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, env={**_clean_env(), "TUNEGATE_LOG_FILE": str(tmp_path / "log")})
    assert run.returncode in (0, 1), f"{where}: exit {run.returncode}: {run.stderr[-2000:]}"
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr


def _clean_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "OXLO_", "OPENAI_"))}


def test_no_doc_pins_a_tag_that_does_not_exist():
    tags = set(subprocess.run(["git", "tag"], cwd=ROOT, capture_output=True, text=True).stdout.split())
    pinned = {m for s in SOURCES for m in re.findall(r"^\s*rev:\s*(v\d[\w.]*)", s.read_text(encoding="utf-8"), re.M)}
    assert pinned <= tags


def test_lint_the_pre_commit_hook_imports_no_numeric_stack():
    probe = ("import sys\nfrom tunegate.cli.main import main\n"
             "code = main(['lint', 'examples/data/train.jsonl', '--quiet'])\n"
             "import json; print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    run = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    loaded = set(json.loads(run.stdout.splitlines()[-1]))
    assert not loaded & {"numpy", "scipy", "datasketch", "torch", "prefect", "mlflow"}


# nightly: the whole demo is 3.5 min of a CI run that reached 29.7 min on a slower machine; `make demo`
# runs the same steps
@pytest.mark.nightly
def test_the_demo_runs_every_step_the_readme_lists(tmp_path, tiny_cache):
    """`make demo` in a copy of the repository: check, preflight, sweep, launch, runs, each as documented."""
    copy = tmp_path / "repo"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, (f.decode() for f in files)):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_bytes((ROOT / name).read_bytes())
    run = subprocess.run([sys.executable, "examples/demo.py"], cwd=copy, capture_output=True, text=True,
                         timeout=1800, env={**_clean_env(), "PYTHONPATH": str(copy)})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert run.stdout.count("(exit code ") == 5 and "Demo finished" in run.stdout
