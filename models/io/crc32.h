// CRC-32 as zip archives store it (IEEE 802.3 polynomial, reflected; zlib's crc32), computed by
// slicing-by-8 (~2-3 GB/s on one core) so that verifying a multi-GB checkpoint costs little next
// to reading it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vidgraph::model_io {

// Continues `crc` (0 for a new stream) over `size` bytes at `data`: crc32_update(crc32_update(0, a), b)
// equals the CRC of a followed by b.
uint32_t crc32_update(uint32_t crc, const void* data, size_t size);

}  // namespace vidgraph::model_io
