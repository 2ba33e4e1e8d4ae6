// Where partition files may come from. Names are resolved like URI
// references against the aggregation file's folder (after `base`), prefix
// rewrites are applied, and the result must stay under an allowed root: an
// aggregation file must never make the daemon serve /etc/shadow. Remote
// names (http://, https://, s3://), a relative name under a remote base, and
// a local path that a rewrite maps to a URL resolve to a URL: no root applies
// to those (remote/ opens them, or refuses them all with remote=no).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "io/confined_open.hpp"

namespace ncafs::agg {

// -o missing_partitions=: what a partition file that is absent, unreadable
// by permission or of no dataset format at all reads as (docs/conventions/
// docs/views.md "Incomplete collections"). `note` gets one line per such file and
// read (the same line for each variable it holds): the caller logs it once.
struct MissingPartitions {
    bool fill = false;  // false: the read fails (EIO); true: the master's fill value
    std::function<void(const std::string&)> note;
};

class PathPolicy {
public:
    // aggregation_file: the backing path as found (not realpath'ed: a relative
    // name is relative to the folder the file was found in, like cfdm's
    // abspath). allowed_roots empty => that folder's tree only.
    // roots_rule: why the roots are these, for the refusal message ("the
    // mount reads partitions beneath SOURCE and the allow_root= folders");
    // empty: a general sentence.
    PathPolicy(const std::string& aggregation_file, std::vector<std::string> allowed_roots,
               std::vector<std::pair<std::string, std::string>> rewrites, MissingPartitions missing = {},
               std::string roots_rule = {});

    const std::string& aggregation_file() const { return aggregation_file_; }
    const std::string& aggregation_folder() const { return folder_; }
    const std::vector<std::string>& allowed_roots() const { return roots_; }
    const MissingPartitions& missing_partitions() const { return missing_; }
    // Why path (absolute, or relative to the aggregation's folder) is
    // refused and what admits it: "outside the allowed roots (ROOTS): RULE;
    // -o allow_root=DIR admits it".
    std::string outside_roots(const std::string& path) const;

    // Lexical resolution only (no file system access besides none): joins
    // base/name, normalises, applies rewrites, and refuses a path lexically
    // outside every allowed root. Throws std::runtime_error with the reason.
    // `base_given`: whether the JSON had a base key; `name` may be a file:// URI
    // or a remote URL. A URL is returned as a URL (after rewrites), unconfined.
    std::string resolve(const std::string& name, bool base_given, const std::string& base) const;

    // The allowed roots, opened: partitions are opened through it
    // (DatasetCache::get) so that every component stays confined.
    const ConfinedRoots& confinement() const { return *confinement_; }
    // The confinement for the aggregation file itself: when it lies under
    // an allowed root (always in a mount), else nullptr (a name given on a
    // command line is opened as given).
    const ConfinedRoots* confinement_of_aggregation_file() const;

private:
    bool lexically_allowed(const std::string& path) const;

    // The first rewrite whose OLD prefixes name (a path, or a URL given as
    // OLD), applied; name unchanged when none does.
    std::string rewritten(const std::string& name) const;
    // A name that is not a lexically normal relative one, resolved against base (or the folder).
    std::string resolve_with_base(const std::string& name, bool base_given, const std::string& base) const;
    std::string aggregation_file_;
    std::string folder_;
    std::vector<std::string> roots_;           // lexically normal absolute
    std::shared_ptr<const ConfinedRoots> confinement_;
    std::vector<std::pair<std::string, std::string>> rewrites_;
    MissingPartitions missing_;
    std::string roots_rule_;
};

using ncafs::lexically_normal_absolute;  // io/confined_open.hpp
using ncafs::path_is_under;

}  // namespace ncafs::agg
