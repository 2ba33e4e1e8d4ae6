#include "fs/file_classifier.hpp"

#include <memory>

#include "aggregation/read/precheck.hpp"
#include "aggregation/zarr_store/zarr_store_dataset.hpp"
#include "codecs/sniff.hpp"
#include "fs/log.hpp"
#include "fs/view_names.hpp"
#include "fs/view_store.hpp"
#include "io/open_file.hpp"

namespace ncafs::fs {

FileClassifier::FileClassifier(const ConfinedRoots& source, const ViewOptions& options, const Backend& backend,
                               ViewStore& views)
    : source_(source), options_(options), backend_(backend), views_(views) {
    classifications_.set_capacity(kClassificationCapacity);
    formats_.set_capacity(kClassificationCapacity);
    netcdf4_.set_capacity(kClassificationCapacity);
    prechecks_.set_capacity(kClassificationCapacity);
}

size_t FileClassifier::classification_count() const {
    MutexLock lock(mutex_);
    return classification_count_;
}

size_t FileClassifier::sniff_count() const {
    MutexLock lock(mutex_);
    return sniff_count_;
}

size_t FileClassifier::precheck_count() const {
    MutexLock lock(mutex_);
    return precheck_count_;
}

bool FileClassifier::stat_within_source(const std::string& path, struct stat& st) const {
    // Every component walked from SOURCE's fd; symlinks followed only while
    // they stay inside: the mount must not become a window onto the machine.
    return source_.stat(path, st);
}

bool FileClassifier::is_store_directory(const std::string& name, const std::string& path) const {
    // Only folders named *.vds or *.zarr are looked into: other folders cost nothing more.
    struct stat st {};
    if (name.size() > 5 && name.ends_with(".zarr")) {  // a stat per marker file, only for folders named *.zarr
        for (const char* marker : kZarrStoreMarkers)
            if (stat_within_source(path + "/" + marker, st) && S_ISREG(st.st_mode)) return true;
        return false;
    }
    return name.size() > 4 && name.ends_with(".vds") && stat_within_source(path + "/VolumeDataLayout", st) &&
           S_ISREG(st.st_mode);
}

SourceFormat FileClassifier::sniff(const std::string& path, const struct stat& st) {
    const FileKey key = file_key(path, st);
    {
        MutexLock lock(mutex_);
        if (auto hit = formats_.get(key)) return *hit;
    }
    SourceFormat f = backend_.sniff(path);
    if (f != SourceFormat::ReferenceSet && only_reference_sets(path)) f = SourceFormat::None;  // other JSON: no dataset
    MutexLock lock(mutex_);
    ++sniff_count_;
    formats_.put(key, f);
    return f;
}

Classification FileClassifier::classify(const std::string& path, const struct stat& st) {
    const FileKey key = file_key(path, st);
    {
        MutexLock lock(mutex_);
        if (auto hit = classifications_.get(key)) return *hit;
    }
    Classification c;
    std::shared_ptr<const VirtualFile> view;
    std::shared_ptr<const Dataset> data;
    // A store directory (is_store_directory: *.vds/, *.zarr/) is a dataset; the backend tells them apart.
    SourceFormat format = S_ISDIR(st.st_mode) ? SourceFormat::Vds : sniff(path, st);
    if (format != SourceFormat::None) c.kind = Classification::Dataset;
    const bool references = format == SourceFormat::ReferenceSet;  // a JSON text read like an aggregation
    const std::string what = references ? "a reference set" : "an aggregation";
    if (references || (format == SourceFormat::Netcdf && agg::has_aggregation_name(path) && may_be_aggregation(path, st))) {
        try {
            if (references || backend_.is_aggregation(path)) {
                data = backend_.open_dataset(path, true);
                view = backend_.make_view(data, "nc", "");
                c.kind = Classification::Aggregation;
                c.nc_size = view->size();
            }
        } catch (const std::exception& e) {
            c.kind = Classification::Broken;
            log_once(LogLevel::Warning, path + ": shown only as a real file, not as " + what + ": " + e.what());
        } catch (...) {
            c.kind = Classification::Broken;
            log_once(LogLevel::Warning, path + ": shown only as a real file, not as " + what + ": unknown error");
        }
    }
    // Kept before the classification is: whoever finds it finds its nc view too.
    if (view) views_.keep_aggregation(key, std::move(data), std::move(view));
    MutexLock lock(mutex_);
    ++classification_count_;
    classifications_.put(key, c);
    return c;
}

bool FileClassifier::may_be_aggregation(const std::string& path, const struct stat& st) {
    const FileKey key = file_key(path, st);
    {
        MutexLock lock(mutex_);
        if (auto hit = prechecks_.get(key)) return *hit;
    }
    OpenResult opened = open_regular_file(path, &source_);  // O_NONBLOCK, regular files only
    if (!opened.fd) return false;  // unreadable: served (and failing) as a real file
    const bool maybe = agg::precheck_opened_file(opened.fd.get(), path) == agg::Precheck::Maybe;
    MutexLock lock(mutex_);
    ++precheck_count_;
    // Another file than `st` describes was opened (a swap): answer, but do not remember.
    if (identity_from_stat(opened.st) == identity_from_stat(st)) prechecks_.put(key, maybe);
    return maybe;
}

bool FileClassifier::is_netcdf4(const std::string& path, const struct stat& st) {
    const FileKey key = file_key(path, st);
    {
        MutexLock lock(mutex_);
        if (auto hit = netcdf4_.get(key)) return *hit;
    }
    OpenResult opened = open_regular_file(path, &source_);
    const bool hdf5 = opened.fd && sniff_fd(opened.fd.get()) == FileFormat::Hdf5;
    MutexLock lock(mutex_);
    netcdf4_.put(key, hdf5);
    return hdf5;
}

bool FileClassifier::only_reference_sets(const std::string& path) const {
    const std::string name = path.substr(path.rfind('/') + 1);
    return name.ends_with(".json") || reference_glob_stem(name, options_.reference_globs);
}

}  // namespace ncafs::fs
