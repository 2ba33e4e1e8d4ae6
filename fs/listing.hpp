// The catalog's listings (fs/catalog.hpp): the names a directory of the
// mount shows. A listing names only what a lookup serves: a real file or
// folder under its own name (an aggregation NAME.nca as NAME.nc, a store
// folder as its views), and a twin, classic or LOD name once its view was
// built (so its dataset parsed) or judged servable; a view that cannot be
// built is not listed. The folder is opened confined and read once; each
// dataset name is fstatat'ed from its fd. Keeps no cache of its own: every
// answer it asks for is cached by the classifier and the view store.
#pragma once

#include <sys/stat.h>

#include <set>
#include <string>
#include <vector>

#include "fs/catalog_entry.hpp"
#include "fs/options.hpp"
#include "fs/view_registry.hpp"
#include "io/confined_open.hpp"

namespace ncafs::fs {

class FileClassifier;
class FolderViews;
class ViewStore;

// `name` in the folder `dir` (a real path).
std::string child_path(const std::string& dir, const std::string& name);

class Listing {
public:
    // Every argument is the catalog's and outlives the listing.
    Listing(const std::string& root, const ConfinedRoots& source, const ViewOptions& options,
            FileClassifier& classifier, ViewStore& views, FolderViews& folders);

    // The names shown in a directory (by virtual path); throws std::system_error.
    std::vector<DirEntry> list(const std::string& virtual_dir);
    // The refs=GLOB names in real_dir whose stem is `stem`, sorted (one
    // directory read; none without refs=).
    std::vector<std::string> glob_sources(const std::string& real_dir, const std::string& stem);

private:
    struct ListedSource;  // a dataset file of the folder being listed (listing.cpp)
    // Whether the regular file `name` of a listed folder shows under its own
    // name; a dataset file is added to `sources` for its twins.
    bool list_regular_file(const std::string& name, const std::string& path, struct stat& st, bool have_stat,
                           const std::set<std::string>& names, std::vector<ListedSource>& sources);
    // The twin views (and LOD and classic names) of the listed dataset files.
    void list_twins(std::vector<ListedSource>& sources, const std::set<std::string>& names,
                    std::vector<DirEntry>& out);
    // Whether the view `name` (format `kind`, LOD `lod`) of a listed source can be served.
    bool view_listed(const ListedSource& s, const std::string& name, ViewKind kind, int lod);
    // source_stem, or the stem of a refs=GLOB name.
    std::optional<std::pair<std::string, int>> listed_stem(const std::string& name) const;
    // {STEM.lodN.EXT, EXT, N} for every level and enabled view, when the dataset at path has LOD views.
    struct LodName {
        std::string name;
        ViewKind kind;
        int level;
    };
    std::vector<LodName> lod_names(const std::string& stem, const std::string& path, const struct stat& st,
                                   bool aggregation);

    const std::string& root_;
    const ConfinedRoots& source_;
    const ViewOptions& options_;
    FileClassifier& classifier_;
    ViewStore& views_;
    FolderViews& folders_;
};

}  // namespace ncafs::fs
