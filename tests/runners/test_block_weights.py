"""A GGUF's own blocks on the lab kernels (runners/block_weights.py, native/block_products.c): the tiles hold
llama.cpp's bytes unchanged, rows dequantise exactly as gguf-py does, a product is the blocks times the input rows
rounded to int8 blocks (llama.cpp's Q8_1), and every row's result is the same bits whatever rows share the call, on
one thread or two, on the machine's build and on the AVX2 build."""
from __future__ import annotations

from specdec.runners import block_weights, native_kernels

import numpy as np
import pytest
import torch

from tests.tiny_blocks import dense, int8_rounded, random_blocks

pytestmark = pytest.mark.skipif(not native_kernels.available(), reason=native_kernels.unavailable_reason())
FORMATS = ("Q4_1", "Q8_0")


def product(library, x: torch.Tensor, matrix, threads: int) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty(x.shape[0], matrix.rows)
    assert library.sd_linear_blocks(x.data_ptr(), x.shape[0], matrix.width, matrix.tiles.data_ptr(), matrix.code,
                                    matrix.rows, out.data_ptr(), threads) == 0
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_tiles_hold_llamacpps_blocks_unchanged(fmt):
    raw = random_blocks(64, 96, fmt)
    assert torch.equal(block_weights.untile(block_weights.tile(raw, fmt)), torch.from_numpy(raw))


@pytest.mark.parametrize("fmt", FORMATS)
def test_rows_dequantise_exactly_as_gguf_py_does(fmt):
    raw = random_blocks(64, 96, fmt, seed=1)
    ids = torch.tensor([0, 1, 7, 8, 31, 33, 63])
    got = block_weights.rows(block_weights.tile(raw, fmt), ids).numpy()
    assert np.array_equal(got, dense(raw, fmt)[ids.numpy()])


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("rows", [1, 3, 5, 13])
def test_a_product_is_the_blocks_times_the_int8_rounded_rows(fmt, rows):
    raw = random_blocks(96, 160, fmt, seed=2)
    x = torch.randn(rows, 160, generator=torch.Generator().manual_seed(rows))
    reference = int8_rounded(x) @ torch.from_numpy(dense(raw, fmt)).double().T
    got = block_weights.product(x, block_weights.tile(raw, fmt), 2).double()
    assert (got - reference).abs().max() <= 1e-5 * reference.abs().max()


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("build", ["native", "avx2"])
def test_each_row_is_the_same_bits_whatever_rows_share_the_call_and_the_threads(fmt, build, avx2_kernels):
    library = native_kernels.library() if build == "native" else avx2_kernels
    matrix = block_weights.tile(random_blocks(128, 192, fmt, seed=3), fmt)
    x = torch.randn(13, 192, generator=torch.Generator().manual_seed(3)) * 3
    alone = torch.cat([product(library, x[i:i + 1], matrix, 1) for i in range(13)])
    for rows in (2, 3, 4, 5, 7, 9, 13):
        for threads in (1, 2):
            assert torch.equal(product(library, x[:rows], matrix, threads), alone[:rows]), (rows, threads)


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_avx2_build_gives_the_machines_builds_bits(fmt, avx2_kernels):
    matrix = block_weights.tile(random_blocks(64, 128, fmt, seed=4), fmt)
    x = torch.randn(5, 128, generator=torch.Generator().manual_seed(4))
    assert torch.equal(product(avx2_kernels, x, matrix, 2), product(native_kernels.library(), x, matrix, 2))


def test_a_stack_a_gated_pair_and_their_views_keep_each_matrixs_rows():
    q, k = (block_weights.tile(random_blocks(rows, 64, "Q4_1", seed=rows), "Q4_1") for rows in (64, 32))
    stacked = block_weights.stack([q, k])
    ids = torch.arange(32)
    assert torch.equal(block_weights.rows(block_weights.group_slice(stacked, 64, 32), ids),
                       block_weights.rows(k, ids))
    gate, up = (block_weights.tile(random_blocks(64, 64, "Q4_1", seed=s), "Q4_1") for s in (5, 6))
    for half, original in zip(block_weights.unpair(block_weights.gated_pair(gate, up)), (gate, up)):
        assert torch.equal(block_weights.rows(half, torch.arange(64)), block_weights.rows(original, torch.arange(64)))


def test_gathered_rows_are_the_same_blocks():
    matrix = block_weights.tile(random_blocks(96, 64, "Q8_0", seed=7), "Q8_0")
    ids = torch.tensor(list(range(95, 31, -2)))  # 32 rows, reversed and spaced
    gathered = block_weights.gather(matrix, ids)
    assert torch.equal(block_weights.rows(gathered, torch.arange(32)), block_weights.rows(matrix, ids))


def test_the_block_modules_hold_no_values_outside_their_blocks():
    matrix = block_weights.tile(random_blocks(64, 64, "Q4_1", seed=8), "Q4_1")
    linear, embedding = block_weights.BlockLinear(matrix), block_weights.BlockEmbedding(matrix)
    assert linear.weight.is_meta and embedding.weight.is_meta and not list(linear.parameters())
    x = torch.randn(3, 64)
    assert torch.equal(linear(x), block_weights.product(x, matrix, 1))
    assert torch.equal(embedding(torch.tensor([4, 9])), block_weights.rows(matrix, torch.tensor([4, 9])))
