// Percent-encoding of URI parts (RFC 3986 section 2.1): letters and digits
// and the characters in `keep` stay, every other byte becomes %XX (upper-case
// hex). Callers choose `keep`: a CF-1.13 URI path keeps sub-delims, an S3
// key for SigV4 only the unreserved characters and '/'.
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace ncafs {

inline std::string percent_encode(std::string_view text, std::string_view keep) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(text.size());
    for (unsigned char c : text) {
        if (std::isalnum(c) || keep.find(static_cast<char>(c)) != std::string_view::npos) {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += kHex[c >> 4];
            out += kHex[c & 15];
        }
    }
    return out;
}

}  // namespace ncafs
