#include "codecs/ncstream/wire_census.hpp"

#include <google/protobuf/descriptor.h>

namespace ncafs::ncstream {

namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

constexpr int kMaxDepth = 100;  // protobuf's default recursion limit

struct Wire {
    std::string_view bytes;
    size_t at = 0;

    bool varint(uint64_t& v) {
        v = 0;
        for (int shift = 0; shift < 64 && at < bytes.size(); shift += 7) {
            const uint8_t b = static_cast<uint8_t>(bytes[at++]);
            v |= uint64_t{b & 0x7fu} << shift;
            if (!(b & 0x80)) return true;
        }
        return false;
    }
    bool skip(uint64_t n) {
        if (n > bytes.size() - at) return false;
        at += n;
        return true;
    }
};

struct Census {
    uint64_t objects = 0;
    uint64_t enough;
    bool done() const { return objects > enough; }
};

bool count_message(std::string_view bytes, const Descriptor& type, int depth, Census& c);

// The objects one length-delimited field of `payload` bytes makes.
bool count_delimited(std::string_view payload, const FieldDescriptor* f, int depth, Census& c) {
    if (!f) return true;  // unknown field: kept as bytes, counted with the text
    if (f->type() == FieldDescriptor::TYPE_MESSAGE) {
        ++c.objects;
        return count_message(payload, *f->message_type(), depth + 1, c);
    }
    if (f->is_repeated() && f->type() != FieldDescriptor::TYPE_STRING && f->type() != FieldDescriptor::TYPE_BYTES)
        c.objects += payload.size();  // packed scalars: one element per byte at most
    else if (f->is_repeated())
        ++c.objects;
    return true;
}

bool count_message(std::string_view bytes, const Descriptor& type, int depth, Census& c) {
    if (depth > kMaxDepth) return false;
    Wire w{bytes};
    while (w.at < bytes.size() && !c.done()) {
        uint64_t tag, value;
        if (!w.varint(tag)) return false;
        const FieldDescriptor* f = type.FindFieldByNumber(static_cast<int>(tag >> 3));
        const bool element = f && f->is_repeated();
        switch (tag & 7) {
            case 0:
                if (!w.varint(value)) return false;
                c.objects += element;
                break;
            case 1:
            case 5:
                if (!w.skip((tag & 7) == 1 ? 8 : 4)) return false;
                c.objects += element;
                break;
            case 2:
                if (!w.varint(value) || value > bytes.size() - w.at) return false;
                if (!count_delimited(bytes.substr(w.at, value), f, depth, c)) return false;
                w.at += value;
                break;
            default:
                return false;  // groups (3, 4) are not in the schema; 6 and 7 do not exist
        }
    }
    return true;
}

}  // namespace

std::optional<uint64_t> count_wire_objects(std::string_view bytes, const google::protobuf::Descriptor& type,
                                           uint64_t enough) {
    Census c{0, enough};
    if (!count_message(bytes, type, 0, c)) return std::nullopt;
    return c.objects;
}

}  // namespace ncafs::ncstream
