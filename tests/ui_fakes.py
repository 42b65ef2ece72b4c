"""Synthetic StepEvents and a scripted fake engine, so UI code is tested without torch or a server."""
from __future__ import annotations

from specdec.engine.events import (
    DecodeSettings,
    DraftToken,
    FinalToken,
    MemoryReport,
    RunResult,
    StepEvent,
    TokenProb,
)
from specdec.engine.theory import run_record
from specdec.errors import IncompatibleModelsError, ModelLoadError, OfflineError


def tp(token_id: int, text: str, prob: float) -> TokenProb:
    return TokenProb(token_id, text, prob)


def make_draft(position: int, text: str, accepted: bool | None, mode: str = "sampling") -> DraftToken:
    """accepted=None: proposed after a rejection, never evaluated."""
    tid = 100 + position
    evaluated = accepted is not None
    uniform = (0.3 if accepted else 0.9) if evaluated and mode == "sampling" else None
    return DraftToken(position=position, token_id=tid, text=text, q=0.5, p=0.4 if accepted else 0.1,
                      accept_prob=0.8 if accepted else 0.2, uniform=uniform,
                      accepted=bool(accepted), evaluated=evaluated,
                      target_top=[tp(tid, text, 0.4), tp(7, "x", 0.3)], draft_top=[tp(tid, text, 0.5), tp(8, "y", 0.2)])


def make_step(index: int, drafted=(), final=("!", "bonus"), mode: str = "sampling",
              times=(0.010, 0.020, 0.001), finished: bool = False) -> StepEvent:
    """drafted: (text, accepted) pairs, accepted None = unchecked; final: (text, kind) or None."""
    drafts = [make_draft(i, text, acc, mode) for i, (text, acc) in enumerate(drafted)]
    num_accepted = 0
    while num_accepted < len(drafts) and drafts[num_accepted].accepted:
        num_accepted += 1
    fin = None
    if final is not None:
        residual = [tp(9, final[0], 0.6)] if final[1] == "resampled" and mode == "sampling" else None
        fin = FinalToken(token_id=9, text=final[0], kind=final[1], position=num_accepted, p=0.6,
                         target_top=[tp(9, final[0], 0.6), tp(7, "x", 0.2)], residual_top=residual)
    emitted = [d.token_id for d in drafts[:num_accepted]] + ([fin.token_id] if fin else [])
    text = "".join(d.text for d in drafts[:num_accepted]) + (fin.text if fin else "")
    return StepEvent(index=index, mode=mode, k=len(drafts), drafted=drafts, num_accepted=num_accepted,
                     final=fin, emitted_ids=emitted, emitted_text=text, draft_time_s=times[0],
                     verify_time_s=times[1], other_time_s=times[2], finished=finished,
                     stop_reason="max_new_tokens" if finished else None)


def mixed_run() -> list[StepEvent]:
    """Three steps: all accepted + bonus; one rejection + resampled token; target-only style step."""
    return [
        make_step(0, [(" Hello", True), (" world", True)], (",", "bonus")),
        make_step(1, [(" how", True), (" is", False), (" you", None)], (" are", "resampled")),
        make_step(2, [("\n", True), (" fine", False)], (" good", "resampled"), finished=True),
    ]


MEMORY = MemoryReport(device="cpu", target_param_bytes=40 * 2**20, draft_param_bytes=8 * 2**20,
                      target_kv_bytes=2**20, draft_kv_bytes=2**19, peak_device_bytes=None,
                      process_rss_bytes=500 * 2**20)


# --- a scripted engine with the specdec API ---------------------------------------------------------

class FakeModel:
    def __init__(self, name: str):
        self.name, self.device = name, "cpu"

    def encode(self, text: str) -> list[int]:
        return [ord(c) % 256 for c in text]

    def decode(self, ids) -> str:
        return "".join(chr(i) for i in ids)


AUTO_CHOICE = {"drafter": "lab-draft", "k": 1, "speculate": True, "predicted_speedup": 1.2, "prompt_kind": "code",
               "mode": "greedy", "why": "auto chose lab-draft, K=1: predicted 1.20x from c=0.100, v(1)=1.05, α=0.50",
               "ranking": []}


class FakeGeneration:
    """Emits steps where draft position 2 is always rejected; baseline (draft None) emits 1 token a step."""

    def __init__(self, target, draft, ids, settings: DecodeSettings, step_s: float = 0.002, ignore_eos=False):
        if not ids:
            from specdec.errors import InvalidSettingsError
            raise InvalidSettingsError("The prompt is empty: type something to continue.")
        self.target, self.draft, self.ids, self.settings = target, draft, ids, settings
        self.events: list[StepEvent] = []
        self.closed = False
        self.engine_time_s = 0.0
        self._step_s = step_s
        self.auto = AUTO_CHOICE if draft is not None and draft.name == "auto" else None
        self._iter = self._run()

    def _next_step(self, index: int, remaining: int) -> StepEvent:
        if self.auto is not None:  # the auto drafter: speculation off from the third step on
            step = self._baseline_step(index, remaining) if index >= 2 else self._draft_step(index, remaining)
            step.decision = "off" if index >= 2 else "speculate"
            step.decision_why = f"best K=1: predicted {0.9 if index >= 2 else 1.2}x"
            return step
        if self.draft is None:
            return self._baseline_step(index, remaining)
        return self._draft_step(index, remaining)

    def _baseline_step(self, index: int, remaining: int) -> StepEvent:
        mode = self.settings.mode
        return make_step(index, [], (f"t{index}", "target"), mode, (0.0, self._step_s * 2, 0.0),
                         finished=remaining <= 1)

    def _draft_step(self, index: int, remaining: int) -> StepEvent:
        mode = self.settings.mode
        k = min(self.settings.k, max(remaining - 1, 1))
        drafted = [(f" w{index}.{i}", True if i < 2 else (False if i == 2 else None)) for i in range(k)]
        final = (" fix", "resampled") if k > 2 else (" +", "bonus")
        step = make_step(index, drafted, final, mode, (self._step_s * k * 0.1, self._step_s * 2, 0.0))
        step.finished, step.k_planned = remaining - len(step.emitted_ids) <= 0, self.settings.k  # as the engine
        # records it: the schedule's K, while a step near max new tokens drafts fewer
        return step

    def _run(self):
        remaining, index = self.settings.max_new_tokens, 0
        while remaining > 0 and not self.closed:
            step = self._next_step(index, remaining)
            remaining -= len(step.emitted_ids)
            self.events.append(step)
            self.engine_time_s += step.draft_time_s + step.verify_time_s + step.other_time_s
            index += 1
            yield step

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._iter)

    def close(self):
        self.closed = True

    def result(self) -> RunResult:
        for _ in self._iter:
            pass
        ids = [i for e in self.events for i in e.emitted_ids]
        wall = self.engine_time_s
        metrics = run_record(self.events, wall, draft_forwards=sum(e.k for e in self.events), forward_time_s=wall,
                             memory=MEMORY)
        return RunResult(prompt_ids=list(self.ids), token_ids=ids, text=self.target.decode(ids),
                         events=list(self.events), metrics=metrics, settings=self.settings,
                         target_name=self.target.name, draft_name=self.draft.name if self.draft else None,
                         auto=self.auto)


class FakeEngine:
    """load_model / check_compatible / Generation / generate, scripted; records what it was asked."""

    def __init__(self):
        self.loaded: list[str] = []
        self.generations: list[FakeGeneration] = []

    def load_model(self, name, progress=None, **kwargs):
        if progress:
            progress(f"Loading {name}…")
        if name.startswith("offline"):
            raise OfflineError(f"{name} is not cached locally and the Hugging Face Hub cannot be reached.")
        if name.startswith("unknown"):
            raise ModelLoadError(f"Unknown model {name!r}: not a preset, a cached hub id or a local path.")
        self.loaded.append(name)
        return FakeModel(name)

    def check_compatible(self, target, draft):
        if "incompatible" in draft.name:
            raise IncompatibleModelsError(f"{draft.name} and {target.name} use different tokenizers.")

    def load_drafter(self, name, target, load_model=None, progress=None):
        draft = (load_model or self.load_model)(name, progress=progress)
        self.check_compatible(target, draft)
        return draft

    def encode_prompt(self, model, text, chat=True):
        return model.encode(text)

    def start(self, target, draft, ids, settings, ignore_eos=False):
        gen = FakeGeneration(target, draft, ids, settings, ignore_eos=ignore_eos)
        self.generations.append(gen)
        return gen

    def generate(self, target, draft, ids, settings):
        return self.start(target, draft, ids, settings).result()


def split_request(values: dict):
    """(the RunRequest the form's fields among `values` make, the other values: a tab's own fields, by name)."""
    from specdec.ui.request_form import FORM

    form_keys = set(FORM) | {"clean_whitespace", "exercise"}
    return (form_request(**{k: v for k, v in values.items() if k in form_keys}),
            {k: v for k, v in values.items() if k not in form_keys})


def form_request(**fields):
    """The RunRequest the page's form makes of these values (request_form.read_request); `clean_whitespace` is the
    form's `clean`, `exercise` the key of the exercise the tour has loaded."""
    from specdec.ui.request_form import read_request

    exercise = fields.pop("exercise", None)
    if "clean_whitespace" in fields:
        fields["clean"] = fields.pop("clean_whitespace")
    return read_request(fields, exercise)
