// Test fixture: writes PyTorch zip `.pth` state dicts from C++, byte for byte as `torch.save`
// (pickle protocol 2, memoised globals and strings, `<archive>/data.pkl`, `byteorder`,
// `data/<key>` storages aligned to 64 bytes through an "FB" extra field, `version`), optionally with
// forced zip64 records. Lower-level pieces (pickle of tensor records, zip of raw entries, raw pickle
// opcodes) let tests build malformed and malicious files too. Header-only; no product code uses it.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace vidgraph::test {

struct PthTensorSpec {
  std::string name;
  std::string storage_type;  // "FloatStorage", "BFloat16Storage", ...
  std::string key;           // storage key: entry "data/<key>"
  int64_t storage_numel = 0;
  int64_t offset = 0;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};

class PickleWriter {
 public:
  PickleWriter() { out_ += "\x80\x02"; }
  std::string finish() { return out_ + "."; }
  void raw(const std::string& bytes) { out_ += bytes; }
  void global(const std::string& module, const std::string& name) {
    const std::string id = "G" + module + "\n" + name;
    if (get(id)) {
      return;
    }
    out_ += "c" + module + "\n" + name + "\n";
    put(id);
  }
  void str(const std::string& s) {
    if (get("S" + s)) {
      return;
    }
    out_ += 'X';
    le(uint64_t(s.size()), 4);
    out_ += s;
    put("S" + s);
  }
  void integer(int64_t v) {
    if (v >= 0 && v < 256) {
      out_ += 'K';
      le(uint64_t(v), 1);
    } else if (v >= 0 && v < 65536) {
      out_ += 'M';
      le(uint64_t(v), 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      out_ += 'J';
      le(uint64_t(uint32_t(int32_t(v))), 4);
    } else {
      out_ += "\x8a\x08";
      le(uint64_t(v), 8);
    }
  }
  void int_tuple(const std::vector<int64_t>& v) {
    if (v.empty()) {
      out_ += ')';
      return;
    }
    if (v.size() > 3) {
      out_ += '(';
    }
    for (int64_t x : v) {
      integer(x);
    }
    out_ += v.size() == 1 ? "\x85" : v.size() == 2 ? "\x86" : v.size() == 3 ? "\x87" : "t";
    memo_next();
  }
  void ordered_dict() {
    global("collections", "OrderedDict");
    out_ += ")R";
    memo_next();
  }
  void tensor(const PthTensorSpec& t) {
    global("torch._utils", "_rebuild_tensor_v2");
    out_ += "((";
    str("storage");
    global("torch", t.storage_type);
    str(t.key);
    str("cpu");
    integer(t.storage_numel);
    out_ += 't';
    memo_next();
    out_ += 'Q';
    integer(t.offset);
    int_tuple(t.sizes);
    int_tuple(t.strides);
    out_ += '\x89';
    ordered_dict();
    out_ += 't';
    memo_next();
    out_ += 'R';
    memo_next();
  }
  // The whole state dict: OrderedDict(), SETITEMS of (name, tensor), optional `_metadata` BUILD.
  static std::string state_dict(const std::vector<PthTensorSpec>& tensors, bool metadata) {
    PickleWriter p;
    p.ordered_dict();
    if (!tensors.empty()) {
      p.out_ += '(';
      for (const PthTensorSpec& t : tensors) {
        p.str(t.name);
        p.tensor(t);
      }
      p.out_ += 'u';
    }
    if (metadata) {
      p.out_ += '}';
      p.memo_next();
      p.str("_metadata");
      p.ordered_dict();
      p.str("");
      p.out_ += '}';
      p.memo_next();
      p.str("version");
      p.integer(1);
      p.out_ += "sssb";
    }
    return p.finish();
  }

 private:
  void le(uint64_t v, int n) {
    for (int k = 0; k < n; ++k) {
      out_ += char((v >> (8 * k)) & 0xff);
    }
  }
  bool get(const std::string& id) {
    const auto it = memo_.find(id);
    if (it == memo_.end()) {
      return false;
    }
    out_ += 'h';
    le(it->second, 1);
    return true;
  }
  void put(const std::string& id) { memo_[id] = memo_next(); }
  uint32_t memo_next() {
    const uint32_t slot = next_++;
    if (slot < 256) {
      out_ += 'q';
      le(slot, 1);
    } else {
      out_ += 'r';
      le(slot, 4);
    }
    return slot;
  }

  std::string out_;
  std::map<std::string, uint32_t> memo_;
  uint32_t next_ = 0;
};

// The zip CRC-32 of `data`, bit by bit: an oracle independent of the product's table-driven one.
inline uint32_t zip_crc32(const std::string& data) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char byte : data) {
    c ^= byte;
    for (int k = 0; k < 8; ++k) {
      c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    }
  }
  return ~c;
}

// A zip of stored entries, each entry's data aligned to 64 bytes (PyTorch's "FB" padding field), with
// the real CRC-32 of each entry as torch.save writes it.
inline std::string pth_zip(const std::vector<std::pair<std::string, std::string>>& entries, bool zip64) {
  std::string out;
  std::string central;
  auto le = [](std::string& s, uint64_t v, int n) {
    for (int k = 0; k < n; ++k) {
      s += char((v >> (8 * k)) & 0xff);
    }
  };
  for (const auto& [name, data] : entries) {
    const uint64_t local = out.size();
    const uint64_t base = local + 30 + name.size() + 4;
    const uint64_t pad = (64 - base % 64) % 64;
    le(out, 0x04034b50, 4);
    le(out, zip64 ? 45 : 20, 2);
    le(out, 0, 2);  // flags
    le(out, 0, 2);  // stored
    le(out, 0, 4);  // time, date
    const uint32_t crc = zip_crc32(data);
    le(out, crc, 4);
    le(out, data.size(), 4);
    le(out, data.size(), 4);
    le(out, name.size(), 2);
    le(out, 4 + pad, 2);
    out += name;
    le(out, 0x4246, 2);  // "FB"
    le(out, pad, 2);
    out += std::string(size_t(pad), 'Z');
    out += data;

    le(central, 0x02014b50, 4);
    le(central, zip64 ? 45 : 20, 2);
    le(central, zip64 ? 45 : 20, 2);
    le(central, 0, 2);
    le(central, 0, 2);
    le(central, 0, 4);  // time, date
    le(central, crc, 4);
    le(central, zip64 ? 0xFFFFFFFFu : data.size(), 4);
    le(central, zip64 ? 0xFFFFFFFFu : data.size(), 4);
    le(central, name.size(), 2);
    le(central, zip64 ? 28 : 0, 2);
    le(central, 0, 2);  // comment
    le(central, 0, 2);  // disk
    le(central, 0, 2);  // internal attributes
    le(central, 0, 4);  // external attributes
    le(central, zip64 ? 0xFFFFFFFFu : local, 4);
    central += name;
    if (zip64) {
      le(central, 0x0001, 2);
      le(central, 24, 2);
      le(central, data.size(), 8);
      le(central, data.size(), 8);
      le(central, local, 8);
    }
  }
  const uint64_t cd_offset = out.size();
  out += central;
  if (zip64) {
    const uint64_t rec = out.size();
    le(out, 0x06064b50, 4);
    le(out, 44, 8);
    le(out, 45, 2);
    le(out, 45, 2);
    le(out, 0, 4);
    le(out, 0, 4);
    le(out, entries.size(), 8);
    le(out, entries.size(), 8);
    le(out, central.size(), 8);
    le(out, cd_offset, 8);
    le(out, 0x07064b50, 4);
    le(out, 0, 4);
    le(out, rec, 8);
    le(out, 1, 4);
  }
  le(out, 0x06054b50, 4);
  le(out, 0, 4);
  le(out, zip64 ? 0xFFFF : entries.size(), 2);
  le(out, zip64 ? 0xFFFF : entries.size(), 2);
  le(out, zip64 ? 0xFFFFFFFFu : central.size(), 4);
  le(out, zip64 ? 0xFFFFFFFFu : cd_offset, 4);
  le(out, 0, 2);
  return out;
}

inline std::string pth_storage_type(at::ScalarType t) {
  switch (t) {
    case at::ScalarType::Float:
      return "FloatStorage";
    case at::ScalarType::Double:
      return "DoubleStorage";
    case at::ScalarType::Half:
      return "HalfStorage";
    case at::ScalarType::BFloat16:
      return "BFloat16Storage";
    case at::ScalarType::Long:
      return "LongStorage";
    case at::ScalarType::Int:
      return "IntStorage";
    case at::ScalarType::Byte:
      return "ByteStorage";
    case at::ScalarType::Bool:
      return "BoolStorage";
    default:
      throw std::runtime_error("pth_storage_type: unsupported dtype");
  }
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  if (!f) {
    throw std::runtime_error("cannot write " + path);
  }
}

// The complete `.pth` bytes of a state dict (CPU tensors; each one gets its own contiguous storage).
inline std::string pth_bytes(const std::vector<std::pair<std::string, at::Tensor>>& tensors, bool zip64 = false,
                             bool metadata = true, const std::string& archive = "archive") {
  std::vector<PthTensorSpec> specs;
  std::vector<std::pair<std::string, std::string>> entries;
  std::vector<std::pair<std::string, std::string>> storages;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor t = tensors[i].second.contiguous();
    PthTensorSpec s{
        tensors[i].first, pth_storage_type(t.scalar_type()), std::to_string(i), t.numel(), 0, t.sizes().vec(),
        t.strides().vec()};
    specs.push_back(s);
    storages.emplace_back(archive + "/data/" + s.key,
                          std::string(static_cast<const char*>(t.data_ptr()), size_t(t.nbytes())));
  }
  entries.emplace_back(archive + "/data.pkl", PickleWriter::state_dict(specs, metadata));
  entries.emplace_back(archive + "/byteorder", "little");
  entries.insert(entries.end(), storages.begin(), storages.end());
  entries.emplace_back(archive + "/version", "3\n");
  entries.emplace_back(archive + "/.data/serialization_id", "1234567890123456789012345678901234567890");
  return pth_zip(entries, zip64);
}

inline void write_pth(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                      bool zip64 = false) {
  write_file(path, pth_bytes(tensors, zip64));
}

}  // namespace vidgraph::test
