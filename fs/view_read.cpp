#include "fs/view_read.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <new>

#include "codecs/error.hpp"
#include "fs/view_block_cache.hpp"
#include "fs/readahead.hpp"
#include "io/open_file.hpp"
#include "io/read_lease.hpp"
#include "io/worker_pool.hpp"

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
// number at a time (ctx.parallel_opens): each costs a round trip, and a read of
// a point series spans many objects.
void read_remote_ranges(const RemoteRanges& ranges, const ReadContext& ctx) {
    if (ranges.empty()) return;
    if (ranges.size() == 1) return read_one_object(*ranges.begin()->first, ranges.begin()->second);
    std::vector<const RemoteRanges::value_type*> objects;
    for (const auto& entry : ranges) objects.push_back(&entry);
    WorkerPool::shared().parallel_for(objects.size(), std::max<size_t>(1, ctx.parallel_opens), [&](size_t i, size_t) {
        ContextOnThread here(ctx);
        read_one_object(*objects[i]->first, objects[i]->second);
    });  // every fetch ends before the buffers may go
}

// Reads the extents among realized pieces into out (which starts at view
// offset `offset`): local ones one pread each, remote ones batched.
void read_extents(const std::vector<ViewPiece>& pieces, uint64_t offset, std::span<uint8_t> out,
                  const ReadContext& ctx) {
    RemoteRanges remote;
    for (const auto& p : pieces) {
        if (!p.extent) continue;
        auto dest = out.subspan(p.offset - offset, p.length);
        if (p.extent->file->is_remote())
            remote[p.extent->file.get()].push_back({dest.data(), dest.size(), p.extent->offset});
        else
            p.extent->file->pread_exact(dest.data(), dest.size(), p.extent->offset);
    }
    read_remote_ranges(remote, ctx);  // while `pieces` holds the files remote points into
}

// Checks that realized pieces (no runs) continue the range at offset +
// covered within out, and advances covered past them.
void check_continuous(const std::vector<ViewPiece>& pieces, uint64_t offset, uint64_t& covered,
                      std::span<const uint8_t> out) {
    for (const auto& p : pieces) {
        if (p.run || p.offset != offset + covered || p.length > out.size() - covered)
            throw UsageError("read_pieces: a piece at " + std::to_string(p.offset) +
                             " that is planned or does not continue the range at " + std::to_string(offset + covered));
        covered += p.length;
    }
}

// Reads realized pieces (no runs) that continue the range at offset +
// covered into out (which starts at `offset` of the view); advances covered.
void read_pieces(const VirtualFile& vf, const std::vector<ViewPiece>& pieces, uint64_t offset, uint64_t& covered,
                 std::span<uint8_t> out, const ReadContext& ctx) {
    check_continuous(pieces, offset, covered, out);
    for (const auto& p : pieces)
        if (!p.extent) vf.read(p.offset, out.subspan(p.offset - offset, p.length));
    read_extents(pieces, offset, out, ctx);
}

}  // namespace

// A failure is tried once more, realized afresh: partitions are read
// through descriptors kept open between reads and checked after reading,
// and one that changed is marked, so that the second try opens its path
// again and reads the version there now.
void read_view(const VirtualFile& vf, const ReadPlan& plan, std::span<uint8_t> out, const ReadContext& ctx,
               std::optional<LeasedPieces> realized) {
    if (out.size() != plan.length) throw UsageError("read_view: the buffer does not match the plan");
    if (out.empty()) return;
    ContextOnThread here(ctx);
    for (int attempt = 0;; ++attempt) {
        try {
            uint64_t covered = 0;
            if (!realized) realized = pieces_within(plan, ctx);
            if (realized) {
                read_pieces(vf, realized->pieces, plan.offset, covered, out, ctx);
            } else {
                for_each_window(plan, ctx, [&](std::vector<ViewPiece>&& pieces) {
                    read_pieces(vf, pieces, plan.offset, covered, out, ctx);
                });
            }
            if (covered != out.size())
                throw UsageError("the read covered " + std::to_string(covered) + " of " + std::to_string(out.size()) +
                                 " bytes");
            return;
        } catch (const SourceError&) {
            if (attempt > 0) throw;
            realized.reset();
        }
    }
}

void read_view(const VirtualFile& vf, uint64_t offset, std::span<uint8_t> out, const ReadContext& ctx) {
    if (out.empty()) return;
    read_view(vf, plan_read(vf, offset, out.size()), out, ctx);
}

namespace {

// Leases on the files of every extent (read_lease.hpp), taken before each
// file is checked to be unchanged since it was opened (the layout its
// extents come from: vouched for, OpenFile::vouched) and not changed
// within the last second: held until the splice is done, they keep any
// writer out until then, so the kernel, which reads after every check of
// ours, splices the version described.
// Nullopt, nothing held, when a file is remote or cannot be leased (another
// process has it open for writing, or no lease here: the copy, checked
// after reading, serves then) or fails a check.
std::optional<std::vector<ReadLease>> splice_leases(const std::vector<ViewPiece>& pieces) {
    std::vector<ReadLease> leases;
    for (const auto& p : pieces) {
        if (!p.extent) continue;
        const auto& file = p.extent->file;
        if (file->is_remote()) return std::nullopt;  // no fd: the copy fetches it by range
        auto leased = [&](const ReadLease& l) { return l.file() == file.get(); };
        if (std::none_of(leases.begin(), leases.end(), leased)) {
            ReadLease lease(file);
            if (!lease.held()) return std::nullopt;
            struct stat st {};
            if (::fstat(file->fd(), &st) != 0) return std::nullopt;
            if (identity_from_stat(st) != file->identity() || changed_within_last_second(st) || !file->vouched())
                return std::nullopt;
            leases.push_back(std::move(lease));
        }
    }
    return leases;
}

// Computed bytes [at, at + out.size()) of a view through the block cache,
// whose block then serves the next read of them (with `readahead` > 0 the
// bytes after them are computed ahead); a failure elsewhere in the block
// leaves the bytes asked for to decide. Without a block cache, exactly
// these bytes.
void compute_piece(const std::shared_ptr<const VirtualFile>& view, uint64_t at, std::span<uint8_t> out,
                   uint64_t readahead, const ReadContext& ctx, ViewBlockCache* blocks) {
    if (blocks) try {
            return blocks->read(view, at, out, readahead, ctx, /*realized_computed=*/true);
        } catch (const std::exception&) {
        }
    view->read(at, out);
}

// Replies with the pieces: computed ones from one buffer (through the
// block cache), extents as fds the kernel splices.
void reply_spliced(const std::shared_ptr<const VirtualFile>& view, const std::vector<ViewPiece>& pieces, uint64_t off,
                   size_t n, const ReadContext& ctx, const ViewReply& reply) {
    size_t computed = 0, last_computed = pieces.size();
    for (size_t i = 0; i < pieces.size(); ++i)
        if (!pieces[i].extent) computed += pieces[i].length, last_computed = i;
    ViewBlockCache* blocks = view->caches_its_bytes() ? nullptr : reply.blocks;  // no second copy
    const uint64_t ahead = blocks && computed ? reply.readahead->after(off, n) : 0;
    thread_local std::vector<uint8_t> memory;
    memory.resize(computed);
    size_t bytes = sizeof(fuse_bufvec) + (pieces.size() - 1) * sizeof(fuse_buf);
    std::unique_ptr<fuse_bufvec, decltype(&std::free)> bv(static_cast<fuse_bufvec*>(std::calloc(1, bytes)),
                                                          &std::free);
    if (!bv) throw std::bad_alloc();
    bv->count = pieces.size();
    size_t used = 0;
    uint64_t covered = 0;
    for (size_t i = 0; i < pieces.size(); ++i) {
        const auto& p = pieces[i];
        if (p.offset != off + covered) throw UsageError("VirtualFile::pieces left a gap");
        fuse_buf& b = bv->buf[i];
        b.size = p.length;
        if (p.extent) {
            if (p.extent->length != p.length) throw UsageError("extent length differs from its piece");
            b.flags = static_cast<fuse_buf_flags>(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK | FUSE_BUF_FD_RETRY);
            b.fd = p.extent->file->fd();
            b.pos = static_cast<off_t>(p.extent->offset);
        } else {
            compute_piece(view, p.offset, std::span<uint8_t>(memory.data() + used, p.length),
                          i == last_computed ? ahead : 0, ctx, blocks);
            b.mem = memory.data() + used;
            used += p.length;
        }
        covered += p.length;
    }
    if (covered != n) throw UsageError("VirtualFile::pieces did not cover the range");
    reply.before_reply();
    fuse_reply_data(reply.req, bv.get(), FUSE_BUF_SPLICE_MOVE);
}

// Replies with the bytes of a view that holds them in memory of its own
// (VirtualFile::held): the kernel copies them from there, with no copy into
// a buffer first. False, nothing answered, when the view holds none, or in
// more pieces than one reply should take. Tried once more like read_view.
bool reply_held(const VirtualFile& vf, uint64_t off, size_t n, const ViewReply& reply) {
    constexpr size_t kMaxPieces = 64;  // far under IOV_MAX: a read of many tiny objects is copied instead
    std::optional<std::vector<HeldBytes>> held;
    try {
        held = vf.held(off, n);
    } catch (const SourceError&) {
        held = vf.held(off, n);  // as read_view: a partition that changed is read again
    }
    if (!held || held->size() > kMaxPieces) return false;
    std::vector<iovec> iov;
    size_t covered = 0;
    for (const HeldBytes& piece : *held) {
        iov.push_back({const_cast<uint8_t*>(piece.data), piece.size});  // writev only reads it
        covered += piece.size;
    }
    if (covered != n) throw UsageError("VirtualFile::held did not cover the range");
    reply.before_reply();
    fuse_reply_iov(reply.req, iov.data(), static_cast<int>(iov.size()));  // `held` keeps the memory until it returns
    return true;
}

// A read holding file extents and computed bytes (where one variable ends
// and the next begins): the extents read from the realized pieces, the
// computed bytes through the block cache, so that the next read of their
// block finds them instead of computing them (opening their partitions)
// again. The extents' files are let go before anything is computed.
void read_mixed(const std::shared_ptr<const VirtualFile>& view, LeasedPieces realized, const ReadPlan& plan,
                std::span<uint8_t> out, uint64_t readahead, const ReadContext& ctx, ViewBlockCache& blocks) {
    uint64_t covered = 0;
    check_continuous(realized.pieces, plan.offset, covered, out);
    if (covered != out.size()) throw UsageError("the realized pieces do not cover the read");
    read_extents(realized.pieces, plan.offset, out, ctx);
    std::vector<std::pair<uint64_t, uint64_t>> computed;  // (view offset, length)
    for (const auto& p : realized.pieces)
        if (!p.extent) computed.emplace_back(p.offset, p.length);
    realized = {};
    for (size_t i = 0; i < computed.size(); ++i) {
        auto [at, n] = computed[i];
        compute_piece(view, at, out.subspan(at - plan.offset, n), i + 1 == computed.size() ? readahead : 0, ctx,
                      &blocks);
    }
}

bool holds_computed(const std::optional<LeasedPieces>& realized) {
    return realized && std::any_of(realized->pieces.begin(), realized->pieces.end(),
                                   [](const ViewPiece& p) { return !p.extent; });
}

// The copied route: the bytes into a buffer, then one reply. Extents and
// views that cache their bytes are read from the realized pieces; other
// computed bytes come through the block cache, with a fallback to exactly
// the bytes asked (the request's plan reused) when the run computed with
// the readahead failed somewhere.
void reply_copied(const std::shared_ptr<const VirtualFile>& view, const ReadPlan& plan,
                  std::optional<LeasedPieces> realized, bool any_extent, const ReadContext& ctx,
                  const ViewReply& reply) {
    const VirtualFile& vf = *view;
    thread_local std::vector<uint8_t> buffer;
    buffer.resize(plan.length);
    const std::span<uint8_t> out(buffer.data(), plan.length);
    // A view drawing on remote objects computes exactly the bytes asked (no
    // block cache): a MiB around them may need a server that fails (or
    // trickles) which these bytes do not need. A view caching its bytes
    // needs no second copy in the block cache.
    if (!reply.blocks || vf.caches_its_bytes() || (any_extent && !holds_computed(realized))) {
        read_view(vf, plan, out, ctx, std::move(realized));
    } else {
        try {
            const uint64_t ahead = reply.readahead->after(plan.offset, plan.length);
            if (any_extent) {
                read_mixed(view, std::move(*realized), plan, out, ahead, ctx, *reply.blocks);
            } else {
                realized.reset();  // found computed: a miss computes these bytes as they are
                reply.blocks->read(view, plan.offset, out, ahead, ctx, /*realized_computed=*/true);
            }
        } catch (const std::exception&) {
            read_view(vf, plan, out, ctx);  // only the bytes asked for decide
        }
    }
    reply.before_reply();
    fuse_reply_buf(reply.req, reinterpret_cast<const char*>(buffer.data()), plan.length);
}

}  // namespace

ViewReadResult reply_view_read(const std::shared_ptr<const VirtualFile>& view, uint64_t offset, size_t size,
                               const ReadContext& ctx, const ViewReply& reply) {
    const VirtualFile& vf = *view;
    try {
        if (offset >= vf.size()) return fuse_reply_buf(reply.req, nullptr, 0), ViewReadResult{};
        const size_t n = static_cast<size_t>(std::min<uint64_t>(size, vf.size() - offset));
        ContextOnThread here(ctx);
        // Planned and realized once: the splice, the copy, its retry and the
        // fallback share the plan; the copy reads what the splice realized.
        // Pieces that would hold more partitions open than a request may
        // are read in windows instead (fs/piece_windows.hpp).
        const ReadPlan plan = plan_read(vf, offset, n);
        std::optional<LeasedPieces> realized = pieces_within(plan, ctx);
        bool any_extent = !realized;
        if (realized)
            for (const auto& p : realized->pieces) any_extent = any_extent || p.extent.has_value();
        if (reply.splice && realized && any_extent)
            if (auto leases = splice_leases(realized->pieces)) {
                reply_spliced(view, realized->pieces, offset, n, ctx, reply);  // under the leases
                return {};
            }
        if (!any_extent && vf.caches_its_bytes()) {
            realized.reset();  // held bytes are the view's own
            if (reply_held(vf, offset, n, reply)) return {};
        }
        reply_copied(view, plan, std::move(realized), any_extent, ctx, reply);
    } catch (const remote::NetworkNeeded&) {
        // From the caches only, and they did not hold it: nothing answered.
        if (!ctx.network) return {ViewReadResult::NeedsNetwork, nullptr};
        return {ViewReadResult::Failed, std::current_exception()};
    } catch (...) {
        return {ViewReadResult::Failed, std::current_exception()};
    }
    return {};
}

}  // namespace ncafs::fs
