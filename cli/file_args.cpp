#include "cli/file_args.hpp"

#include <sys/stat.h>

#include <filesystem>

#include "cli/contained.hpp"

#include "fs/options.hpp"
#include "fs/remote_options.hpp"
#include "fs/view_names.hpp"
#include "fs/backend.hpp"

namespace ncafs::cli {

namespace {

// -o LIST of remote options (remote=, s3_endpoint=, ...), missing_partitions= and sandbox=; false (with a message) on a bad one.
bool apply_remote_options(const std::string& list, FileArgs& cl, std::ostream& err, const char* cmd) {
    for (const auto& item : fs::split_option_list(list)) {
        const auto eq = item.find('=');
        if (item == "sandbox=on" || item == "sandbox=off") {
            cl.sandbox = item == "sandbox=on";
            continue;
        }
        try {
            if (eq != std::string::npos && item.substr(0, eq) == "allow_root" &&
                !remote::is_remote_url(item.substr(eq + 1))) {
                fs::ViewOptions view;
                fs::apply_view_option(item, view);
                cl.options.allowed_roots.insert(cl.options.allowed_roots.end(), view.extra_allowed_roots.begin(),
                                                view.extra_allowed_roots.end());
                continue;
            }
            if (eq != std::string::npos && item.substr(0, eq) == "missing_partitions") {
                cl.options.missing_partitions.fill = fs::parse_missing_partitions(item.substr(eq + 1));
                continue;
            }
            if (eq != std::string::npos && fs::apply_remote_option(item.substr(0, eq), item.substr(eq + 1), cl.remote))
                continue;
        } catch (const std::exception& e) {
            err << "ncafs " << cmd << ": " << e.what() << "\n";
            return false;
        }
        err << "ncafs " << cmd << ": -o takes allow_root=DIR, remote options (allow_root=URL, remote=, s3_endpoint=, "
               "s3_region=, ca_file=, cache_dir=, cache_size=), missing_partitions=error|fill and sandbox=on|off, got \"" << item << "\"\n";
        return false;
    }
    return true;
}

}  // namespace

bool is_dataset_file(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return false;
    if (S_ISDIR(st.st_mode)) return path.ends_with(".vds") && ::stat((path + "/VolumeDataLayout").c_str(), &st) == 0;
    return S_ISREG(st.st_mode) && fs::sniff_source_format(path) != fs::SourceFormat::None;
}

std::string view_source_file(const std::string& file) {
    struct stat st {};
    if (::stat(file.c_str(), &st) == 0) return file;
    const std::filesystem::path asked(file);
    auto beside = [&](const std::string& name) { return (asked.parent_path() / name).string(); };
    fs::ViewNameProbe probe;
    probe.view_enabled = [](const std::string&) { return true; };
    probe.lods = 99;  // any LOD name the mount may show
    probe.is_dataset = [&](const std::string& name) { return is_dataset_file(beside(name)); };
    probe.gives_classic = [](const std::string&) { return false; };  // never an aggregation's view
    auto view = fs::resolve_view_name(asked.filename().string(), probe);
    return view ? beside(view->source) : file;
}

void resolve_view_names(FileArgs& cl) {
    for (auto& file : cl.files) file = view_source_file(file);
}

fs::SandboxRoots sandbox_roots(const FileArgs& cl) {
    fs::SandboxRoots roots;
    if (cl.scope.callers_rights) roots.read.push_back("/");
    for (const auto& file : cl.files) roots.read.push_back(folder_of(file));
    for (const auto& root : cl.options.allowed_roots) roots.read.push_back(root);
    roots.remote = cl.remote;
    return roots;
}

AggregationOptions options_for(const FileArgs& cl, const std::string& file) {
    AggregationOptions options = cl.options;
    options.roots_rule = cl.scope.rule;
    if (cl.scope.callers_rights) {
        options.allowed_roots = {"/"};
        return options;
    }
    // FILE's folder first, as the mount's SOURCE: partitions beside it are allowed.
    if (!options.allowed_roots.empty())
        options.allowed_roots.insert(options.allowed_roots.begin(),
                                     std::filesystem::absolute(file).lexically_normal().parent_path().string());
    return options;
}

bool parse_file_args(const std::vector<std::string>& args, FileArgs& cl, std::ostream& err, const char* cmd) {
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&](std::string& v) {
            if (i + 1 >= args.size()) {
                err << "ncafs " << cmd << ": " << a << " needs a value\n";
                return false;
            }
            v = args[++i];
            return true;
        };
        if (a == "--root") {
            std::string v;
            if (!value(v)) return false;
            cl.options.allowed_roots.push_back(v);
        } else if (a == "--rewrite") {
            std::string v;
            if (!value(v)) return false;
            auto eq = v.find('=');
            if (eq == std::string::npos || eq == 0) {
                err << "ncafs " << cmd << ": --rewrite wants OLD=NEW, got \"" << v << "\"\n";
                return false;
            }
            cl.options.path_rewrites.emplace_back(v.substr(0, eq), v.substr(eq + 1));
        } else if (a == "-o") {  // check opens remote partitions; inspect takes the same options
            std::string v;
            if (!value(v) || !apply_remote_options(v, cl, err, cmd)) return false;
        } else if (a == "--all") {
            cl.all = true;
        } else if (a == "--json") {
            cl.json = true;
        } else if (a == "--verify-coordinates") {
            cl.verify_coordinates = true;
        } else if (a.rfind("--", 0) == 0) {
            err << "ncafs " << cmd << ": unknown option " << a << "\n";
            return false;
        } else {
            cl.files.push_back(a);
        }
    }
    if (cl.files.empty()) {
        err << "usage: ncafs " << cmd << " [--root DIR]... [--rewrite OLD=NEW]... FILE" << (std::string(cmd) == "check" ? "..." : "") << "\n";
        return false;
    }
    cl.scope = read_scope(cl.files);
    return true;
}

}  // namespace ncafs::cli
