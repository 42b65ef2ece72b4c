"""The EAGLE-3 head's export in vLLM's eagle3 layout (specdec/vllm/export_eagle3.py), on the lab target's config and
heads built here: the tensor names vLLM's llama_eagle3.py loads, the draft-to-target id map, the config, and that
vLLM's forward over the exported tensors (written out from llama_eagle3.py) drafts exactly as the lab does."""
from __future__ import annotations

from specdec.drafters.heads import EagleHead, LayerCache
from specdec.models.presets import BUNDLED_DIR
from specdec.vllm.export_eagle3 import eagle3_config, eagle3_tensors, vllm_draft, vllm_fuse

import torch
import torch.nn.functional as F
from transformers import AutoConfig

TARGET = BUNDLED_DIR / "lab-target"
LAYERS = (2, 4, 6)
DRAFT_VOCAB = torch.tensor([0, 3, 7, 100, 4095], dtype=torch.int32)


def concat_head() -> tuple[EagleHead, dict]:
    """A lab-target EAGLE-3 head in vLLM's layer with random weights (its norms too) and its tensors as the zoo
    stores them."""
    config = AutoConfig.from_pretrained(str(TARGET))
    torch.manual_seed(0)
    head = EagleHead(config, feature_layers=LAYERS, intermediate_size=32, input_layout="concat").eval()
    with torch.no_grad():
        for name, weight in head.named_parameters():
            if name.endswith("norm.weight"):
                weight.uniform_(0.5, 1.5)
    own = {f"head.{k}": v.detach().clone() for k, v in head.state_dict().items()}
    own["draft_vocab"] = DRAFT_VOCAB
    return head, own


def test_the_export_has_the_tensors_vllms_eagle3_loader_reads():
    _, own = concat_head()
    d = own["head.fuse.weight"].shape[0]
    tensors = eagle3_tensors(own, {"model.embed_tokens.weight": torch.randn(4096, d)})
    layer = {f"midlayer.{n}.weight" for n in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                               "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj",
                                               "input_layernorm", "hidden_norm", "post_attention_layernorm")}
    assert set(tensors) == layer | {"fc.weight", "fc_norm.0.weight", "fc_norm.1.weight", "fc_norm.2.weight",
                                    "norm.weight", "lm_head.weight", "d2t"}
    assert tensors["midlayer.self_attn.q_proj.weight"].shape == (d, 2 * d)  # layer 0 attends over [embedding; fused]
    assert tensors["fc.weight"].shape == (d, 3 * d) and tensors["lm_head.weight"].shape == (len(DRAFT_VOCAB), d)


def test_d2t_maps_each_draft_id_to_its_target_id_and_lm_head_holds_those_rows():
    _, own = concat_head()
    embedding = torch.randn(4096, own["head.fuse.weight"].shape[0])
    tensors = eagle3_tensors(own, {"model.embed_tokens.weight": embedding})
    draft_ids = torch.arange(len(DRAFT_VOCAB))
    assert torch.equal(draft_ids + tensors["d2t"], DRAFT_VOCAB.long())
    assert torch.equal(tensors["lm_head.weight"], embedding[DRAFT_VOCAB.long()])


def test_the_config_names_the_eagle3_architecture_its_layers_and_draft_vocabulary():
    config = eagle3_config({"hidden_size": 256, "intermediate_size": 704, "num_hidden_layers": 6},
                           {"feature_layers": list(LAYERS), "intermediate_size": 32}, 5)
    assert config["architectures"] == ["LlamaForCausalLMEagle3"] and config["num_hidden_layers"] == 1
    assert config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == list(LAYERS)
    assert (config["draft_vocab_size"], config["intermediate_size"], config["fc_norm"]) == (5, 32, True)


def test_vllm_drafts_from_the_export_exactly_as_the_lab_drafts_with_the_head():
    """Two draft steps: the target's true states (teacher-forced), then the head's own fed-back state; the lab's
    drafting computation (EagleHead + LayerCache, as EagleDrafter runs it) against vLLM's forward over the export."""
    head, own = concat_head()
    config = head.config
    embedding = torch.randn(4096, config.hidden_size) * 0.1
    tensors = eagle3_tensors(own, {"model.embed_tokens.weight": embedding})
    aux = torch.randn(6, 3 * config.hidden_size) * 4  # the target's states after the three layers
    tokens = torch.tensor([5, 9, 11, 4000, 2, 7])  # row t: the token after position t
    rows = embedding[DRAFT_VOCAB.long()]
    with torch.no_grad():
        cache = LayerCache(head.layers, config, 16, torch.float32)
        out = cache.forward(head.inputs(head.fused(aux), embedding[tokens]))  # [6, d] before head.norm
        lab_first = F.linear(head.norm(out), rows)
        lab_second = F.linear(head.norm(cache.forward(head.inputs(out[-1:], embedding[[42]]))), rows)
        fused = vllm_fuse(tensors, config.rms_norm_eps, aux)
        vllm_first, prenorm = vllm_draft(tensors, config, fused, embedding[tokens])
        fed_back = torch.cat([fused, prenorm[-1:]])  # vLLM feeds the prenorm state to its next draft step
        vllm_second, _ = vllm_draft(tensors, config, fed_back, embedding[torch.cat([tokens, torch.tensor([42])])])
    torch.testing.assert_close(vllm_first, lab_first, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(vllm_second[-1:], lab_second, rtol=1e-4, atol=1e-4)
