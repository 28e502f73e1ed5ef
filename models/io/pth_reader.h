// Reader for PyTorch zip `.pth` state dicts (e.g. the official `Wan2.2_VAE.pth` and
// `models_t5_umt5-xxl-enc-bf16.pth`) without Python and without LibTorch's pickle loader, which
// cannot read `OrderedDict` state dicts.
// Contract: `open` parses the zip (stored entries, zip64; see zip_archive.h) and the restricted
// unpickler (see pth_pickle.h) and checks every tensor's strided extent against its storage entry.
// Tensor data is read on demand, one tensor at a time, straight into a tensor of the requested
// dtype/device; no second copy of the whole file is ever held. Every entry read is checked against
// its zip CRC-32: data.pkl on open, a storage when a tensor of it is first loaded (a storage read
// only in part is read once more, in chunks, to check it). All errors are std::runtime_error naming
// the file and the tensor.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "pth_pickle.h"
#include "zip_archive.h"

namespace vidgraph::model_io {

class PthReader {
 public:
  static PthReader open(const std::string& path);
  // The same over a `.pth` held in memory (for tests and fuzz targets); `origin` names it in errors.
  static PthReader from_bytes(std::string bytes, const std::string& origin);

  const std::string& path() const { return zip_.path(); }
  const std::vector<PthTensorRecord>& tensors() const { return records_; }
  // nullptr when the state dict has no tensor of that name.
  const PthTensorRecord* find(const std::string& name) const;
  // A contiguous copy of the tensor on `device`, converted to `dtype` when given.
  at::Tensor load(const PthTensorRecord& record, c10::Device device = c10::Device(c10::kCPU),
                  std::optional<at::ScalarType> dtype = std::nullopt) const;

 private:
  struct Verified;  // storages whose CRC-32 has been checked (shared by copies, thread-safe)
  static PthReader from_zip(ZipArchive zip);
  void verify_storage(const ZipEntry& storage) const;

  ZipArchive zip_;
  std::string prefix_;  // "<archive>/" of every entry
  std::vector<PthTensorRecord> records_;
  std::shared_ptr<Verified> verified_;
};

// Every tensor of the file, in the file's order.
std::vector<std::pair<std::string, at::Tensor>> pth_load_state_dict(const std::string& path,
                                                                    c10::Device device = c10::Device(c10::kCPU),
                                                                    std::optional<at::ScalarType> dtype = std::nullopt);

}  // namespace vidgraph::model_io
