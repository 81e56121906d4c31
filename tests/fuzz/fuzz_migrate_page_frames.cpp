// The page channel's frames (migrate/zero_runs.hpp) as the destination's
// relay takes them from the peer: headers, zero runs and LZ4 blocks with
// the frames inside them. Byte 0 picks the mode:
//   even: the rest is a frame stream, decoded as PageRelay does (without
//     its sockets); a malformed stream must be a crx::Error, and what a
//     stream decodes to is bounded by what its frames may state;
//   odd: the rest describes pages (byte b: a zero page for 0, else a page
//     of zeros but for b at offset 16 * b, or 4 KiB of the input itself
//     for 0xff) and how often the encoder seals (byte 1); they are framed
//     and compressed by the Encoder and decoded again, and must come back
//     as they went.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <string>

#include "common/error.hpp"
#include "migrate/zero_runs.hpp"

namespace zr = crx::migrate::zero_runs;

namespace {

constexpr size_t kPage = 4096;

constexpr size_t kMaxPages = 256;        // odd mode: 1 MiB of pages at most
constexpr size_t kMaxOut = 32u << 20;     // what decode() writes at most

// What CRIU's page server would read from the relay for this wire; an
// output past kMaxOut is refused (a fuzzer's 1 GiB zero run would only
// cost memory).
std::string decode(const std::string& wire) {
  std::string out, decoded;
  auto grow = [&](size_t by) {
    if (out.size() + by > kMaxOut) throw crx::Error("too much for the fuzzer", crx::Cause::Invalid);
  };
  auto pass = [&](const zr::Header& h, const char* data) {
    grow(h.length);
    if (data)
      out.append(data, h.length);
    else
      out.append(h.length, '\0');
  };
  size_t off = 0;
  while (off < wire.size()) {
    if (wire.size() - off < zr::kHeaderSize) throw crx::Error("ends inside a header", crx::Cause::IO);
    const zr::Header h = zr::parse_header(wire.data() + off);
    off += zr::kHeaderSize;
    if (h.kind == zr::kZeros) {
      pass(h, nullptr);
      continue;
    }
    if (wire.size() - off < h.length) throw crx::Error("ends inside a frame", crx::Cause::IO);
    if (h.kind == zr::kBytes) {
      pass(h, wire.data() + off);
    } else {
      zr::inflate(wire.data() + off, h.length, decoded);
      if (decoded.size() > zr::kMaxBytes) __builtin_trap();
      zr::for_each_inner_frame(decoded, pass);
    }
    off += h.length;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const std::string in(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) == 0) {
    try {
      (void)decode(in);
    } catch (const crx::Error&) {
    }
    return 0;
  }
  const size_t seal_every = 1 + data[1] % 16;
  zr::Encoder enc(true, true);
  std::string stream, wire;
  enc.bytes(in.data(), std::min<size_t>(in.size(), 3));  // a record header's worth
  stream.append(in, 0, std::min<size_t>(in.size(), 3));
  for (size_t i = 2; i < in.size() && i < 2 + kMaxPages; i++) {
    std::string page(kPage, '\0');
    const auto b = static_cast<uint8_t>(in[i]);
    if (b == 0xff) {
      for (size_t j = 0; j < kPage; j++) page[j] = in[(i + j * 7) % in.size()];
    } else if (b != 0) {
      page[16 * b] = static_cast<char>(b);
    }
    enc.page(page.data());
    stream += page;
    if (i % seal_every == 0) {
      wire += enc.seal();
      enc.clear();
    }
  }
  wire += enc.seal();
  std::string back;
  try {
    back = decode(wire);
  } catch (const crx::Error& e) {
    std::fprintf(stderr, "the encoder's own frames do not decode: %s\n", e.what());
    __builtin_trap();
  }
  if (back != stream) __builtin_trap();
  if (enc.compressed_out() > enc.compressed_in()) __builtin_trap();  // only what shrinks
  return 0;
}
