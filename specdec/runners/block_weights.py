"""A GGUF's own quantized blocks (Q4_1, Q8_0: llama.cpp's block formats) as the lab kernels read them, and the torch
modules that hold them in a model (specdec/runners/native/block_products.c defines the layout and the arithmetic).

Why: decoding on a CPU reads every weight once a token, so its pace is the bytes of the weights. The model this
project fetches is a llama.cpp file of 4-bit blocks (98 MB); dequantised to float16 it reads 269 MB a token. Here the
blocks are kept as they are (repacked into tiles of 8 output rows, the same bytes), and the kernels multiply them by
input rows quantized to int8 blocks as llama.cpp does, with exact integer dot products, so a row's result does not
depend on the rows beside it (greedy speculation reproduces target-only decoding on this path by construction).

The modules: BlockLinear (a linear layer without bias whose weight is a BlockMatrix) and BlockEmbedding (an embedding
whose rows are dequantised from the head's blocks on demand: tied embeddings are one copy). Their `weight` is a meta
tensor of the matrix's shape: shape queries work, and code that reads weight values fails at once instead of
computing with numbers that are not there (embedder() and head_rows() give what drafters need). The model that holds
them is built by specdec/models/block_model.py; its forwards run on the lab kernels (lab_kernels.py).
"""
from __future__ import annotations

import weakref
from typing import NamedTuple, Sequence

from specdec.runners import native_kernels, packed_weights

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

QK = 32  # inputs per block
TILE = 8  # output rows per tile
# format -> (code in decode_kernels.c, bytes per block as llama.cpp stores it, bytes per tile-block)
FORMATS = {"Q4_1": (1, 20, 4 * 32 + 2 * TILE * 2), "Q8_0": (2, 34, 8 * 32 + TILE * 2)}


class BlockMatrix(NamedTuple):
    """A matrix [rows, width] of blocks as tiles: tiles [rows / TILE, width / QK, tile-block bytes] uint8 (or a view
    that reshapes to it: unpair's halves of a gated pair)."""

    tiles: torch.Tensor
    format: str  # "Q4_1" | "Q8_0"
    rows: int
    width: int

    @property
    def code(self) -> int:
        return FORMATS[self.format][0]

    @property
    def nbytes(self) -> int:
        return self.tiles.numel()

    def contiguous_tiles(self) -> torch.Tensor:
        """The tiles as one contiguous [rows / TILE, blocks, bytes] tensor (a copy only for a strided view)."""
        return self.tiles.reshape(self.rows // TILE, self.width // QK, -1).contiguous()


def tile(raw: np.ndarray | torch.Tensor, fmt: str) -> BlockMatrix:
    """llama.cpp's row-major blocks raw [rows, blocks * block bytes] (uint8) -> tiles (block_products.c's layout).
    rows must be a multiple of TILE."""
    _, block_bytes, tile_bytes = FORMATS[fmt]
    raw = torch.from_numpy(np.array(raw)) if isinstance(raw, np.ndarray) else raw.contiguous()  # a writable copy
    rows, row_bytes = raw.shape
    blocks = row_bytes // block_bytes
    if rows % TILE or row_bytes % block_bytes:
        raise ValueError(f"{fmt} matrix of {rows} rows x {row_bytes} bytes does not tile by {TILE} rows")
    by_row = raw.view(rows // TILE, TILE, blocks, block_bytes)  # [tiles, lane o, block, bytes]
    if fmt == "Q4_1":
        scales, quants, quads = by_row[..., :4], by_row[..., 4:], 4  # d, m; 16 bytes of nibbles
    else:
        scales, quants, quads = by_row[..., :2], by_row[..., 2:], 8  # d; 32 signed bytes
    quants = quants.reshape(rows // TILE, TILE, blocks, quads, 4).permute(0, 2, 3, 1, 4)  # [tiles, block, t, o, i]
    halves = scales.reshape(rows // TILE, TILE, blocks, -1, 2).permute(0, 2, 3, 1, 4)  # [tiles, block, d|m, o, 2]
    tiles = torch.cat([quants.reshape(rows // TILE, blocks, -1), halves.reshape(rows // TILE, blocks, -1)], dim=-1)
    assert tiles.shape[-1] == tile_bytes
    return BlockMatrix(tiles.contiguous(), fmt, rows, blocks * QK)


def untile(matrix: BlockMatrix) -> torch.Tensor:
    """tile()'s inverse: llama.cpp's row-major blocks [rows, blocks * block bytes]."""
    _, block_bytes, _ = FORMATS[matrix.format]
    tiles, blocks = matrix.contiguous_tiles(), matrix.width // QK
    count = tiles.shape[0]
    quads = 4 if matrix.format == "Q4_1" else 8
    quants = tiles[..., :quads * 32].reshape(count, blocks, quads, TILE, 4).permute(0, 3, 1, 2, 4)
    halves = tiles[..., quads * 32:].reshape(count, blocks, -1, TILE, 2).permute(0, 3, 1, 2, 4)
    raw = torch.cat([halves.reshape(count, TILE, blocks, -1), quants.reshape(count, TILE, blocks, -1)], dim=-1)
    return raw.reshape(matrix.rows, blocks * block_bytes)


def stack(matrices: Sequence[BlockMatrix]) -> BlockMatrix:
    """Matrices of one format and width, their rows one after the other (q, k, v as one product)."""
    first = matrices[0]
    if any(m.format != first.format or m.width != first.width for m in matrices):
        raise ValueError("stacked block matrices must share their format and width")
    return BlockMatrix(torch.cat([m.tiles for m in matrices]).contiguous(), first.format,
                       sum(m.rows for m in matrices), first.width)


def gated_pair(gate: BlockMatrix, up: BlockMatrix) -> BlockMatrix:
    """The kernels' gated pair: gate group j, then up group j, for every j (a piece yields silu(gate) * up)."""
    per_group = native_kernels.group() // TILE
    groups = gate.tiles.view(gate.rows // native_kernels.group(), per_group, *gate.tiles.shape[1:])
    ups = up.tiles.view(up.rows // native_kernels.group(), per_group, *up.tiles.shape[1:])
    paired = torch.stack([groups, ups], dim=1).flatten(0, 2).contiguous()
    return BlockMatrix(paired, gate.format, gate.rows + up.rows, gate.width)


def unpair(pair: BlockMatrix) -> tuple[BlockMatrix, BlockMatrix]:
    """gated_pair's inverse, as two strided views of the pair (no copy): (gate, up)."""
    per_group, group = native_kernels.group() // TILE, native_kernels.group()
    halves = pair.tiles.view(pair.rows // 2 // group, 2, per_group, *pair.tiles.shape[1:])
    return tuple(BlockMatrix(halves[:, half], pair.format, pair.rows // 2, pair.width) for half in (0, 1))


def group_slice(matrix: BlockMatrix, first_row: int, rows: int) -> BlockMatrix:
    """Rows first_row .. first_row + rows - 1 of a matrix (whole tiles) as a view: no copy."""
    return BlockMatrix(matrix.tiles[first_row // TILE:(first_row + rows) // TILE], matrix.format, rows, matrix.width)


def gather(matrix: BlockMatrix, ids: torch.Tensor) -> BlockMatrix:
    """The rows `ids` (a multiple of the kernels' group in number) as a new matrix: a draft vocabulary's head rows,
    the same blocks."""
    return tile(untile(matrix)[ids.long()], matrix.format)



def fits_kernels(matrix: BlockMatrix) -> bool:
    """Whether the kernels' products take this matrix: rows in whole groups."""
    return matrix.rows % native_kernels.group() == 0


def product(x: torch.Tensor, matrix: BlockMatrix, threads: int) -> torch.Tensor:
    """x [n, width] float32 times the matrix -> [n, rows] float32, on `threads` (1 or 2) threads of the kernels."""
    x = x.float().contiguous()
    out = x.new_empty((x.shape[0], matrix.rows))
    tiles = matrix.contiguous_tiles()
    if native_kernels.library().sd_linear_blocks(x.data_ptr(), x.shape[0], matrix.width, tiles.data_ptr(),
                                                 matrix.code, matrix.rows, out.data_ptr(), threads):
        raise MemoryError("the lab kernels could not allocate their scratch for this product")
    return out


def rows(matrix: BlockMatrix, ids: torch.Tensor) -> torch.Tensor:
    """Rows `ids` of the matrix dequantised, [n, width] float32 (as gguf-py and llama.cpp dequantise them)."""
    ids = ids.reshape(-1).to(torch.int64).contiguous()
    out = torch.empty((ids.numel(), matrix.width))
    tiles = matrix.contiguous_tiles()
    native_kernels.library().sd_block_rows(tiles.data_ptr(), matrix.code, matrix.width, ids.data_ptr(),
                                           ids.numel(), out.data_ptr())
    return out


def _meta_weight(rows: int, width: int) -> torch.Tensor:
    return torch.empty((rows, width), dtype=torch.float32, device="meta")


class BlockLinear(nn.Module):
    """A linear layer y = x W^T whose W is a BlockMatrix (no bias). forward runs the kernels' product (one thread):
    the runners call the kernels directly; this is for code that calls the module."""

    bias = None

    def __init__(self, matrix: BlockMatrix):
        super().__init__()
        self.matrix = matrix
        self.in_features, self.out_features = matrix.width, matrix.rows
        self.weight = _meta_weight(matrix.rows, matrix.width)  # a plain attribute: no parameter, no values

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features)
        if fits_kernels(self.matrix):
            out = product(flat, self.matrix, 1)
        else:
            out = flat.float() @ rows(self.matrix, torch.arange(self.out_features)).T
        return out.reshape(*x.shape[:-1], self.out_features).to(x.dtype)

    def extra_repr(self) -> str:
        return f"{self.in_features} -> {self.out_features}, {self.matrix.format} blocks"


class BlockEmbedding(nn.Module):
    """Token embeddings read from a BlockMatrix (the tied head's): forward(ids) -> [*, width] float32."""

    def __init__(self, matrix: BlockMatrix):
        super().__init__()
        self.matrix = matrix
        self.num_embeddings, self.embedding_dim = matrix.rows, matrix.width
        self.weight = _meta_weight(matrix.rows, matrix.width)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return rows(self.matrix, ids).reshape(*ids.shape, self.embedding_dim)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings} x {self.embedding_dim}, {self.matrix.format} blocks"


def embedder(module: nn.Module):
    """ids [n] -> embeddings [n, d] of an embedding module, blocks or not (a drafter's lookups)."""
    if isinstance(module, BlockEmbedding):
        return module
    weight = module.weight
    return lambda ids: F.embedding(ids, weight)


def head_rows(head: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """Rows `ids` of a head's weight [n, d] (float; dequantised from blocks where the head is a BlockLinear)."""
    if isinstance(head, BlockLinear):
        return rows(head.matrix, ids)
    return head.weight.detach()[ids]


_HAS_BLOCKS: "weakref.WeakKeyDictionary[nn.Module, bool]" = weakref.WeakKeyDictionary()


def has_blocks(model: nn.Module) -> bool:
    """Whether any of the model's linear layers (its decoder layers' or its head) are blocks: its forwards then need
    the lab kernels. An embedding of blocks alone does not (every runner looks rows up through embedder())."""
    known = _HAS_BLOCKS.get(model)
    if known is None:
        known = _HAS_BLOCKS[model] = any(isinstance(m, BlockLinear) for m in model.modules())
    return known


def block_bytes(model: nn.Module) -> int:
    """Bytes of the distinct block storages the model's modules hold (views of one stack counted once)."""
    seen: dict[int, int] = {}
    for module in model.modules():
        if isinstance(module, (BlockLinear, BlockEmbedding)):
            storage = module.matrix.tiles.untyped_storage()
            seen[storage.data_ptr()] = storage.nbytes()
    return sum(seen.values())


def held_bytes(module: nn.Module) -> int:
    """A module's weights in memory: its parameters and packed copies (packed_weights.weight_bytes) and its blocks."""
    return packed_weights.weight_bytes(module) + block_bytes(module)


def block_formats(model: nn.Module) -> list[str]:
    """The block formats the model holds, by bytes, largest first (['Q4_1', 'Q8_0'] for the fetched SmolLM2)."""
    sizes: dict[str, dict[int, int]] = {}
    for module in model.modules():
        if isinstance(module, (BlockLinear, BlockEmbedding)):
            storage = module.matrix.tiles.untyped_storage()
            sizes.setdefault(module.matrix.format, {})[storage.data_ptr()] = storage.nbytes()
    return sorted(sizes, key=lambda fmt: -sum(sizes[fmt].values()))
