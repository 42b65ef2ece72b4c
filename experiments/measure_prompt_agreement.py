"""Whether an EAGLE head's agreement with the prompt's own tokens foretells its first guess on the answer: a source of
evidence for `auto` that would cost no decoding step (an idea, measured; docs/benchmarks.md).

    python experiments/measure_prompt_agreement.py [--per-kind 8] [FOLDER]

For held-out prompts of each kind (prompts.heldout_prompts) and for requests in other languages (where every drafter
loses), the float32 target answers greedily (64 new tokens) and reads prompt and answer once (first_guess.target_pass).
Printed per prompt: the head's first guess against the prompt's next token over the user's message (teacher-forced,
first_guess.first_guesses), and against the target's choice over the answer (first_guess.agreement, what a chain's
first draft gets). Greedy, no timing: exact and repeatable on any machine.
"""
from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from specdec.drafters.eagle import load_eagle_head
from specdec.drafters.shipped import drafter_dir
from specdec.models.loading import load_model

from training.zoo import prompts as P
from training.zoo.data import chat_ids
from training.zoo.first_guess import agreement, first_guesses, target_pass

OTHER_LANGUAGES = ["Écris un court poème sur la mer, en français.",
                   "Raconte une longue histoire en français sur un vieux pêcheur et la mer.",
                   "Explique-moi comment fonctionne un vélo.", "Quels sont les avantages du vélo en ville ?",
                   "Décris une journée à la plage en été.", "Donne-moi trois conseils pour bien dormir.",
                   "Erkläre mir, wie ein Fahrrad funktioniert.", "¿Cuáles son los beneficios de leer libros?"]
ASSISTANT_TURN = "<|im_end|>\n<|im_start|>assistant\n"  # what the chat template puts after the user's message


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", nargs="?", default=str(drafter_dir("smollm2-135m-eagle3")))
    parser.add_argument("--per-kind", type=int, default=8)
    args = parser.parse_args()
    target = load_model("smollm2-135m-instruct", dtype="float32")
    tokenizer = target.tokenizer
    head, vocab = load_eagle_head(target.model.config, Path(args.folder))
    turn = len(tokenizer.encode(ASSISTANT_TURN, add_special_tokens=False))
    sets = {**P.heldout_prompts(args.per_kind), "other languages": OTHER_LANGUAGES}
    for kind, texts in sets.items():
        for text in texts:
            seen = target_pass(target.model, chat_ids(tokenizer, text), 64, head.feature_layers)
            guess = first_guesses(target.model, head, vocab, seen.ids, seen.states)
            end = seen.prompt_length - turn  # the user's message ends here
            user = len(tokenizer.encode(text, add_special_tokens=False))
            positions = range(max(2, end - user + 1), end)  # its tokens after the first: guessed by rows q - 2
            in_prompt = statistics.mean(int(guess[q - 2]) == int(seen.ids[q]) for q in positions)
            in_answer = agreement(target.model, head, vocab, seen)[0].float().mean()
            print(f"{kind:16s} prompt {in_prompt:.2f} over {len(positions):3d}   answer {in_answer:.2f}   {text[:48]!r}",
                  flush=True)


if __name__ == "__main__":
    main()
