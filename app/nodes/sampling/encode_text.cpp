// Encode Text: prompt -> umT5 embeddings (positive and negative) for the sampler; frees or offloads
// the encoder afterwards when asked (it is the largest model part and is needed once per prompt).
// In a run of several ranks only rank 0 encodes; the others receive its embeddings
// (rank_broadcast.h).
#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>

#include <utility>

#include "models/t5/umt5_prompt.h"
#include "models/wan/wan_config.h"
#include "nodes/common/node_types.h"
#include "nodes/common/node_util.h"
#include "nodes/common/rank_broadcast.h"
#include "nodes/common/stage_memory.h"
#include "nodes/model/model_handles.h"
#include "nodes/sampling/conditioning.h"
#include "nodes/value_types.h"

namespace vidgraph::nodes {

using engine::ParamSpec;

namespace {

// Fills cond.context and cond.context_null with the encoder's embeddings of its two prompts.
engine::Status encode_prompts(const engine::NodeContext& ctx, const TextEncoderHandle& encoder, Conditioning& cond) {
  try {
    c10::InferenceMode inference;
    ctx.progress(0, 2, "positive prompt");
    cond.context = encoder.encode(cond.positive);
    if (ctx.cancelled()) return node_error(ctx, "Text encoding cancelled.");
    ctx.progress(1, 2, "negative prompt");
    cond.context_null = encoder.encode(cond.negative);
    ctx.progress(2, 2, "encoded");
  } catch (const c10::Error& e) {  // LibTorch's text without its C++ backtrace
    return node_error(ctx, std::string("Encoding the prompt failed: ") + e.what_without_backtrace() +
                           "; check that the text encoder and tokenizer belong together.");
  } catch (const std::exception& e) {
    return node_error(ctx, std::string("Encoding the prompt failed: ") + e.what() + ".");
  }
  return {};
}

// Several ranks: rank 0 encodes and sends, the others receive (the same embeddings, computed once).
engine::Result<Conditioning> encode_or_receive(const engine::NodeContext& ctx, const TextEncoderHandle& encoder,
                                               const Conditioning& prompts) {
  auto encoded = computed_on_rank0<Conditioning>(
      ctx, "encode the prompt",
      [&]() -> engine::Result<Conditioning> {
        Conditioning cond = prompts;
        if (engine::Status done = encode_prompts(ctx, encoder, cond); !done.ok()) return done.error();
        return cond;
      },
      [](const Conditioning& cond) { return std::vector{cond.context, cond.context_null}; },
      [&](const std::vector<at::Tensor>& tensors) -> engine::Result<Conditioning> {
        if (tensors.size() != 2) return node_error(ctx, "Rank 0 sent no prompt embeddings.");
        Conditioning cond = prompts;
        cond.context = tensors[0];
        cond.context_null = tensors[1];
        ctx.progress(2, 2, "received from rank 0");
        return cond;
      });
  if (encoded.ok() && sends_to_other_ranks(ctx)) {
    ctx.log_info("Encoded the prompt once and sent it to the other ranks.");
  }
  return encoded;
}

engine::Result<engine::ValueMap> compute_encode_text(engine::NodeContext& ctx) {
  const TextEncoderHandle& encoder = ctx.input_as<TextEncoderHandle>("text_encoder");
  const PromptText& prompt = ctx.input_as<PromptText>("prompt");
  const StageMemory memory(encoder.device);
  Conditioning cond;
  cond.positive = prompt.positive;
  cond.negative = prompt.negative.empty() ? wan::default_negative_prompt() : prompt.negative;
  for (const auto& [text, what] : {std::pair{&cond.positive, "The positive prompt"},
                                   std::pair{&cond.negative, "The negative prompt"}}) {
    const std::string bad = t5::check_prompt_size(*text, what);
    if (!bad.empty()) return node_error(ctx, bad);
  }
  auto encoded = encode_or_receive(ctx, encoder, cond);
  if (!encoded.ok()) return encoded.error();
  cond = std::move(*encoded);
  if (ctx.param_bool("free_encoder") && encoder.release) {
    encoder.release();
    ctx.log_info("Released the text encoder's weights.");
  }
  memory.report(ctx, encoder.release && ctx.param_bool("free_encoder")
                         ? "Encode Text, encoder released"
                         : "Encode Text, encoder kept");
  const std::size_t bytes = cond.bytes();
  return engine::ValueMap{
      {"conditioning", engine::make_value(kConditioningType, std::move(cond), bytes)}};
}

}  // namespace

engine::NodeType encode_text_node() {
  engine::NodeType t;
  t.name = "EncodeText";
  t.display_name = "Encode Text";
  t.category = "conditioning";
  t.description = "Encodes the positive and negative prompts with the umT5 encoder (tokenised to "
                  "512 tokens, output trimmed to the real length, as the reference does). Can free "
                  "the encoder afterwards; it reloads when a prompt changes.";
  t.inputs = {{"text_encoder", kTextEncoderType, false, "From Load Wan Model."},
              {"prompt", kPromptType, false, "From Prompt."}};
  t.outputs = {{"conditioning", kConditioningType, false, "Embeddings for Wan Sampler."}};
  t.params = {
      ParamSpec::boolean("free_encoder", false,
                         "Free the encoder's weights after encoding (saves memory; the next "
                         "changed prompt reloads them)."),
  };
  t.compute = compute_encode_text;
  return t;
}

}  // namespace vidgraph::nodes
