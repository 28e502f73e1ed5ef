// Safetensors header parsing and validation from memory. See safetensors.h.
#include "models/io/file_kind.h"
#include "models/io/fp8.h"
#include "models/io/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <set>
#include <vector>

namespace vidgraph::model_io {
namespace {

[[noreturn]] void fail(const std::string& origin, const std::string& what) {
  throw SafetensorsError("invalid safetensors file '" + origin + "': " + what);
}

// A parse event that stops parsing (thrown from the parser callback, caught by parse_json).
struct HeaderRefused {
  std::string what;
};

// "syntax error while parsing value - unexpected end of input" from nlohmann's
// "[json.exception.parse_error.101] parse error at line 1, column 6: syntax error ...".
std::string json_reason(const nlohmann::json::exception& ex) {
  const std::string what = ex.what();
  const size_t at = what.find(": ");
  return at == std::string::npos ? what : what.substr(at + 2);
}

// Parses with a callback that refuses deep nesting before it is built (the parser's own stacks
// would otherwise grow with the input) and duplicate keys (nlohmann keeps the last one silently).
nlohmann::json parse_json(const char* text, size_t size, const std::string& origin) {
  std::vector<std::set<std::string>> open_objects;
  const auto check = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if ((event == Event::object_start || event == Event::array_start) && depth >= kSafetensorsMaxHeaderDepth) {
      throw HeaderRefused{"the header nests deeper than " + std::to_string(kSafetensorsMaxHeaderDepth) +
                          " levels (a real header nests 3: object, tensor entry, shape)"};
    }
    if (event == Event::object_start) {
      open_objects.emplace_back();
    } else if (event == Event::object_end && !open_objects.empty()) {
      open_objects.pop_back();
    } else if (event == Event::key && !open_objects.empty() &&
               !open_objects.back().insert(parsed.get<std::string>()).second) {
      throw HeaderRefused{"the key '" + parsed.get<std::string>() + "' appears twice in " +
                          (open_objects.size() == 1 ? std::string("the header") : "one header object") +
                          " (a tensor name must be unique)"};
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text, text + size, check);
  } catch (const HeaderRefused& r) {
    fail(origin, r.what);
  } catch (const nlohmann::json::parse_error& ex) {
    fail(origin, "the header is not valid JSON: at byte " + std::to_string(ex.byte) + " of " + std::to_string(size) +
                     ", " + json_reason(ex));
  } catch (const nlohmann::json::exception& ex) {
    fail(origin, "the header is not valid JSON: " + json_reason(ex));
  }
}

uint64_t checked_mul(uint64_t a, uint64_t b, const std::string& origin, const std::string& where) {
  uint64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out) || out > uint64_t(INT64_MAX)) {
    fail(origin, where + "shape is too large (its byte size overflows 64 bits)");
  }
  return out;
}

SafetensorsEntry parse_entry(const std::string& name, const nlohmann::json& value, uint64_t data_size,
                             const std::string& origin) {
  const std::string where = "tensor '" + name + "': ";
  if (!value.is_object()) fail(origin, where + "entry is not a JSON object");
  const auto field = [&](const char* key) { return value.find(key); };
  const auto dtype = field("dtype");
  const auto shape = field("shape");
  const auto offsets = field("data_offsets");
  if (dtype == value.end() || !dtype->is_string()) fail(origin, where + "missing string field 'dtype'");
  if (shape == value.end() || !shape->is_array()) fail(origin, where + "missing array field 'shape'");
  if (offsets == value.end() || !offsets->is_array() || offsets->size() != 2)
    fail(origin, where + "missing 'data_offsets' [begin, end]");
  SafetensorsEntry e;
  e.name = name;
  e.dtype = dtype->get<std::string>();
  // F8_* entries are stored as their U8 codes; SafetensorsFile::load decodes them (fp8.h).
  const auto type =
      fp8_format_of(e.dtype) ? std::optional<at::ScalarType>(at::kByte) : safetensors_dtype_to_scalar(e.dtype);
  if (!type)
    fail(origin, where + "unsupported dtype '" + e.dtype +
                     "' (supported: F64 F32 F16 BF16 F8_E4M3 F8_E5M2 I64 I32 I16 I8 U8 BOOL)");
  e.scalar_type = *type;
  uint64_t numel = 1;
  for (const auto& d : *shape) {
    if (!d.is_number_integer() || (d.is_number_unsigned() ? d.get<uint64_t>() > uint64_t(INT64_MAX)
                                                           : d.get<int64_t>() < 0))
      fail(origin, where + "shape entries must be non-negative integers");
    const uint64_t n = d.get<uint64_t>();
    numel = checked_mul(numel, n, origin, where);
    e.shape.push_back(static_cast<int64_t>(n));
  }
  for (const auto& o : *offsets) {
    if (!o.is_number_unsigned() && !(o.is_number_integer() && o.get<int64_t>() >= 0))
      fail(origin, where + "data_offsets must be non-negative integers");
  }
  e.begin = (*offsets)[0].get<uint64_t>();
  e.end = (*offsets)[1].get<uint64_t>();
  if (e.begin > e.end || e.end > data_size)
    fail(origin, where + "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                     ") out of range of the data region (" + std::to_string(data_size) + " bytes)");
  const uint64_t want = checked_mul(numel, c10::elementSize(e.scalar_type), origin, where);
  if (e.end - e.begin != want)
    fail(origin, where + "data_offsets span " + std::to_string(e.end - e.begin) + " bytes but dtype and shape need " +
                     std::to_string(want));
  return e;
}

// Sorted by offset; empty tensors occupy no bytes, so they neither overlap nor hide an overlap of
// their neighbours (their offsets were range-checked by parse_entry).
void check_no_overlap(std::vector<SafetensorsEntry>& entries, const std::string& origin) {
  std::sort(entries.begin(), entries.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const SafetensorsEntry* last = nullptr;  // the non-empty entry reaching furthest so far
  for (const SafetensorsEntry& e : entries) {
    if (e.begin == e.end) continue;
    if (last != nullptr && e.begin < last->end)
      fail(origin, "tensors '" + last->name + "' (bytes " + std::to_string(last->begin) + "-" +
                       std::to_string(last->end) + ") and '" + e.name + "' (bytes " + std::to_string(e.begin) + "-" +
                       std::to_string(e.end) + ") overlap");
    if (last == nullptr || e.end > last->end) last = &e;
  }
}

}  // namespace

SafetensorsHeader parse_safetensors_header(const char* text, size_t size, uint64_t data_size,
                                           const std::string& origin) {
  if (size > kSafetensorsMaxHeaderBytes)
    fail(origin, "header size " + std::to_string(size) + " exceeds the 16 MiB limit");
  const nlohmann::json header = parse_json(text, size, origin);
  if (!header.is_object()) fail(origin, "header is not a JSON object");
  SafetensorsHeader out;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object()) fail(origin, "__metadata__ is not a JSON object");
      for (auto m = it.value().begin(); m != it.value().end(); ++m) {
        if (!m.value().is_string()) fail(origin, "__metadata__ value '" + m.key() + "' is not a string");
        out.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    out.entries.push_back(parse_entry(it.key(), it.value(), data_size, origin));
  }
  check_no_overlap(out.entries, origin);
  return out;
}

SafetensorsHeader parse_safetensors_header(const std::string& json, uint64_t data_size, const std::string& origin) {
  return parse_safetensors_header(json.data(), json.size(), data_size, origin);
}

uint64_t safetensors_header_size(const uint8_t* bytes, uint64_t size, const std::string& origin) {
  if (size < 8) fail(origin, "file is " + std::to_string(size) + " bytes, shorter than the 8-byte header size");
  const FileKind kind =
      sniff_file_kind(std::string(reinterpret_cast<const char*>(bytes), size_t(std::min<uint64_t>(size, kSniffBytes))));
  if (size > 8 && kind != FileKind::Safetensors && kind != FileKind::Unknown) {
    throw SafetensorsError("'" + origin + "' is " + file_kind_sentence(kind) +
                           "; expected a .safetensors file (8-byte header size, then a JSON header)");
  }
  if (size > 8 && bytes[8] != '{') {
    char found[8];
    std::snprintf(found, sizeof found, "0x%02x", bytes[8]);
    fail(origin, std::string("the header is not a JSON object (byte 8 is ") + found +
                     ", expected '{'); the file is not a safetensors file or is damaged");
  }
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | bytes[i];
  if (header_size > kSafetensorsMaxHeaderBytes)
    fail(origin, "header size " + std::to_string(header_size) +
                     " exceeds the 16 MiB limit (real headers are well under 1 MiB)");
  if (header_size > size - 8)
    fail(origin, "header size " + std::to_string(header_size) + " runs past the end of the file (" +
                     std::to_string(size) + " bytes; truncated?)");
  return header_size;
}

SafetensorsHeader parse_safetensors_bytes(const std::string& file_bytes, const std::string& origin) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(file_bytes.data());
  const uint64_t header_size = safetensors_header_size(bytes, file_bytes.size(), origin);
  return parse_safetensors_header(file_bytes.data() + 8, size_t(header_size), file_bytes.size() - 8 - header_size,
                                  origin);
}

}  // namespace vidgraph::model_io
