// Internal: builds the TEXT_ENCODER handle from the models' umT5 encoder and SentencePiece tokenizer.
#pragma once

#include <string>

#include <c10/core/Device.h>

#include "nodes/types/model_handles.h"

namespace vidgraph::nodes {

// Loads the encoder weights and the tokenizer (an empty `tokenizer`: the one the weights file carries,
// as ComfyUI's umT5 files do); throws std::exception naming the file on failure, and when the
// tokenizer does not belong to the encoder (t5::check_umt5_tokenizer; a doubtful pair is logged).
TextEncoderHandle load_text_encoder(const std::string& weights, const std::string& tokenizer,
                                    c10::Device device);

}  // namespace vidgraph::nodes
