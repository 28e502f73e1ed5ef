// Spatially tiled VAE decode: the latent is cut into overlapping tiles (VaeTiling, latent units),
// each tile runs the causal chunk loop on its own (so activations and caches scale with the tile,
// not the frame), and the decoded tiles are blended into the output with linear ramps across each
// overlap (weights normalised per pixel). Seams are not bit-exact with an untiled decode: the
// convolutions' receptive field and the per-frame attention of the middle block see only the tile.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "wan_vae.h"

namespace vidgraph::vae {

// latent [B,z,T,h,w] -> video [B,3,1+4(T-1),s*h,s*w] (s = spatial_factor) on `output_device`;
// progress counts tiles x chunks (this decoder's only, when shared). With `share`: an undefined
// tensor on a decoder whose exchange returns no tiles.
at::Tensor decode_tiled(const WanVae& vae, const at::Tensor& latent, const VaeCallbacks& callbacks,
                        const VaeTiling& tiling, c10::Device output_device, const TileShare* share = nullptr,
                        plugin::VaeKernels* fused = nullptr);

// Start offsets of tiles of `tile` covering [0, size) with at least `overlap` shared cells; the last
// tile is aligned to the end.
std::vector<int64_t> tile_starts(int64_t size, int64_t tile, int64_t overlap);

// Memory a decode needs, estimated from shapes alone (nothing is allocated), in bytes.
// working: the decoder's activations, chunk cache and (tiled) one tile's decoded video, on the
// VAE's device; output: the decoded video in fp32 plus its transient copies (concatenation of the
// chunks, the caller's conversion to uint8), on the output device.
struct VaeDecodeMemory {
  int64_t working = 0;
  int64_t output = 0;
  int64_t total() const { return working + output; }
};

// For a latent of `latent_sizes` [B, z, T, h, w] decoded with parameters of `element_bytes` (4 for
// fp32), untiled (`tiling` empty) or tiled. See vae_tiling.cpp for the formula.
VaeDecodeMemory estimate_decode_memory(const WanVaeConfig& config, const std::vector<int64_t>& latent_sizes,
                                       int64_t element_bytes, const std::optional<VaeTiling>& tiling);

} // namespace vidgraph::vae
