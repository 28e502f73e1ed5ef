// Writes weight files whose headers are the real ones (names, dtypes, shapes) but whose data is a
// hole: the file is extended with ftruncate, so a 2 GB umT5 embedding costs no disk and no time.
// Enough for everything that reads headers only (model_io/model_file_info.h).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gguf_test_writer.h"

struct HeaderTensor {
  std::string name;
  std::string dtype;  // "F16", "U8", ...
  std::vector<int64_t> shape;
};

inline int64_t element_bytes(const std::string& dtype) {
  if (dtype == "F32" || dtype == "I32") return 4;
  if (dtype == "F16" || dtype == "BF16") return 2;
  return 1;
}

inline void write_sparse_safetensors(const std::string& path, const std::vector<HeaderTensor>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const HeaderTensor& t : tensors) {
    int64_t n = element_bytes(t.dtype);
    for (const int64_t d : t.shape) n *= d;
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + uint64_t(n)}}};
    offset += uint64_t(n);
  }
  std::string json = header.dump();
  while (json.size() % 8 != 0) json += ' ';
  {
    std::ofstream out(path, std::ios::binary);
    const uint64_t size = json.size();
    for (int i = 0; i < 8; ++i) out.put(char((size >> (8 * i)) & 0xFF));
    out << json;
  }
  if (::truncate(path.c_str(), off_t(8 + json.size() + offset)) != 0) throw std::runtime_error("truncate " + path);
}

// The Wan2.2-TI2V-5B DiT's identifying tensors (ComfyUI's fp16 file names: no prefix).
inline std::vector<HeaderTensor> dit_5b_tensors() {
  return {{"patch_embedding.weight", "F16", {3072, 48, 1, 2, 2}},
          {"head.modulation", "F32", {1, 2, 3072}},
          {"blocks.0.self_attn.q.weight", "F16", {3072, 3072}}};
}

inline std::vector<HeaderTensor> vae_tensors(int64_t z_dim) {
  return {{"encoder.conv1.weight", "F32", {160, z_dim == 48 ? 12 : 3, 3, 3, 3}},
          {"decoder.conv1.weight", "F32", {1024, z_dim, 3, 3, 3}},
          {"conv2.weight", "F32", {z_dim, z_dim, 1, 1, 1}}};
}

// ComfyUI's umt5_xxl_fp16: HF names, optionally the `spiece_model` bytes.
inline std::vector<HeaderTensor> umt5_tensors(bool with_tokenizer) {
  std::vector<HeaderTensor> t = {{"shared.weight", "F16", {256384, 4096}},
                                 {"encoder.block.0.layer.0.SelfAttention.q.weight", "F16", {4096, 4096}}};
  if (with_tokenizer) t.push_back({"spiece_model", "U8", {4548313}});
  return t;
}

// A GGUF whose tensors (stored F16, `shape` in torch order) are holes; `metadata` adds key-values.
inline void write_sparse_gguf(const std::string& path, const std::vector<HeaderTensor>& tensors,
                              const std::function<void(vidgraph::test::GgufTestWriter&)>& metadata = {}) {
  vidgraph::test::GgufTestWriter w;
  if (metadata) metadata(w);
  uint64_t offset = 0;
  for (const HeaderTensor& t : tensors) {
    vidgraph::test::GgufTestTensor info{t.name, std::vector<uint64_t>(t.shape.rbegin(), t.shape.rend()),
                                        vidgraph::test::kTF16, "", int64_t(offset)};
    w.tensors.push_back(info);
    int64_t bytes = 2;
    for (const int64_t d : t.shape) bytes *= d;
    offset += (uint64_t(bytes) + w.alignment - 1) / w.alignment * w.alignment;
  }
  const std::string head = w.bytes();  // header and tensor infos only: the explicit offsets hold no data
  {
    std::ofstream out(path, std::ios::binary);
    out << head;
  }
  if (::truncate(path.c_str(), off_t(head.size() + offset)) != 0) throw std::runtime_error("truncate " + path);
}

// city96's umT5 GGUF: llama.cpp names, and its tokenizer as metadata when `with_tokenizer`.
inline void write_sparse_umt5_gguf(const std::string& path, bool with_tokenizer) {
  write_sparse_gguf(path, {{"token_embd.weight", "F16", {256384, 4096}}, {"enc.blk.0.attn_q.weight", "F16", {4096, 4096}}},
                    [&](vidgraph::test::GgufTestWriter& w) {
                      w.string_kv("general.architecture", "t5encoder");
                      if (!with_tokenizer) return;
                      w.string_kv("tokenizer.ggml.model", "t5");
                      w.string_array_kv("tokenizer.ggml.tokens", {"<pad>", "</s>", "<unk>", "\u2581a"});
                    });
}
