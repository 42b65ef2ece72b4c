"""From the user's text to prompt ids: the chat template where the target has one, and the context check."""
from __future__ import annotations

from typing import Optional

from specdec.errors import InvalidSettingsError, first_line


def has_chat_template(model) -> bool:
    return bool(getattr(getattr(model, "tokenizer", None), "chat_template", None))


def encode_prompt(model, text: str, chat: bool = True) -> list[int]:
    """The text as one user turn of the model's chat template (with the assistant's turn opened), or
    as plain text when chat is off or the model has no template."""
    if chat and has_chat_template(model):
        try:
            ids = model.tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                                      tokenize=True, return_dict=False)
        except Exception as exc:  # a template or tokenizer that cannot take this text (tokenizers raise plain Exceptions)
            raise InvalidSettingsError(f"{model.name}'s tokenizer cannot encode this prompt in its chat template: "
                                       f"{first_line(exc)}") from exc
        if isinstance(ids, dict) or hasattr(ids, "keys"):  # some releases return a BatchEncoding
            ids = ids["input_ids"]
        return [int(i) for i in ids]
    return model.encode(text)


def context_length(model) -> Optional[int]:
    """Positions the model was trained for (None when its config does not say)."""
    config = getattr(getattr(model, "model", None), "config", None)
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def check_context(model, prompt_tokens: int, max_new_tokens: int) -> None:
    """Refuse a run whose prompt plus new tokens would not fit the model's context."""
    limit = context_length(model)
    if limit is None or prompt_tokens + max_new_tokens <= limit:
        return
    if prompt_tokens >= limit:
        raise InvalidSettingsError(
            f"The prompt is {prompt_tokens} tokens, but {model.name} reads at most {limit}: shorten the prompt"
        )
    raise InvalidSettingsError(
        f"The prompt ({prompt_tokens} tokens) plus max new tokens ({max_new_tokens}) exceeds {model.name}'s "
        f"context of {limit} tokens: lower max new tokens to {limit - prompt_tokens} or shorten the prompt"
    )
