#include "aggregation/terms/term_variables.hpp"

#include "io/open_file.hpp"

namespace ncafs::agg {

namespace {

std::optional<std::string> text_of(const netcdf::TextAttributes& attributes, const char* name) {
    for (const auto& [k, v] : attributes)
        if (k == name) return v;
    return std::nullopt;
}

// CF group search from the root group (see find): the full path a name
// would have, nullopt for a name that names no variable.
std::optional<std::string> full_path_of(const std::string& name) {
    if (name.empty() || name.back() == '/') return std::nullopt;
    return name[0] == '/' ? name : "/" + name;
}

std::vector<std::string> full_paths_of(const std::vector<std::string>& names) {
    std::vector<std::string> out;
    for (const auto& name : names)
        if (auto full = full_path_of(name)) out.push_back(std::move(*full));
    return out;
}

}  // namespace

TermFile::TermFile(const std::string& path, const ConfinedRoots* within, const std::vector<std::string>& wanted)
    : path_(path), reader_(netcdf::open_term_reader(OpenFile::open(path, within), full_paths_of(wanted))) {
    // O_NONBLOCK, regular files only (OpenFile): a FIFO cannot hang us.
    for (const auto& v : reader_->inventory().variables) paths_.insert(v.path);
}

std::optional<std::string> TermFile::find(const std::string& name) const {
    // CF group search for a variable named by a root-group variable: absolute
    // paths as given, relative paths from the root group (the referring
    // variable's group, which is always the root here: the Dataset model
    // only carries root variables).
    auto full = full_path_of(name);
    if (!full || !paths_.count(*full)) return std::nullopt;
    return full;
}

std::vector<TermFile::VariableDims> TermFile::root_variables() const {
    std::vector<VariableDims> out;
    for (const auto& v : reader_->inventory().variables) {
        if (v.path.find('/', 1) != std::string::npos) continue;  // in a group
        out.push_back({v.path.substr(1), v.dims, text_of(v.text_attributes, "aggregated_data"),
                       text_of(v.text_attributes, "aggregated_dimensions")});
    }
    return out;
}

}  // namespace ncafs::agg
