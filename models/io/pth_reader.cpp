#include "pth_reader.h"

#include <limits>
#include <mutex>
#include <set>
#include <stdexcept>

#include <ATen/ops/empty.h>

#include "crc32.h"

namespace vidgraph::model_io {

namespace {

// data.pkl is ~150 bytes per tensor: 64 MiB is ~400,000 tensors, far above any checkpoint we read.
constexpr uint64_t kMaxPickleBytes = 64ull << 20;

[[noreturn]] void fail(const std::string& path, const PthTensorRecord& r, const std::string& what) {
  throw std::runtime_error("'" + path + "': tensor '" + r.name + "' " + what);
}

// Highest element index the strided view touches, plus one (0 for an empty tensor); throws on overflow.
int64_t strided_extent(const PthTensorRecord& r, const std::string& path) {
  int64_t last = 0;
  for (size_t d = 0; d < r.sizes.size(); ++d) {
    if (r.sizes[d] == 0) {
      return 0;
    }
  }
  for (size_t d = 0; d < r.sizes.size(); ++d) {
    int64_t step = 0;
    if (__builtin_mul_overflow(r.sizes[d] - 1, r.strides[d], &step) || __builtin_add_overflow(last, step, &last)) {
      fail(path, r, "has sizes/strides that overflow (damaged file)");
    }
  }
  if (last == std::numeric_limits<int64_t>::max()) {
    fail(path, r, "has sizes/strides that overflow (damaged file)");
  }
  return last + 1;
}

// The view [offset, offset + extent) must lie in the storage the pickle declares, and that storage in
// its zip entry; all in checked arithmetic, so a crafted size cannot wrap past the checks.
void check_in_storage(const PthTensorRecord& r, const ZipEntry& storage, const std::string& path) {
  const int64_t extent = strided_extent(r, path);
  uint64_t storage_bytes = 0;
  int64_t view_end = 0;
  if (__builtin_mul_overflow(uint64_t(r.storage_numel), uint64_t(c10::elementSize(r.dtype)), &storage_bytes) ||
      storage_bytes > storage.size || r.storage_offset < 0 ||
      (extent > 0 && (__builtin_add_overflow(r.storage_offset, extent, &view_end) || view_end > r.storage_numel))) {
    fail(path, r, "reaches past the end of its storage '" + r.storage_key + "' (damaged file)");
  }
}

}  // namespace

struct PthReader::Verified {
  std::mutex mutex;
  std::set<std::string> entries;
};

PthReader PthReader::open(const std::string& path) { return from_zip(ZipArchive::open(path)); }

PthReader PthReader::from_bytes(std::string bytes, const std::string& origin) {
  return from_zip(ZipArchive::from_bytes(std::move(bytes), origin));
}

PthReader PthReader::from_zip(ZipArchive zip) {
  PthReader reader;
  reader.zip_ = std::move(zip);
  reader.verified_ = std::make_shared<Verified>();
  const std::string& path = reader.zip_.path();
  const ZipEntry* pickle = nullptr;
  for (const ZipEntry& e : reader.zip_.entries()) {
    const size_t slash = e.name.find('/');
    if (slash != std::string::npos && e.name.compare(slash, std::string::npos, "/data.pkl") == 0) {
      pickle = &e;
      reader.prefix_ = e.name.substr(0, slash + 1);
      break;
    }
  }
  if (pickle == nullptr) {
    throw std::runtime_error("'" + path +
                             "' is a zip file but not a PyTorch checkpoint (no <archive>/data.pkl entry); "
                             "expected a .pth state dict written by torch.save");
  }
  if (const ZipEntry* order = reader.zip_.find(reader.prefix_ + "byteorder")) {
    if (reader.zip_.read_all(*order) != "little") {
      throw std::runtime_error("'" + path + "' stores big-endian tensors, which are not supported");
    }
  }
  if (pickle->size > kMaxPickleBytes) {
    throw std::runtime_error("'" + path + "': the pickle record '" + pickle->name + "' has " +
                             std::to_string(pickle->size) + " bytes, more than the " +
                             std::to_string(kMaxPickleBytes >> 20) + " MiB a state dict needs (damaged file?)");
  }
  reader.records_ = pth_unpickle_state_dict(reader.zip_.read_all(*pickle), path);

  for (const PthTensorRecord& r : reader.records_) {
    const ZipEntry* storage = reader.zip_.find(reader.prefix_ + "data/" + r.storage_key);
    if (storage == nullptr) {
      throw std::runtime_error("'" + path + "': the storage '" + r.storage_key + "' of tensor '" + r.name +
                               "' is missing from the archive (truncated or damaged file)");
    }
    check_in_storage(r, *storage, path);
  }
  return reader;
}

void PthReader::verify_storage(const ZipEntry& storage) const {
  {
    std::lock_guard<std::mutex> lock(verified_->mutex);
    if (verified_->entries.count(storage.name) != 0) {
      return;
    }
  }
  zip_.verify_crc(storage);
  std::lock_guard<std::mutex> lock(verified_->mutex);
  verified_->entries.insert(storage.name);
}

const PthTensorRecord* PthReader::find(const std::string& name) const {
  for (const PthTensorRecord& r : records_) {
    if (r.name == name) {
      return &r;
    }
  }
  return nullptr;
}

at::Tensor PthReader::load(const PthTensorRecord& r, c10::Device device, std::optional<at::ScalarType> dtype) const {
  const ZipEntry* storage = zip_.find(prefix_ + "data/" + r.storage_key);
  if (storage == nullptr) {
    fail(path(), r, "has no storage '" + r.storage_key + "' in this file (a record of another file?)");
  }
  check_in_storage(r, *storage, path());
  const int64_t extent = strided_extent(r, path());
  // Read only the span the view touches: [offset, offset + extent) elements of the storage.
  at::Tensor span = at::empty({extent}, at::TensorOptions().dtype(r.dtype));
  const uint64_t esize = c10::elementSize(r.dtype);
  const uint64_t span_bytes = uint64_t(extent) * esize;  // both checked against the entry on open
  if (extent > 0) {
    zip_.read(*storage, uint64_t(r.storage_offset) * esize, span.data_ptr(), span_bytes);
  }
  if (r.storage_offset == 0 && span_bytes == storage->size) {
    zip_.check_crc(*storage, crc32_update(0, span.data_ptr(), size_t(span_bytes)));  // the common case: no re-read
  } else {
    verify_storage(*storage);
  }
  at::Tensor t = span.as_strided(r.sizes, r.strides, 0).contiguous();
  return t.to(device, dtype.value_or(r.dtype));
}

std::vector<std::pair<std::string, at::Tensor>> pth_load_state_dict(const std::string& path, c10::Device device,
                                                                    std::optional<at::ScalarType> dtype) {
  const PthReader reader = PthReader::open(path);
  std::vector<std::pair<std::string, at::Tensor>> out;
  out.reserve(reader.tensors().size());
  for (const PthTensorRecord& r : reader.tensors()) {
    out.emplace_back(r.name, reader.load(r, device, dtype));
  }
  return out;
}

}  // namespace vidgraph::model_io
