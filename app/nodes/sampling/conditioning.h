// Internal (LibTorch): the CONDITIONING value made by Encode Text for Wan Sampler.
// Contract: context and context_null are [1, L, text_dim] float32 on the CPU, L <= text_len, already
// trimmed to the prompt's real token count (EOS included) as the reference does; the DiT zero-pads
// them back to text_len.
#pragma once

#include <cstddef>
#include <string>

#include <ATen/core/Tensor.h>

namespace vidgraph::nodes {

struct Conditioning {
  at::Tensor context;       // positive prompt   [1, L, text_dim]
  at::Tensor context_null;  // negative prompt   [1, L', text_dim]
  std::string positive;     // the texts, for provenance
  std::string negative;

  std::size_t bytes() const {
    std::size_t n = 0;
    for (const at::Tensor* t : {&context, &context_null}) {
      if (t->defined()) n += static_cast<std::size_t>(t->numel()) * t->element_size();
    }
    return n;
  }
};

}  // namespace vidgraph::nodes
