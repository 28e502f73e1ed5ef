// Tiling metadata, its cache, and tile/untile. See tile_layout.h.
#include "plugins/attention/tile_layout.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace vidgraph::attention {
namespace {

using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int, int>;
constexpr size_t kMaxCachedLayouts = 64;

std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}
std::map<Key, std::shared_ptr<const TileLayout>>& cache() {
  static std::map<Key, std::shared_ptr<const TileLayout>> c;
  return c;
}

at::Tensor long_tensor(const std::vector<int64_t>& v) {
  return at::from_blob(const_cast<int64_t*>(v.data()), {static_cast<int64_t>(v.size())}, at::kLong).clone();
}

// The int32 index tensors (gather_i32, scatter_i32, GPU row gathers) address at most this many slots.
constexpr int64_t kMaxPaddedLen = std::numeric_limits<int32_t>::max();

// a * b, or a c10::Error naming the grid and tile when the product does not fit in int64.
int64_t checked_mul(int64_t a, int64_t b, const plugin::TokenGrid& grid, const std::array<int64_t, 3>& tile,
                    const char* what) {
  int64_t r = 0;
  TORCH_CHECK(!__builtin_mul_overflow(a, b, &r), "the token grid (", grid.t, ", ", grid.h, ", ", grid.w,
              ") with tiles (", tile[0], ", ", tile[1], ", ", tile[2], ") has more ", what,
              " than a 64-bit count holds; check the grid");
  return r;
}

// Sizes of the layout, all checked before anything is allocated or indexed.
void set_sizes(TileLayout& l, const plugin::TokenGrid& grid, const std::array<int64_t, 3>& tile) {
  const std::array<int64_t, 3> dims{grid.t, grid.h, grid.w};
  for (int a = 0; a < 3; ++a) l.tiles[a] = (dims[a] - 1) / tile[a] + 1;  // ceil without dims + tile overflowing
  l.num_tiles = checked_mul(checked_mul(l.tiles[0], l.tiles[1], grid, tile, "tiles"), l.tiles[2], grid, tile, "tiles");
  l.tile_volume = checked_mul(checked_mul(tile[0], tile[1], grid, tile, "slots per tile"), tile[2], grid, tile,
                              "slots per tile");
  l.tokens = checked_mul(checked_mul(grid.t, grid.h, grid, tile, "tokens"), grid.w, grid, tile, "tokens");
  l.padded_len = checked_mul(l.num_tiles, l.tile_volume, grid, tile, "padded slots");
  // Every product the loops below form ((tile index + 1) * tile size, slot numbers) is at most
  // padded_len, so this bound also keeps them in range.
  TORCH_CHECK(l.padded_len <= kMaxPaddedLen, "the token grid (", grid.t, ", ", grid.h, ", ", grid.w, ") with tiles (",
              tile[0], ", ", tile[1], ", ", tile[2], ") pads to ", l.padded_len, " slots, more than the ",
              kMaxPaddedLen, " that the int32 tile indices address; use a smaller grid or tile");
}

std::shared_ptr<TileLayout> build_layout(const plugin::TokenGrid& grid, const std::array<int64_t, 3>& tile) {
  auto l = std::make_shared<TileLayout>();
  l->grid = grid;
  l->tile = tile;
  const std::array<int64_t, 3> dims{grid.t, grid.h, grid.w};
  set_sizes(*l, grid, tile);
  std::vector<int64_t> gather(l->padded_len, l->tokens), scatter(l->tokens), tile_of(l->tokens), sizes(l->num_tiles);
  int64_t n = 0;
  for (int64_t ti = 0; ti < l->tiles[0]; ++ti)
    for (int64_t hi = 0; hi < l->tiles[1]; ++hi)
      for (int64_t wi = 0; wi < l->tiles[2]; ++wi, ++n) {
        int64_t slot = n * l->tile_volume;
        for (int64_t t = ti * tile[0]; t < std::min(dims[0], (ti + 1) * tile[0]); ++t)
          for (int64_t h = hi * tile[1]; h < std::min(dims[1], (hi + 1) * tile[1]); ++h)
            for (int64_t w = wi * tile[2]; w < std::min(dims[2], (wi + 1) * tile[2]); ++w, ++slot) {
              const int64_t token = (t * dims[1] + h) * dims[2] + w;
              gather[slot] = token;
              scatter[token] = slot;
              tile_of[token] = n;
            }
        sizes[n] = slot - n * l->tile_volume;
      }
  l->gather = long_tensor(gather);
  l->scatter = long_tensor(scatter);
  l->tile_of_token = long_tensor(tile_of);
  l->tile_sizes = long_tensor(sizes);
  l->tile_sizes_i32 = l->tile_sizes.to(at::kInt);
  l->gather_i32 = l->gather.masked_fill(l->gather == l->tokens, -1).to(at::kInt);
  l->scatter_i32 = l->scatter.to(at::kInt);
  // [N, V]: slot index < real count of its tile.
  l->key_valid = at::arange(l->tile_volume, at::kLong).unsqueeze(0) < l->tile_sizes.unsqueeze(1);
  return l;
}

}  // namespace

std::shared_ptr<const TileLayout> tile_layout(const plugin::TokenGrid& grid, const std::array<int64_t, 3>& tile,
                                              c10::Device device) {
  TORCH_CHECK(grid.t > 0 && grid.h > 0 && grid.w > 0, "the token grid must be positive, got (", grid.t, ", ", grid.h,
              ", ", grid.w, ")");
  TORCH_CHECK(tile[0] > 0 && tile[1] > 0 && tile[2] > 0, "the tile shape must be positive, got (", tile[0], ", ",
              tile[1], ", ", tile[2], ")");
  const Key key{grid.t,
                grid.h,
                grid.w,
                tile[0],
                tile[1],
                tile[2],
                static_cast<int>(device.type()),
                static_cast<int>(device.index())};
  std::lock_guard<std::mutex> lock(cache_mutex());
  auto& c = cache();
  if (auto it = c.find(key); it != c.end()) return it->second;
  auto layout = build_layout(grid, tile);
  if (!device.is_cpu()) {
    for (at::Tensor* t : {&layout->gather, &layout->scatter, &layout->tile_of_token, &layout->tile_sizes,
                          &layout->tile_sizes_i32, &layout->key_valid, &layout->gather_i32, &layout->scatter_i32})
      *t = t->to(device);
  }
  if (c.size() >= kMaxCachedLayouts) c.clear();
  c.emplace(key, layout);
  return layout;
}

void clear_tile_layout_cache() {
  std::lock_guard<std::mutex> lock(cache_mutex());
  cache().clear();
}

at::Tensor tile_tokens(const at::Tensor& x, const TileLayout& layout) {
  // [B, S, H, D] -> [B, H, S, D] (view) -> [B, H, S + 1, D] (zero row last) -> [B, H, Sp, D]
  const at::Tensor bhsd = x.permute({0, 2, 1, 3});
  const at::Tensor zero_row = at::zeros({x.size(0), x.size(2), 1, x.size(3)}, x.options());
  return at::cat({bhsd, zero_row}, 2).index_select(2, layout.gather);
}

at::Tensor untile_tokens(const at::Tensor& x, const TileLayout& layout) {
  // [B, H, Sp, D] -> [B, H, S, D] -> [B, S, H, D]
  return x.index_select(2, layout.scatter).permute({0, 2, 1, 3});
}

}  // namespace vidgraph::attention
