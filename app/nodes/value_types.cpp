// Implements value_types.h.
#include "nodes/value_types.h"

namespace vidgraph::nodes {

const std::string& default_negative_prompt() {
  static const std::string text =
      "色调艳丽，过曝，静态，细节模糊不清，字幕，风格，作品，画作，画面，静止，整体发灰，最差质量，"
      "低质量，JPEG压缩残留，丑陋的，残缺的，多余的手指，画得不好的手部，画得不好的脸部，畸形的，"
      "毁容的，形态畸形的肢体，手指融合，静止不动的画面，杂乱的背景，三条腿，背景人很多，倒着走";
  return text;
}

}  // namespace vidgraph::nodes
