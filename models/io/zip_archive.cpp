#include "zip_archive.h"

#include "crc32.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace vidgraph::model_io {

namespace {

constexpr uint32_t kEocdSig = 0x06054b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint32_t kZip64EocdSig = 0x06064b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint64_t kMaxEntries = 1u << 22;
// A central-directory record is 46 bytes plus the name (~30 bytes for a torch.save entry): a
// checkpoint of 100,000 tensors needs < 10 MiB. The bound keeps a hostile size field from making
// us allocate up to the file size.
constexpr uint64_t kMaxCentralDirectoryBytes = 64ull << 20;

uint16_t le16(const unsigned char* p) {
  return uint16_t(p[0] | (p[1] << 8));
}
uint32_t le32(const unsigned char* p) {
  return uint32_t(le16(p)) | (uint32_t(le16(p + 2)) << 16);
}
uint64_t le64(const unsigned char* p) {
  return uint64_t(le32(p)) | (uint64_t(le32(p + 4)) << 32);
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("cannot read '" + path + "' as a PyTorch zip archive: " + what);
}

struct CentralDirectory {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t count = 0;
};

// Reads the zip64 values for the fields that the 32-bit record marked 0xFFFFFFFF, in the order the
// zip specification lists them.
void apply_zip64_extra(const unsigned char* extra, size_t len, uint64_t* usize, uint64_t* csize, uint64_t* local,
                       const std::string& path) {
  size_t pos = 0;
  while (pos + 4 <= len) {
    const uint16_t id = le16(extra + pos);
    const uint16_t sz = le16(extra + pos + 2);
    if (pos + 4 + sz > len) {
      fail(path, "a central-directory extra field runs past its entry");
    }
    if (id == 0x0001) {
      const unsigned char* p = extra + pos + 4;
      size_t left = sz;
      for (uint64_t* field : {usize, csize, local}) {
        if (*field != 0xFFFFFFFFu) {
          continue;
        }
        if (left < 8) {
          fail(path, "a zip64 extra field is too short");
        }
        *field = le64(p);
        p += 8;
        left -= 8;
      }
      return;
    }
    pos += 4 + sz;
  }
}

}  // namespace

void ZipArchive::read_at(uint64_t offset, void* dst, uint64_t size) const {
  if (offset > file_size_ || size > file_size_ - offset) {
    fail(path_, "a read at offset " + std::to_string(offset) + " of " + std::to_string(size) +
                    " bytes runs past the end of the file (truncated?)");
  }
  auto* out = static_cast<unsigned char*>(dst);
  if (bytes_) {
    std::memcpy(out, bytes_->data() + offset, size_t(size));
    return;
  }
  while (size > 0) {
    const size_t step = size_t(std::min<uint64_t>(size, 1u << 30));
    const ssize_t got = ::pread(*fd_, out, step, off_t(offset));
    if (got <= 0) {
      fail(path_, "read error at offset " + std::to_string(offset));
    }
    out += got;
    offset += uint64_t(got);
    size -= uint64_t(got);
  }
}

ZipArchive ZipArchive::open(const std::string& path) {
  ZipArchive zip;
  zip.path_ = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw std::runtime_error("cannot open '" + path + "': " + std::strerror(errno));
  }
  zip.fd_ = std::shared_ptr<int>(new int(fd), [](int* p) {
    ::close(*p);
    delete p;
  });
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    fail(path, "cannot stat the file");
  }
  zip.file_size_ = uint64_t(st.st_size);
  zip.parse();
  return zip;
}

ZipArchive ZipArchive::from_bytes(std::string bytes, const std::string& origin) {
  ZipArchive zip;
  zip.path_ = origin;
  zip.file_size_ = bytes.size();
  zip.bytes_ = std::make_shared<const std::string>(std::move(bytes));
  zip.parse();
  return zip;
}

void ZipArchive::parse() {
  ZipArchive& zip = *this;
  const std::string& path = path_;
  if (zip.file_size_ < 22) {
    fail(path, "the file is too small to be a zip archive (truncated?)");
  }

  // The end-of-central-directory record sits in the last 22 + 65535 bytes.
  const uint64_t tail_len = std::min<uint64_t>(zip.file_size_, 22 + 65535);
  std::vector<unsigned char> tail(tail_len);
  zip.read_at(zip.file_size_ - tail_len, tail.data(), tail_len);
  int64_t eocd = -1;
  for (int64_t i = int64_t(tail_len) - 22; i >= 0; --i) {
    if (le32(&tail[size_t(i)]) == kEocdSig) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) {
    fail(path, "no end-of-central-directory record (not a zip file, or truncated)");
  }
  const unsigned char* e = &tail[size_t(eocd)];
  CentralDirectory cd{le32(e + 16), le32(e + 12), le16(e + 10)};
  const uint64_t eocd_abs = zip.file_size_ - tail_len + uint64_t(eocd);
  if (cd.offset == 0xFFFFFFFFu || cd.size == 0xFFFFFFFFu || cd.count == 0xFFFF) {
    if (eocd_abs < 20) {
      fail(path, "the zip64 locator is missing");
    }
    unsigned char loc[20];
    zip.read_at(eocd_abs - 20, loc, 20);
    if (le32(loc) != kZip64LocatorSig) {
      fail(path, "the zip64 locator is missing");
    }
    unsigned char rec[56];
    zip.read_at(le64(loc + 8), rec, 56);
    if (le32(rec) != kZip64EocdSig) {
      fail(path, "the zip64 end-of-central-directory record is damaged");
    }
    cd = CentralDirectory{le64(rec + 48), le64(rec + 40), le64(rec + 32)};
  }
  if (cd.count > kMaxEntries) {
    fail(path, "the central directory claims " + std::to_string(cd.count) + " entries");
  }
  if (cd.offset > zip.file_size_ || cd.size > zip.file_size_ - cd.offset) {
    fail(path, "the central directory lies outside the file (truncated?)");
  }
  if (cd.size > kMaxCentralDirectoryBytes) {
    fail(path, "the central directory claims " + std::to_string(cd.size) + " bytes, more than the " +
                   std::to_string(kMaxCentralDirectoryBytes >> 20) + " MiB a checkpoint needs (damaged file?)");
  }
  std::vector<unsigned char> dir(size_t(cd.size));
  zip.read_at(cd.offset, dir.data(), cd.size);

  size_t pos = 0;
  for (uint64_t i = 0; i < cd.count; ++i) {
    if (pos + 46 > dir.size() || le32(&dir[pos]) != kCentralSig) {
      fail(path, "central-directory entry " + std::to_string(i) + " is damaged");
    }
    const unsigned char* c = &dir[pos];
    const uint16_t flags = le16(c + 8);
    const uint16_t method = le16(c + 10);
    uint64_t csize = le32(c + 20);
    uint64_t usize = le32(c + 24);
    const size_t name_len = le16(c + 28);
    const size_t extra_len = le16(c + 30);
    const size_t comment_len = le16(c + 32);
    uint64_t local = le32(c + 42);
    const uint32_t crc = le32(c + 16);
    if (pos + 46 + name_len + extra_len + comment_len > dir.size()) {
      fail(path, "central-directory entry " + std::to_string(i) + " runs past the directory");
    }
    ZipEntry entry;
    entry.name.assign(reinterpret_cast<const char*>(c + 46), name_len);
    apply_zip64_extra(c + 46 + name_len, extra_len, &usize, &csize, &local, path);
    if (method != 0 || (flags & 1) != 0) {
      fail(path, "entry '" + entry.name + "' is compressed or encrypted; only stored entries are supported");
    }
    if (csize != usize) {
      fail(path, "entry '" + entry.name + "' has different stored and original sizes");
    }
    unsigned char lh[30];
    zip.read_at(local, lh, 30);
    if (le32(lh) != kLocalSig) {
      fail(path, "the local header of entry '" + entry.name + "' is damaged");
    }
    entry.data_offset = local + 30 + le16(lh + 26) + le16(lh + 28);
    entry.size = usize;
    entry.crc32 = crc;
    if (entry.data_offset > zip.file_size_ || entry.size > zip.file_size_ - entry.data_offset) {
      fail(path, "the data of entry '" + entry.name + "' runs past the end of the file (truncated?)");
    }
    zip.entries_.push_back(std::move(entry));
    pos += 46 + name_len + extra_len + comment_len;
  }
}

const ZipEntry* ZipArchive::find(const std::string& name) const {
  for (const ZipEntry& e : entries_) {
    if (e.name == name) {
      return &e;
    }
  }
  return nullptr;
}

void ZipArchive::read(const ZipEntry& entry, uint64_t offset, void* dst, uint64_t size) const {
  if (offset > entry.size || size > entry.size - offset) {
    fail(path_, "a read past the end of entry '" + entry.name + "'");
  }
  read_at(entry.data_offset + offset, dst, size);
}

std::string ZipArchive::read_all(const ZipEntry& entry) const {
  std::string out(size_t(entry.size), '\0');
  read(entry, 0, out.data(), entry.size);
  check_crc(entry, crc32_update(0, out.data(), out.size()));
  return out;
}

void ZipArchive::verify_crc(const ZipEntry& entry) const {
  constexpr uint64_t kChunk = 8u << 20;
  std::vector<unsigned char> buffer(size_t(std::min<uint64_t>(entry.size, kChunk)));
  uint32_t crc = 0;
  for (uint64_t done = 0; done < entry.size;) {
    const uint64_t step = std::min<uint64_t>(entry.size - done, kChunk);
    read(entry, done, buffer.data(), step);
    crc = crc32_update(crc, buffer.data(), size_t(step));
    done += step;
  }
  check_crc(entry, crc);
}

void ZipArchive::check_crc(const ZipEntry& entry, uint32_t actual) const {
  if (actual != entry.crc32) {
    char found[32];
    std::snprintf(found, sizeof found, "0x%08x, expected 0x%08x", actual, entry.crc32);
    fail(path_, "the data of entry '" + entry.name + "' is corrupt (CRC-32 " + found +
                    "); re-download the file");
  }
}

}  // namespace vidgraph::model_io
