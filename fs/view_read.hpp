// One read of a view, from the FUSE request to the bytes: planned once
// from metadata (VirtualFile::pieces), its runs realized once (the
// partitions resolved and their files opened and leased, in windows that
// bound the descriptors held: fs/piece_windows.hpp), then delivered by
// one of two routes. Spliced: extents handed to the kernel as descriptors,
// computed pieces from one buffer. Copied: extents read with one pread
// each (remote ones fetched by range, several of one object together).
// Either route takes computed bytes from the block cache when the view has
// one (else the VirtualFile computes exactly those). A retry
// or a fallback reuses the plan; the retry realizes the runs again (a
// partition that changed is opened anew). Every step gets the read's
// ReadContext (fs/read_context.hpp).
#pragma once

#include <fuse_lowlevel.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "codecs/virtual_file.hpp"
#include "fs/piece_windows.hpp"
#include "fs/read_context.hpp"

namespace ncafs::fs {

class ViewBlockCache;
class Readahead;

// Throws UsageError when the range lies outside the file or the pieces do
// not cover it in order; nothing else (no file is opened).
ReadPlan plan_read(const VirtualFile& vf, uint64_t offset, uint64_t length);

// Fills out (plan.length bytes) with the planned range of vf. Throws
// SourceError (naming the file) when a byte cannot be produced; never
// returns fewer bytes. `realized`: the plan's pieces realized already (by
// the caller, who looked for extents to splice), read as they are; else
// realized here, all at once when few files (so that each file's run is
// one pread, one version of it, checked after reading), in windows when
// many. A failure is tried once more with the same plan: a partition that
// changed is marked by the first try, and the second opens its path again
// and reads the version there now.
void read_view(const VirtualFile& vf, const ReadPlan& plan, std::span<uint8_t> out, const ReadContext& ctx = {},
               std::optional<LeasedPieces> realized = std::nullopt);
// The same as read_view above, planned here: bytes [offset, offset + out.size()) of vf.
void read_view(const VirtualFile& vf, uint64_t offset, std::span<uint8_t> out, const ReadContext& ctx = {});

// Where the reply of a view read goes, and what it may use on the way.
struct ViewReply {
    fuse_req_t req = nullptr;
    bool splice = false;               // extents may go to the kernel as descriptors
    ViewBlockCache* blocks = nullptr;      // computed bytes through it; null: exactly the bytes asked
    Readahead* readahead = nullptr;    // with blocks: how far the reader's next bytes are computed ahead
    std::function<void()> before_reply;  // throws when the bytes may no longer go out
};

// What became of a read of a view. Answered: the reply is sent.
// NeedsNetwork: nothing answered; ctx.network was false and a request to
// a server would be needed (the caller hands the read to a thread that may
// send it). Failed: nothing answered; `failure` is what the read met
// (SourceError, ...), for the caller to turn into its reply.
struct ViewReadResult {
    enum Outcome { Answered, NeedsNetwork, Failed };
    Outcome outcome = Answered;
    std::exception_ptr failure;
};

// Answers the read of [offset, offset + size) of *view (clipped to its
// size) with reply.req, or says why not.
ViewReadResult reply_view_read(const std::shared_ptr<const VirtualFile>& view, uint64_t offset, size_t size,
                               const ReadContext& ctx, const ViewReply& reply);

}  // namespace ncafs::fs
