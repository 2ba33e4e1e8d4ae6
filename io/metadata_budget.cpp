#include "io/metadata_budget.hpp"

#include <atomic>

namespace ncafs {

namespace {

std::atomic<uint64_t> limit_per_file{MetadataLimits{}.per_file};
std::atomic<uint64_t> limit_total{MetadataLimits{}.total};
std::atomic<uint64_t> in_use{0};
thread_local MetadataScope* innermost = nullptr;

std::string mib(uint64_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

// count * each, saturating.
uint64_t product(uint64_t count, uint64_t each) {
    return each != 0 && count > UINT64_MAX / each ? UINT64_MAX : count * each;
}

}  // namespace

void set_metadata_limits(const MetadataLimits& limits) {
    limit_per_file = limits.per_file;
    limit_total = limits.total;
}

MetadataLimits metadata_limits() { return {limit_per_file.load(), limit_total.load()}; }

uint64_t metadata_bytes_in_use() { return in_use.load(); }

MetadataCharge::~MetadataCharge() { in_use -= bytes_; }

MetadataScope::MetadataScope(std::string file) : file_(std::move(file)), outer_(innermost) { innermost = this; }

MetadataScope::~MetadataScope() {
    in_use -= bytes_;
    innermost = outer_;
}

std::shared_ptr<const MetadataCharge> MetadataScope::take() {
    auto charge = std::make_shared<const MetadataCharge>(bytes_);
    bytes_ = 0;
    return charge;
}

void charge_metadata(uint64_t count, uint64_t bytes_each, const char* what) {
    const uint64_t bytes = product(count, bytes_each);
    MetadataScope* scope = innermost;
    const uint64_t file_bytes = scope ? scope->bytes_ : 0;
    const uint64_t per_file = limit_per_file.load();
    // Built only when refusing: a reader may charge once per value it reads.
    const auto file = [&] { return scope ? scope->file_ : std::string("(a file)"); };
    const auto claim = [&] { return std::to_string(count) + " " + what + " (" + mib(bytes) + ")"; };
    if (bytes > per_file || file_bytes > per_file - bytes)
        throw MetadataBudgetError(file(), claim() + " would bring its metadata to more than the limit of " +
                                              mib(per_file) + " a file (max_file_metadata_mem=): refused", false);
    if (!scope) return;
    const uint64_t total = limit_total.load();
    uint64_t now = in_use.load();
    do {
        if (now > total || bytes > total - now)
            throw MetadataBudgetError(file(), claim() + " do not fit in what remains of max_metadata_mem=" +
                                                  mib(total) + " (" + mib(now) +
                                                  " held by the files open now): refused for now" +
                                                  " (Cannot allocate memory)", true);
    } while (!in_use.compare_exchange_weak(now, now + bytes));
    scope->bytes_ += bytes;
}

}  // namespace ncafs
