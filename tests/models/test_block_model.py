"""A GGUF's blocks as a model the engine runs (models/block_model.py): the same network as transformers' on the
dequantised weights (up to the int8 rounding of each product's input rows), no float copy of any matrix, every row of a
verification the bits of a one-token forward (chains and tree nodes, long prefills too), and refusals in one line."""
from __future__ import annotations

import copy

from specdec.errors import ModelLoadError
from specdec.models.block_model import build_block_model
from specdec.runners import block_weights, native_kernels
from specdec.runners.lab_kernels import LabKernelRunner
from specdec.runners.selection import runner_class

import pytest
import torch

from tests.tiny_blocks import VOCAB, tiny_block_config, with_int8_rounded_inputs, write_tiny_block_gguf

pytestmark = pytest.mark.skipif(not native_kernels.available(), reason=native_kernels.unavailable_reason())
IDS = [5, 17, 3, 88, 41, 9, 60, 2, 71, 33, 14, 50]


@pytest.fixture(scope="module", params=["Q4_1", "Q8_0"])
def pair(request, tmp_path_factory):
    """(the block model, transformers' model of the same dequantised weights)."""
    path, reference = write_tiny_block_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf", request.param)
    return build_block_model(tiny_block_config(), path), reference


def test_it_computes_transformers_network_on_the_dequantised_weights_and_int8_rounded_inputs(pair):
    blocks, reference = pair
    ours = LabKernelRunner(blocks, VOCAB, 64).prefill(IDS).reshape(1, -1)
    with torch.no_grad():
        rounded = with_int8_rounded_inputs(copy.deepcopy(reference))(torch.tensor([IDS])).logits[0, -1:]
        plain = reference(torch.tensor([IDS])).logits[0, -1:]
    assert (ours - rounded).norm() <= 1e-5 * rounded.norm()  # the same network, up to the order of float sums
    assert (ours - plain).norm() <= 0.06 * plain.norm()  # the int8 rounding of the inputs: a few percent here


def test_it_holds_the_blocks_and_the_norms_only(pair):
    blocks, _ = pair
    held = block_weights.block_bytes(blocks)
    norms = sum(p.numel() * 4 for p in blocks.parameters())
    assert block_weights.held_bytes(blocks) == held + norms
    assert all(not p.is_meta for p in blocks.parameters())
    assert runner_class(blocks) is LabKernelRunner


def test_a_verification_scores_each_token_as_a_one_token_forward_does(pair):
    blocks, _ = pair
    runner = LabKernelRunner(blocks, VOCAB, 64)
    runner.prefill(IDS[:4])
    one_by_one = torch.cat([runner.forward([token]) for token in IDS[4:10]])
    runner.rollback(4)
    assert torch.equal(runner.forward(IDS[4:10]), one_by_one)


def test_a_tree_node_scores_as_its_chain_would(pair):
    blocks, _ = pair
    runner = LabKernelRunner(blocks, VOCAB, 64)
    runner.prefill(IDS[:4])
    chain = runner.forward([7, 9, 11])
    runner.rollback(4)
    tree = runner.forward_tree(7, [3, 9, 11], [-1, -1, 1])
    assert torch.equal(tree[[0, 2, 3]], chain)


def test_a_long_prefill_runs_on_the_kernels_and_scores_its_last_row_as_a_step_would(pair):
    blocks, _ = pair
    long = [(7 * i + 3) % VOCAB for i in range(400)]  # more rows than the float path sends to torch
    runner = LabKernelRunner(blocks, VOCAB, 512)
    last = runner.prefill(long)
    runner.rollback(399)
    assert torch.equal(runner.forward(long[-1:]), last.reshape(1, -1))


def test_a_gguf_of_other_tensor_types_is_refused_in_one_line(tmp_path):
    import gguf
    import numpy as np

    path = tmp_path / "f16.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tensor("token_embd.weight", np.zeros((VOCAB, 64), np.float16))
    writer.write_header_to_file(), writer.write_kv_data_to_file(), writer.write_tensors_to_file(), writer.close()
    with pytest.raises(ModelLoadError, match="token_embd.weight is F16; the lab kernels multiply Q4_1 and Q8_0"):
        build_block_model(tiny_block_config(), path)
