"""The EAGLE-3 head's export in vLLM's eagle3 layout (specdec/vllm/export_eagle3.py), on the lab target and a head
built here: the tensor names vLLM's llama_eagle3.py loads, the draft-to-target id map, and the attention input's
least-squares map, which is exact when the zoo layer's input is the fused feature alone."""
from __future__ import annotations

import pytest
import torch
from transformers import AutoConfig

from specdec.presets import BUNDLED_DIR
from specdec.vllm.export_eagle3 import calibrate, eagle3_config, eagle3_tensors
from specdec.zoo.heads import EagleHead

TARGET = BUNDLED_DIR / "lab-target"
LAYERS = (2, 4, 6)
DRAFT_VOCAB = torch.tensor([0, 3, 7, 100, 4095], dtype=torch.int32)


def zoo_head_tensors(passes_feature_only: bool) -> dict:
    """A lab-target EAGLE-3 head's tensors as the zoo stores them; optionally fc([h; e]) = h exactly."""
    config = AutoConfig.from_pretrained(str(TARGET))
    torch.manual_seed(0)
    head = EagleHead(config, feature_layers=LAYERS, intermediate_size=32)
    head.init_identity(seed=1)
    with torch.no_grad():
        torch.nn.init.normal_(head.layers[0].input_layernorm.weight, 1.0, 0.2)
        if passes_feature_only:
            d = config.hidden_size
            head.fc.weight.copy_(torch.cat([torch.eye(d), torch.zeros(d, d)], dim=1))
    own = {f"head.{k}": v.detach().clone() for k, v in head.state_dict().items()}
    own["draft_vocab"] = DRAFT_VOCAB
    return own


@pytest.fixture(scope="module")
def exact_map():
    return calibrate(TARGET, zoo_head_tensors(True), {"feature_layers": list(LAYERS), "intermediate_size": 32})


def test_the_export_has_the_tensors_vllms_eagle3_loader_reads():
    own = zoo_head_tensors(False)
    d = own["head.fc.weight"].shape[0]
    tensors = eagle3_tensors(own, {"model.embed_tokens.weight": torch.randn(4096, d)}, torch.randn(d, 2 * d))
    layer = {f"midlayer.{n}.weight" for n in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                               "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj",
                                               "input_layernorm", "hidden_norm", "post_attention_layernorm")}
    assert set(tensors) == layer | {"fc.weight", "fc_norm.0.weight", "fc_norm.1.weight", "fc_norm.2.weight",
                                    "norm.weight", "lm_head.weight", "d2t"}
    assert tensors["midlayer.self_attn.q_proj.weight"].shape == (d, 2 * d)  # layer 0 attends over [embedding; fused]
    assert tensors["fc.weight"].shape == (d, 3 * d) and tensors["lm_head.weight"].shape == (len(DRAFT_VOCAB), d)


def test_d2t_maps_each_draft_id_to_its_target_id_and_lm_head_holds_those_rows():
    own = zoo_head_tensors(False)
    embedding = torch.randn(4096, own["head.fc.weight"].shape[0])
    tensors = eagle3_tensors(own, {"model.embed_tokens.weight": embedding}, torch.zeros(len(embedding[0]), 2 * len(embedding[0])))
    draft_ids = torch.arange(len(DRAFT_VOCAB))
    assert torch.equal(draft_ids + tensors["d2t"], DRAFT_VOCAB.long())
    assert torch.equal(tensors["lm_head.weight"], embedding[DRAFT_VOCAB.long()])


def test_the_config_names_the_eagle3_architecture_its_layers_and_draft_vocabulary():
    config = eagle3_config({"hidden_size": 256, "intermediate_size": 704, "num_hidden_layers": 6},
                           {"feature_layers": list(LAYERS), "intermediate_size": 32}, 5)
    assert config["architectures"] == ["LlamaForCausalLMEagle3"] and config["num_hidden_layers"] == 1
    assert config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == list(LAYERS)
    assert (config["draft_vocab_size"], config["intermediate_size"], config["fc_norm"]) == (5, 32, True)


def test_calibration_recovers_the_map_when_the_zoo_layer_reads_the_fused_feature_alone(exact_map):
    input_map, r2 = exact_map
    d = input_map.shape[0]
    assert r2 > 0.999
    assert torch.allclose(input_map[:, d:], torch.eye(d), atol=2e-2) and input_map[:, :d].abs().max() < 2e-2


def test_exported_attention_input_equals_the_zoo_layers_when_the_map_is_exact(exact_map):
    """vLLM: q = W' [e / rms(e); h / rms(h)] (its norms' weights one); the zoo: q = W (g * x / rms(x)), x = h."""
    own = zoo_head_tensors(True)
    input_map, _ = exact_map
    d = input_map.shape[0]
    tensors = eagle3_tensors(own, {"model.embed_tokens.weight": torch.randn(4096, d)}, input_map)
    e, h = torch.randn(5, d), torch.randn(5, d) * 3

    def unit(x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)

    vllm_q = torch.cat([unit(e), unit(h)], dim=-1) @ tensors["midlayer.self_attn.q_proj.weight"].float().T
    zoo_q = (own["head.layers.0.input_layernorm.weight"] * unit(h)) @ own["head.layers.0.self_attn.q_proj.weight"].T
    assert torch.allclose(vllm_q, zoo_q, atol=0.05 * zoo_q.abs().max())
