#include "fs/export_command.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

#include "codecs/error.hpp"
#include "codecs/open_file.hpp"
#include "fs/aggregation_precheck.hpp"
#include "fs/backend.hpp"
#include "fs/options.hpp"
#include "fs/read_path.hpp"

namespace ncafs::fs {

namespace {

constexpr size_t kBlock = 8u << 20;

// A plain file as a VirtualFile whose bytes are one extent.
class PlainFileView final : public VirtualFile {
public:
    explicit PlainFileView(std::shared_ptr<const OpenFile> file) : file_(std::move(file)) {}
    uint64_t size() const override { return file_->size(); }
    void read(uint64_t offset, std::span<uint8_t> out) const override {
        file_->pread_exact(out.data(), out.size(), offset);
    }
    std::vector<ViewPiece> pieces(uint64_t offset, uint64_t length) const override {
        return {ViewPiece{offset, length, FileExtent{file_, offset, length}}};
    }

private:
    std::shared_ptr<const OpenFile> file_;
};

struct ExportArgs {
    std::string file;
    std::optional<std::string> output;
    ViewOptions view;
};

ExportArgs parse(const std::vector<std::string>& args) {
    ExportArgs a;
    std::vector<std::string> positional;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& s = args[i];
        std::optional<std::string> value;
        bool is_o = false;
        if (s == "-o" || s == "--output") {
            if (i + 1 >= args.size()) throw UsageError(s + " needs an argument");
            value = args[++i];
            is_o = s == "-o";
        } else if (s.rfind("--output=", 0) == 0) {
            value = s.substr(9);
        } else if (s.rfind("-o", 0) == 0 && s.size() > 2) {
            value = s.substr(2);
            is_o = true;
        } else if (!s.empty() && s[0] == '-' && s != "-") {
            throw UsageError("export: unknown option " + s);
        } else {
            positional.push_back(s);
            continue;
        }
        // -o takes both the output path and option lists: a list whose every
        // item is an ncafs option is options, anything else is the output.
        if (is_o) {
            ViewOptions trial = a.view;
            bool all_options = true;
            for (const auto& item : split_option_list(*value)) {
                try {
                    all_options = all_options && apply_view_option(item, trial);
                } catch (const UsageError&) {
                    if (value->find('=') == std::string::npos) all_options = false;
                    else throw;
                }
            }
            if (all_options && !split_option_list(*value).empty()) {
                a.view = trial;
                continue;
            }
        }
        if (a.output) throw UsageError("export: more than one output given");
        a.output = *value;
    }
    if (positional.size() != 1) throw UsageError("export: give exactly one FILE");
    a.file = positional[0];
    return a;
}

std::string human(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f %s", bytes, units[u]);
    return buf;
}

void write_all(int fd, const uint8_t* data, size_t n, const std::string& what) {
    while (n > 0) {
        ssize_t w = ::write(fd, data, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) throw SourceError(what, std::string("write failed: ") + std::strerror(errno));
        data += w;
        n -= static_cast<size_t>(w);
    }
}

}  // namespace

int export_command(const std::vector<std::string>& args, const char* program) {
    for (const auto& a : args)
        if (a == "-h" || a == "--help") {
            std::printf("usage: %s export FILE [-o OUT] [-o opt[,opt...]]\n"
                        "Writes the bytes the mount serves for FILE (an aggregation: its virtual\n"
                        "netCDF file) to OUT, or to standard output. Options as for the mount\n"
                        "(cdf_version=, allow_root=, rewrite=). Partition files may lie anywhere\n"
                        "the caller can read unless allow_root= narrows it.\n",
                        program);
            return 0;
        }
    std::string out_name = "standard output";
    int out_fd = -1;
    bool created = false;
    try {
        ExportArgs a = parse(args);
        // The caller reads with their own rights: no SOURCE tree to confine
        // partitions to, unless allow_root= gives one.
        std::vector<std::string> roots;
        if (a.view.extra_allowed_roots.empty()) roots.push_back("/");
        Backend backend = make_backend(a.view, roots);

        std::string file = a.file;
        struct stat st {};
        if (::stat(file.c_str(), &st) != 0 && file.size() > 3 && file.ends_with(".nc")) {
            std::string nca = file.substr(0, file.size() - 3) + ".nca";  // the virtual name of NAME.nca
            if (::stat(nca.c_str(), &st) == 0) file = nca;
        }
        std::shared_ptr<const VirtualFile> view;
        if (precheck_aggregation(file) == Precheck::Maybe && backend.is_aggregation(file))
            view = backend.open_view(file, "nc");
        else
            view = std::make_shared<PlainFileView>(OpenFile::open(file));

        if (a.output && *a.output != "-") {
            out_name = *a.output;
            out_fd = ::open(out_name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (out_fd < 0) throw SourceError(out_name, std::string("cannot create: ") + std::strerror(errno));
            created = true;
        } else {
            if (::isatty(1)) throw UsageError("export: standard output is a terminal; give -o OUT");
            out_fd = 1;
        }

        bool progress = ::isatty(2);
        uint64_t total = view->size();
        std::vector<uint8_t> buffer(static_cast<size_t>(std::min<uint64_t>(kBlock, std::max<uint64_t>(total, 1))));
        auto start = std::chrono::steady_clock::now();
        auto last_report = start;
        for (uint64_t done = 0; done < total;) {
            size_t n = static_cast<size_t>(std::min<uint64_t>(buffer.size(), total - done));
            read_view(*view, done, std::span<uint8_t>(buffer.data(), n));
            write_all(out_fd, buffer.data(), n, out_name);
            done += n;
            auto now = std::chrono::steady_clock::now();
            if (progress && (now - last_report > std::chrono::milliseconds(200) || done == total)) {
                last_report = now;
                double seconds = std::chrono::duration<double>(now - start).count();
                std::fprintf(stderr, "\rexport %s: %3d%%  %s of %s  %s/s   ", a.file.c_str(),
                             static_cast<int>(total ? 100.0 * double(done) / double(total) : 100),
                             human(double(done)).c_str(), human(double(total)).c_str(),
                             human(seconds > 0 ? double(done) / seconds : 0).c_str());
            }
        }
        if (progress) std::fprintf(stderr, "\n");
        if (created && ::close(out_fd) != 0) {
            out_fd = -1;
            throw SourceError(out_name, std::string("close failed: ") + std::strerror(errno));
        }
        return 0;
    } catch (const UsageError& e) {
        std::fprintf(stderr, "%s: %s\n", program, e.what());
        if (created) {
            ::close(out_fd);
            ::unlink(out_name.c_str());
        }
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: export failed: %s\n", program, e.what());
        if (created) {
            if (out_fd >= 0) ::close(out_fd);
            ::unlink(out_name.c_str());
        }
        return 1;
    }
}

}  // namespace ncafs::fs
