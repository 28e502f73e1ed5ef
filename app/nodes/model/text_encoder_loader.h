// Internal: builds the TEXT_ENCODER handle from the models' umT5 encoder and SentencePiece tokenizer.
#pragma once

#include <string>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "nodes/model/model_handles.h"

namespace vidgraph::nodes {

// The dtype the encoder loads in on `device`: the reference runs umT5 in bf16; CPUs without fast
// bf16 matmuls run it in fp32.
at::ScalarType text_encoder_dtype(const c10::Device& device);

// Loads the encoder weights and the tokenizer (an empty `tokenizer`: the one the weights file carries,
// as ComfyUI's umT5 files do); throws std::exception naming the file on failure, and when the
// tokenizer does not belong to the encoder (t5::check_umt5_tokenizer; a doubtful pair is logged).
TextEncoderHandle load_text_encoder(const std::string& weights, const std::string& tokenizer,
                                    c10::Device device);

// On a rank above 0 of a multi-process run, Encode Text receives rank 0's embeddings
// (rank_broadcast.h), so the encoder (the largest model part: ~11 GB for umT5-XXL in bf16) is not
// loaded there: this handle's encode throws, saying so.
TextEncoderHandle rank0_text_encoder(const std::string& weights, c10::Device device);

}  // namespace vidgraph::nodes
