#include "cli/commands.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <utility>

#include "aggregation/kerchunk_export/kerchunk_writer.hpp"
#include "aggregation/read/precheck.hpp"
#include "io/confined_open.hpp"
#include "codecs/error.hpp"
#include "codecs/lod_dataset.hpp"
#include "codecs/ncstream/ncstream_export.hpp"
#include "io/open_file.hpp"
#include "io/private_folder.hpp"
#include "io/progress_meter.hpp"
#include "codecs/sniff.hpp"
#include "fs/backend.hpp"
#include "fs/options.hpp"
#include "fs/view_read.hpp"
#include "fs/sandbox_policy.hpp"
#include "fs/view_names.hpp"
#include "fs/view_registry.hpp"
#include "cli/contained.hpp"
#include "cli/file_args.hpp"
#include "cli/read_scope.hpp"
#include "remote/remote_store.hpp"

namespace ncafs::cli {

using namespace ncafs::fs;

namespace {

constexpr size_t kBlock = 8u << 20;

// A real file (not a dataset) as a VirtualFile whose bytes are one extent.
class RealFileView final : public VirtualFile {
public:
    explicit RealFileView(std::shared_ptr<const OpenFile> file) : file_(std::move(file)) {}
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
    std::optional<std::string> format;      // --format EXT (a view format of fs/view_registry.hpp) or kerchunk
    std::optional<int> deflate;             // --deflate[=LEVEL]: -1 is zlib's default (6)
    bool inline_converted = false;          // --inline-converted (kerchunk)
    ReadScope scope;                        // the caller's rights, or FILE's folder and allow_root= (cli/read_scope.hpp)
};

int parse_deflate_level(const std::string& text) {
    if (text.size() != 1 || text[0] < '0' || text[0] > '9')
        throw UsageError("export: --deflate level must be 0..9, got '" + text + "'");
    return text[0] - '0';
}

// The format named by --format: a file format (kerchunk, or a view that is one file).
std::string export_format(const std::string& f) {
    if (f != "kerchunk" && view_format_named(f, "export --format").folder)
        throw UsageError("export --format " + f + ": the ." + f +
                         " view is a folder of files that only a mount serves (cp -r MNT/NAME." + f + ")");
    return f;
}

// -o takes both the output path and option lists: a list whose every item is
// an ncafs option is options (returned applied to `view`), anything else is
// the output (nullopt).
std::optional<ViewOptions> as_option_list(const std::string& value, const ViewOptions& view) {
    ViewOptions trial = view;
    bool all_options = true;
    for (const auto& item : split_option_list(value)) {
        try {
            all_options = all_options && apply_view_option(item, trial);
        } catch (const UsageError&) {
            if (value.find('=') == std::string::npos) all_options = false;
            else throw;
        }
    }
    if (all_options && !split_option_list(value).empty()) return trial;
    return std::nullopt;
}

ExportArgs parse(const std::vector<std::string>& args) {
    ExportArgs a;
    std::vector<std::string> positional;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& s = args[i];
        std::optional<std::string> value;
        bool is_o = false;
        auto long_value = [&](const std::string& name) -> std::optional<std::string> {
            if (s == name) {
                if (i + 1 >= args.size()) throw UsageError(s + " needs an argument");
                return args[++i];
            }
            if (s.rfind(name + "=", 0) == 0) return s.substr(name.size() + 1);
            return std::nullopt;
        };
        if (auto f = long_value("--format")) {
            a.format = export_format(*f);
            continue;
        }
        if (auto v = long_value("--values")) {
            apply_view_option("ds_values=" + *v, a.view);
            continue;
        }
        if (s == "--inline-converted") {
            a.inline_converted = true;
            continue;
        }
        if (s == "--deflate") {
            a.deflate = -1;
            continue;
        }
        if (s.rfind("--deflate=", 0) == 0) {
            a.deflate = parse_deflate_level(s.substr(10));
            continue;
        }
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
        if (is_o)
            if (auto options = as_option_list(*value, a.view)) {
                a.view = *options;
                continue;
            }
        if (a.output) throw UsageError("export: more than one output given");
        a.output = *value;
    }
    if (positional.size() != 1) throw UsageError("export: give exactly one FILE");
    a.file = positional[0];
    if (a.deflate && a.format != "ncs") throw UsageError("export: --deflate needs --format ncs");
    if (a.inline_converted && a.format != "kerchunk")
        throw UsageError("export: --inline-converted needs --format kerchunk");
    return a;
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

// True (after printing the usage to out) when -h/--help is among the arguments.
bool print_usage_if_asked(const std::vector<std::string>& args, std::ostream& out) {
    for (const auto& a : args)
        if (a == "-h" || a == "--help") {
            std::string formats;
            for (const auto& f : view_formats())
                if (!f.folder) formats += std::string(f.extension) + "|";
            out << "usage: ncafs export FILE [--format " << formats << "kerchunk]\n"
                   "                    [--values raw|cf] [--deflate[=LEVEL]] [--inline-converted]\n"
                   "                    [-o OUT] [-o opt[,opt...]]\n"
                   "Writes the bytes the mount serves for FILE (an aggregation: its virtual\n"
                   "netCDF file; any name the mount shows beside a dataset file, such as\n"
                   "NAME.ds, NAME.classic.nc or NAME.lod1.vds with -o lods=1: that view)\n"
                   "to OUT, or to standard output. --format converts FILE's dataset:\n";
            for (const auto& f : view_formats())
                if (!f.folder) out << "  " << f.extension << ": " << f.title << "\n";
            out << "  kerchunk: the .nc view's dataset as a reference set (kerchunk JSON,\n"
                   "    version 1): Zarr arrays whose chunks are byte ranges of the partition\n"
                   "    files; a variable whose values the view converts is left out, with the\n"
                   "    reason, unless --inline-converted stores those values inline.\n";
            out << "--values raw|cf: the values of a ds export (as ds_values=); --deflate[=LEVEL]:\n"
                   "an ncs export with zlib-compressed data (LEVEL 0..9, default 6).\n"
                   "Options as for the mount (cdf_version=, ds_values=, vds_lods=, allow_root=,\n"
                   "rewrite=, missing_partitions=, sandbox=). A caller other than root\n"
                   "reads its own FILE (owned, writable by no one else) like any netCDF\n"
                   "tool: partitions anywhere it may read. Else files are read beneath\n"
                   "FILE's folder and the allow_root= folders only (the kernel refuses the\n"
                   "rest; sandbox=off: partitions anywhere the caller can read).\n";
            return true;
        }
    return false;
}

// FILE as named in its folder and what it stands for: itself when a file (or
// folder) of that name exists, else the view of a dataset file beside it that
// the mount would show under that name (fs/view_names.hpp).
struct ExportSource {
    std::string file;           // the file to read
    std::optional<ViewName> view;  // set when FILE is a view name
};

bool exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

// Whether the file is an aggregation the backend reads as one.
bool is_aggregation_file(const std::string& file, const Backend& backend) {
    const SourceFormat format = sniff_source_format(file);
    if (format == SourceFormat::ReferenceSet) return true;  // read like an aggregation
    return format == SourceFormat::Netcdf &&
           agg::precheck_aggregation(file) == agg::Precheck::Maybe && backend.is_aggregation(file);
}

// A netCDF-4 (HDF5) file that is not an aggregation: it has a classic view.
bool gives_classic_view(const std::string& path, const Backend& backend) {
    OpenResult opened = open_regular_file(path, nullptr);
    return opened.fd && sniff_fd(opened.fd.get()) == FileFormat::Hdf5 && !is_aggregation_file(path, backend);
}

ExportSource resolve_export_file(const ExportArgs& a, const Backend& backend) {
    if (exists(a.file)) return {a.file, std::nullopt};
    const std::filesystem::path asked(a.file);
    auto beside = [&](const std::string& name) { return (asked.parent_path() / name).string(); };
    ViewNameProbe probe;
    probe.view_enabled = [&](const std::string& view) { return a.view.has_view(view); };
    probe.lods = a.view.lods;
    probe.is_dataset = [&](const std::string& name) { return is_dataset_file(beside(name)); };
    probe.gives_classic = [&](const std::string& name) { return gives_classic_view(beside(name), backend); };
    auto view = resolve_view_name(asked.filename().string(), probe);
    if (!view) return {a.file, std::nullopt};  // fails to open, naming FILE
    return {beside(view->source), view};
}

// The name an ncstream records: FILE's when it names a view that records its
// name, else the twin STEM.ncs the mount shows beside it.
std::string ncstream_name(const std::string& file, const std::optional<ViewName>& view) {
    std::string name = std::filesystem::path(file).filename().string();
    if (view && view_format_named(view->view, "view").records_name) return name;
    const std::string ncs = view_format(ViewKind::Ncs).extension;
    if (auto stem = source_stem(name)) return twin_name(stem->first, ncs);
    return twin_name(name, ncs);
}

// Where the bytes go: -o OUT (written in a private folder beside it, renamed
// over it once whole: io/private_folder.hpp; a device or FIFO in place) or
// standard output.
struct ExportOutput {
    std::string name = "standard output";
    int fd = -1;
    std::unique_ptr<PrivateFolder> folder;  // set with -o OUT

    void open(const ExportArgs& a) {
        if (a.output && *a.output != "-") {
            name = *a.output;
            fd = open_device_target(name);  // /dev/null, a named pipe: written in place
            if (fd >= 0) return;
            folder = std::make_unique<PrivateFolder>(name);
            fd = folder->create(kOutputName, 0644);
        } else {
            if (::isatty(1)) throw UsageError("export: standard output is a terminal; give -o OUT");
            fd = 1;
        }
    }
    void publish() {
        if (fd == 1) return;
        const int closing = std::exchange(fd, -1);
        if (::close(closing) != 0) throw SourceError(name, std::string("close failed: ") + std::strerror(errno));
        if (folder) folder->publish(kOutputName);
    }
    void discard() {
        if (fd >= 0 && fd != 1) ::close(std::exchange(fd, -1));
        folder.reset();  // removes what was written
    }
    static constexpr const char* kOutputName = "export";
};

// The view's bytes, block by block, to the output.
void copy_view(const VirtualFile& view, const ExportOutput& out, ProgressMeter& meter) {
    uint64_t total = view.size();
    std::vector<uint8_t> buffer(static_cast<size_t>(std::min<uint64_t>(kBlock, std::max<uint64_t>(total, 1))));
    for (uint64_t done = 0; done < total;) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(buffer.size(), total - done));
        read_view(view, done, std::span<uint8_t>(buffer.data(), n));
        write_all(out.fd, buffer.data(), n, out.name);
        done += n;
        meter.update(done, total);
    }
}

// --format kerchunk: the dataset's reference set to out; notes to err.
int export_references(const std::shared_ptr<const Dataset>& dataset, bool aggregation, const std::string& file,
                      const ExportArgs& a, const ExportOutput& out, std::ostream& err) {
    agg::kerchunk::DatasetOrigin origin{aggregation, nullptr};
    if (!aggregation) origin.file = OpenFile::open(file);
    agg::kerchunk::ExportOptions options;
    options.inline_converted = a.inline_converted;
    // Written as it is made, through a buffer: a reference set of millions of chunks never whole in memory.
    std::string pending;
    auto flush = [&] {
        write_all(out.fd, reinterpret_cast<const uint8_t*>(pending.data()), pending.size(), out.name);
        pending.clear();
    };
    const auto result = agg::kerchunk::kerchunk_references(*dataset, origin, options, [&](std::string_view text) {
        pending += text;
        if (pending.size() >= kBlock) flush();
    });
    flush();
    for (const auto& line : result.notes) err << "ncafs export: " << line << "\n";
    if (result.variables_left_out > 0)
        err << "ncafs export: " << result.variables_left_out << " of "
            << result.variables_left_out + result.variables_written << " variables left out\n";
    return 0;
}

// The export itself, confined: the bytes of FILE's view (or conversion) to out.fd.
int export_view(ExportArgs& a, const ExportOutput& out, std::ostream& err) {
    try {
        // The caller's own file: partitions anywhere the caller may read.
        // Else FILE's own folder plays SOURCE's part (partitions beside it
        // are allowed, as on a mount) and allow_root= adds more: what the
        // sandbox lets this process read. With sandbox=off and no
        // allow_root=, the caller reads with their own rights too.
        std::vector<std::string> roots;
        if (a.scope.callers_rights || (a.view.extra_allowed_roots.empty() && !a.view.sandbox)) roots.push_back("/");
        else roots.push_back(std::filesystem::absolute(a.file).parent_path().string());
        Backend backend = make_backend(a.view, roots, a.scope.rule);
        const ExportSource source = resolve_export_file(a, backend);
        const std::string& file = source.file;
        if (source.view && !a.format) a.format = source.view->view;
        const int lod = source.view ? source.view->lod : 0;
        const std::string ncs_name = ncstream_name(a.file, source.view);
        bool aggregation = !(source.view && source.view->classic) && is_aggregation_file(file, backend);
        if (a.format == "kerchunk") {
            if (lod > 0) throw UsageError("export: --format kerchunk: a LOD view is computed, it has no bytes to reference");
            return export_references(backend.open_dataset(file, aggregation), aggregation, file, a, out, err);
        }
        std::shared_ptr<const Dataset> dataset;
        std::shared_ptr<const VirtualFile> view;
        if (a.format) {
            dataset = backend.open_dataset(file, aggregation);
            if (lod > 0) {
                if (!shows_lod_views(*dataset, aggregation, a.view.lod_min_size))
                    throw SourceError(a.file, "cannot open: " + file + " has no LOD views");
                dataset = std::make_shared<const Dataset>(make_lod_dataset(*dataset, lod, a.view.lod_keep));
            }
            if (*a.format != "ncs") view = backend.make_view(dataset, *a.format, ncs_name);
        } else if (aggregation) {
            view = backend.make_view(backend.open_dataset(file, true), "nc", ncs_name);
        } else {
            view = std::make_shared<RealFileView>(OpenFile::open(file));
        }
        ProgressMeter meter("export " + a.file, ProgressMeter::Unit::Bytes);
        auto report = [&](uint64_t done, uint64_t total) { meter.update(done, total); };
        // ncstream: streamed by the writer, which can also deflate; uncompressed
        // it writes exactly the bytes of the .ncs view.
        if (!view) ncstream::export_ncstream(*dataset, out.fd, a.deflate, report, ncs_name);
        else copy_view(*view, out, meter);
        return 0;
    } catch (const UsageError& e) {
        err << "ncafs: " << e.what() << "\n";
        return 2;
    } catch (const std::exception& e) {
        err << "ncafs: export failed: " << e.what() << "\n";
        return 1;
    }
}

}  // namespace

int run_export(const std::vector<std::string>& args, std::ostream& out_text, std::ostream& err) {
    if (print_usage_if_asked(args, out_text)) return 0;
    ExportOutput out;
    try {
        ExportArgs a = parse(args);
        out.open(a);  // before the sandbox: OUT may lie outside the folders read
        remote::RemoteStore::configure_shared(a.view.remote);  // cache_dir opened (created) before it too
        a.scope = read_scope({a.file});
        SandboxRoots roots;
        if (a.scope.callers_rights) roots.read.push_back("/");
        roots.read.push_back(folder_of(a.file));
        for (const auto& r : a.view.extra_allowed_roots) roots.read.push_back(r);
        roots.remote = a.view.remote;
        const int status = run_confined(roots, a.view.sandbox, out_text, err, a.file,
                                        [&](std::ostream&, std::ostream& e) {
                                            name_confined_subject(a.file);
                                            return export_view(a, out, e);
                                        });
        if (status != 0) {
            out.discard();
            return status;
        }
        out.publish();
        return 0;
    } catch (const UsageError& e) {
        err << "ncafs: " << e.what() << "\n";
        out.discard();
        return 2;
    } catch (const std::exception& e) {
        err << "ncafs: export failed: " << e.what() << "\n";
        out.discard();
        return 1;
    }
}

}  // namespace ncafs::cli
