// Read-only view of a zip archive whose entries are stored uncompressed, as PyTorch's `torch.save`
// writes them (the official Wan2.2 `.pth` files are such archives, and zip64 past 4 GiB).
// Contract: `open` parses the end-of-central-directory record (zip64 when present) and every
// central-directory entry, resolves each entry's data offset from its local header and checks that
// the data lies inside the file. Compressed entries, encrypted entries and truncated archives are
// rejected with an error naming the file. Entry data is read with `read`; nothing is mapped.
// Integrity: `read_all` and `verify_crc` check an entry against the CRC-32 of its central-directory
// record; a mismatch is an error naming the entry and the file. `read` of a part of an entry cannot
// check it: a caller reading a whole entry in parts checks `crc32_update` over them (crc32.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace vidgraph::model_io {

struct ZipEntry {
  std::string name;
  uint64_t data_offset = 0;  // absolute offset of the first data byte in the file
  uint64_t size = 0;         // stored (= uncompressed) size in bytes
  uint32_t crc32 = 0;        // as the central directory records it
};

class ZipArchive {
 public:
  // Throws std::runtime_error naming the file and the defect.
  static ZipArchive open(const std::string& path);
  // The same over an archive held in memory (for tests and fuzz targets); `origin` names it in errors.
  static ZipArchive from_bytes(std::string bytes, const std::string& origin);

  const std::string& path() const { return path_; }
  uint64_t file_size() const { return file_size_; }
  const std::vector<ZipEntry>& entries() const { return entries_; }
  // nullptr when no entry has that exact name.
  const ZipEntry* find(const std::string& name) const;
  // Reads `size` bytes of `entry` starting at `offset` inside the entry into `dst`.
  void read(const ZipEntry& entry, uint64_t offset, void* dst, uint64_t size) const;
  // The whole entry, its CRC-32 checked.
  std::string read_all(const ZipEntry& entry) const;
  // Reads the whole entry in bounded chunks and checks its CRC-32; throws on a mismatch.
  void verify_crc(const ZipEntry& entry) const;
  // Throws the CRC mismatch error for `entry` when `actual` differs from its recorded CRC-32.
  void check_crc(const ZipEntry& entry, uint32_t actual) const;

 private:
  void read_at(uint64_t offset, void* dst, uint64_t size) const;
  void parse();

  std::string path_;
  uint64_t file_size_ = 0;
  std::shared_ptr<int> fd_;  // POSIX descriptor, read with pread (thread-safe)
  std::shared_ptr<const std::string> bytes_;  // or the archive in memory
  std::vector<ZipEntry> entries_;
};

}  // namespace vidgraph::model_io
