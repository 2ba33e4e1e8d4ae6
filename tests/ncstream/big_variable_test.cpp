// A variable whose payload reaches 2^31 bytes is split into slabs along its
// outermost axis; the view stays lazy (only the touched bytes are computed).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>

#include "codecs/array_source.hpp"
#include "codecs/ncstream/framing.hpp"
#include "codecs/ncstream/ncstream.pb.h"
#include "codecs/ncstream/ncstream_view.hpp"

namespace ncafs::ncstream {
namespace {

// value(i) = i as uint32, computed on demand; counts the elements read.
class IndexSource final : public ArraySource {
public:
    explicit IndexSource(std::vector<uint64_t> s) : s_(std::move(s)) {}
    NcType type() const override { return NcType::UInt; }
    const std::vector<uint64_t>& shape() const override { return s_; }
    void read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
              void* out) const override {
        check_box(s_, start, count, "index");
        // Row-major boxes from read_linear: fill element by element.
        std::vector<uint64_t> idx(start.begin(), start.end());
        uint64_t n = 1;
        for (auto c : count) n *= c;
        auto* p = static_cast<uint8_t*>(out);
        for (uint64_t e = 0; e < n; ++e) {
            uint64_t lin = 0;
            for (size_t d = 0; d < s_.size(); ++d) lin = lin * s_[d] + idx[d];
            uint32_t v = static_cast<uint32_t>(lin);
            if (order == ByteOrder::Big) v = __builtin_bswap32(v);
            std::memcpy(p + 4 * e, &v, 4);
            for (size_t d = s_.size(); d-- > 0;) {
                if (++idx[d] < start[d] + count[d]) break;
                idx[d] = start[d];
            }
        }
        elements_read += n;
    }
    mutable std::atomic<uint64_t> elements_read{0};

private:
    std::vector<uint64_t> s_;
};

TEST(NcstreamBigVariable, SplitIntoSlabsBelow2GiB) {
    // 5 x 2^27 uint32 = 2.5 GiB: slabs of 3 rows (1.5 GiB) and 2 rows.
    const std::vector<uint64_t> shape{5, uint64_t{1} << 27};
    auto src = std::make_shared<IndexSource>(shape);
    auto ds = std::make_shared<Dataset>();
    ds->origin = "synthetic";
    ds->dimensions = {{"t", 5, true}, {"x", shape[1], false}};
    ds->variables.push_back(Variable{"big", NcType::UInt, {0, 1}, {}, src});
    auto view = make_ncstream_view(ds, "big.ncs");

    // Walk the framing through view->read, skipping payloads.
    uint64_t pos = 0;
    auto bytes = [&](uint64_t n) {
        std::vector<uint8_t> b(n);
        view->read(pos, b);
        pos += n;
        return b;
    };
    auto varint = [&] {
        auto b = bytes(std::min<uint64_t>(10, view->size() - pos));
        auto r = decode_varint(b);
        EXPECT_EQ(r.status, VarintResult::Status::Ok);
        pos -= b.size() - r.length;
        return r.value;
    };
    EXPECT_EQ(bytes(4), std::vector<uint8_t>(kMagicStart.begin(), kMagicStart.end()));
    EXPECT_EQ(bytes(4), std::vector<uint8_t>(kMagicHeader.begin(), kMagicHeader.end()));
    pos += varint();
    std::vector<std::pair<uint64_t, uint64_t>> rows;
    uint64_t payload_total = 0;
    while (true) {
        auto m = bytes(4);
        if (m == std::vector<uint8_t>(kMagicEnd.begin(), kMagicEnd.end())) break;
        ASSERT_EQ(m, std::vector<uint8_t>(kMagicData.begin(), kMagicData.end()));
        auto dbytes = bytes(varint());
        pb::Data d;
        ASSERT_TRUE(d.ParseFromArray(dbytes.data(), static_cast<int>(dbytes.size())));
        ASSERT_EQ(d.section().range_size(), 2);
        EXPECT_EQ(d.section().range(1).size(), shape[1]);
        const uint64_t n = varint();
        EXPECT_LT(n, uint64_t{1} << 31);
        EXPECT_EQ(n, d.section().range(0).size() * shape[1] * 4);
        rows.emplace_back(d.section().range(0).start(), d.section().range(0).size());
        // Spot-check the first and last element of the slab's payload.
        const uint64_t first = d.section().range(0).start() * shape[1];
        const uint64_t payload_at = pos;
        auto head = bytes(4);
        EXPECT_EQ(head, (std::vector<uint8_t>{uint8_t(first >> 24), uint8_t(first >> 16), uint8_t(first >> 8),
                                              uint8_t(first)}));
        pos = payload_at + n - 4;
        const uint64_t last = static_cast<uint32_t>(first + n / 4 - 1);
        EXPECT_EQ(bytes(4), (std::vector<uint8_t>{uint8_t(last >> 24), uint8_t(last >> 16), uint8_t(last >> 8),
                                                  uint8_t(last)}));
        payload_total += n;
    }
    EXPECT_EQ(pos, view->size());
    EXPECT_EQ(rows, (std::vector<std::pair<uint64_t, uint64_t>>{{0, 3}, {3, 2}}));
    EXPECT_EQ(payload_total, uint64_t{5} << 29);
    EXPECT_LT(src->elements_read.load(), 100u);  // lazy: nothing but the probes was computed
}

}  // namespace
}  // namespace ncafs::ncstream
