// vidgraph-make-demo-model: writes the tiny Wan2.2-architecture demo model, deterministically, from
// our own code (no downloads), beside the tokenizer that vidgraph-train-demo-tokenizer trained into
// OUT_DIR/spiece.model: a seeded umT5 encoder sized to that vocabulary, a seeded Wan2.2 VAE (tiny
// widths, same topology) and a seeded Wan DiT (tiny config, latent channels = the VAE's, text width
// = the encoder's). Run at build time; the folder is what demo.vgflow's Load Wan Model reads:
//   spiece.model, text_encoder.safetensors, vae.safetensors, config.json + DiT shard(s) + index.
// Usage: vidgraph-make-demo-model OUT_DIR [SEED]
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>

#include "models/t5/umt5_checkpoint.h"
#include "models/vae/vae_checkpoint.h"
#include "models/wan/wan_tiny.h"

namespace fs = std::filesystem;
using namespace vidgraph;

namespace {

void write_model(const fs::path& out, std::uint64_t seed) {
  const t5::Umt5Tokenizer tokenizer = t5::load_umt5_tokenizer((out / "spiece.model").string());

  const t5::Umt5Config text_config = t5::Umt5Config::tiny(tokenizer.vocab_size());
  const auto encoder = t5::make_seeded_umt5(text_config, seed + 1);
  t5::save_umt5_safetensors(*encoder, (out / "text_encoder.safetensors").string());

  const vae::WanVaeConfig vae_config = vae::WanVaeConfig::tiny();
  const auto vae = vae::make_seeded_vae(vae_config, seed + 2);
  vae::save_vae_safetensors(*vae, (out / "vae.safetensors").string());

  // Head dim 64 (dim 128, 2 heads): the smallest the GPU attention kernels take, so the demo also
  // runs on a GPU with every attention method.
  wan::WanConfig dit_config = wan::wan_tiny_config();
  dit_config.dim = 128;
  dit_config.ffn_dim = 256;
  dit_config.in_dim = vae_config.z_dim;
  dit_config.out_dim = vae_config.z_dim;
  dit_config.text_dim = text_config.dim;
  dit_config.text_len = 512;  // as Wan2.2: whole prompts fit, as they do with the real model
  wan::WanSaveOptions save;
  save.layout = wan::WanLayout::Official;
  wan::wan_save_tiny(out.string(), dit_config, seed + 3, save);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: vidgraph-make-demo-model OUT_DIR [SEED]\n";
    return 2;
  }
  const std::uint64_t seed = argc == 3 ? std::strtoull(argv[2], nullptr, 10) : 2022;
  try {
    write_model(argv[1], seed);
  } catch (const std::exception& e) {
    std::cerr << "vidgraph-make-demo-model: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
