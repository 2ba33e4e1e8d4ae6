#include "codecs/vds/unit_axis_source.hpp"

#include "codecs/error.hpp"

namespace ncafs::vds {

UnitAxisSource::UnitAxisSource(std::shared_ptr<const ArraySource> inner) : inner_(std::move(inner)) {
    if (!inner_ || inner_->shape().size() != 1) throw UsageError("UnitAxisSource: the inner source must be 1-D");
    shape_ = {1, inner_->shape()[0]};
}

void UnitAxisSource::read(std::span<const uint64_t> start, std::span<const uint64_t> count, ByteOrder order,
                          void* out) const {
    check_box(shape_, start, count, "unit-axis view");
    if (count[0] == 0) return;
    inner_->read(start.subspan(1), count.subspan(1), order, out);
}

std::optional<std::vector<uint8_t>> UnitAxisSource::uniform_value(std::span<const uint64_t> start,
                                                                  std::span<const uint64_t> count) const {
    check_box(shape_, start, count, "unit-axis view");
    return inner_->uniform_value(start.subspan(1), count.subspan(1));
}

}  // namespace ncafs::vds
