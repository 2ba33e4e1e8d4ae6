// Test driver: reads ranges of one URL through remote::RemoteStore and
// writes them, concatenated, to --out (the tests compare them with the
// file read by Python). Prints "size N" and "version V" on stdout.
//   remote_fetch [--cache-dir D] [--cache-size N] [--memory-cache N]
//                [--endpoint URL] [--region R] [--ca-file F] [--retries N]
//                [--budget-ms N] [--many] [--whole CHUNK] [--out FILE]
//                [--threads N] [--local-copy] [--probe] [--allow-root URL]...
//                URL [OFFSET:LENGTH ...]
// --many reads all ranges with one read_many; --whole reads the object
// start to end in CHUNK-byte reads (sequential: readahead); --threads N
// does the same reads from N threads at once and writes all N results. Exit 1 with
// "error: MESSAGE" on stderr when the store throws.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "codecs/error.hpp"
#include "io/open_file.hpp"
#include "remote/remote_store.hpp"

using ncafs::RemoteBytes;
using ncafs::remote::RemoteConfig;
using ncafs::remote::RemoteStore;

namespace {

struct Args {
    RemoteConfig config;
    std::string url, out;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    bool many = false, local_copy = false, probe = false;
    uint64_t whole_chunk = 0;
    unsigned threads = 1;
};

Args parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw ncafs::UsageError(arg + " needs a value");
            return argv[++i];
        };
        if (arg == "--cache-dir") a.config.cache_dir = value();
        else if (arg == "--cache-size") a.config.cache_size = std::stoull(value());
        else if (arg == "--memory-cache") a.config.memory_cache_bytes = std::stoull(value());
        else if (arg == "--endpoint") a.config.s3_endpoint = value();
        else if (arg == "--region") a.config.s3_region = value();
        else if (arg == "--ca-file") a.config.ca_file = value();
        else if (arg == "--retries") a.config.max_retries = static_cast<unsigned>(std::stoul(value()));
        else if (arg == "--budget-ms") a.config.retry_budget = std::chrono::milliseconds(std::stoll(value()));
        else if (arg == "--out") a.out = value();
        else if (arg == "--whole") a.whole_chunk = std::stoull(value());
        else if (arg == "--threads") a.threads = static_cast<unsigned>(std::stoul(value()));
        else if (arg == "--allow-root") a.config.access.allow(ncafs::remote::parse_remote_root(value()));
        else if (arg == "--many") a.many = true;
        else if (arg == "--local-copy") a.local_copy = true;
        else if (arg == "--probe") a.probe = true;
        else if (a.url.empty()) a.url = arg;
        else {
            size_t colon = arg.find(':');
            if (colon == std::string::npos) throw ncafs::UsageError("a range is OFFSET:LENGTH, not " + arg);
            a.ranges.emplace_back(std::stoull(arg.substr(0, colon)), std::stoull(arg.substr(colon + 1)));
        }
    }
    if (a.url.empty()) throw ncafs::UsageError("no URL given");
    return a;
}

std::vector<char> read_ranges(const Args& a, const RemoteBytes& object) {
    std::vector<char> bytes;
    if (a.whole_chunk > 0) {
        bytes.resize(object.size());
        for (uint64_t at = 0; at < object.size(); at += a.whole_chunk)
            object.read(bytes.data() + at, std::min(a.whole_chunk, object.size() - at), at);
        return bytes;
    }
    std::vector<size_t> starts;
    for (const auto& [offset, length] : a.ranges) starts.push_back(bytes.size()), bytes.resize(bytes.size() + length);
    std::vector<RemoteBytes::Range> ranges;
    for (size_t i = 0; i < a.ranges.size(); ++i)
        ranges.push_back({bytes.data() + starts[i], a.ranges[i].second, a.ranges[i].first});
    if (a.many) object.read_many(ranges);
    else
        for (const auto& r : ranges) object.read(r.buffer, r.n, r.offset);
    return bytes;
}

int run(const Args& a) {
    RemoteStore store(a.config);
    if (a.probe) {
        RemoteStore::Probe p = store.probe(a.url);
        const char* names[] = {"Ok", "Missing", "Forbidden", "Unreachable", "Error"};
        std::cout << names[static_cast<int>(p.status)] << " " << p.detail << "\n";
        return 0;
    }
    auto object = store.open(a.url);
    std::cout << "size " << object->size() << "\nversion " << object->version() << std::endl;
    if (a.local_copy) {
        std::cout << "local_copy " << store.local_copy(*object)->path() << std::endl;
        return 0;
    }
    std::vector<std::vector<char>> results(a.threads);
    std::vector<std::string> errors(a.threads);
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < a.threads; ++t)
        threads.emplace_back([&, t] {
            try {
                results[t] = read_ranges(a, *object);
            } catch (const std::exception& e) {
                errors[t] = e.what();
            }
        });
    for (auto& t : threads) t.join();
    for (const std::string& e : errors)
        if (!e.empty()) throw std::runtime_error(e);
    std::vector<char> bytes;
    for (const auto& r : results) bytes.insert(bytes.end(), r.begin(), r.end());
    if (!a.out.empty()) {
        std::ofstream out(a.out, std::ios::binary);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(parse(argc, argv));
    } catch (const std::exception& e) {
        std::cerr << "error: " << e.what() << std::endl;
        return 1;
    }
}
