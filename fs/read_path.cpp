#include "fs/read_path.hpp"

#include <cstring>
#include <exception>
#include <functional>
#include <future>
#include <map>

#include "codecs/error.hpp"
#include "fs/piece_windows.hpp"
#include "remote/network_scope.hpp"

namespace ncafs::fs {

void append_merged(std::vector<ViewPiece>& merged, std::vector<ViewPiece>&& pieces) {
    for (auto& p : pieces) {
        if (p.length == 0) continue;
        if (!merged.empty()) {
            auto& last = merged.back();
            bool both_extents = last.extent && p.extent && last.extent->file == p.extent->file;
            if (both_extents && last.extent->offset + last.extent->length == p.extent->offset &&
                last.offset + last.length == p.offset) {
                last.length += p.length;
                last.extent->length += p.extent->length;
                continue;
            }
        }
        merged.push_back(std::move(p));
    }
}

std::vector<ViewPiece> merged_pieces(const VirtualFile& vf, uint64_t offset, uint64_t length) {
    auto pieces = vf.pieces(offset, length);
    std::vector<ViewPiece> merged;
    merged.reserve(pieces.size());
    append_merged(merged, std::move(pieces));
    return merged;
}

namespace {

// The remote extents of one object that a read needs: fetched together.
using RemoteRanges = std::map<const OpenFile*, std::vector<RemoteBytes::Range>>;

void read_one_object(const OpenFile& file, const std::vector<RemoteBytes::Range>& wanted) {
    if (wanted.size() == 1) file.pread_exact(wanted[0].buffer, wanted[0].n, wanted[0].offset);
    else file.remote_bytes()->read_many(wanted);
}

// Objects of one read are fetched side by side, a bounded number at a time:
// each costs a round trip, and a read of a point series spans many objects.
void read_remote_ranges(const RemoteRanges& ranges) {
    constexpr size_t kObjectsAtOnce = 16;
    if (ranges.size() == 1) return read_one_object(*ranges.begin()->first, ranges.begin()->second);
    std::exception_ptr first_error;
    auto it = ranges.begin();
    while (it != ranges.end()) {
        std::vector<std::future<void>> running;
        const bool network = remote::network_allowed();  // the caller's, on every thread
        for (; it != ranges.end() && running.size() < kObjectsAtOnce; ++it)
            running.push_back(std::async(std::launch::async, [network, &file = *it->first, &wanted = it->second] {
                remote::NetworkScope scope(network);
                read_one_object(file, wanted);
            }));
        for (auto& r : running) {  // every fetch ends before the buffers may go
            try {
                r.get();
            } catch (...) {
                if (!first_error) first_error = std::current_exception();
            }
        }
        if (first_error) std::rethrow_exception(first_error);
    }
}

// Reads one window's pieces into out (which starts at `offset` of the view).
void read_pieces(const VirtualFile& vf, const std::vector<ViewPiece>& pieces, uint64_t offset, uint64_t& covered,
                 std::span<uint8_t> out) {
    RemoteRanges remote;
    for (const auto& p : pieces) {
        if (p.offset != offset + covered || p.length > out.size() - covered)
            throw UsageError("VirtualFile::pieces returned a piece at " + std::to_string(p.offset) +
                             " that does not continue the range at " + std::to_string(offset + covered));
        auto dest = out.subspan(covered, p.length);
        if (p.extent) {
            if (p.extent->length != p.length || !p.extent->file)
                throw UsageError("VirtualFile::pieces returned an extent whose length differs from its piece");
            if (p.extent->file->is_remote())
                remote[p.extent->file.get()].push_back({dest.data(), dest.size(), p.extent->offset});
            else
                p.extent->file->pread_exact(dest.data(), dest.size(), p.extent->offset);
        } else {
            vf.read(p.offset, dest);
        }
        covered += p.length;
    }
    read_remote_ranges(remote);  // while `pieces` holds the files remote points into
}

void read_view_once(const VirtualFile& vf, uint64_t offset, std::span<uint8_t> out) {
    if (offset > vf.size() || out.size() > vf.size() - offset)
        throw UsageError("read of " + std::to_string(out.size()) + " bytes at " + std::to_string(offset) +
                         " is outside the virtual file of " + std::to_string(vf.size()) + " bytes");
    uint64_t covered = 0;
    // Few files: all pieces at once, so that each file's run is one pread
    // (one version of it, checked after reading); many: in windows.
    if (auto all = pieces_within(vf, offset, out.size())) {
        read_pieces(vf, all->pieces, offset, covered, out);
    } else {
        for_each_window(vf, offset, out.size(), [&](std::vector<ViewPiece>&& pieces) {
            read_pieces(vf, pieces, offset, covered, out);
        });
    }
    if (covered != out.size())
        throw UsageError("VirtualFile::pieces covered " + std::to_string(covered) + " of " +
                         std::to_string(out.size()) + " bytes");
}

}  // namespace

void read_view(const VirtualFile& vf, uint64_t offset, std::span<uint8_t> out) {
    if (out.empty()) return;
    try {
        read_view_once(vf, offset, out);
    } catch (const SourceError&) {
        // Partitions are read through descriptors kept open between reads
        // and checked after reading: one that changed is marked, so that the
        // second try opens its path again and reads the version there now.
        read_view_once(vf, offset, out);
    }
}

}  // namespace ncafs::fs
