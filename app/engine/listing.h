// Names listed in a sentence: "a, b, c". Errors and notes name what a file, graph or node has.
#pragma once

#include <string>
#include <vector>

namespace vidgraph::engine {

inline std::string comma_list(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace vidgraph::engine
