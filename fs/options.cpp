#include "fs/options.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <algorithm>
#include <sstream>

#include "codecs/error.hpp"
#include "fs/dead_mount.hpp"
#include "fs/mount_options.hpp"
#include "fs/remote_options.hpp"
#include "fs/view_registry.hpp"
#include "codecs/lod_dataset.hpp"

namespace ncafs::fs {

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// fstab/mount(8) bookkeeping words that mean nothing to a FUSE daemon.
bool is_dropped_mount_word(const std::string& item) {
    static const char* const words[] = {"nofail", "_netdev", "auto", "noauto", "user", "users", "nouser", "defaults"};
    for (const char* w : words)
        if (item == w) return true;
    return starts_with(item, "x-") || starts_with(item, "comment=");
}

// A mount whose daemon died (SIGKILL) answers ENOTCONN: say how to clear it.
[[noreturn]] void throw_path_error(const std::string& path, const char* what, const std::error_code& ec) {
    if (ec == std::errc::not_connected)
        throw UsageError(std::string(what) + " " + path + ": " + ec.message() +
                         " (a dead FUSE mount; ncafs clears only a dead mount of the same SOURCE, as root:" +
                         " run fusermount3 -u " + path + " first)");
    throw UsageError(std::string(what) + " " + path + ": " + (ec ? ec.message() : "not a directory"));
}

std::string absolute_directory(const std::string& path, const char* what) {
    std::error_code ec;
    auto canonical = std::filesystem::canonical(path, ec);
    if (ec) throw_path_error(path, what, ec);
    if (!std::filesystem::is_directory(canonical, ec)) throw_path_error(path, what, ec);
    // stat may be answered from the kernel's attribute cache even when the
    // FUSE daemon behind the directory is dead; opening it always asks.
    if (int fd = ::open(canonical.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) ::close(fd);
    else if (errno == ENOTCONN) throw_path_error(path, what, std::error_code(errno, std::generic_category()));
    return canonical.string();
}

// A dead mount of the same SOURCE, left by a killed daemon, is cleared; any
// other mount at MOUNTPOINT is refused rather than mounted over (two stacked
// mounts, the lower one hidden).
std::string usable_mountpoint(const std::string& path, const std::string& source) {
    if (clear_dead_ncafs_mount(path, source))
        std::fprintf(stderr, "ncafs: cleared the dead mount of %s at %s (its daemon had died)\n", source.c_str(),
                     path.c_str());
    std::string mountpoint = absolute_directory(path, "MOUNTPOINT");
    if (auto mounted = mount_at(mountpoint))
        throw UsageError("MOUNTPOINT " + mountpoint + " is already a mount point (" + mounted->fstype + " " +
                         mounted->source + "): unmount it first");
    return mountpoint;
}

uint64_t parse_unsigned(const std::string& text, const std::string& option) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
        throw UsageError("option " + option + ": expected a non-negative integer, got '" + text + "'");
    errno = 0;
    unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
    if (errno == ERANGE) throw UsageError("option " + option + ": value too large");
    return v;
}

}  // namespace

bool ViewOptions::has_view(const std::string& name) const {
    for (const auto& v : views)
        if (v == name) return true;
    return false;
}

bool is_known_view_name(const std::string& name) { return find_view_format(name) != nullptr; }

bool parse_missing_partitions(const std::string& value) {
    if (value != "error" && value != "fill")
        throw UsageError("option missing_partitions: expected error or fill, got '" + value + "'");
    return value == "fill";
}

std::vector<std::string> split_option_list(const std::string& list) {
    std::vector<std::string> items;
    bool in_views = false;
    std::string::size_type begin = 0;
    while (begin <= list.size()) {
        auto comma = list.find(',', begin);
        if (comma == std::string::npos) comma = list.size();
        std::string item = list.substr(begin, comma - begin);
        begin = comma + 1;
        if (item.empty()) continue;
        if (in_views && is_known_view_name(item)) {
            items.back() += ":" + item;  // views=nc,ds -> views=nc:ds
            continue;
        }
        in_views = starts_with(item, "views=");
        items.push_back(item);
    }
    return items;
}

namespace {

// "a:b::c" -> {a, b, c}: the list form of views= and lod_keep= (commas separate -o items).
std::vector<std::string> colon_list(const std::string& value) {
    std::vector<std::string> items;
    std::string::size_type begin = 0;
    while (begin <= value.size()) {
        auto colon = value.find(':', begin);
        if (colon == std::string::npos) colon = value.size();
        if (colon > begin) items.push_back(value.substr(begin, colon - begin));
        begin = colon + 1;
    }
    return items;
}

std::vector<std::string> parse_views(const std::string& value) {
    std::vector<std::string> views;
    for (const auto& v : colon_list(value)) {
        view_format_named(v, "option views");
        if (std::find(views.begin(), views.end(), v) == views.end()) views.push_back(v);
    }
    if (views.empty()) throw UsageError("option views: give at least one view (" + view_extension_list(", ") + ")");
    return views;
}

// Options that shape the views' contents (formats, views, levels of detail).
bool apply_layout_option(const std::string& key, const std::string& value, ViewOptions& options) {
    if (key == "cdf_version") {
        if (value == "1" || value == "2" || value == "5") {
            options.cdf_version = std::stoi(value);
        } else if (value == "auto" || value.empty()) {
            options.cdf_version.reset();
        } else {
            throw UsageError("option cdf_version: expected 1, 2 or 5, got '" + value + "'");
        }
    } else if (key == "views") {
        options.views = parse_views(value);
    } else if (key == "ds_values") {
        if (value != "raw" && value != "cf")
            throw UsageError("option ds_values: expected raw or cf, got '" + value + "'");
        options.ds_values_cf = value == "cf";
    } else if (key == "vds_lods") {
        const uint64_t n = parse_unsigned(value, key);
        if (n > 12) throw UsageError("option vds_lods: expected 0..12");
        options.vds_lods = static_cast<int>(n);
    } else if (key == "zarr_format") {
        if (value != "2" && value != "3") throw UsageError("option zarr_format: expected 2 or 3, got '" + value + "'");
        options.zarr_format = value == "2" ? 2 : 3;
    } else if (key == "zarr_chunks") {
        if (value != "stored" && value != "computed")
            throw UsageError("option zarr_chunks: expected stored or computed, got '" + value + "'");
        options.zarr_chunks_stored = value == "stored";
    } else if (key == "lods") {
        const uint64_t n = parse_unsigned(value, key);
        if (n > kMaxLodLevel) throw UsageError("option lods: expected 0.." + std::to_string(kMaxLodLevel));
        options.lods = static_cast<int>(n);
    } else if (key == "lod_keep") {  // repeatable
        for (auto& d : colon_list(value)) options.lod_keep.push_back(std::move(d));
    } else if (key == "lod_min_size") {
        options.lod_min_size = parse_size(value, key);
    } else if (key == "refs") {  // repeatable
        if (value.empty() || value.find('/') != std::string::npos)
            throw UsageError("option refs: expected a file name pattern such as *.refs, got '" + value + "'");
        options.reference_globs.push_back(value);
    } else {
        return false;
    }
    return true;
}

// Options on where files come from and what reading them may cost.
bool apply_source_option(const std::string& key, const std::string& value, bool has_value, const std::string& item,
                         ViewOptions& options) {
    if (key == "allow_root" && has_value && !agg::is_remote_url(value)) {  // bare allow_root is libfuse's own
        options.extra_allowed_roots.push_back(absolute_directory(value, "allow_root:"));
    } else if (key == "rewrite") {
        auto second = value.find('=');
        if (second == std::string::npos || second == 0)
            throw UsageError("option rewrite: expected rewrite=OLD=NEW, got '" + item + "'");
        options.path_rewrites.emplace_back(value.substr(0, second), value.substr(second + 1));
    } else if (key == "open_files") {
        uint64_t n = parse_unsigned(value, key);
        if (n < 1 || n > 1'000'000) throw UsageError("option open_files: expected 1..1000000");
        options.open_files = n;
    } else if (key == "cache_mem") {
        options.cache_mem = parse_size(value, key);
    } else if (key == "cache_timeout") {
        char* end = nullptr;
        double t = std::strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0' || !(t >= 0) || t > 1e6)
            throw UsageError("option cache_timeout: expected seconds >= 0, got '" + value + "'");
        options.cache_timeout = t;
    } else if (key == "max_fragments" || key == "max_metadata") {
        const uint64_t n = parse_unsigned(value, key);
        if (n < 1) throw UsageError("option " + key + ": expected a positive integer");
        (key == "max_fragments" ? options.limits.max_fragments : options.limits.max_metadata_bytes) = n;
    } else if (key == "max_metadata_mem" || key == "max_file_metadata_mem") {
        const uint64_t n = parse_size(value, key);
        if (n < (uint64_t{1} << 20)) throw UsageError("option " + key + ": expected at least 1M");
        (key == "max_metadata_mem" ? options.metadata_mem.total : options.metadata_mem.per_file) = n;
    } else if (key == "sandbox") {
        if (value != "on" && value != "off") throw UsageError("option sandbox: expected on or off, got '" + value + "'");
        options.sandbox = value == "on";
    } else if (key == "missing_partitions") {
        options.fill_missing_partitions = parse_missing_partitions(value);
    } else if (key == "splice" || key == "nosplice") {
        options.splice = key == "splice" && value != "0" && value != "no";
    } else {
        return has_value && apply_remote_option(key, value, options.remote);
    }
    return true;
}

}  // namespace

bool apply_view_option(const std::string& item, ViewOptions& options) {
    auto eq = item.find('=');
    std::string key = item.substr(0, eq);
    std::string value = eq == std::string::npos ? std::string() : item.substr(eq + 1);
    return apply_layout_option(key, value, options) ||
           apply_source_option(key, value, eq != std::string::npos, item, options);
}

MountOptions parse_mount_command_line(const std::vector<std::string>& args) {
    MountOptions o;
    std::vector<std::string> positional;
    std::vector<std::string> option_lists;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "-h" || a == "--help") {
            o.show_help = true;
        } else if (a == "-V" || a == "--version") {
            o.show_version = true;
        } else if (a == "-f") {
            o.foreground = true;
        } else if (a == "-d" || a == "--debug") {
            o.debug = true;
            o.foreground = true;
        } else if (a == "-s") {
            o.single_thread = true;
        } else if (a == "-o") {
            if (i + 1 >= args.size()) throw UsageError("-o needs an argument");
            option_lists.push_back(args[++i]);
        } else if (starts_with(a, "-o")) {
            option_lists.push_back(a.substr(2));
        } else if (!a.empty() && a[0] == '-') {
            throw UsageError("unknown option " + a + " (see --help)");
        } else {
            positional.push_back(a);
        }
    }
    if (o.show_help || o.show_version) return o;

    for (const auto& list : option_lists) {
        for (const auto& item : split_option_list(list)) {
            if (apply_view_option(item, o.view)) continue;
            if (is_dropped_mount_word(item)) continue;
            // mount(8) passes rw whenever ro is not given; the mount is
            // read-only whatever is asked, so rw is accepted and changes nothing.
            if (item == "ro" || item == "rw") continue;  // ro is always added
            if (item == "debug") {
                o.debug = true;
                o.foreground = true;
                continue;
            }
            if (item == "allow_other") o.allow_other = true;
            if (is_passed_mount_option(item)) o.fuse_options.push_back(item);
        }
    }
    if (positional.size() != 2)
        throw UsageError(positional.size() < 2 ? "missing SOURCE or MOUNTPOINT (see --help)"
                                               : "too many arguments: " + positional.back() + " (see --help)");
    o.view.remote.access.serve_other_users(o.allow_other);
    o.view.serves_other_users = o.allow_other;
    o.source = absolute_directory(positional[0], "SOURCE");
    o.mountpoint = usable_mountpoint(positional[1], o.source);
    if (o.source == o.mountpoint) throw UsageError("SOURCE and MOUNTPOINT are the same directory");
    return o;
}

// One text, option by option as --help prints it (packaging.man_page_matches_help
// compares it with the man page): split, it would only be harder to compare.
std::string usage_text(const std::string& program) {
    std::ostringstream s;
    const std::string formats = view_extension_list("|");
    const std::string all_views = view_extension_list(",");
    const size_t first_comma = std::min(all_views.find(','), all_views.size());
    s << "usage: " << program << " SOURCE MOUNTPOINT [-f] [-d] [-s] [-o opt[,opt...]]\n"
      << "       " << program << " export FILE [--format " << formats << "|kerchunk] [--values raw|cf]\n"
      << "                    [--deflate[=LEVEL]] [--inline-converted]\n"
      << "                    [-o OUT] [-o opt[,opt...]]\n"
      << "       " << program << " inspect [--root DIR] [--rewrite OLD=NEW] [--all] [--json]\n"
      << "                    [-o opt[,opt...]] FILE\n"
      << "       " << program << " check [--root DIR] [--rewrite OLD=NEW] [--verify-coordinates]\n"
      << "                    [-o opt[,opt...]] FILE...\n"
      << "       " << program << " aggregate [--dim NAME]... [--relative|--absolute] [--classic]\n"
      << "                    [--format nc|kerchunk] [--inline-converted]\n"
      << "                    [--files-from FILE|-] [--glob PATTERN] -o OUT.nc [FILE|DIR]...\n"
      << "       " << program << " clear-dead-mount SOURCE MOUNTPOINT\n"
      << "\n"
      << "Mounts SOURCE read-only at MOUNTPOINT: directories are mirrored and every file\n"
      << "appears as is, except that an aggregation NAME.nca (or NAME.nc) appears as\n"
      << "NAME.nc, one netCDF classic file computed on demand from its partitions.\n"
      << "\n"
      << views_help_text() << "\n"
      << "general options:\n"
      << "  -f                 stay in the foreground (log to stderr, not syslog)\n"
      << "  -d, -o debug       foreground with FUSE debug output\n"
      << "  -s                 single-threaded request loop\n"
      << "  -h, --help         this text\n"
      << "  -V, --version      version\n"
      << "\n"
      << "ncafs options (-o, also for export):\n"
      << "  cdf_version=1|2|5  format of the virtual netCDF files (default: the smallest\n"
      << "                     that holds the data: 1, else 2, else 5)\n"
      << "  views=" << all_views.substr(0, first_comma) << "[" << all_views.substr(first_comma)
      << "]  which views of each dataset appear (also\n"
      << "                     views=nc:ds; default: " << all_views << ")\n"
      << "  vds_lods=N         LODs stored in the .vds views besides LOD0 (0..12,\n"
      << "                     default 2)\n"
      << "  zarr_format=2|3    Zarr version of the .zarr views (default 2: .zgroup,\n"
      << "                     .zmetadata, VAR/.zarray, VAR/0.0; 3: zarr.json, VAR/c/0/0)\n"
      << "  zarr_chunks=stored|computed  chunks of the .zarr views as the files store\n"
      << "                     them (classic runs spliced, big-endian; netCDF-4 chunks\n"
      << "                     deflated, shuffled) or computed, little-endian and\n"
      << "                     uncompressed (default: every Zarr reader reads them)\n"
      << "  ds_values=raw|cf   values of the .ds views: raw as stored (default), or cf:\n"
      << "                     as netCDF4-python shows them (masked, scaled)\n"
      << "  allow_root=DIR     also allow partition files under DIR (repeatable; by\n"
      << "                     default only files under SOURCE are read)\n"
      << "  allow_root=URL     read remote partitions under URL: http(s)://HOST[:PORT]/PREFIX\n"
      << "                     or s3://BUCKET/PREFIX (repeatable). Once one is given, only\n"
      << "                     those; without any, every http(s) host and S3 bucket, except\n"
      << "                     with allow_other (then none). Loopback and private addresses\n"
      << "                     only when a root names the host; https:// or s3:// alone\n"
      << "                     (any host) is refused with allow_other\n"
      << "  rewrite=OLD=NEW    read partition paths starting with OLD from NEW instead\n"
      << "                     (repeatable, first match wins)\n"
      << "  open_files=N       keep at most N datasets and partitions open (default 128;\n"
      << "                     at most a quarter of the descriptor limit, ulimit -n)\n"
      << "  cache_mem=SIZE     memory for decoded chunks of deflated netCDF-4 partitions\n"
      << "                     (and, apart, of reference sets),\n"
      << "                     bytes or K, M, G (default 256M; 0: decode on every read)\n"
      << "  cache_timeout=S    kernel attribute/entry cache time for unchanged files,\n"
      << "                     seconds (default 60)\n"
      << "  nosplice           copy file extents through memory instead of splice\n"
      << "  max_fragments=N    refuse aggregated variables of more than N fragments\n"
      << "                     (default 2000000)\n"
      << "  max_metadata=BYTES refuse aggregation JSON/attribute text longer than BYTES\n"
      << "                     (default 268435456)\n"
      << "  max_metadata_mem=SIZE  memory for what the daemon builds from the metadata\n"
      << "                     of all files open at once (variables, attributes,\n"
      << "                     references, partitions, view headers), bytes or K, M, G;\n"
      << "                     a file that does not fit is refused for now (default 2G)\n"
      << "  max_file_metadata_mem=SIZE  the same for one file: a file claiming more is\n"
      << "                     refused, naming what it claims (default 1G)\n"
      << "  missing_partitions=error|fill  a partition file that is absent, unreadable\n"
      << "                     or of no dataset format: reads of it fail with EIO (error,\n"
      << "                     default) or read as the variable's fill value (fill;\n"
      << "                     logged once per partition; export and check take it too)\n"
      << "  remote=yes|no      read partitions named by http://, https:// and s3:// URLs\n"
      << "                     (default yes, as allow_root=URL permits; no refuses every\n"
      << "                     remote partition)\n"
      << "  s3_endpoint=URL    S3 service for s3://BUCKET/KEY (default: AWS)\n"
      << "  s3_region=NAME     S3 region (default: AWS_REGION, else us-east-1)\n"
      << "  ca_file=FILE       CA certificates for https:// (default: the system's)\n"
      << "  cache_dir=DIR      keep fetched remote objects on disk in DIR (netCDF-4\n"
      << "                     partitions need it: they are read from a whole copy)\n"
      << "  cache_size=SIZE    bound of cache_dir, bytes or K, M, G (default 1G)\n"
      << "  remote_timeout=S   the longest one remote fetch may take, its retries\n"
      << "                     included (seconds, default 30)\n"
      << "  sandbox=on|off     confine the daemon's file access with Landlock to SOURCE,\n"
      << "                     allow_root=, cache_dir= and system files (default on;\n"
      << "                     with allow_other, off must be given where the kernel\n"
      << "                     has no Landlock)\n"
      << "  lods=N             (mount) also show NAME.lod1.EXT ... NAME.lodN.EXT (every\n"
      << "                     view EXT) of datasets with a variable of rank >= 2:\n"
      << "                     every 2^n-th sample along each dimension but the record\n"
      << "                     one (0..16, default 0)\n"
      << "  lod_keep=DIM[:DIM] (mount) dimensions the LOD views leave whole (repeatable)\n"
      << "  lod_min_size=SIZE  (mount) LOD views only of aggregations and of datasets\n"
      << "                     whose variables hold more than SIZE bytes, bytes or K, M,\n"
      << "                     G (default 64M)\n"
      << "  refs=GLOB          (mount) files named GLOB (repeatable; besides NAME.json)\n"
      << "                     that hold kerchunk reference sets show as NAME.nc... (NAME:\n"
      << "                     the name without its last extension)\n"
      << "\n"
      << "FUSE/mount options passed on (any other is refused, exit status 2):\n"
      << "  allow_other (forces default_permissions), allow_root, default_permissions,\n"
      << "  fsname=, subtype=, max_read=, exec, noexec, atime, noatime, relatime,\n"
      << "  norelatime, sync, async, dirsync;\n"
      << "  ro, rw, dev, suid, nosuid, nodev are accepted and change nothing (every\n"
      << "  mount is read-only and nosuid and nodev);\n"
      << "  nofail, _netdev, auto, noauto, user, users, defaults, x-* are ignored.\n"
      << "\n"
      << "mount -t fuse.ncafs SOURCE MOUNTPOINT -o OPTS and fstab lines of type\n"
      << "fuse.ncafs work through mount.fuse3 (ncafs must be on PATH).\n"
      << "Unmount: fusermount3 -u MOUNTPOINT (or umount as root).\n"
      << "\n"
      << "export options:\n"
      << "  --format " << formats << "|kerchunk  FILE's dataset in that format (default:\n"
      << "                     the bytes the mount serves under FILE's name); kerchunk:\n"
      << "                     a reference set (kerchunk JSON) of the .nc view's dataset\n"
      << "  --values raw|cf    values of a ds export (as ds_values=)\n"
      << "  --deflate[=LEVEL]  ncs export with zlib-compressed data (LEVEL 0..9, default 6)\n"
      << "  --inline-converted  kerchunk: values that cannot be referenced go inline\n"
      << "                     (else their variables are left out)\n"
      << "  -o OUT             output file (default: standard output)\n";
    return s.str();
}

std::string version_text() { return std::string("ncafs ") + NCAFS_VERSION_STRING + "\n"; }

}  // namespace ncafs::fs
