// Tiling metadata of a token grid: which token goes to which slot of which tile, cached per
// (grid, tile shape, device).
//
// Tiles of tile[0] x tile[1] x tile[2] tokens cover the (T, H, W) grid, ordered T-major over tiles
// (then H, then W); boundary tiles are clipped (ragged). Tile i occupies the V = tile volume slots
// [V*i, V*i + V) of the padded sequence of length Sp = N*V: its real tokens first, in raster order
// inside the tile, then zero pads. Tiling is an index_select over tokens with one extra zero row.
#pragma once

#include "plugins/api/attention_backend.h"

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <array>
#include <memory>

namespace vidgraph::attention {

struct TileLayout {
  plugin::TokenGrid grid;
  std::array<int64_t, 3> tile{4, 4, 4};   // tile shape (t, h, w)
  std::array<int64_t, 3> tiles{0, 0, 0};  // tiles per axis: ceil(grid / tile)
  int64_t num_tiles = 0;                  // N
  int64_t tile_volume = 0;                // V
  int64_t tokens = 0;                     // S
  int64_t padded_len = 0;                 // Sp = N * V
  at::Tensor gather;                      // int64 [Sp]: token index of each slot; S (the zero row) for pads
  at::Tensor scatter;                     // int64 [S]: slot of each token (grid order)
  at::Tensor tile_of_token;               // int64 [S]: tile index of each token
  at::Tensor tile_sizes;                  // int64 [N]: real tokens per tile
  at::Tensor tile_sizes_i32;              // int32 [N]
  at::Tensor key_valid;                   // bool [N, V]: slot j of tile i holds a real token
  at::Tensor gather_i32;                  // int32 [Sp]: token of each slot, -1 for pads (GPU row gathers)
  at::Tensor scatter_i32;                 // int32 [S]: slot of each token
};

// The layout for `grid` and `tile` with its tensors on `device`; built once and cached (thread-safe).
// Throws c10::Error for a non-positive grid or tile.
std::shared_ptr<const TileLayout> tile_layout(const plugin::TokenGrid& grid, const std::array<int64_t, 3>& tile,
                                              c10::Device device);

// Drops every cached layout (plugin shutdown).
void clear_tile_layout_cache();

// x [B, S, H, D] -> [B, H, Sp, D] contiguous, pads exactly zero. Differentiable.
at::Tensor tile_tokens(const at::Tensor& x, const TileLayout& layout);

// x [B, H, Sp, D] -> [B, S, H, D] (pads dropped). Differentiable.
at::Tensor untile_tokens(const at::Tensor& x, const TileLayout& layout);

}  // namespace vidgraph::attention
