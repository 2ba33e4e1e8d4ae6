#include "codecs/realize_pieces.hpp"

#include <utility>

namespace ncafs {

namespace {

// Appends p, joined to the last extent where it continues it in the same file.
void append_joined(std::vector<ViewPiece>& out, ViewPiece p) {
    if (p.length == 0) return;
    if (!out.empty() && p.extent) {
        auto& last = out.back();
        if (last.extent && last.extent->file == p.extent->file &&
            last.extent->offset + last.extent->length == p.extent->offset && last.offset + last.length == p.offset) {
            last.length += p.length;
            last.extent->length += p.extent->length;
            return;
        }
    }
    out.push_back(std::move(p));
}

}  // namespace

void append_realized(std::vector<ViewPiece>& out, const ViewPiece& p) {
    if (!p.run) return append_joined(out, p);
    append_run(out, p, p.run->source->big_endian_extents(p.run->first, p.run->count));
}

void append_run(std::vector<ViewPiece>& out, const ViewPiece& p, std::optional<std::vector<FileExtent>> extents) {
    uint64_t sum = 0;
    if (extents)
        for (const auto& e : *extents) sum += e.length;
    if (!extents || sum != p.length) return append_joined(out, ViewPiece{p.offset, p.length});
    uint64_t at = p.offset;
    for (auto& e : *extents) {
        const uint64_t n = e.length;
        append_joined(out, ViewPiece{at, n, std::move(e)});
        at += n;
    }
}

std::vector<ViewPiece> realize_all(const VirtualFile& vf, uint64_t offset, uint64_t length) {
    std::vector<ViewPiece> out;
    for (const auto& p : vf.pieces(offset, length)) append_realized(out, p);
    return out;
}

}  // namespace ncafs
