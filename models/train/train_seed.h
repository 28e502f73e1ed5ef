// Seeds for the trainer's CPU generators: every random draw of a run is a pure function of the
// run seed and a position (step, micro-step, batch item, module name), so a resumed run draws
// exactly what an uninterrupted one would.
#pragma once

#include <cstdint>
#include <string>

namespace vidgraph::train {

// splitmix64 of (a, b): a well-mixed 64-bit seed.
inline uint64_t mix_seed(uint64_t a, uint64_t b) {
  uint64_t z = a * 0x9E3779B97F4A7C15ULL + b + 0x632BE59BD9B4E019ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// FNV-1a of a name.
inline uint64_t name_hash(const std::string& name) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : name) {
    h = (h ^ c) * 1099511628211ULL;
  }
  return h;
}

}  // namespace vidgraph::train
