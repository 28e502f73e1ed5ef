// Prompt: the positive and negative text for Encode Text. An empty negative prompt means the Wan2.2
// reference default (as the reference does when n_prompt is empty).
#include "models/t5/umt5_prompt.h"
#include "models/wan/wan_config.h"
#include "nodes/common/node_types.h"
#include "nodes/common/node_util.h"
#include "nodes/value_types.h"

namespace vidgraph::nodes {

using engine::ParamSpec;

engine::NodeType prompt_node() {
  engine::NodeType t;
  t.name = "Prompt";
  t.display_name = "Prompt";
  t.category = "conditioning";
  t.description = "Positive and negative prompt text. The negative prompt defaults to the Wan2.2 "
                  "reference's; leaving it empty also uses that default. The text encoder reads "
                  "the first 512 tokens of each (as the reference); texts over 100,000 characters "
                  "are refused.";
  t.outputs = {{"prompt", kPromptType, false, "The positive and negative text."}};
  t.params = {
      ParamSpec::text("positive", "", "What the video should show."),
      ParamSpec::text("negative", wan::default_negative_prompt(),
                      "What to steer away from; empty = the reference default negative prompt."),
  };
  // Not a file fingerprint: refuses text that is not UTF-8, naming the param, before the engine
  // hashes the params as JSON.
  t.fingerprint = [](const nlohmann::json& params, const engine::RunOptions&) {
    require_utf8_params(params);
    return std::string();
  };
  t.compute = [](engine::NodeContext& ctx) -> engine::Result<engine::ValueMap> {
    PromptText text{ctx.param_string("positive"), ctx.param_string("negative")};
    for (const char* param : {"positive", "negative"}) {
      const std::string bad = t5::check_prompt_size(ctx.param_string(param),
                                                    std::string("The ") + param + " param");
      if (!bad.empty()) return node_error(ctx, bad);
    }
    if (text.negative.empty()) text.negative = wan::default_negative_prompt();
    const std::size_t bytes = text.positive.size() + text.negative.size() + sizeof(PromptText);
    return engine::ValueMap{{"prompt", engine::make_value(kPromptType, std::move(text), bytes)}};
  };
  return t;
}

}  // namespace vidgraph::nodes
