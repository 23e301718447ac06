#pragma once
// A minimal PNG decoder for tests (libpng is not linked): 8-bit RGB or RGBA,
// non-interlaced, as rsvg-convert writes. Includes a small inflate (RFC 1951)
// after the structure of zlib's puff.c. Throws std::runtime_error on anything
// it does not understand.
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace ridge::testing {

struct PngImage {
  uint32_t width = 0, height = 0;
  int channels = 0;            // 3 (RGB) or 4 (RGBA)
  std::vector<uint8_t> pixels;  // row-major, channels bytes per pixel
};

namespace tiny_png_detail {

class Inflater {
 public:
  Inflater(const uint8_t* data, size_t size) : in_(data), size_(size) {}

  std::vector<uint8_t> Run() {
    int last = 0;
    do {
      last = Bits(1);
      const int type = Bits(2);
      if (type == 0) Stored();
      else if (type == 1) Fixed();
      else if (type == 2) Dynamic();
      else throw std::runtime_error("inflate: bad block type");
    } while (!last);
    return out_;
  }

 private:
  struct Huffman {
    std::array<int16_t, 16> count{};
    std::vector<int16_t> symbol;
  };

  int Bits(int need) {
    long value = bit_buffer_;
    while (bit_count_ < need) {
      if (pos_ >= size_) throw std::runtime_error("inflate: out of input");
      value |= static_cast<long>(in_[pos_++]) << bit_count_;
      bit_count_ += 8;
    }
    bit_buffer_ = static_cast<int>(value >> need);
    bit_count_ -= need;
    return static_cast<int>(value & ((1L << need) - 1));
  }

  void Stored() {
    bit_buffer_ = 0;
    bit_count_ = 0;
    if (pos_ + 4 > size_) throw std::runtime_error("inflate: truncated stored block");
    const unsigned len = in_[pos_] | (in_[pos_ + 1] << 8);
    const unsigned nlen = in_[pos_ + 2] | (in_[pos_ + 3] << 8);
    pos_ += 4;
    if (len != (~nlen & 0xffffu)) throw std::runtime_error("inflate: stored length mismatch");
    if (pos_ + len > size_) throw std::runtime_error("inflate: truncated stored data");
    out_.insert(out_.end(), in_ + pos_, in_ + pos_ + len);
    pos_ += len;
  }

  static Huffman Build(const int16_t* lengths, int n) {
    Huffman h;
    h.symbol.assign(static_cast<size_t>(n), 0);
    for (int s = 0; s < n; ++s) h.count[static_cast<size_t>(lengths[s])]++;
    std::array<int16_t, 16> offs{};
    for (int len = 1; len < 15; ++len) offs[len + 1] = static_cast<int16_t>(offs[len] + h.count[len]);
    for (int s = 0; s < n; ++s)
      if (lengths[s] != 0) h.symbol[static_cast<size_t>(offs[lengths[s]]++)] = static_cast<int16_t>(s);
    return h;
  }

  int Decode(const Huffman& h) {
    int code = 0, first = 0, index = 0;
    for (int len = 1; len <= 15; ++len) {
      code |= Bits(1);
      const int count = h.count[static_cast<size_t>(len)];
      if (code - count < first) return h.symbol[static_cast<size_t>(index + (code - first))];
      index += count;
      first += count;
      first <<= 1;
      code <<= 1;
    }
    throw std::runtime_error("inflate: bad Huffman code");
  }

  void Codes(const Huffman& lencode, const Huffman& distcode) {
    static const int16_t kLenBase[] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
                                       35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
    static const int16_t kLenExtra[] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
                                        3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
    static const int16_t kDistBase[] = {1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129,
                                        193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097,
                                        6145, 8193, 12289, 16385, 24577};
    static const int16_t kDistExtra[] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6,
                                         6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
    for (;;) {
      int symbol = Decode(lencode);
      if (symbol < 256) {
        out_.push_back(static_cast<uint8_t>(symbol));
      } else if (symbol == 256) {
        return;
      } else {
        symbol -= 257;
        if (symbol >= 29) throw std::runtime_error("inflate: bad length symbol");
        const int len = kLenBase[symbol] + Bits(kLenExtra[symbol]);
        const int dsym = Decode(distcode);
        if (dsym >= 30) throw std::runtime_error("inflate: bad distance symbol");
        const size_t dist = static_cast<size_t>(kDistBase[dsym] + Bits(kDistExtra[dsym]));
        if (dist > out_.size()) throw std::runtime_error("inflate: distance too far back");
        for (int i = 0; i < len; ++i) out_.push_back(out_[out_.size() - dist]);
      }
    }
  }

  void Fixed() {
    int16_t lengths[288 + 30];
    int s = 0;
    for (; s < 144; ++s) lengths[s] = 8;
    for (; s < 256; ++s) lengths[s] = 9;
    for (; s < 280; ++s) lengths[s] = 7;
    for (; s < 288; ++s) lengths[s] = 8;
    const Huffman lencode = Build(lengths, 288);
    for (s = 0; s < 30; ++s) lengths[s] = 5;
    const Huffman distcode = Build(lengths, 30);
    Codes(lencode, distcode);
  }

  void Dynamic() {
    static const int kOrder[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    const int nlen = Bits(5) + 257, ndist = Bits(5) + 1, ncode = Bits(4) + 4;
    if (nlen > 286 || ndist > 30) throw std::runtime_error("inflate: bad dynamic counts");
    int16_t lengths[320] = {};
    for (int i = 0; i < ncode; ++i) lengths[kOrder[i]] = static_cast<int16_t>(Bits(3));
    const Huffman lencode0 = Build(lengths, 19);
    int index = 0;
    while (index < nlen + ndist) {
      int symbol = Decode(lencode0);
      if (symbol < 16) {
        lengths[index++] = static_cast<int16_t>(symbol);
      } else {
        int16_t len = 0;
        int repeat = 0;
        if (symbol == 16) {
          if (index == 0) throw std::runtime_error("inflate: repeat with no previous length");
          len = lengths[index - 1];
          repeat = 3 + Bits(2);
        } else if (symbol == 17) {
          repeat = 3 + Bits(3);
        } else {
          repeat = 11 + Bits(7);
        }
        if (index + repeat > nlen + ndist) throw std::runtime_error("inflate: too many lengths");
        while (repeat--) lengths[index++] = len;
      }
    }
    const Huffman lencode = Build(lengths, nlen);
    const Huffman distcode = Build(lengths + nlen, ndist);
    Codes(lencode, distcode);
  }

  const uint8_t* in_;
  size_t size_;
  size_t pos_ = 0;
  int bit_buffer_ = 0, bit_count_ = 0;
  std::vector<uint8_t> out_;
};

inline uint32_t Be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

inline int Paeth(int a, int b, int c) {
  const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

}  // namespace tiny_png_detail

inline PngImage DecodePng(const std::vector<uint8_t>& file) {
  using namespace tiny_png_detail;
  static const uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a};
  if (file.size() < 8 || std::memcmp(file.data(), kSignature, 8) != 0) throw std::runtime_error("not a PNG");
  PngImage image;
  std::vector<uint8_t> idat;
  size_t pos = 8;
  bool ended = false;
  while (pos + 12 <= file.size() && !ended) {
    const uint32_t length = Be32(&file[pos]);
    const std::string type(reinterpret_cast<const char*>(&file[pos + 4]), 4);
    if (pos + 12 + length > file.size()) throw std::runtime_error("PNG chunk overruns the file");
    const uint8_t* data = &file[pos + 8];
    if (type == "IHDR") {
      image.width = Be32(data);
      image.height = Be32(data + 4);
      const int depth = data[8], color = data[9], interlace = data[12];
      if (depth != 8 || (color != 2 && color != 6) || interlace != 0)
        throw std::runtime_error("PNG: only 8-bit RGB/RGBA, non-interlaced");
      image.channels = color == 6 ? 4 : 3;
    } else if (type == "IDAT") {
      idat.insert(idat.end(), data, data + length);
    } else if (type == "IEND") {
      ended = true;
    }
    pos += 12 + length;
  }
  if (!image.channels || idat.size() < 2) throw std::runtime_error("PNG without IHDR or IDAT");
  // zlib: 2 header bytes, deflate data, adler32 (not checked).
  const std::vector<uint8_t> raw = Inflater(idat.data() + 2, idat.size() - 2).Run();
  const size_t stride = size_t{image.width} * static_cast<size_t>(image.channels);
  if (raw.size() < (stride + 1) * image.height) throw std::runtime_error("PNG: too little image data");
  image.pixels.assign(stride * image.height, 0);
  const int bpp = image.channels;
  for (size_t y = 0; y < image.height; ++y) {
    const int filter = raw[y * (stride + 1)];
    const uint8_t* src = &raw[y * (stride + 1) + 1];
    uint8_t* row = &image.pixels[y * stride];
    const uint8_t* prev = y > 0 ? &image.pixels[(y - 1) * stride] : nullptr;
    for (size_t x = 0; x < stride; ++x) {
      const int a = x >= static_cast<size_t>(bpp) ? row[x - bpp] : 0;
      const int b = prev ? prev[x] : 0;
      const int c = prev && x >= static_cast<size_t>(bpp) ? prev[x - bpp] : 0;
      int predictor = 0;
      switch (filter) {
        case 0: predictor = 0; break;
        case 1: predictor = a; break;
        case 2: predictor = b; break;
        case 3: predictor = (a + b) / 2; break;
        case 4: predictor = Paeth(a, b, c); break;
        default: throw std::runtime_error("PNG: bad filter type");
      }
      row[x] = static_cast<uint8_t>(src[x] + predictor);
    }
  }
  return image;
}

}  // namespace ridge::testing
