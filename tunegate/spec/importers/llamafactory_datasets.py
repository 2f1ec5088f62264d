"""LLaMA-Factory's datasets: the names in `dataset` / `eval_dataset`, resolved through dataset_info.json.

    dataset: identity,alpaca_en_demo   # entries of <dataset_dir>/dataset_info.json, comma-separated
    dataset_dir: data                  # LLaMA-Factory's default, relative to the folder it runs in
    eval_dataset: my_val               # a frozen validation set (or val_size: a random split, TG141)

Part of the LLaMA-Factory dialect (`tunegate.spec.importers.llamafactory_dialect`). Each entry is
read as LLaMA-Factory's `get_dataset_list` and `_load_single_dataset` read it: `hf_hub_url`
before `file_name` (a file, or a folder whose every file is the dataset), its `split`, and its
`formatting`, `columns` and `tags`, which `llamafactory_layouts` maps onto the tunegate format that
reads the same records the same way. Several names are one split, their files read in order, as
`merge_dataset` concatenates them (mix_strategy: concat, the default), in one format. An entry
LLaMA-Factory trains that tunegate does not read here (a layout or media of its own, a Hub subset,
ModelScope, Modelers, a loading script, cloud storage; datasets in several formats) leaves its split
unread: TG145 by the dataset stage, no reason LLaMA-Factory refuses the run. Findings
about an entry point into dataset_info.json, at the entry's own keys; the file is read from the
working directory's `dataset_dir` as LLaMA-Factory reads it, else from the config's folder or the
two above it (a checkout keeps examples/ beside data/).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tunegate.errors import YamlSyntaxError
from tunegate.pathguard import shown
from tunegate.spec.importers.config_data import (
    Source,
    map_data_file,
    map_data_files,
    no_validation,
    not_read_here,
    random_split,
    unavailable,
    unusable_data,
)
from tunegate.spec.importers.config_keys import refused_by_tool, required, text, wrong_type
from tunegate.spec.importers.config_map import ConfigMap
from tunegate.spec.importers.llamafactory_layouts import NOT_READ, Unread, entry_format
from tunegate.spec.importers.llamafactory_sources import elsewhere, entry_files
from tunegate.spec.path_names import path_problem
from tunegate.spec.yaml_loader import Located, load

INFO = "dataset_info.json"  # LLaMA-Factory's DATA_CONFIG
_ENTRY_KEYS = {"hf_hub_url", "ms_hub_url", "om_hub_url", "script_url", "cloud_file_name", "file_name", "formatting",
               "ranking", "subset", "split", "folder", "columns", "tags"}


@dataclass(frozen=True)
class Registry:
    """The dataset_info.json a config's names resolve in (or "ONLINE": every name is a Hub id)."""

    folder: Path | None
    shown: str  # the file as findings name it
    located: Located


@dataclass(frozen=True)
class Entry:
    """One dataset name, resolved: what to read and the tunegate format that reads it (None: none does)."""

    refs: tuple[str, ...]  # a Hub id, a file, or a folder's every file
    split: str
    fmt: str | None
    name: str = ""  # as `dataset` names it
    unread: Unread | None = None  # LLaMA-Factory trains it, tunegate does not read it here: why


def map_datasets(cmap: ConfigMap, stage: str) -> None:
    """Set data.train, data.validation and data.format from `dataset`, `eval_dataset` and `val_size`."""
    names, eval_names = _names(cmap, "dataset"), _names(cmap, "eval_dataset")
    roles = [role for role, named in (("train", names), ("validation", eval_names)) if named]
    registry = _registry(cmap, roles) if roles else None
    train = [e for n in names or [] if (e := _entry(cmap, registry, n, "dataset", stage)) is not None]
    evals = [e for n in eval_names or [] if (e := _entry(cmap, registry, n, "eval_dataset", stage)) is not None]
    for role, entries in (("train", train), ("validation", evals)):
        _not_read(cmap, registry, role, entries)
    if names is not None:
        _one_split(cmap, "train", "dataset", names, train)
    elif "train" in cmap.overrides:
        map_data_file(cmap, "train", None, None)
    else:
        cmap.explained.add("data.train")
        required(cmap, "dataset", "llamafactory-cli train stops (\"Please specify dataset for training.\")",
                 "Name the training set: dataset: my_data, registered in data/dataset_info.json.")
    size = _share(cmap)
    if "validation" in cmap.overrides or (eval_names is not None and not size):
        if _one_split(cmap, "validation", "eval_dataset", eval_names or [], evals) and train and evals:
            _same_format(cmap, train[0], evals[0])
    else:
        _no_frozen_split(cmap, eval_names is not None, size)


def _no_frozen_split(cmap: ConfigMap, named: bool, size: float) -> None:
    """TG141, TG143 or TG154: the config gives LLaMA-Factory no frozen validation set."""
    cmap.explained.add("data.validation")
    if named:
        refused_by_tool(cmap, "val_size", "val_size and eval_dataset are both set: LLaMA-Factory refuses them "
                        "together (\"Cannot specify `val_size` if `eval_dataset` is not None.\")",
                        "Keep eval_dataset (a frozen validation set) and drop val_size.")
    elif size:
        share = f"{size:.0%}" if size < 1 else f"{size:g} records"  # LLaMA-Factory reads 1 and above as a count
        random_split(cmap, "val_size", f"val_size {cmap.source['val_size']} makes LLaMA-Factory split a random "
                     f"{share} of the training data off for evaluation at each start",
                     "Freeze the split once: write the held-out records to their own file, register it in "
                     "dataset_info.json, name it in eval_dataset, and drop val_size.")
    else:
        no_validation(cmap, None, "val_size is 0 and eval_dataset is not set", "Register a separate, frozen "
                      "validation file in dataset_info.json and name it in eval_dataset.")


def _not_read(cmap: ConfigMap, registry: Registry | None, role: str, entries: list[Entry]) -> None:
    """TG145 by the dataset stage, at the first entry of the split LLaMA-Factory trains and tunegate does not
    read here (the others named with it); a file given for the split is read instead."""
    unread = [e for e in entries if e.unread is not None]
    if not unread or role in cmap.overrides or registry is None:
        return
    first, others = unread[0].unread, [e.name for e in unread[1:]]
    also = f"; so is {', '.join(others)}" if others else ""
    with cmap.elsewhere(registry.shown, registry.located):
        not_read_here(cmap, role, first.key, first.message + also, first.hint)


def _same_format(cmap: ConfigMap, train: Entry, evals: Entry) -> None:
    """The validation split in another format than the training split: LLaMA-Factory converts each dataset on
    its own, tunegate reads both splits in one format, so the validation split is not read here."""
    if train.fmt and evals.fmt and train.fmt != evals.fmt and "validation" not in cmap.overrides:
        not_read_here(cmap, "validation", "eval_dataset", f"eval_dataset is {evals.fmt} but dataset is {train.fmt}: "
                      f"LLaMA-Factory converts each on its own, tunegate reads both splits in one format, {NOT_READ}",
                      "To gate both, give them the same format (`tunegate convert` writes either as OpenAI chat); "
                      "otherwise the run is checked without its validation data.")


def _one_split(cmap: ConfigMap, role: str, key: str, names: list[str], entries: list[Entry]) -> bool:
    """Map a split's datasets (their format too): one name's file(s), or several names' files in order, as
    LLaMA-Factory concatenates them. Whether it was mapped."""
    formats = {e.fmt for e in entries}
    if len(entries) == len(names) and len(formats) == 1 and None not in formats \
            and (role == "train" or "format" not in cmap.data.get("data", {})):  # the training set's, else this
        cmap.set("data.format", formats.pop(), key)
    if role in cmap.overrides:
        map_data_file(cmap, role, cmap.source.get(key), key if names else None)
        return True
    cmap.explained.add(f"data.{role}")
    if any(e.unread is not None for e in entries):  # not read here: the dataset stage says why
        return False
    if len(formats - {None}) > 1:
        named = [e for e in entries if e.fmt]
        first, other = named[0], next(e for e in named if e.fmt != named[0].fmt)
        not_read_here(cmap, role, key, f"{key}: {other.name} is {other.fmt} but {first.name} is {first.fmt}: "
                      f"LLaMA-Factory converts each dataset on its own and concatenates them, tunegate reads a split "
                      f"in one format, {NOT_READ}", "To gate the split, register the datasets in one formatting "
                      "(alpaca or sharegpt, with the same columns), or convert one (`tunegate convert`); otherwise "
                      "the run is checked without its data.")
        return False
    if not entries or len(entries) != len(names):
        return False
    return map_data_files(cmap, role, [Source(ref, key, e.split) for e in entries for ref in e.refs], key)


def _names(cmap: ConfigMap, key: str) -> list[str] | None:
    """The dataset names at `key`, split at commas as DataArguments splits them; None when unset, [] when
    none can be read (TG102 said why)."""
    value = cmap.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        return [n.strip() for n in value.split(",") if n.strip()] or None
    if isinstance(value, list) and value and all(isinstance(n, str) for n in value):
        return value
    wrong_type(cmap, key, value, "dataset names (text, comma-separated)", f"Write {key}: name1,name2.")
    return []  # named, but none usable: said here, once


def _share(cmap: ConfigMap) -> float:
    value = cmap.get("val_size", 0.0)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        try:
            return float(value)
        except OverflowError:  # an integer past any float (10**4000): no share, no record count
            pass
    wrong_type(cmap, "val_size", value, "a share below 1 or a record count", "Set val_size: 0 and name a frozen "
               "validation set in eval_dataset.")
    return 0.0


def _registry(cmap: ConfigMap, roles: list[str]) -> Registry | None:
    """The dataset_info.json of `dataset_dir` that the `roles`' names resolve in; a finding (and None) when
    there is none to read."""
    name = text(cmap, "dataset_dir", cmap.get("dataset_dir"), "data")
    if name is None:
        return None
    if name == "ONLINE":  # every name is then a Hub dataset id
        return Registry(None, "", Located(data={}))
    if name.startswith("REMOTE:"):
        _registry_not_here(cmap, roles, f"dataset_dir {name!r} makes llamafactory-cli download {INFO} from the Hub "
                           f"repo {name[7:]!r} where it runs, so the data it names cannot be checked here (every "
                           "other check runs)", f"Download the repo's {INFO} and its files (`hf download --repo-type "
                           f"dataset {name[7:]}`), and set dataset_dir to that folder; or give the files: --train "
                           "FILE --validation FILE.")
        return None
    if problem := path_problem(name):  # a NUL byte, a name too long: no folder is called so
        unusable_data(cmap, "dataset_dir", f"dataset_dir {shown(name)!r} is not a usable path: {problem}",
                      f"Set dataset_dir to the folder that holds {INFO}.")
        return None
    tried = [Path(name)] if Path(name).is_absolute() else \
        [Path.cwd() / name, *(up / name for up in (cmap.base, *cmap.base.parents[:2]))]
    found = next((p for p in tried if _is_file(p / INFO)), None)
    if found is None:
        looked = ", ".join(str(p) for p in dict.fromkeys(tried))
        _registry_not_here(cmap, roles, f"no {INFO} in dataset_dir {name!r} on this machine (looked in {looked}): "
                           "llamafactory-cli reads it from the folder it runs in, so the data it names cannot be "
                           "checked here (every other check runs)", f"Run the check from the folder llamafactory-cli "
                           f"train runs in (where {name}/{INFO} is), set dataset_dir to the folder that holds it, or "
                           "give the files: --train FILE --validation FILE.")
        return None
    return _read(cmap, found.resolve())


def _registry_not_here(cmap: ConfigMap, roles: list[str], message: str, hint: str) -> None:
    """TG158 for each split named through a dataset_info.json that is not on this machine: llamafactory-cli
    reads it where it runs (a relative dataset_dir, `data` by default, from its working folder: LLaMA-Factory's
    checkout ships data/dataset_info.json; REMOTE: from the Hub), so the data cannot be checked here, and it
    is no reason LLaMA-Factory refuses the run."""
    key = "dataset_dir" if cmap.has("dataset_dir") else "dataset"
    for role in roles:
        if role not in cmap.overrides:  # a file given is read instead
            unavailable(cmap, role, cmap.finding("TG158", "error", key, message, hint, "dataset"))


def _read(cmap: ConfigMap, folder: Path) -> Registry | None:
    path = folder / INFO
    raw = path.read_text(encoding="utf-8", errors="replace")
    try:
        located = load(raw)  # JSON is YAML: the loader keeps each key's line for the findings
    except YamlSyntaxError:  # tabs and the like: read as JSON, the findings then name no line
        try:
            located = Located(data=json.loads(raw))
        except ValueError as exc:
            refused_by_tool(cmap, "dataset", f"{path} is not JSON ({exc}): LLaMA-Factory stops (\"Cannot open "
                            f"{INFO}\")", f"Fix the JSON of {path} (python -m json.tool {path}).")
            return None
    if not isinstance(located.data, dict):
        refused_by_tool(cmap, "dataset", f"{path} is not a mapping of dataset names", f"Write {INFO} as "
                        "{\"name\": {\"file_name\": \"...\"}, ...}.")
        return None
    return Registry(folder, _shown(path), located)


def _entry(cmap: ConfigMap, registry: Registry | None, name: str, key: str, stage: str) -> Entry | None:
    """The dataset `name` (listed at `key`), resolved as LLaMA-Factory resolves it."""
    if registry is None:
        return None
    if registry.folder is None:  # dataset_dir: ONLINE
        return Entry((name,), "train", "alpaca", name)
    attrs = registry.located.data.get(name)
    if attrs is None:
        refused_by_tool(cmap, key, f"dataset {name!r} is not in {registry.shown}: LLaMA-Factory stops (\"Undefined "
                        f"dataset {name} in {INFO}.\")", f"Register it in {INFO} (\"{name}\": {{\"file_name\": "
                        "...}) or name a dataset it lists.")
        return None
    with cmap.elsewhere(registry.shown, registry.located):
        if not isinstance(attrs, dict):
            wrong_type(cmap, name, attrs, "a dataset description (an object)", f"Write it as \"{name}\": "
                       "{\"file_name\": \"data.json\"}.")
            return None
        cmap.unchecked += [f"{name}.{k} ({INFO})" for k, v in attrs.items() if k not in _ENTRY_KEYS
                           and v not in (None, "", [], {})]
        fmt = entry_format(cmap, name, attrs, stage)
        unread = fmt if isinstance(fmt, Unread) else elsewhere(name, attrs)
        refs = entry_files(cmap, registry.folder, name, attrs) if unread is None else None
    split = attrs.get("split") or "train"
    split = split if isinstance(split, str) else "train"
    if unread is not None:  # its files are not looked for; None when LLaMA-Factory refuses it anyway (said)
        return Entry((), split, None, name, unread) if fmt is not None else None
    return Entry(tuple(refs), split, fmt if isinstance(fmt, str) else None, name) if refs is not None else None


def _is_file(path: Path) -> bool:
    """Whether `path` is a file; False where it cannot be looked at (a name past the system's length)."""
    try:
        return path.is_file()
    except OSError:
        return False


def _shown(path: Path) -> str:
    """The file as findings name it: relative to the working directory when it is under it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
