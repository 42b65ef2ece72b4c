"""The heads' vocabulary follows their request's text (drafters.HeadRows): the trained draft vocabulary plus the
ids the text holds outside it, as a function of the text alone. Exactness with these rows is in
test_zoo_heads.py (its prompt holds an id outside the draft vocabulary)."""
from __future__ import annotations

from specdec import DecodeSettings
from specdec.drafters.base import ProposalContext
from specdec.drafters.draft_vocab import HeadRows
from specdec.engine.sampling import build_warpers
from specdec.runners import native_kernels

import pytest
import torch

from tests.drafters.test_zoo_heads import loaded, random_eagle3_concat, random_medusa, tiny_llama

DRAFT_VOCAB = torch.tensor([0, 1, 3, 4])
GREEDY = ProposalContext(False, build_warpers(DecodeSettings()), None)


def head_rows(vocab_limit: int = 8) -> HeadRows:
    return HeadRows(tiny_llama(8), DRAFT_VOCAB, vocab_limit, torch.float32)


def followed(text: list[int], vocab_limit: int = 8) -> HeadRows:
    rows = head_rows(vocab_limit)
    rows.follow(text)
    return rows


def same_vocabulary(a: HeadRows, b: HeadRows) -> bool:
    return torch.equal(a.ids, b.ids) and torch.equal(a.extra_rows, b.extra_rows)


def test_the_vocabulary_adds_the_texts_ids_outside_the_draft_vocabulary_by_first_appearance():
    rows = followed([1, 5, 2, 5, 7, 0])
    assert rows.ids.tolist() == [0, 1, 3, 4, 5, 2, 7]
    assert torch.equal(rows.extra_rows, rows._head.weight[[5, 2, 7]])


def test_logits_score_the_context_ids_with_the_targets_own_head_rows():
    rows = followed([6, 2])
    features = torch.randn(3, rows.weight.shape[1])
    assert torch.allclose(rows.logits(features), features @ rows._head.weight[rows.ids].T, atol=1e-5)


def test_ids_past_the_vocab_limit_never_join():
    assert followed([5, 6, 7], vocab_limit=6).ids.tolist() == [0, 1, 3, 4, 5]


def test_a_text_followed_further_adds_only_its_new_ids():
    rows = followed([2, 5])
    rows.follow([2, 5, 5, 6, 2])
    assert same_vocabulary(rows, followed([2, 5, 5, 6, 2]))


def test_a_rolled_back_text_keeps_only_the_ids_it_still_holds():
    rows = followed([1, 2, 5, 6, 7])
    rows.follow([1, 2, 5])
    assert same_vocabulary(rows, followed([1, 2, 5])) and rows.ids.tolist() == [0, 1, 3, 4, 2, 5]


def test_another_text_replaces_the_context_from_where_they_differ():
    rows = followed([1, 2, 5, 6])
    rows.follow([1, 2, 7, 5])
    assert same_vocabulary(rows, followed([1, 2, 7, 5]))


def test_with_following_off_the_vocabulary_is_the_draft_vocabulary_alone():
    rows = followed([2, 5, 6])
    rows.follows_context = False
    rows.follow([2, 5, 6])
    assert rows.ids.tolist() == DRAFT_VOCAB.tolist() and rows.logits(torch.randn(1, rows.weight.shape[1])).shape[-1] == 4
    assert rows.context_bytes() == 0


def test_a_head_drafts_a_context_id_the_draft_vocabulary_lacks():
    rows = followed([2])
    toward_two = rows._head.weight[2:3] * 100  # a feature whose best row is id 2's
    assert rows.rows(toward_two, GREEDY)[1] == [2]
    rows.follows_context = False
    rows.follow([2])
    assert rows.rows(toward_two, GREEDY)[1] != [2]


def test_a_drafters_context_rows_are_its_state_and_a_new_request_drops_them():
    target = loaded(tiny_llama(8))
    drafter = random_medusa(target, vocab=8, draft_vocab=DRAFT_VOCAB)
    weights = drafter.param_bytes()
    drafter.start([2, 5], 16)
    drafter.observe(torch.randn(2, target.model.config.hidden_size))
    drafter.propose([2, 5, 6], 2, GREEDY)
    d = target.model.config.hidden_size
    assert drafter.head_rows.context_bytes() == 3 * (d + 1) * 4  # rows and bias of ids 2, 5, 6
    assert drafter.param_bytes() == weights
    drafter.start([1], 16)
    assert drafter.head_rows.context_bytes() == 0 and drafter.head_rows.ids.tolist() == DRAFT_VOCAB.tolist()


def test_an_eagle_step_drafts_the_same_after_a_longer_text_was_rolled_back():
    target = loaded(tiny_llama(64, seed=4))
    ids = [3, 17, 8, 41, 2, 9, 9, 31, 5, 61, 12]
    states = target.model(torch.tensor([ids]), output_hidden_states=True).hidden_states
    drafter = random_eagle3_concat(target, seed=5, vocab=64, draft_vocab=torch.arange(0, 64, 2))
    feats = torch.cat([states[layer][0] for layer in drafter.head.feature_layers], dim=-1).detach()

    def drafts(after_longer: bool) -> tuple[list[int], torch.Tensor]:
        drafter.start(ids, 64)
        if after_longer:
            drafter.observe(feats[:10])
            drafter.propose(ids, 3, GREEDY)
            drafter.rollback(6)
        else:
            drafter.observe(feats[:5])
        proposal = drafter.propose(ids[:6], 3, GREEDY)
        return proposal.ids, proposal.q

    (rolled_back, q_rolled_back), (fresh, q_fresh) = drafts(after_longer=True), drafts(after_longer=False)
    assert rolled_back == fresh and torch.equal(q_rolled_back, q_fresh)
    assert bool((q_fresh[:, 31] == 0).all())  # an odd id only the rolled-back tail held


# --- training as the heads draft (TrainConfig.context_rows) ------------------------------------------------------

def _record(ids: list[int], top_ids: list[list[int]], d: int = 4) -> dict:
    n = len(ids)
    return {"ids": ids, "top_ids": torch.tensor(top_ids), "top_logits": torch.zeros(n, len(top_ids[0])),
            "features": torch.zeros(n, d), "early": torch.zeros(n, d)}


def test_context_batches_append_the_texts_other_ids_and_say_where_each_first_appears():
    from training.zoo.train import Batches

    records = [_record([0, 7, 1, 7, 5], [[1, 7]] * 5), _record([3, 6, 0, 1, 4], [[4, 6]] * 5)]
    batches = Batches(records, torch.tensor([0, 1, 3, 4]), skip=0, batch_tokens=64, context_rows=True)
    assert batches.vocab.tolist() == [0, 1, 3, 4, 5, 6, 7] and batches.base_size == 4
    batch = batches.collate(records)
    column = {int(t): j for j, t in enumerate(batches.vocab)}
    assert batch["first_pos"][0, column[7]] == 1 and batch["first_pos"][0, column[5]] == 4
    assert batch["first_pos"][0, column[6]] == 5  # not in the first text: past its last position
    assert batch["first_pos"][1, column[6]] == 1


def test_a_row_may_use_a_texts_id_only_once_the_text_holds_it():
    from training.zoo.train import Batches, draftable

    records = [_record([0, 7, 1, 7, 5], [[1, 7]] * 5)]
    batches = Batches(records, torch.tensor([0, 1, 3, 4]), skip=0, batch_tokens=64, context_rows=True)
    batch = batches.collate(records)
    allowed = draftable(batch, torch.arange(batches.vocab_size), batches.base_size)  # [1, 4 rows, 7 columns]
    five, seven = batches.vocab.tolist().index(5), batches.vocab.tolist().index(7)
    assert allowed[0, :, :4].all()  # the draft vocabulary, always
    assert allowed[0, :, seven].tolist() == [True] * 4  # token 1: known from row 0 (tokens 0 .. 1) on
    assert allowed[0, :, five].tolist() == [False, False, False, True]  # token 4: from row 3 on
    assert draftable(Batches(records, torch.tensor([0, 1, 3, 4]), 0, 64).collate(records), torch.arange(4), 4) is None


def test_the_loss_drops_teacher_mass_on_columns_a_row_may_not_use():
    from training.zoo.train import soft_ce

    logits = torch.tensor([[[2.0, 0.5, 1.0]]])
    tidx, valid = torch.tensor([[[0, 2]]]), torch.tensor([[True]])
    allowed = torch.tensor([[[True, True, False]]])
    masked, _, _ = soft_ce(logits, tidx, torch.tensor([[[0.5, 0.5]]]), valid, allowed)
    alone, _, _ = soft_ce(logits[..., :2], tidx[..., :1], torch.tensor([[[1.0]]]), valid)
    assert torch.isfinite(masked) and torch.allclose(masked, alone)


def test_a_head_trained_with_context_rows_keeps_its_draft_vocabulary(tmp_path):
    from specdec.drafters.shipped import load_tensors

    from tests.drafters.test_zoo_eagle3 import _trained_then_again
    from training.zoo.pipeline import EAGLE3

    record = _trained_then_again(tmp_path, context_rows=True)
    assert record["train_config"]["context_rows"] is True and record["training"]["steps"] > 0
    first = load_tensors(tmp_path / "first" / EAGLE3)["draft_vocab"]
    assert torch.equal(load_tensors(tmp_path / "again" / EAGLE3)["draft_vocab"], first)


def test_padding_marks_nothing_even_when_id_zero_is_in_no_vocabulary():
    from training.zoo.train import Batches

    records = [_record([2, 7, 1, 7, 5, 9], [[1, 7]] * 6), _record([3, 6, 1], [[4, 6]] * 3)]  # the second is padded
    batches = Batches(records, torch.tensor([1, 3, 4]), skip=0, batch_tokens=64, context_rows=True)
    assert 0 not in batches.vocab.tolist()
    first_pos = batches.collate(records)["first_pos"]
    column = {int(t): j for j, t in enumerate(batches.vocab)}
    assert first_pos[1, column[6]] == 1 and first_pos[1, column[9]] == 6  # 9: only in the first text


def test_the_targets_choices_are_told_apart_as_pieces_inside_words_and_by_where_the_text_held_them():
    from training.zoo.first_guess import TargetPass, choice_kinds

    class Pieces:
        text = {0: "Tell", 1: " about", 2: " origami", 3: "Orig", 4: "ami", 5: " is", 6: " paper", 7: ".", 8: "\n"}

        def decode(self, ids):
            return "".join(self.text[i] for i in ids)

    ids = torch.tensor([0, 1, 2, 8, 3, 4, 5, 6, 8, 3, 4])  # "Tell about origami\n", then "Origami is paper\nOrigami"
    top_id = torch.cat([ids[1:], torch.tensor([7])])  # the target chose each next token (greedy, teacher-forced)
    seen = TargetPass(ids, torch.zeros(11, 1), top_id, torch.ones(11), prompt_length=4)
    # positions 5..10 ("Orig" at 4, the first answer token, is the prompt's choice): "ami" after "Orig" is a new piece
    # inside a word; "Orig" after a newline starts one, and the answer held it before; then "ami" again
    assert choice_kinds(Pieces(), seen) == ["continuation/new", "start/new", "start/new", "start/prompt", "start/answer",
                                            "continuation/answer"]


@pytest.mark.skipif(not native_kernels.available(), reason="the lab kernels do not build here")
def test_on_the_lab_kernels_the_rows_score_within_their_int8_rounding_of_torchs_float_rows():
    model = tiny_llama(96, seed=3)
    vocab = torch.arange(0, 96, 3)  # 32 rows: one packed group
    torch_rows, lab_rows = (HeadRows(model, vocab, 96, torch.float32, kernels) for kernels in ("torch", "lab"))
    features = torch.randn(3, 32)
    assert torch_rows.lab_packed is None and lab_rows.lab_packed is not None
    # each weight is off by at most half its row's step (scale), so each logit by sum_k |x_k| * scale / 2
    bound = features.abs().sum(dim=1, keepdim=True) * lab_rows.lab_packed.scales / 2  # [3, 32]
    error = (lab_rows.logits(features) - torch_rows.logits(features)).abs()
    assert (error <= bound + 1e-5).all() and error.max() > 0
