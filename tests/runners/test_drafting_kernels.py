"""The lab kernels' calls for a drafting step and greedy verification (decode_kernels.c): products through int8 rows
(a drafter's draft-vocabulary head rows) and one pass that finds each row's first largest value and its softmax, on
both vector builds."""
from __future__ import annotations

from specdec.engine.sampling import greedy_probabilities
from specdec.engine.verify import greedy_choices
from specdec.runners import native_kernels

import pytest
import torch

pytestmark = pytest.mark.skipif(not native_kernels.available(), reason=native_kernels.unavailable_reason())


@pytest.fixture(scope="module", params=["native", "avx2"])
def library(request):
    return native_kernels.library() if request.param == "native" else request.getfixturevalue("avx2_kernels")


def int8_product(library, x: torch.Tensor, rows: native_kernels.Int8Rows, threads: int = 2) -> torch.Tensor:
    out = torch.empty(x.shape[0], rows.scales.numel())
    assert library.sd_linear_int8(x.data_ptr(), x.shape[0], x.shape[1], rows.values.data_ptr(),
                                  rows.scales.data_ptr(), out.shape[1], out.data_ptr(), threads) == 0
    return out


def softmax_first(library, x: torch.Tensor, threads: int = 2):
    first, probs = torch.empty(x.shape[0], dtype=torch.int64), torch.empty_like(x)
    bad = library.sd_softmax_first(x.data_ptr(), x.shape[0], x.shape[1], probs.data_ptr(), first.data_ptr(), threads)
    return bad, first, probs


def test_int8_rows_hold_each_row_in_255_steps_of_its_largest_magnitude():
    weight = torch.randn(2 * native_kernels.group(), 40)
    rows = native_kernels.pack_int8(weight)
    assert rows.values.dtype == torch.int8 and rows.values.abs().amax() == 127
    assert torch.allclose(rows.scales, weight.abs().amax(dim=1) / 127)
    assert ((rows.matrix() - weight.double()).abs() <= rows.scales.double().unsqueeze(1) / 2 + 1e-7).all()


def test_a_row_of_zeros_stays_zeros_in_int8():
    weight = torch.randn(native_kernels.group(), 16)
    weight[3] = 0
    rows = native_kernels.pack_int8(weight)
    assert rows.matrix()[3].abs().sum() == 0 and not torch.isnan(rows.scales).any()


@pytest.mark.parametrize("count", [1, 2, 5, 7, 12, 13])
def test_an_int8_product_is_its_rows_product_within_the_int16_rounding_of_the_input(library, count):
    rows, x = native_kernels.pack_int8(torch.randn(192, 96)), torch.randn(count, 96)
    # each input value is off by at most half its row's int16 step (max|x| / 16,383)
    step = x.abs().amax(dim=1, keepdim=True).double() / 16_383
    bound = step / 2 * rows.matrix().abs().sum(dim=1).unsqueeze(0)  # [count, 192]
    error = (int8_product(library, x, rows).double() - x.double() @ rows.matrix().T).abs()
    assert (error <= bound + 1e-4).all()


def test_an_odd_width_is_padded_with_a_zero_column():
    weight, x = torch.randn(64, 37), torch.randn(2, 37)
    rows = native_kernels.pack_int8(weight)
    assert rows.values.shape == (2, 19, 32, 2) and rows.matrix().shape == (64, 37)
    torch.testing.assert_close(native_kernels.product_int8(x, rows, 1).double(), x.double() @ rows.matrix().T,
                               rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("count", [2, 5, 9, 13])
def test_an_int8_rows_product_does_not_depend_on_the_rows_beside_it(library, count):
    rows, x = native_kernels.pack_int8(torch.randn(256, 96)), torch.randn(count, 96)
    alone = torch.cat([int8_product(library, x[i:i + 1].contiguous(), rows) for i in range(count)])
    assert torch.equal(int8_product(library, x, rows), alone)


def test_an_int8_product_does_not_depend_on_the_thread_count():
    rows, x = native_kernels.pack_int8(torch.randn(1024, 96)), torch.randn(3, 96)
    assert torch.equal(native_kernels.product_int8(x, rows, 1), native_kernels.product_int8(x, rows, 2))


@pytest.mark.parametrize("width", [5, 37, 49_152])
def test_the_first_of_tied_largest_values_is_chosen_as_torchs_max_chooses(library, width):
    x = torch.randn(3, width)
    for row, at in enumerate([width - 1, width // 2, 0]):  # in the tail, in a full vector, first
        x[row, at] = x[row, width - 1 - (width - 1 - at) // 2] = x[row].max() + 1  # a tie, the other at or after it
    bad, first, _ = softmax_first(library, x)
    assert bad == 0 and first.tolist() == x.max(dim=-1).indices.tolist()


@pytest.mark.parametrize("rows", [1, 5, 9])
def test_the_rows_softmax_is_as_close_to_a_float64_softmax_as_torchs(library, rows):
    x = torch.randn(rows, 49_152) * 6
    _, _, probs = softmax_first(library, x)
    exact = torch.softmax(x.double(), dim=-1)
    ours, torchs = ((p.double() - exact).abs().div(exact).max().item() for p in (probs, torch.softmax(x, dim=-1)))
    assert ours <= 2 * torchs  # float32 sums of 49,152 terms: both ~1e-5 relative


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_row_that_is_not_finite_is_refused_and_torchs_rules_decide(library, value):
    x = torch.randn(2, 100)
    x[1, 40] = value
    assert softmax_first(library, x)[0] == 1
    assert native_kernels.softmax_first(x) is None
    assert greedy_choices(x) == x.max(dim=-1).indices.tolist()


def test_greedy_choices_and_probabilities_are_torchs_on_the_kernels():
    logits = torch.randn(5, 49_152) * 4
    assert greedy_choices(logits) == logits.argmax(dim=-1).tolist()
    torch.testing.assert_close(greedy_probabilities(logits, threads=2), torch.softmax(logits, dim=-1),
                               rtol=1e-5, atol=1e-9)
