#include "fs/read_path.hpp"

#include <map>

#include "codecs/error.hpp"
#include "codecs/realize_pieces.hpp"
#include "io/worker_pool.hpp"
#include "fs/piece_windows.hpp"
#include "remote/network_scope.hpp"

namespace ncafs::fs {

ReadPlan plan_read(const VirtualFile& vf, uint64_t offset, uint64_t length) {
    if (offset > vf.size() || length > vf.size() - offset)
        throw UsageError("read of " + std::to_string(length) + " bytes at " + std::to_string(offset) +
                         " is outside the virtual file of " + std::to_string(vf.size()) + " bytes");
    ReadPlan plan{offset, length, vf.pieces(offset, length)};
    uint64_t at = offset;
    for (const auto& p : plan.pieces) {
        if (p.offset != at || p.length > offset + length - at)
            throw UsageError("VirtualFile::pieces returned a piece at " + std::to_string(p.offset) +
                             " that does not continue the range at " + std::to_string(at));
        if (p.extent && (p.run || p.extent->length != p.length || !p.extent->file))
            throw UsageError("VirtualFile::pieces returned an extent whose length differs from its piece");
        if (p.run && !p.run->source) throw UsageError("VirtualFile::pieces returned a run without a source");
        at += p.length;
    }
    if (at != offset + length)
        throw UsageError("VirtualFile::pieces covered " + std::to_string(at - offset) + " of " +
                         std::to_string(length) + " bytes");
    return plan;
}

namespace {

// The remote extents of one object that a read needs: fetched together.
using RemoteRanges = std::map<const OpenFile*, std::vector<RemoteBytes::Range>>;

void read_one_object(const OpenFile& file, const std::vector<RemoteBytes::Range>& wanted) {
    if (wanted.size() == 1) file.pread_exact(wanted[0].buffer, wanted[0].n, wanted[0].offset);
    else file.remote_bytes()->read_many(wanted);
}

// Objects of one read are fetched side by side on the kept pool, a bounded
// number at a time: each costs a round trip, and a read of a point series
// spans many objects.
void read_remote_ranges(const RemoteRanges& ranges) {
    constexpr size_t kObjectsAtOnce = 16;
    if (ranges.empty()) return;
    if (ranges.size() == 1) return read_one_object(*ranges.begin()->first, ranges.begin()->second);
    std::vector<const RemoteRanges::value_type*> objects;
    for (const auto& entry : ranges) objects.push_back(&entry);
    const bool network = remote::network_allowed();  // the caller's, on every thread
    WorkerPool::shared().parallel_for(objects.size(), kObjectsAtOnce, [&](size_t i, size_t) {
        remote::NetworkScope scope(network);
        read_one_object(*objects[i]->first, objects[i]->second);
    });  // every fetch ends before the buffers may go
}

void read_planned(const VirtualFile& vf, const ReadPlan& plan, std::span<uint8_t> out) {
    uint64_t covered = 0;
    // Few files: all pieces at once, so that each file's run is one pread
    // (one version of it, checked after reading); many: in windows.
    if (auto all = pieces_within(plan)) {
        read_pieces(vf, all->pieces, plan.offset, covered, out);
    } else {
        for_each_window(plan, [&](std::vector<ViewPiece>&& pieces) { read_pieces(vf, pieces, plan.offset, covered, out); });
    }
    if (covered != out.size())
        throw UsageError("the read covered " + std::to_string(covered) + " of " + std::to_string(out.size()) + " bytes");
}

}  // namespace

void read_pieces(const VirtualFile& vf, const std::vector<ViewPiece>& pieces, uint64_t offset, uint64_t& covered,
                 std::span<uint8_t> out) {
    RemoteRanges remote;
    for (const auto& p : pieces) {
        if (p.run || p.offset != offset + covered || p.length > out.size() - covered)
            throw UsageError("read_pieces: a piece at " + std::to_string(p.offset) +
                             " that is planned or does not continue the range at " + std::to_string(offset + covered));
        auto dest = out.subspan(covered, p.length);
        if (p.extent) {
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

void read_view(const VirtualFile& vf, const ReadPlan& plan, std::span<uint8_t> out) {
    if (out.size() != plan.length) throw UsageError("read_view: the buffer does not match the plan");
    if (out.empty()) return;
    try {
        read_planned(vf, plan, out);
    } catch (const SourceError&) {
        // Partitions are read through descriptors kept open between reads
        // and checked after reading: one that changed is marked, so that the
        // second try opens its path again and reads the version there now.
        read_planned(vf, plan, out);
    }
}

std::optional<std::vector<HeldBytes>> held_view_bytes(const VirtualFile& vf, uint64_t offset, uint64_t length) {
    try {
        return vf.held(offset, length);
    } catch (const SourceError&) {
        return vf.held(offset, length);  // as read_view: a partition that changed is read again
    }
}

void read_view(const VirtualFile& vf, uint64_t offset, std::span<uint8_t> out) {
    if (out.empty()) return;
    read_view(vf, plan_read(vf, offset, out.size()), out);
}

}  // namespace ncafs::fs
