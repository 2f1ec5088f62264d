"""The HF/torch layer the mini-run and the full run share, so both train exactly alike.

`device.py` picks where a step computes; `model.py` loads the model and attaches LoRA;
`tokenizer.py` prepares the spec's tokenizer (chat template, pad token) for every trainer and
`tunegate samples`; `chat_tokens.py` renders and tokenises chats with assistant-only labels;
`samples.py` picks and renders representative records; `token_audit.py`
tokenises a whole split and reports what truncation does; `adapter_io.py` saves and checks the
adapter; `runtime.py` holds the process-level helpers; `tiny_model.py` builds the offline
`tunegate/tiny-llama`. Nothing is imported here: torch loads only when a trainer runs.
"""
