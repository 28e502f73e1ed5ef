// Prompt: the positive and negative text for Encode Text. An empty negative prompt means the Wan2.2
// reference default (as the reference does when n_prompt is empty).
#include "nodes/types/node_types.h"
#include "nodes/types/node_util.h"
#include "nodes/value_types.h"

namespace vidgraph::nodes {

using engine::ParamSpec;

engine::NodeType prompt_node() {
  engine::NodeType t;
  t.name = "Prompt";
  t.display_name = "Prompt";
  t.category = "conditioning";
  t.description = "Positive and negative prompt text. The negative prompt defaults to the Wan2.2 "
                  "reference's; leaving it empty also uses that default.";
  t.version = 1;
  t.outputs = {{"prompt", kPromptType, false, "The positive and negative text."}};
  t.params = {
      ParamSpec::text("positive", "", "What the video should show."),
      ParamSpec::text("negative", default_negative_prompt(),
                      "What to steer away from; empty = the reference default negative prompt."),
  };
  t.compute = [](engine::NodeContext& ctx) -> engine::Result<engine::ValueMap> {
    PromptText text{ctx.param_string("positive"), ctx.param_string("negative")};
    if (text.negative.empty()) text.negative = default_negative_prompt();
    const std::size_t bytes = text.positive.size() + text.negative.size() + sizeof(PromptText);
    return engine::ValueMap{{"prompt", engine::make_value(kPromptType, std::move(text), bytes)}};
  };
  return t;
}

}  // namespace vidgraph::nodes
