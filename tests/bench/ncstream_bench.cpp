// ncstream benchmark: throughput of the view, the exporter and the reader,
// each printed as a ratio to a baseline measured in the same run.
//   ncstream_bench [MiB]      (default 128)
// Baselines: reading the same elements straight from the source (view and
// uncompressed export), zlib compress2 of the same bytes in one call
// (deflated export), pread of the payload bytes (reader).
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "codecs/array_source.hpp"
#include "codecs/ncstream/ncstream_export.hpp"
#include "codecs/ncstream/ncstream_reader.hpp"
#include "codecs/ncstream/ncstream_view.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A smooth float field held in memory: what a decoded source delivers.
class FieldSource final : public ncafs::ArraySource {
public:
    explicit FieldSource(std::vector<uint64_t> shape) : shape_(std::move(shape)), values_(ncafs::element_count(shape_)) {
        for (size_t i = 0; i < values_.size(); ++i) values_[i] = static_cast<float>(std::sin(i * 1e-4) * 100.0 + (i % 7));
    }
    ncafs::NcType type() const override { return ncafs::NcType::Float; }
    const std::vector<uint64_t>& shape() const override { return shape_; }
    void read(std::span<const uint64_t> start, std::span<const uint64_t> count, ncafs::ByteOrder order,
              void* out) const override {
        // Benchmark source: boxes from read_linear are row ranges of a 2-D array.
        const uint64_t first = start[0] * shape_[1] + start[1];
        const uint64_t n = count[0] * count[1];
        std::memcpy(out, values_.data() + first, n * 4);
        if (order == ncafs::ByteOrder::Big) ncafs::swap_to_big_endian(ncafs::NcType::Float, out, n);
    }

private:
    std::vector<uint64_t> shape_;
    std::vector<float> values_;
};

double mib_per_s(uint64_t bytes, double s) { return bytes / 1048576.0 / s; }

}  // namespace

int main(int argc, char** argv) {
    const uint64_t mib = argc > 1 ? std::stoull(argv[1]) : 128;
    const uint64_t cols = 1 << 16;
    const uint64_t rows = mib * 1048576 / 4 / cols;
    auto src = std::make_shared<FieldSource>(std::vector<uint64_t>{rows, cols});
    auto ds = std::make_shared<ncafs::Dataset>();
    ds->origin = "bench";
    ds->dimensions = {{"y", rows, true}, {"x", cols, false}};
    ds->variables.push_back(ncafs::Variable{"field", ncafs::NcType::Float, {0, 1}, {}, src});
    const uint64_t payload = rows * cols * 4;
    std::printf("ncstream bench: one float variable %llux%llu (%.0f MiB)\n", (unsigned long long)rows,
                (unsigned long long)cols, payload / 1048576.0);

    // Baseline: the source's own big-endian reads, 128 KiB at a time (FUSE-sized).
    const uint64_t chunk = 128 << 10;
    std::vector<uint8_t> buf(chunk);
    auto t = Clock::now();
    for (uint64_t e = 0; e < rows * cols; e += chunk / 4) src->read_linear(e, std::min(chunk / 4, rows * cols - e), ncafs::ByteOrder::Big, buf.data());
    const double base_read = seconds_since(t);

    auto view = ncafs::make_ncstream_view(ds, "bench.ncs");
    t = Clock::now();
    for (uint64_t off = 0; off < view->size(); off += chunk) {
        // Unaligned reads: the view's offsets do not fall on element boundaries.
        const uint64_t n = std::min(chunk, view->size() - off);
        view->read(off, std::span<uint8_t>(buf.data(), n));
    }
    const double view_read = seconds_since(t);
    std::printf("view read, 128 KiB pieces:   %8.0f MiB/s  ratio to source reads %.2f\n", mib_per_s(view->size(), view_read),
                view_read / base_read);

    std::vector<uint8_t> all(payload);
    src->read_linear(0, rows * cols, ncafs::ByteOrder::Big, all.data());
    // Baseline for the uncompressed export: write(2) of the payload bytes
    // from memory, 4 MiB at a time, to the same directory.
    // A private folder (mkdtemp), never a fixed /tmp name another user could pre-create.
    char folder_template[] = "/tmp/ncstream_bench.XXXXXX";
    if (!::mkdtemp(folder_template)) return 1;
    const std::string folder = folder_template;
    const std::string path = folder + "/uncompressed.ncs";
    double base_write = 0;
    for (int round = 0; round < 2; ++round) {  // the first round warms the file system up
        int wfd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        t = Clock::now();
        for (uint64_t off = 0; off < payload; off += 4 << 20)
            if (::write(wfd, all.data() + off, std::min<uint64_t>(4 << 20, payload - off)) < 0) return 1;
        base_write = seconds_since(t);
        ::close(wfd);
    }
    int fd;
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    t = Clock::now();
    ncafs::ncstream::export_ncstream(*ds, fd, std::nullopt);
    const double export_uncompressed = seconds_since(t);
    ::close(fd);
    std::printf("export uncompressed:         %8.0f MiB/s  ratio to write(2) of the bytes %.2f\n",
                mib_per_s(payload, export_uncompressed), export_uncompressed / base_write);

    // Baseline for deflate: one compress2 call over the whole payload.
    for (int level : {1, 6}) {
        std::vector<uint8_t> z(compressBound(payload));
        uLongf zn = z.size();
        t = Clock::now();
        compress2(z.data(), &zn, all.data(), payload, level);
        const double base_z = seconds_since(t);
        const std::string zpath = folder + "/deflated.ncs";
        int zfd = ::open(zpath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        t = Clock::now();
        auto stats = ncafs::ncstream::export_ncstream(*ds, zfd, level);
        const double export_z = seconds_since(t);
        ::close(zfd);
        std::printf("export deflate %d:            %8.0f MiB/s  ratio to compress2 %.2f  (%.1f%% of raw size)\n", level,
                    mib_per_s(payload, export_z), export_z / base_z, 100.0 * stats.bytes_written / payload);
        ::unlink(zpath.c_str());
    }
    all.clear();
    all.shrink_to_fit();

    // Reader: the uncompressed file read back, against pread of its bytes.
    {
        int rfd = ::open(path.c_str(), O_RDONLY);
        std::vector<uint8_t> big(4 << 20);
        t = Clock::now();
        for (uint64_t off = 0; ::pread(rfd, big.data(), big.size(), static_cast<off_t>(off)) > 0; off += big.size()) {
        }
        const double base_pread = seconds_since(t);
        ::close(rfd);
        t = Clock::now();
        auto back = ncafs::ncstream::open_ncstream_dataset(path);
        const auto& s = *back.variables[0].source;
        const uint64_t per = big.size() / 4;
        for (uint64_t e = 0; e < rows * cols; e += per)
            s.read_linear(e, std::min(per, rows * cols - e), ncafs::ByteOrder::Native, big.data());
        const double reader = seconds_since(t);
        std::printf("reader (open + read all):    %8.0f MiB/s  ratio to pread of the file %.2f\n",
                    mib_per_s(payload, reader), reader / base_pread);
    }
    ::unlink(path.c_str());
    ::rmdir(folder.c_str());
    return 0;
}
