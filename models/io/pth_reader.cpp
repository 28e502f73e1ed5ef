#include "pth_reader.h"

#include <limits>
#include <stdexcept>

#include <ATen/ops/empty.h>

namespace vidgraph::model_io {

namespace {

// Highest element index the strided view touches, plus one (0 for an empty tensor); throws on overflow.
int64_t strided_extent(const PthTensorRecord& r, const std::string& path) {
  int64_t last = 0;
  for (size_t d = 0; d < r.sizes.size(); ++d) {
    if (r.sizes[d] == 0) {
      return 0;
    }
    const int64_t span = r.sizes[d] - 1;
    if (r.strides[d] != 0 && span > (std::numeric_limits<int64_t>::max() - last) / r.strides[d]) {
      throw std::runtime_error("'" + path + "': tensor '" + r.name + "' has sizes/strides that overflow");
    }
    last += span * r.strides[d];
  }
  return last + 1;
}

}  // namespace

PthReader PthReader::open(const std::string& path) {
  PthReader reader;
  reader.zip_ = ZipArchive::open(path);
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
    throw std::runtime_error("'" + path + "' is a zip file but not a PyTorch checkpoint (no <archive>/data.pkl entry)");
  }
  if (const ZipEntry* order = reader.zip_.find(reader.prefix_ + "byteorder")) {
    if (reader.zip_.read_all(*order) != "little") {
      throw std::runtime_error("'" + path + "' stores big-endian tensors, which are not supported");
    }
  }
  if (pickle->size > (uint64_t(1) << 31)) {
    throw std::runtime_error("'" + path + "': the pickle record is implausibly large");
  }
  reader.records_ = pth_unpickle_state_dict(reader.zip_.read_all(*pickle), path);

  for (const PthTensorRecord& r : reader.records_) {
    const ZipEntry* storage = reader.zip_.find(reader.prefix_ + "data/" + r.storage_key);
    if (storage == nullptr) {
      throw std::runtime_error("'" + path + "': the storage '" + r.storage_key + "' of tensor '" + r.name +
                               "' is missing from the archive (truncated or damaged file)");
    }
    const uint64_t esize = c10::elementSize(r.dtype);
    const int64_t extent = strided_extent(r, path);
    if (uint64_t(r.storage_numel) * esize > storage->size || r.storage_offset < 0 ||
        (extent > 0 && r.storage_offset + extent > r.storage_numel)) {
      throw std::runtime_error("'" + path + "': tensor '" + r.name + "' reaches past the end of its storage '" +
                               r.storage_key + "' (damaged file)");
    }
  }
  return reader;
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
  const int64_t extent = strided_extent(r, path());
  // Read only the span the view touches: [offset, offset + extent) elements of the storage.
  at::Tensor span = at::empty({extent}, at::TensorOptions().dtype(r.dtype));
  const uint64_t esize = c10::elementSize(r.dtype);
  if (extent > 0) {
    zip_.read(*storage, uint64_t(r.storage_offset) * esize, span.data_ptr(), uint64_t(extent) * esize);
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
