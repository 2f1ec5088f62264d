"""Which attention kernels the installed transformers' model class accepts, read from its source.

    support = attention_support("gemma2")       # AttentionSupport(class_name="Gemma2ForCausalLM", ...)
    support.accepts("sdpa")                      # False: Gemma-2 refuses sdpa (softcapping)
    effective_attention("sdpa", support, explicit=False)   # "eager", as transformers falls back

`AutoModelForCausalLM` builds the class `MODEL_FOR_CAUSAL_LM_MAPPING_NAMES` names for a config's
`model_type` (a multimodal class for gemma3, llama4, mllama), and that class refuses an attention
kernel it does not declare (`_supports_sdpa`, `_supports_flash_attn`): "Gemma2ForCausalLM does not
support an attention implementation through torch.nn.functional.scaled_dot_product_attention
yet" at load time, after the gate. A class that lists `_compatible_flash_implementations` without
flash_attention_2 turns a flash_attention_2 request into a hub kernel download (gpt_oss).

Read from the installed package's files, never imported: the static stages import no torch, and
importing transformers' modeling code costs seconds. Nothing is known (None) when transformers is
not installed here, for a model_type it does not map (a remote-code model), or when the source is
not laid out as expected: then no check is made, since the run's own transformers decides.
"""
from __future__ import annotations

import ast
import importlib.util
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

KERNELS = ("eager", "sdpa", "flash_attention_2")
# PreTrainedModel's own defaults (transformers 5 modeling_utils.py; transformers 4 the same, with
# `_supports_flash_attn_2` for flash attention).
_DEFAULTS = {"_supports_sdpa": False, "_supports_flash_attn": False}
_FLASH_NAMES = ("_supports_flash_attn", "_supports_flash_attn_2")
_IMPORT = re.compile(r"^from \.\.(\w+)\.(modeling_\w+) import \(?([^)]*?)\)?$", re.M | re.S)


@dataclass(frozen=True)
class AttentionSupport:
    """What one model class accepts, in the transformers installed here."""

    model_type: str
    class_name: str
    transformers: str  # the installed version, which the finding names
    sdpa: bool
    flash: bool
    compatible_flash: tuple[str, ...] | None  # the flash kernels the class lists, hub repos included

    def accepts(self, kernel: str, hub_kernels: bool = False) -> bool:
        """Whether loading with attn_implementation=`kernel` works (without a hub kernel unless allowed)."""
        if kernel == "sdpa":
            return self.sdpa
        if kernel == "flash_attention_2":
            return self.flash and (hub_kernels or self.compatible_flash is None or kernel in self.compatible_flash)
        return True

    def accepted(self, hub_kernels: bool = False) -> list[str]:
        return [k for k in KERNELS if self.accepts(k, hub_kernels)]

    def refusal(self, kernel: str) -> str:
        """Why `kernel` cannot load, in transformers' own terms."""
        if kernel == "flash_attention_2" and self.flash:
            listed = ", ".join(self.compatible_flash or ())
            return (f"{self.class_name} swaps flash_attention_2 for one of its compatible flash kernels ({listed}), "
                    "which transformers downloads from the Hugging Face Hub and runs as unpinned remote code")
        what = "an attention implementation through scaled_dot_product_attention" if kernel == "sdpa" else \
            "Flash Attention"
        return f"{self.class_name} does not support {what} (transformers {self.transformers} refuses to load it)"


def effective_attention(requested: str, support: AttentionSupport | None, explicit: bool,
                        hub_kernels: bool = False) -> str:
    """The kernel a run loads: `requested` when the class accepts it (or nothing is known, or it was
    asked for by name: then the load refuses it, TG417); otherwise what transformers' own default
    falls back to, sdpa, else eager."""
    if support is None or support.accepts(requested, hub_kernels) or explicit:
        return requested
    return "sdpa" if support.accepts("sdpa") else "eager"


def asked_for(training: object) -> bool:
    """Whether the attention kernel was set by name (a spec key, a config flag) rather than defaulted."""
    return "attention" in getattr(training, "model_fields_set", ())


def attention_support(model_type: str) -> AttentionSupport | None:
    """What the class AutoModelForCausalLM builds for `model_type` accepts, or None when unknown."""
    root = _transformers_dir()
    if root is None or not isinstance(model_type, str) or not model_type:
        return None
    try:
        return _support(root, model_type)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError, RecursionError):
        return None  # a layout this reader does not know: the run's own load decides


def _transformers_dir() -> Path | None:
    try:
        spec = importlib.util.find_spec("transformers")
    except (ImportError, ValueError):
        return None
    return Path(spec.origin).parent if spec is not None and spec.origin else None


@lru_cache(maxsize=64)
def _support(root: Path, model_type: str) -> AttentionSupport | None:
    class_name = _causal_lm_class(root, model_type)
    if class_name is None:
        return None
    module = _module_name(root, model_type)
    path = root / "models" / module / f"modeling_{module}.py"
    attrs = _class_attributes(path, class_name, depth=0)
    if attrs is None:  # another type's class (exaone builds LlamaForCausalLM) or a file of another name
        path = _defining_file(root, class_name)
        attrs = _class_attributes(path, class_name, depth=0) if path is not None else None
    if attrs is None:
        return None
    flash = next((attrs[n] for n in _FLASH_NAMES if n in attrs), False)
    listed = attrs.get("_compatible_flash_implementations")
    return AttentionSupport(model_type, class_name, _version(root), bool(attrs.get("_supports_sdpa", False)),
                            bool(flash), tuple(listed) if isinstance(listed, (list, tuple)) else None)


def _causal_lm_class(root: Path, model_type: str) -> str | None:
    return _mapped(root / "models" / "auto" / "modeling_auto.py", "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", model_type)


def _module_name(root: Path, model_type: str) -> str:
    """transformers' model_type_to_module_name: a few types live in another type's folder."""
    special = root / "models" / "auto" / "auto_mappings.py"
    found = _mapped(special, "SPECIAL_MODEL_TYPE_TO_MODULE_NAME", model_type) if special.is_file() else None
    return found or model_type.replace("-", "_")


def _mapped(path: Path, mapping: str, key: str) -> str | None:
    """The value of `key` in the `NAME = OrderedDict([("key", "value"), ...])` literal of a file."""
    text = path.read_text(encoding="utf-8")
    start = text.find(f"\n{mapping} = ")
    if start < 0:
        return None
    block = text[start:text.find("\n)", start)]
    found = re.search(rf'\(\s*"{re.escape(key)}",\s*"(\w+)"\s*\)', block)
    return found.group(1) if found else None


def _defining_file(root: Path, name: str) -> Path | None:
    """The modeling file that defines class `name` (a scan of every one: only for the rare type whose
    class lives elsewhere, once per process)."""
    pattern = re.compile(rf"^class {re.escape(name)}\b", re.M)
    return next((p for p in sorted((root / "models").glob("*/modeling_*.py"))
                 if pattern.search(p.read_text(encoding="utf-8"))), None)


def _class_attributes(path: Path, name: str, depth: int) -> dict[str, object] | None:
    """The class attributes `name` declares or inherits (bases followed within the models folder)."""
    if depth > 8 or not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    node = _class_node(text, name)
    if node is None:
        return None
    merged: dict[str, object] = {}
    for base in reversed(node.bases):  # the first base wins, as Python's MRO for these single chains
        base_name = base.id if isinstance(base, ast.Name) else None
        if base_name in (None, "GenerationMixin", "nn.Module"):
            continue
        if base_name == "PreTrainedModel":
            merged.update(_DEFAULTS)
            continue
        where = _imported_from(text, base_name, path)
        inherited = _class_attributes(where or path, base_name, depth + 1)
        if inherited is not None:
            merged.update(inherited)
    merged.update(_own_attributes(node))
    return merged


def _class_node(text: str, name: str) -> ast.ClassDef | None:
    """The class's definition, parsed alone (the whole file is thousands of lines)."""
    found = re.search(rf"^class {re.escape(name)}\b.*?(?=^\S)", text + "\n#", re.M | re.S)
    if found is None:
        return None
    tree = ast.parse(found.group(0))
    node = tree.body[0] if tree.body else None
    return node if isinstance(node, ast.ClassDef) else None


def _own_attributes(node: ast.ClassDef) -> dict[str, object]:
    own: dict[str, object] = {}
    for stmt in node.body:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else \
            stmt.target if isinstance(stmt, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id.startswith("_") and stmt.value is not None:
            try:
                own[target.id] = ast.literal_eval(stmt.value)
            except ValueError:  # a computed value: not one of the flags read here
                continue
    return own


def _imported_from(text: str, name: str, path: Path) -> Path | None:
    for folder, module, names in _IMPORT.findall(text):
        if re.search(rf"\b{re.escape(name)}\b", names):
            return path.parents[1] / folder / f"{module}.py"
    return None


def _version(root: Path) -> str:
    """The installed transformers' version, from its __init__.py (importlib.metadata costs a static
    check ~5 % of its start-up, tests/cli/test_start_up.py)."""
    found = re.search(r'^__version__ = "([^"]+)"', (root / "__init__.py").read_text(encoding="utf-8"), re.M)
    return found.group(1) if found else "?"
