"""The zoo's drafters on small built Llama models (fast): exact sampling, greedy identity, the
training/runtime agreement of the heads, and the whole training pipeline at its tiny profile.

Chi-square method as in test_engine_distribution.py: the first two generated tokens of 20,000 seeded
speculative runs against the enumerated law of the warped target; pass at p >= 0.001. The heads (and a
one-layer draft-vocabulary model drafter) here have random weights and a draft vocabulary that leaves two
ids out (q = 0 there; the prompt holds one of them, which the heads' vocabulary then adds, as it follows the
text), so acceptance, rejection, residual draws of ids the drafter never proposes, and bonus tokens all occur.
"""
from __future__ import annotations

from specdec import DecodeSettings
from specdec.drafters.base import ProposalContext
from specdec.drafters.draft_model import DraftVocabModelDrafter, build_draft_model
from specdec.drafters.eagle import EagleDrafter, build_eagle
from specdec.drafters.early_exit import build_early_exit
from specdec.drafters.heads import EagleHead, MedusaHeads, rope_tables
from specdec.drafters.medusa import MedusaDrafter, build_medusa
from specdec.engine.decoding import Generation
from specdec.engine.sampling import build_warpers
from specdec.models.loading import LoadedModel

import pytest
import torch
import torch.nn.functional as F
from transformers import LlamaConfig, LlamaForCausalLM

from tests.distribution import exact_first_two, speculative_counts
from tests.stats import chi_square_p_value

SAMPLES = 20_000
P_VALUE_THRESHOLD = 1e-3
VOCAB = 6
PROMPT = [1, 4, 2]
DRAFT_VOCAB = torch.tensor([0, 1, 3, 4])


def tiny_llama(vocab: int, seed: int = 0, layers: int = 2) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         initializer_range=0.3, bos_token_id=None, eos_token_id=None, pad_token_id=None,
                         tie_word_embeddings=True)
    return LlamaForCausalLM(config).eval()


def loaded(model, name="tiny-target") -> LoadedModel:
    return LoadedModel(name, name, model, None, torch.device("cpu"), torch.float32)


@pytest.fixture(scope="module")
def target():
    return loaded(tiny_llama(VOCAB))


def random_medusa(target, seed=1, vocab=VOCAB, draft_vocab=DRAFT_VOCAB):
    torch.manual_seed(seed)
    heads = MedusaHeads(target.model.config, 3)
    for block in heads.blocks:
        torch.nn.init.normal_(block.linear.weight, std=0.5)
    return MedusaDrafter(target, vocab, heads, draft_vocab, "tiny-medusa", "")


def random_eagle(target, seed=2, vocab=VOCAB, draft_vocab=DRAFT_VOCAB):
    torch.manual_seed(seed)
    head = EagleHead(target.model.config)
    return EagleDrafter(target, vocab, head, draft_vocab, "tiny-eagle", "")


def random_eagle3(target, seed=2, vocab=VOCAB, draft_vocab=DRAFT_VOCAB, input_layout="fc"):
    """An EAGLE-3 head over the fusion of the target's embeddings and its first layer's output (layers 0 and 1)."""
    torch.manual_seed(seed)
    head = EagleHead(target.model.config, feature_layers=(0, 1), intermediate_size=16, input_layout=input_layout)
    return EagleDrafter(target, vocab, head, draft_vocab, "tiny-eagle3", "")


def random_eagle3_concat(target, seed=2, vocab=VOCAB, draft_vocab=DRAFT_VOCAB):
    """random_eagle3 in EAGLE-3's reference (vLLM's) layer: attention over [norm(embedding); norm(feature)]."""
    drafter = random_eagle3(target, seed, vocab, draft_vocab, input_layout="concat")
    with torch.no_grad():  # norms away from one, so that a weight read in the wrong place shows
        for norm in (drafter.head.norm, drafter.head.layers[0].hidden_norm, drafter.head.layers[0].input_layernorm):
            norm.weight.uniform_(0.5, 1.5)
    return drafter


def random_vocab_draft(target, seed=3, vocab=VOCAB, draft_vocab=DRAFT_VOCAB):
    """A one-layer draft model on the target's embedding, ending in the head rows of draft_vocab."""
    from specdec.drafters.draft_model import vocab_drafter

    from transformers.models.llama.modeling_llama import LlamaDecoderLayer

    torch.manual_seed(seed)
    layer = LlamaDecoderLayer(target.model.config, layer_idx=0).eval()
    for w in layer.parameters():
        torch.nn.init.normal_(w, std=0.3)
    drafter = vocab_drafter(DraftVocabModelDrafter, target, "tiny-draft", "", [layer], [layer], {"draft_vocab": draft_vocab})
    drafter.vocab_limit = vocab
    return drafter


MAKERS = [random_medusa, random_eagle, random_eagle3, random_eagle3_concat, random_vocab_draft]
MAKER_IDS = ["medusa", "eagle", "eagle3", "eagle3-concat", "draft"]


def next_logits(target):
    def fn(seq):
        with torch.no_grad():
            return target.model(torch.tensor([seq])).logits[0, -1].float()
    return fn


@pytest.mark.parametrize("make", MAKERS, ids=MAKER_IDS)
def test_head_drafter_samples_follow_the_target_distribution(target, make):
    settings = DecodeSettings(temperature=1.0)
    drafter = make(target)
    counts = speculative_counts(target, drafter, settings, SAMPLES, PROMPT, VOCAB)
    expected = exact_first_two(next_logits(target), settings, PROMPT, VOCAB)
    assert counts[expected == 0].sum() == 0
    assert chi_square_p_value(counts, expected) >= P_VALUE_THRESHOLD


@pytest.mark.parametrize("make", MAKERS, ids=MAKER_IDS)
def test_head_drafter_q_differs_from_p_and_is_zero_outside_its_vocabulary(target, make):
    """Guards the test above: the proposals are neither the target's law nor full-vocabulary."""
    drafter = make(target)
    gen = Generation(target, drafter, PROMPT, DecodeSettings(temperature=1.0, k=3, max_new_tokens=6))
    events = list(gen)
    rows = [(t.q, t.p) for e in events for t in e.drafted]
    assert rows, "the drafter proposed nothing"
    assert any(abs(q - p) > 0.05 for q, p in rows)
    if isinstance(drafter, DraftVocabModelDrafter):  # the heads keep the features the run observed
        drafter.start(PROMPT, 64)
    q = drafter.propose(PROMPT, 2, ProposalContext(True, build_warpers(DecodeSettings(temperature=1.0)),
                                                   torch.Generator().manual_seed(0))).q
    assert torch.all(q[:, 5] == 0) and torch.allclose(q.sum(-1), torch.ones(len(q)))
    # id 2 is outside DRAFT_VOCAB but in PROMPT: the heads' vocabulary follows the text, the draft models' does not
    follows_text = not isinstance(drafter, DraftVocabModelDrafter)
    assert bool((q[:, 2] > 0).all()) if follows_text else bool((q[:, 2] == 0).all())


@pytest.mark.parametrize("make", MAKERS, ids=MAKER_IDS)
@pytest.mark.parametrize("k", [1, 3, 5])
def test_head_drafter_greedy_output_is_the_target_alone(make, k):
    target = loaded(tiny_llama(64, seed=3))
    drafter = make(target, vocab=64, draft_vocab=torch.arange(0, 64, 2))
    settings = DecodeSettings(max_new_tokens=20, k=k)
    alone = Generation(target, None, [5, 9, 11], settings).result().token_ids
    assert Generation(target, drafter, [5, 9, 11], settings).result().token_ids == alone


def test_a_draft_vocabulary_model_drafter_has_no_transformers_counterpart_in_bench(target):
    from specdec.errors import InvalidSettingsError
    from specdec.measure.bench import drafter_mode

    with pytest.raises(InvalidSettingsError, match="no transformers counterpart"):
        drafter_mode(random_vocab_draft(target))


def target_states(model, ids: list[int], layers: tuple[int, ...]) -> torch.Tensor:
    """What the runner hands an EAGLE head (layers = ()) or an EAGLE-3 head: [len(ids), d or m * d]."""
    states = model(torch.tensor([ids]), output_hidden_states=True).hidden_states
    return states[-1][0] if not layers else torch.cat([states[layer][0] for layer in layers], dim=-1)


@pytest.mark.parametrize("make", [random_eagle, random_eagle3, random_eagle3_concat],
                         ids=["eagle", "eagle3", "eagle3-concat"])
def test_eagle_runtime_chain_matches_the_training_forward(make):
    """Position by position, the drafter's first proposal equals the training-time prediction, both
    from scratch and with the head's cache reused across steps (observe, propose, rollback)."""
    model = tiny_llama(64, seed=4)
    target = loaded(model)
    drafter = make(target, seed=5, vocab=64, draft_vocab=torch.arange(64))
    ids = [3, 17, 8, 40, 2, 9, 9, 31, 5, 60, 12]
    with torch.no_grad():
        feats = target_states(model, ids, drafter.head.feature_layers)
        n = len(ids)
        head = drafter.head
        x = head.inputs(head.fused(feats[:-1]), F.embedding(torch.tensor(ids[1:]), model.get_input_embeddings().weight))[None]
        cos, sin = rope_tables(model.config, n, torch.float32)
        trained = F.linear(head.norm(head.forward_sequences(x, cos[None, : n - 1], sin[None, : n - 1])[0]),
                           drafter.head_rows.weight).argmax(-1).tolist()
    ctx = ProposalContext(False, build_warpers(DecodeSettings()), None)
    fresh = []
    for p in range(n - 1):
        drafter.start(ids, 64)
        drafter.observe(feats[: p + 1])
        fresh.append(drafter.propose(ids[: p + 2], 1, ctx).ids[0])
    assert fresh == trained
    drafter.start(ids, 64)
    drafter.observe(feats[:2])
    reused = []
    for p in range(1, n - 1):
        reused.append(drafter.propose(ids[: p + 2], 3, ctx).ids[0])
        drafter.rollback(p + 2)
        drafter.observe(feats[p + 1 : p + 2])
    assert reused == trained[1:]


# --- the training pipeline at its tiny profile --------------------------------------------------------------

class CharTokenizer:
    """Just what the zoo's data code reads from a tokenizer: a chat template and two special ids."""

    pad_token_id = 0
    specials = {"<|im_start|>": 1, "<|im_end|>": 2}

    def convert_tokens_to_ids(self, token):
        return self.specials[token]

    def apply_chat_template(self, messages, add_generation_prompt=True, tokenize=True):
        text = "system: be brief\n" + messages[0]["content"]
        return [1] + [3 + ord(c) % 120 for c in text] + [2, 1, 5, 6]


def test_zoo_pipeline_builds_four_loadable_drafters_in_seconds(tmp_path):

    from training.zoo.pipeline import PROFILES, build_zoo

    model = tiny_llama(128, seed=6, layers=3)
    for p in model.parameters():
        p.requires_grad_(False)
    prompts = [("chat", "hello there"), ("code", "def f(x): return x"), ("rewrite", "make it short please"),
               ("chat", "why is the sky blue"), ("code", "print(1)"), ("rewrite", "say it again")]
    summary = build_zoo(model, CharTokenizer(), tmp_path / "out", tmp_path / "work", PROFILES["tiny"],
                        seed=0, command="test", prompts=prompts, log=lambda s: None)
    assert set(summary["drafters"]) == {"smollm2-135m-eagle", "smollm2-135m-medusa", "smollm2-135m-early-exit",
                                        "smollm2-135m-draft"}
    for meta in summary["drafters"].values():
        assert meta["seed"] == 0 and meta["command"] == "test" and meta["data"]["tokens"] > 0
        assert meta["training"]["steps"] >= 1
    target = loaded(model)
    out = tmp_path / "out"
    drafters = [build_draft_model(target, "d", "", out / "smollm2-135m-draft"),
                build_early_exit(target, "e", "", out / "smollm2-135m-early-exit"),
                build_medusa(target, "m", "", out / "smollm2-135m-medusa"),
                build_eagle(target, "g", "", out / "smollm2-135m-eagle")]
    settings = DecodeSettings(max_new_tokens=12, k=3)
    alone = Generation(target, None, [7, 8, 9], settings).result().token_ids
    for drafter in drafters:
        assert Generation(target, drafter, [7, 8, 9], settings).result().token_ids == alone
    # shared, not copied: the early exit's first layer is the target's own module
    assert drafters[1].loaded.model.model.layers[0] is model.model.layers[0]
    # its head is the target's rows of its draft vocabulary, nothing else
    early = drafters[1]
    assert torch.equal(early.loaded.model.lm_head.weight, model.lm_head.weight[early.ids])
    assert len(early.ids) < model.config.vocab_size


def test_zoo_pipeline_trains_saves_and_loads_a_two_layer_eagle_head(tmp_path):
    from dataclasses import replace

    from training.zoo.pipeline import PROFILES, build_zoo

    model = tiny_llama(128, seed=6, layers=3)
    for p in model.parameters():
        p.requires_grad_(False)
    tiny = PROFILES["tiny"]
    profile = replace(tiny, eagle=replace(tiny.eagle, eagle_layers=2))
    prompts = [("chat", "hello there"), ("code", "def f(x): return x"), ("rewrite", "make it short please")]
    summary = build_zoo(model, CharTokenizer(), tmp_path / "out", tmp_path / "work", profile, seed=0, command="test",
                        prompts=prompts, only=("smollm2-135m-eagle",), log=lambda s: None)
    assert summary["drafters"]["smollm2-135m-eagle"]["layers"] == 2
    target = loaded(model)
    drafter = build_eagle(target, "g", "", tmp_path / "out" / "smollm2-135m-eagle")
    assert len(drafter.head.layers) == 2
    settings = DecodeSettings(max_new_tokens=12, k=3)
    alone = Generation(target, None, [7, 8, 9], settings).result().token_ids
    assert Generation(target, drafter, [7, 8, 9], settings).result().token_ids == alone


def test_zoo_pipeline_trains_every_drafter_from_a_bfloat16_target_under_autocast(tmp_path):
    from dataclasses import replace

    from training.zoo.pipeline import PROFILES, build_zoo

    model = tiny_llama(128, seed=6, layers=3).to(torch.bfloat16)
    for p in model.parameters():
        p.requires_grad_(False)
    tiny = PROFILES["tiny"]
    profile = replace(tiny, dtype="bfloat16", **{name: replace(getattr(tiny, name), autocast=True)
                                                 for name in ("eagle", "medusa", "early", "draft")})
    prompts = [("chat", "hello there"), ("code", "def f(x): return x"), ("rewrite", "make it short please")]
    summary = build_zoo(model, CharTokenizer(), tmp_path / "out", tmp_path / "work", profile, seed=0, command="test",
                        prompts=prompts, log=lambda s: None)
    for meta in summary["drafters"].values():
        assert meta["train_config"]["autocast"] and "target in bfloat16" in meta["machine"]
        assert meta["training"]["steps"] >= 1
    target = loaded(model)
    drafter = build_eagle(target, "g", "", tmp_path / "out" / "smollm2-135m-eagle")
    assert all(torch.isfinite(p).all() for p in drafter.head.parameters())


@pytest.mark.parametrize("n_layers, input_layout", [(1, "fc"), (2, "fc"), (1, "concat")])
def test_eagle_training_time_test_matches_drafting_on_its_own_features(n_layers, input_layout):
    """Depths 1 and 2 of the unrolled training forward (row p: the head's own predicted features of
    positions p + 1, p + 2 with tokens p + 2, p + 3, seeing true pairs 0..p) equal what the drafting
    cache computes, for a head of one or two decoder layers."""
    from specdec.drafters.heads import LayerCache

    torch.manual_seed(7)
    model = tiny_llama(64, seed=8)
    head = EagleHead(model.config, n_layers, input_layout=input_layout).eval()
    emb = model.get_input_embeddings().weight
    ids = [3, 17, 8, 40, 2, 9, 9, 31, 5]
    n = len(ids)
    with torch.no_grad():
        feats = model(torch.tensor([ids]), output_hidden_states=True).hidden_states[-1][0]
        x = head.inputs(feats[:-1], F.embedding(torch.tensor(ids[1:]), emb))[None]
        cos, sin = rope_tables(model.config, n + 2, torch.float32)
        pred0, kvs0 = head.forward_sequences(x, cos[None, : n - 1], sin[None, : n - 1], return_kv=True)
        x1 = head.inputs(pred0, F.embedding(torch.tensor(ids[2:] + [0])[None], emb))
        pred1, kvs1 = head.forward_unrolled(x1, (cos[None, 1:n], sin[None, 1:n]), kvs0, [[] for _ in kvs0])
        x2 = head.inputs(pred1, F.embedding(torch.tensor(ids[3:] + [0, 0])[None], emb))
        pred2, _ = head.forward_unrolled(x2, (cos[None, 2:n + 1], sin[None, 2:n + 1]), kvs0, [[kv] for kv in kvs1])
        for p in range(n - 3):
            cache = LayerCache(head.layers, model.config, 32, torch.float32)
            cache.forward(x[0, : p + 1])
            step1 = cache.forward(head.inputs(pred0[0, p : p + 1], F.embedding(torch.tensor([ids[p + 2]]), emb)))
            step2 = cache.forward(head.inputs(step1, F.embedding(torch.tensor([ids[p + 3]]), emb)))
            assert torch.allclose(step1[0], pred1[0, p], atol=1e-4)
            assert torch.allclose(step2[0], pred2[0, p], atol=1e-4)
