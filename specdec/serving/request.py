"""One run as a person asked for it: the request. The app builds it once from the sidebar and the prompt
(specdec/ui/request_form.py) and hands the same object to every tab's callback; the tour, links and the class board
read and write it. Plain data: no gradio, no torch.

A request is what was asked, not what ran: `auto` may pick another drafter and K, a drafter may draft fewer tokens
than K, a schedule may change K per step. What ran is the run record's (run_record.py)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Optional

from specdec.engine.events import DecodeSettings


def decode_settings(k, temperature, top_p, top_k, max_new_tokens, seed, k_schedule="constant") -> DecodeSettings:
    """Widget values -> DecodeSettings: top-p 1 and top-k 0 switch those warpers off; an empty seed is None (a fresh
    draw each run)."""
    top_p = None if top_p is None or float(top_p) >= 1.0 else float(top_p)
    top_k = None if not top_k or int(top_k) <= 0 else int(top_k)
    seed = None if seed is None or seed == "" else int(seed)
    return DecodeSettings(max_new_tokens=int(max_new_tokens), k=int(k), temperature=float(temperature),
                          top_k=top_k, top_p=top_p, seed=seed, k_schedule=str(k_schedule or "constant"))


@dataclass(frozen=True)
class RunRequest:
    """The models, the drafter, K and its schedule, the warping, the seed, max new tokens, the chat format, the prompt
    and the exercise of the workshop tour that set it up (its key; None: not an exercise's run)."""

    prompt: str
    target: str  # a preset or bundled name, a Hub id or a folder, as chosen
    draft: str  # a drafter's name (the registry's), `auto`, a model name, or "none"
    settings: DecodeSettings
    chat: bool = True  # wrap the prompt in the target's chat template (where it has one)
    clean_whitespace: bool = True
    exercise: Optional[str] = None

    @property
    def sampling(self) -> bool:
        return self.settings.mode == "sampling"

    def with_exercise(self, key: Optional[str]) -> "RunRequest":
        return replace(self, exercise=key)

    def field_values(self) -> dict:
        """The request as the fields a form shows: the inverse of the form's reading (top-p 1 and top-k 0 for off,
        an empty seed for none)."""
        s = self.settings
        return {"prompt": self.prompt, "target": self.target, "draft": self.draft, "k": s.k,
                "k_schedule": s.k_schedule, "temperature": s.temperature, "top_p": 1.0 if s.top_p is None else s.top_p,
                "top_k": 0 if s.top_k is None else s.top_k, "seed": s.seed, "max_new_tokens": s.max_new_tokens,
                "chat": self.chat}

    def to_dict(self) -> dict:
        """For exports: everything but the prompt's text (an export holds the tokens, the prompt's ids, already)."""
        return {"target": self.target, "draft": self.draft, "settings": asdict(self.settings), "chat": self.chat,
                "clean_whitespace": self.clean_whitespace, "exercise": self.exercise}
