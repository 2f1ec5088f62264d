"""Loading a tokenizer without torch, in a process that only tokenises (`tunegate samples`).

    if own_process:
        hide_torch_from_transformers(spec)   # before transformers is first imported
    AutoTokenizer.from_pretrained(...)        # no torch loaded

AutoTokenizer imports transformers.configuration_utils, which imports modeling_rope_utils, which
imports torch whenever torch is installed: ~240 MB resident and ~1 s, though no tokenizer calls it
(transformers 5.25; measured: 308 MB peak with it, 72 MB without, the same tokenizer class and
token ids). Issue 36 holds every dataset command to 150 MB. transformers asks
`is_torch_available()` as each of its modules is imported, so answering "no" before the first
import keeps torch out; the answer then stays wrong for the rest of the process, which is why only
a command's own process (never a caller of `main()`, such as the tests) may ask for it, and only
when neither torch nor transformers is loaded yet. Remote code (`trust_remote_code`) may need
torch through transformers, so a spec that allows it keeps torch visible.
"""
from __future__ import annotations

import sys

from tunegate.spec.model import Spec


def hide_torch_from_transformers(spec: Spec) -> bool:
    """Make transformers treat torch as absent; True when done, False when it was too late or unsafe."""
    if spec.model.trust_remote_code or "torch" in sys.modules or "transformers" in sys.modules:
        return False
    import transformers.utils as utils
    import transformers.utils.import_utils as import_utils

    if "torch" in sys.modules:  # importing transformers' utilities loaded it after all: nothing to save
        return False
    import_utils.is_torch_available = utils.is_torch_available = _absent
    return True


def _absent() -> bool:
    return False
