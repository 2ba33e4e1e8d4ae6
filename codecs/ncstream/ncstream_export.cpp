#include "codecs/ncstream/ncstream_export.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "codecs/array_source.hpp"
#include "codecs/error.hpp"
#include "codecs/ncstream/framing.hpp"
#include "codecs/ncstream/message_builder.hpp"
#include "codecs/ncstream/ncstream_layout.hpp"
#include "codecs/ncstream/zlib_stream.hpp"

namespace ncafs::ncstream {

namespace {

constexpr uint64_t kReadChunkBytes = uint64_t{4} << 20;
constexpr size_t kSpillThreshold = size_t{64} << 20;

class FdWriter {
public:
    FdWriter(int fd, std::string what) : fd_(fd), what_(std::move(what)) {}
    void write(const void* data, size_t n) {
        const auto* p = static_cast<const uint8_t*>(data);
        while (n > 0) {
            ssize_t w = ::write(fd_, p, n);
            if (w < 0) {
                if (errno == EINTR) continue;
                throw SourceError(what_, std::string("ncstream export: write failed: ") + std::strerror(errno));
            }
            p += w;
            n -= static_cast<size_t>(w);
            written_ += static_cast<uint64_t>(w);
        }
    }
    void write(std::string_view s) { write(s.data(), s.size()); }
    uint64_t written() const { return written_; }

private:
    int fd_;
    std::string what_;
    uint64_t written_ = 0;
};

// Compressed bytes whose length must be known before they can be written:
// in memory up to a threshold, then in an unlinked temporary file.
class SpillBuffer {
public:
    ~SpillBuffer() {
        if (file_) std::fclose(file_);
    }
    void append(std::span<const uint8_t> bytes) {
        if (!file_ && memory_.size() + bytes.size() <= kSpillThreshold) {
            memory_.insert(memory_.end(), bytes.begin(), bytes.end());
        } else {
            if (!file_) {
                file_ = std::tmpfile();
                if (!file_) throw SourceError("temporary file", std::string("cannot create: ") + std::strerror(errno));
                put(memory_.data(), memory_.size());
                memory_.clear();
                memory_.shrink_to_fit();
            }
            put(bytes.data(), bytes.size());
        }
        size_ += bytes.size();
    }
    uint64_t size() const { return size_; }
    void copy_to(FdWriter& w) {
        if (!file_) {
            w.write(memory_.data(), memory_.size());
            return;
        }
        if (std::fflush(file_) != 0 || std::fseek(file_, 0, SEEK_SET) != 0)
            throw SourceError("temporary file", std::string("cannot rewind: ") + std::strerror(errno));
        std::vector<uint8_t> buf(1 << 20);
        size_t n;
        while ((n = std::fread(buf.data(), 1, buf.size(), file_)) > 0) w.write(buf.data(), n);
        if (std::ferror(file_)) throw SourceError("temporary file", "read failed");
    }

private:
    void put(const uint8_t* p, size_t n) {
        if (n && std::fwrite(p, 1, n, file_) != n)
            throw SourceError("temporary file", std::string("write failed: ") + std::strerror(errno));
    }
    std::vector<uint8_t> memory_;
    std::FILE* file_ = nullptr;
    uint64_t size_ = 0;
};

struct Progress {
    const ProgressCallback& callback;
    uint64_t total = 0;
    uint64_t done = 0;
    void advance(uint64_t n) {
        done += n;
        if (callback) callback(done, total);
    }
};

// Reads the slab's elements in big-endian chunks of about kReadChunkBytes.
template <typename F>
void for_each_payload_chunk(const ArraySource& src, const Slab& slab, std::vector<uint8_t>& buf, F&& f) {
    const uint64_t es = type_size(src.type());
    const uint64_t per_chunk = std::max<uint64_t>(1, kReadChunkBytes / es);
    for (uint64_t done = 0; done < slab.element_count;) {
        const uint64_t n = std::min(per_chunk, slab.element_count - done);
        buf.resize(n * es);
        src.read_linear(slab.first_element + done, n, ByteOrder::Big, buf.data());
        f(std::span<const uint8_t>(buf.data(), buf.size()));
        done += n;
    }
}

void write_magic(FdWriter& w, const Magic& m) { w.write(m.data(), m.size()); }

void write_varint(FdWriter& w, uint64_t v) {
    uint8_t buf[10];
    w.write(buf, encode_varint(v, buf));
}

}  // namespace

ExportStats export_ncstream(const Dataset& ds, int out_fd, std::optional<int> deflate_level,
                            const ProgressCallback& progress, const std::string& location) {
    if (deflate_level && (*deflate_level < -1 || *deflate_level > 9))
        throw UsageError("ncstream export: deflate level must be -1 or 0..9, not " + std::to_string(*deflate_level));
    FdWriter w(out_fd, "ncstream export of " + ds.origin);
    ExportStats stats;
    std::vector<uint8_t> buf;

    if (!deflate_level) {
        // Exactly the view's bytes, written segment by segment.
        const NcstreamLayout layout = build_layout(ds, location.empty() ? ds.origin : location);
        Progress p{progress};
        for (const auto& s : layout.slabs) p.total += slab_payload_bytes(ds, s);
        stats.payload_bytes = p.total;
        stats.data_messages = layout.slabs.size();
        for (const LayoutSegment& seg : layout.segments) {
            if (seg.kind == LayoutSegment::Kind::Bytes) {
                w.write(layout.bytes.data() + seg.bytes_at, seg.length);
                continue;
            }
            const Slab& slab = layout.slabs[seg.slab];
            for_each_payload_chunk(*ds.variables[slab.variable].source, slab, buf, [&](std::span<const uint8_t> c) {
                w.write(c.data(), c.size());
                p.advance(c.size());
            });
        }
        stats.bytes_written = w.written();
        return stats;
    }

    check_sources(ds);
    const std::vector<Slab> slabs = plan_slabs(ds, kMaxDeflatedSlabBytes);
    Progress p{progress};
    for (const auto& s : slabs) p.total += slab_payload_bytes(ds, s);
    stats.payload_bytes = p.total;
    stats.data_messages = slabs.size();

    write_magic(w, kMagicStart);
    const std::string header = serialize_message(build_header(ds, location.empty() ? ds.origin : location), "header");
    write_magic(w, kMagicHeader);
    write_varint(w, header.size());
    w.write(header);
    for (const Slab& slab : slabs) {
        const uint64_t n = slab_payload_bytes(ds, slab);
        // An empty payload stays uncompressed: there is nothing to deflate.
        const bool deflated = n > 0;
        const std::string data = serialize_message(build_data_message(ds, slab, deflated), "data");
        SpillBuffer compressed;
        if (deflated) {
            ZlibDeflater z(*deflate_level, [&](std::span<const uint8_t> out) { compressed.append(out); });
            for_each_payload_chunk(*ds.variables[slab.variable].source, slab, buf, [&](std::span<const uint8_t> c) {
                z.feed(c);
                p.advance(c.size());
            });
            z.finish();
        }
        write_magic(w, kMagicData);
        write_varint(w, data.size());
        w.write(data);
        write_varint(w, compressed.size());
        compressed.copy_to(w);
    }
    write_magic(w, kMagicEnd);
    stats.bytes_written = w.written();
    return stats;
}

}  // namespace ncafs::ncstream
