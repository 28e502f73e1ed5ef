// CLI11 validators shared by vidgraph-run and vidgraph-attention for numeric options.
//
// CLI11's own number checks (PositiveNumber, Range) compare with < and >, so "nan" passes them and
// "inf" passes PositiveNumber: every floating-point option goes through finite_number instead.
#pragma once

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>

#include <CLI/CLI.hpp>

namespace vidgraph::cli {

// Accepts a finite number in [lo, hi] (lo excluded when lo_open). The message names the range.
inline CLI::Validator finite_number(double lo, double hi, bool lo_open = false) {
  auto check = [=](std::string& text) -> std::string {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    const bool whole = !text.empty() && end == text.c_str() + text.size();
    const bool ok = whole && std::isfinite(v) && (lo_open ? v > lo : v >= lo) && v <= hi;
    if (ok) return {};
    std::ostringstream range;
    range << (lo_open ? "(" : "[") << lo << ", " << hi << "]";
    return "'" + text + "' is not a finite number in " + range.str();
  };
  return CLI::Validator(check, "FINITE");
}

// Accepts any finite number (ranges left to the code that knows them).
inline CLI::Validator finite_number() {
  auto check = [](std::string& text) -> std::string {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    const bool whole = !text.empty() && end == text.c_str() + text.size();
    return whole && std::isfinite(v) ? std::string() : "'" + text + "' is not a finite number";
  };
  return CLI::Validator(check, "FINITE");
}

}  // namespace vidgraph::cli
