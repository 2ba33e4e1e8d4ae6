#include "fs/filesystem.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <system_error>
#include <vector>

#include "io/confined_open.hpp"
#include "io/file_pins.hpp"
#include "codecs/error.hpp"
#include "io/worker_pool.hpp"
#include "io/open_file.hpp"
#include "io/read_lease.hpp"
#include "io/writer_probe.hpp"
#include "aggregation/read/remote_objects.hpp"
#include "fs/log.hpp"
#include "fs/outside_helper.hpp"
#include "fs/view_read.hpp"
#include "fs/readahead.hpp"

namespace ncafs::fs {

namespace {

constexpr double kNegativeTimeout = 1.0;  // short: a file may appear in SOURCE at any time

Filesystem& fs_of(fuse_req_t req) { return *static_cast<Filesystem*>(fuse_req_userdata(req)); }

struct FileHandle {
    EntryKind kind = EntryKind::RealFile;
    int fd = -1;                               // RealFile
    std::string real_path;                     // for messages
    std::unique_ptr<Filesystem::AccessGrant> grant;  // allow_other: judged again after changes
    Entry entry;                               // View with a grant: to open its view anew
    bool holds_pages = false;                  // admitted to the page cache (PageSharing)
    bool remote = false;                       // View on remote objects: reads needing a server go to RemoteWorkers
    bool direct = false;                       // opened with direct I/O: no read is ever answered short
    fuse_ino_t ino = 0;
    mutable std::atomic<bool> failed{false};   // a read failed through the page cache: all later reads fail
    mutable Readahead readahead;               // View: how much a missed read computes beyond itself
    ~FileHandle() {
        if (fd >= 0) ::close(fd);
    }
    // The view read now; with a grant, the one of the generation it was last judged at.
    std::shared_ptr<const VirtualFile> current_view() const {
        MutexLock lock(view_mutex);
        return view;
    }
    void set_view(std::shared_ptr<const VirtualFile> v, uint64_t at) const {
        MutexLock lock(view_mutex);
        view = std::move(v);
        epoch = at;
    }
    uint64_t view_epoch() const {
        MutexLock lock(view_mutex);
        return epoch;
    }

private:
    mutable Mutex view_mutex;
    mutable std::shared_ptr<const VirtualFile> view NCAFS_GUARDED_BY(view_mutex);  // View
    mutable uint64_t epoch NCAFS_GUARDED_BY(view_mutex) = 0;  // the access generation view was opened at
};

// fi->fh holds one of these: a read answered by RemoteWorkers keeps its
// handle alive, should the release come before the answer (a killed reader).
using HandleRef = std::shared_ptr<FileHandle>;

const HandleRef& handle_of(const fuse_file_info* fi) { return *reinterpret_cast<const HandleRef*>(fi->fh); }

struct DirHandle {
    std::vector<DirEntry> entries;
    std::optional<FolderListing> folder;  // a folder of a folder view: names made as asked for
    uint64_t size() const { return folder ? folder->size() : entries.size(); }
    DirEntry at(uint64_t i) const { return folder ? folder->at(i) : entries[i]; }
};

bool is_folder(EntryKind kind) { return kind == EntryKind::Directory || kind == EntryKind::ViewFolder; }

std::string child_path(const std::string& parent, const char* name) {
    return parent.empty() ? std::string(name) : parent + "/" + name;
}

// Answers an operation that threw `failure`: EIO (or the system error's
// code) and one rate-limited log line.
void reply_failure(fuse_req_t req, const char* what, std::exception_ptr failure) {
    try {
        std::rethrow_exception(failure);
    } catch (const std::system_error& e) {
        log_rate_limited(LogLevel::Error, std::string(what) + ": " + e.what());
        fuse_reply_err(req, e.code().value() ? e.code().value() : EIO);
    } catch (const std::exception& e) {
        log_rate_limited(LogLevel::Error, std::string(what) + ": " + e.what());
        fuse_reply_err(req, EIO);
    } catch (...) {
        log_rate_limited(LogLevel::Error, std::string(what) + ": unknown error");
        fuse_reply_err(req, EIO);
    }
}

// Runs an operation; any exception is answered by reply_failure. The
// operation must reply as its last step.
template <typename Op>
void guarded(fuse_req_t req, const char* what, Op&& op) {
    try {
        op();
    } catch (...) {
        reply_failure(req, what, std::current_exception());
    }
}

struct stat attributes_with_ino(Catalog& catalog, const Entry& e, fuse_ino_t ino) {
    struct stat st = catalog.attributes(e);
    st.st_ino = ino;
    // Whoever writes SOURCE must not hand out setuid/setgid programs: the
    // mount is nosuid (fs/mount_options.cpp), and the modes do not show them.
    st.st_mode &= ~static_cast<mode_t>(S_ISUID | S_ISGID);
    return st;
}

void op_init(void* userdata, fuse_conn_info* conn) {
    auto& fs = *static_cast<Filesystem*>(userdata);
    conn->max_readahead = 1u << 20;
    if (fs.catalog().options().splice && (conn->capable & FUSE_CAP_SPLICE_WRITE)) conn->want |= FUSE_CAP_SPLICE_WRITE;
    if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA) conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
    if (conn->capable & FUSE_CAP_PARALLEL_DIROPS) conn->want |= FUSE_CAP_PARALLEL_DIROPS;
    conn->want &= ~static_cast<unsigned>(FUSE_CAP_WRITEBACK_CACHE);
}

void op_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
    auto& fs = fs_of(req);
    guarded(req, "lookup", [&] {
        auto parent_path = fs.inodes().path_of(parent);
        if (!parent_path) return (void)fuse_reply_err(req, ESTALE);
        std::string path = child_path(*parent_path, name);
        auto entry = fs.catalog().resolve(path);
        fuse_entry_param param{};
        if (!entry) {
            param.ino = 0;  // negative entry, cached briefly
            param.entry_timeout = kNegativeTimeout;
            return (void)fuse_reply_entry(req, &param);
        }
        double timeout = fs.catalog().options().cache_timeout;
        param.ino = fs.inodes().lookup(path);
        param.attr = attributes_with_ino(fs.catalog(), *entry, param.ino);
        param.attr_timeout = timeout;
        param.entry_timeout = timeout;
        if (!is_folder(entry->kind) && fs.inodes().note_identity(param.ino, entry->identity()))
            fs.invalidate(param.ino);
        if (fuse_reply_entry(req, &param) != 0) fs.inodes().forget(param.ino, 1);
    });
}

void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
    auto& fs = fs_of(req);
    if (fs.inodes().forget(ino, nlookup)) fs.forgotten(ino);
    fuse_reply_none(req);
}

void op_forget_multi(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
    auto& fs = fs_of(req);
    for (size_t i = 0; i < count; ++i)
        if (fs.inodes().forget(forgets[i].ino, forgets[i].nlookup)) fs.forgotten(forgets[i].ino);
    fuse_reply_none(req);
}

void op_getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
    auto& fs = fs_of(req);
    guarded(req, "getattr", [&] {
        auto path = fs.inodes().path_of(ino);
        if (!path) return (void)fuse_reply_err(req, ESTALE);
        auto entry = fs.catalog().resolve(*path);
        if (!entry) return (void)fuse_reply_err(req, ENOENT);
        if (!is_folder(entry->kind) && fs.inodes().note_identity(ino, entry->identity()))
            fs.invalidate(ino);
        struct stat st = attributes_with_ino(fs.catalog(), *entry, ino);
        fuse_reply_attr(req, &st, fs.catalog().options().cache_timeout);
    });
}

void op_opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    auto& fs = fs_of(req);
    guarded(req, "opendir", [&] {
        auto path = fs.inodes().path_of(ino);
        if (!path) return (void)fuse_reply_err(req, ESTALE);
        auto handle = std::make_unique<DirHandle>();
        handle->folder = fs.catalog().folder_listing(*path);
        if (!handle->folder) handle->entries = fs.catalog().list(*path);
        fi->fh = reinterpret_cast<uint64_t>(handle.get());
        if (fuse_reply_open(req, fi) == 0) handle.release();
    });
}

void op_readdir(fuse_req_t req, fuse_ino_t, size_t size, off_t offset, fuse_file_info* fi) {
    guarded(req, "readdir", [&] {
        auto& handle = *reinterpret_cast<DirHandle*>(fi->fh);
        std::vector<char> buffer(size);
        size_t used = 0;
        // Offsets: 1 ".", 2 "..", 3.. entries; an entry's offset is that of the next one.
        const uint64_t total = handle.size() + 2;
        for (uint64_t i = static_cast<uint64_t>(offset); i < total; ++i) {
            struct stat st {};
            DirEntry e;
            if (i < 2) {
                e = {i == 0 ? "." : "..", true};
            } else {
                e = handle.at(i - 2);
                if (e.name.empty()) continue;  // a chunk absent from a .zarr view's store
            }
            const char* name = e.name.c_str();
            st.st_mode = e.directory ? S_IFDIR : S_IFREG;
            st.st_ino = 0xffffffffu;  // unknown: the kernel looks the entry up
            size_t need = fuse_add_direntry(req, buffer.data() + used, size - used, name, &st,
                                            static_cast<off_t>(i + 1));
            if (need > size - used) break;
            used += need;
        }
        fuse_reply_buf(req, buffer.data(), used);
    });
}

void op_releasedir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
    delete reinterpret_cast<DirHandle*>(fi->fh);
    fuse_reply_err(req, 0);
}

bool direct_io_for_missing_partition(Filesystem& fs, const Entry& entry) {
    try {
        // A remote read may fail at any moment (network): the same rule as a missing file.
        if (fs.catalog().draws_on_remote(entry)) return true;
        auto absent = fs.catalog().absent_partition(entry);
        if (!absent) return false;
        if (absent->empty()) return true;  // being checked in the background: safe until known
        log_once(LogLevel::Warning, entry.real_path + ": partition " + *absent +
                                        " cannot be read: served with direct I/O (reads that need it fail with EIO, or read as fill "
                                        "with missing_partitions=fill)");
    } catch (const std::exception&) {
        // The view opened, so the dataset did too: be safe all the same.
    }
    return true;
}

// The real file of an open, into handle.fd (entry.st: the identity of
// what was opened, the name may name another file by now). An errno,
// logged, when refused.
int open_real_file(Filesystem& fs, FileHandle& handle, Entry& entry) {
    // Confined to SOURCE, O_NONBLOCK, regular only: the fd read is the file checked.
    OpenResult opened = fs.catalog().open_real_file(entry);
    if (!opened.fd) {
        log_rate_limited(LogLevel::Error, entry.real_path + ": cannot open: " + opened.reason);
        // Not regular (a FIFO swapped in): EIO; leads out of SOURCE: as if absent.
        return opened.error == EINVAL ? EIO : opened.error == EXDEV ? ENOENT : opened.error;
    }
    // With allow_other: the very file the caller was checked for (io/file_pins.hpp).
    if (handle.grant)
        if (std::string refused = FilePins::shared().refusal(entry.real_path, opened.fd.get()); !refused.empty()) {
            log_rate_limited(LogLevel::Warning, entry.real_path + ": " + refused);
            return EIO;
        }
    struct stat st {};
    if (::fstat(opened.fd.get(), &st) == 0) entry.st = st;
    handle.fd = opened.fd.release();
    return 0;
}

// What became of the view object of an open. NeedsNetwork: nothing made,
// a request to a server would be needed and the open may not send it (the
// remote layer's NetworkNeeded ends here). Failed: logged.
enum class ViewOpen { Made, NeedsNetwork, Failed };

ViewOpen open_view(Filesystem& fs, FileHandle& handle, const Entry& entry, bool network) {
    // A fresh open asks the servers again for objects last asked more than
    // DatasetCache::kRemoteRevalidate ago: a replaced object is read in its new version.
    if (handle.remote) fs.catalog().dataset_cache().paths_may_have_changed();
    try {
        // With allow_other: a view object of the generation its opener was judged at (ViewKey::epoch).
        const uint64_t epoch = handle.grant ? handle.grant->pins_generation.load() : 0;
        handle.set_view(fs.catalog().open_view(entry, epoch), epoch);
        if (handle.grant) handle.entry = entry;
        return ViewOpen::Made;
    } catch (const agg::NetworkNeeded&) {
        if (network) throw;  // requests were allowed: not a question of the caches
        return ViewOpen::NeedsNetwork;
    } catch (const std::exception& e) {
        log_rate_limited(LogLevel::Error, entry.real_path + ": cannot open the view: " + e.what(),
                         entry.real_path + ": cannot open the view");
        return ViewOpen::Failed;
    }
}

// The open of a resolved entry; replies as its last step. `network` false
// (a FUSE worker opening a view on remote objects): from the caches only,
// and false, nothing answered, when a request would be needed.
bool open_entry(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, Entry entry, bool remote, bool network = true) {
    auto& fs = fs_of(req);
    agg::NetworkScope requests(network);  // for the code below VirtualFile, which reads it on the thread
    auto handle = std::make_shared<FileHandle>();
    int refused = 0;
    bool partitions_changed = false;
    try {  // both may list the view's partitions, which a remote view may need a request for
        refused = fs.caller_may_open(req, ino, entry, handle->grant);
        if (!refused) partitions_changed = fs.refresh_partitions(ino, entry);
    } catch (const agg::NetworkNeeded&) {
        if (network) throw;
        return false;  // nothing answered yet: op_open hands the open over
    }
    if (refused) return fuse_reply_err(req, refused), true;
    handle->kind = entry.kind;
    handle->real_path = entry.real_path;
    handle->remote = remote;
    handle->ino = ino;
    if (entry.kind == EntryKind::RealFile) {
        if ((refused = open_real_file(fs, *handle, entry))) return fuse_reply_err(req, refused), true;
    } else if (ViewOpen made = open_view(fs, *handle, entry, network); made != ViewOpen::Made) {
        if (made == ViewOpen::NeedsNetwork) return false;  // nothing answered yet: op_open hands the open over
        return fuse_reply_err(req, EIO), true;
    }
    // A partition is missing or remote: direct I/O, so that each read(2) is one
    // request answered whole or with EIO. Through the page cache a read
    // comes back short at the failing page, and netcdf-c (posixio)
    // zero-fills a short read: silently wrong values (docs/views.md). So is
    // a view whose read failed before, through the page cache (a damaged partition).
    bool direct = remote || (entry.kind == EntryKind::View && (fs.inodes().had_read_failure(ino) ||
                                                               direct_io_for_missing_partition(fs, entry)));
    // Pages are shared by every open of the inode: only among callers judged alike (fs/page_sharing.hpp).
    bool other_pages = false;
    if (!direct && handle->grant && entry.kind == EntryKind::View) {
        const auto admission = fs.pages().admit(ino, handle->grant->caller.key(), handle->view_epoch());
        direct = !admission.pages;
        handle->holds_pages = admission.pages;
        other_pages = admission.invalidate;
    }
    handle->direct = direct;
    // Keep the kernel's page cache across opens while the source is unchanged.
    bool changed = fs.inodes().note_identity(ino, entry.identity()) || other_pages;
    if (changed || direct) fs.invalidate(ino);
    // Computed blocks are kept across opens as the kernel keeps its pages:
    // until the view or a partition changes. Under direct I/O they are all
    // there is: a client that opens a file three times (ncks) reads its
    // first block three times.
    if (auto view = handle->current_view(); view && (changed || partitions_changed || remote))
        fs.block_cache().forget(view.get());
    fi->keep_cache = changed || direct || partitions_changed ? 0 : 1;
    fi->direct_io = direct ? 1 : 0;
    auto ref = std::make_unique<HandleRef>(std::move(handle));
    fi->fh = reinterpret_cast<uint64_t>(ref.get());
    if (fuse_reply_open(req, fi) == 0) return (void)ref.release(), true;
    if ((*ref)->holds_pages) fs.pages().release(ino, (*ref)->grant->caller.key());
    return true;
}

void op_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    auto& fs = fs_of(req);
    guarded(req, "open", [&] {
        if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) return (void)fuse_reply_err(req, EROFS);
        auto path = fs.inodes().path_of(ino);
        if (!path) return (void)fuse_reply_err(req, ESTALE);
        auto entry = fs.catalog().resolve(*path);
        if (!entry) return (void)fuse_reply_err(req, ENOENT);
        if (is_folder(entry->kind)) return (void)fuse_reply_err(req, EISDIR);
        // Such a view may need requests to open (never on a FUSE worker): from
        // the caches if it can be, else on a thread that may wait.
        if (fs.catalog().draws_on_remote(*entry)) {
            if (open_entry(req, ino, fi, *entry, true, /*network=*/false)) return;
            auto job = [req, ino, info = *fi, e = *entry]() mutable {
                guarded(req, "open", [&] { open_entry(req, ino, &info, std::move(e), true); });
            };
            if (fs.remote_workers().submit(std::move(job), [req] { fuse_reply_err(req, EIO); })) return;
        }
        open_entry(req, ino, fi, std::move(*entry), false);
    });
}

// A lease on fd for a splice of it (read_lease.hpp), taken before the file
// is checked: dropped at the end of the scope.
struct SpliceLease {
    int fd = -1;
    explicit SpliceLease(int descriptor) : fd(descriptor >= 0 && take_read_lease(descriptor) ? descriptor : -1) {}
    ~SpliceLease() {
        if (fd >= 0) drop_read_lease(fd);
    }
    SpliceLease(const SpliceLease&) = delete;
    SpliceLease& operator=(const SpliceLease&) = delete;
};

void reply_real_file(fuse_req_t req, const FileHandle& h, size_t size, off_t offset, bool splice) {
    // Spliced only under a lease taken before the check: the kernel reads
    // after every check of ours, and no writer may start in between.
    const SpliceLease lease(splice ? h.fd : -1);
    struct stat before {};
    if (::fstat(h.fd, &before) != 0) return (void)fuse_reply_err(req, errno);
    if (lease.fd >= 0 && !changed_within_last_second(before)) {
        fuse_bufvec bv{};  // FUSE_BUFVEC_INIT, a C compound literal, spelled out
        bv.count = 1;
        bv.buf[0].size = size;
        bv.buf[0].flags = static_cast<fuse_buf_flags>(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK | FUSE_BUF_FD_RETRY);
        bv.buf[0].fd = h.fd;
        bv.buf[0].pos = offset;
        fuse_reply_data(req, &bv, FUSE_BUF_SPLICE_MOVE);
        return;
    }
    thread_local std::vector<char> buffer;
    buffer.resize(size);
    size_t done = 0;
    while (done < size) {
        ssize_t r = ::pread(h.fd, buffer.data() + done, size - done, offset + static_cast<off_t>(done));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            log_rate_limited(LogLevel::Error, h.real_path + ": read failed: " + std::strerror(e));
            return (void)fuse_reply_err(req, e);
        }
        if (r == 0) break;  // end of file
        done += static_cast<size_t>(r);
    }
    // The file changed while it was read: the bytes may come from two versions.
    struct stat after {};
    if (::fstat(h.fd, &after) != 0 || identity_from_stat(after) != identity_from_stat(before)) {
        log_rate_limited(LogLevel::Error, h.real_path + ": changed while being read: EIO rather than mixed bytes");
        return (void)fuse_reply_err(req, EIO);
    }
    fuse_reply_buf(req, buffer.data(), done);
}

// A read of a view failed through the page cache: the kernel may have
// answered the caller's read(2) short at the failing page, which netcdf-c
// takes for the end of the file and zero-fills. So the caller learns of it
// at its next read: every later read of this open fails, the kernel's pages
// of the view are dropped, and later opens use direct I/O.
void fail_later_reads(Filesystem& fs, const FileHandle& h) {
    if (h.direct || h.failed.exchange(true)) return;
    fs.inodes().note_read_failure(h.ino);
    fs.invalidate(h.ino);
    log_rate_limited(LogLevel::Warning, h.real_path + ": a read failed through the page cache: every later read of "
                                            "this open fails (EIO), later opens use direct I/O");
}

// A change of pins or checks while a read of a view ran (view_reply).
struct GrantWentStale {};

// Where the bytes of a read of h go (fs/view_read.hpp). With allow_other
// they go out only if no check or pin changed while they were read (a file
// met then may be one the caller was not checked for).
ViewReply view_reply(fuse_req_t req, Filesystem& fs, const FileHandle& h, bool splice) {
    ViewReply reply;
    reply.req = req;
    reply.splice = splice;
    // A view drawing on remote objects computes exactly the bytes asked; the objects' blocks are cached below.
    reply.blocks = h.remote ? nullptr : &fs.block_cache();
    reply.readahead = &h.readahead;
    reply.before_reply = [&h, judged = h.view_epoch()] {
        if (h.grant && FilePins::shared().generation() != judged) throw GrantWentStale();
    };
    return reply;
}

// Settles a read of a view that reply_view_read did not answer: a failure
// becomes EIO and one log line. False, nothing answered, when the read
// needs a server (a FUSE worker reads a view that draws on remote objects
// from the caches only).
bool settled(fuse_req_t req, Filesystem& fs, const FileHandle& h, const ViewReadResult& result) {
    if (result.outcome == ViewReadResult::NeedsNetwork) return false;
    if (result.outcome == ViewReadResult::Answered) return true;
    try {
        std::rethrow_exception(result.failure);
    } catch (const GrantWentStale&) {
        log_rate_limited(LogLevel::Warning, "read of " + h.real_path + ": a file it draws on changed during the read: "
                                            "EIO rather than bytes no check covered");
    } catch (const SourceError& e) {
        // One line per view and failing file a minute, whatever the reason's details.
        log_rate_limited(LogLevel::Error, "read of " + h.real_path + " failed: " + e.what(),
                         "read of " + h.real_path + " failed: " + e.file());
    } catch (const std::exception& e) {
        log_rate_limited(LogLevel::Error, "read of " + h.real_path + " failed: " + e.what());
    }
    fail_later_reads(fs, h);  // before the reply: after it, a release may free h
    fuse_reply_err(req, EIO);
    return true;
}

// With allow_other, before a read of a view: after any change of checks or
// pins, the opener is judged again (the files are opened as the caller and
// pinned anew) and the handle reads a view object of the new generation
// from then on. A handle reading through pages another caller reads too
// fails instead (EIO): those pages may only hold bytes both were checked for.
int judge_again_if_stale(Filesystem& fs, const FileHandle& h) {
    Filesystem::AccessGrant& grant = *h.grant;
    if (grant.generation.load() == fs.access_generation()) return 0;
    const std::string who = grant.caller.key();
    const bool pins_moved = FilePins::shared().generation() != h.view_epoch();
    if (h.holds_pages && pins_moved && fs.pages().others_hold(h.ino, who)) {
        log_rate_limited(LogLevel::Warning, h.real_path + ": a file it draws on changed while other users read it "
                                                          "through the same pages: EIO until opened again");
        return EIO;
    }
    if (int refused = fs.grant_holds(grant)) return refused;
    const uint64_t epoch = grant.pins_generation.load();
    if (epoch == h.view_epoch()) return 0;
    if (h.holds_pages) {
        if (!fs.pages().judged_again(h.ino, who, epoch)) return EIO;
        fs.invalidate(h.ino);
    }
    h.set_view(fs.catalog().open_view(h.entry, epoch), epoch);
    return 0;
}

// Guarded as every operation, by a try of its own rather than guarded():
// the read's route is one function shorter (docs/design.md).
void op_read(fuse_req_t req, fuse_ino_t, size_t size, off_t offset, fuse_file_info* fi) {
    auto& fs = fs_of(req);
    try {
        const HandleRef& ref = handle_of(fi);
        const FileHandle& h = *ref;
        bool splice = fs.catalog().options().splice;
        if (h.kind == EntryKind::RealFile) return reply_real_file(req, h, size, offset, splice);
        if (h.failed) return (void)fuse_reply_err(req, EIO);  // fail_later_reads
        // A partition may now be another file than the one the caller was judged on.
        if (h.grant)
            if (int refused = judge_again_if_stale(fs, h)) return (void)fuse_reply_err(req, refused);
        const auto at = static_cast<uint64_t>(offset);
        if (h.remote) {
            // Cached bytes at once; a read that needs a server waits on a thread that may.
            const ReadContext caches_only{.network = false};
            // Each view_reply before its current_view(): the epoch judged is
            // then never newer than the view read (a view set between fails safe).
            const ViewReply reply = view_reply(req, fs, h, false);
            if (settled(req, fs, h, reply_view_read(h.current_view(), at, size, caches_only, reply))) return;
            auto job = [req, &fs, held = ref, size, at] {
                guarded(req, "read", [&] {
                    const ViewReply later = view_reply(req, fs, *held, false);
                    settled(req, fs, *held, reply_view_read(held->current_view(), at, size, {}, later));
                });
            };
            if (fs.remote_workers().submit(std::move(job), [req] { fuse_reply_err(req, EIO); })) return;
        }
        const ViewReply reply = view_reply(req, fs, h, splice);
        settled(req, fs, h, reply_view_read(h.current_view(), at, size, {}, reply));
    } catch (...) {
        reply_failure(req, "read", std::current_exception());
    }
}

void op_release(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
    auto* ref = reinterpret_cast<HandleRef*>(fi->fh);
    if ((*ref)->holds_pages) fs_of(req).pages().release((*ref)->ino, (*ref)->grant->caller.key());
    delete ref;
    fuse_reply_err(req, 0);
}

void op_statfs(fuse_req_t req, fuse_ino_t) {
    auto& fs = fs_of(req);
    guarded(req, "statfs", [&] {
        struct statvfs sv {};
        if (::statvfs(fs.catalog().source_root().c_str(), &sv) != 0) return (void)fuse_reply_err(req, errno);
        sv.f_flag |= ST_RDONLY;
        fuse_reply_statfs(req, &sv);
    });
}

void op_access(fuse_req_t req, fuse_ino_t, int mask) { fuse_reply_err(req, (mask & W_OK) ? EROFS : 0); }

// Everything that would change the tree: the mount is read-only.
void op_setattr(fuse_req_t req, fuse_ino_t, struct stat*, int, fuse_file_info*) { fuse_reply_err(req, EROFS); }
void op_mknod(fuse_req_t req, fuse_ino_t, const char*, mode_t, dev_t) { fuse_reply_err(req, EROFS); }
void op_mkdir(fuse_req_t req, fuse_ino_t, const char*, mode_t) { fuse_reply_err(req, EROFS); }
void op_unlink(fuse_req_t req, fuse_ino_t, const char*) { fuse_reply_err(req, EROFS); }
void op_rmdir(fuse_req_t req, fuse_ino_t, const char*) { fuse_reply_err(req, EROFS); }
void op_symlink(fuse_req_t req, const char*, fuse_ino_t, const char*) { fuse_reply_err(req, EROFS); }
void op_rename(fuse_req_t req, fuse_ino_t, const char*, fuse_ino_t, const char*, unsigned) {
    fuse_reply_err(req, EROFS);
}
void op_link(fuse_req_t req, fuse_ino_t, fuse_ino_t, const char*) { fuse_reply_err(req, EROFS); }
void op_write(fuse_req_t req, fuse_ino_t, const char*, size_t, off_t, fuse_file_info*) { fuse_reply_err(req, EROFS); }
void op_create(fuse_req_t req, fuse_ino_t, const char*, mode_t, fuse_file_info*) { fuse_reply_err(req, EROFS); }
void op_setxattr(fuse_req_t req, fuse_ino_t, const char*, const char*, size_t, int) { fuse_reply_err(req, EROFS); }
void op_removexattr(fuse_req_t req, fuse_ino_t, const char*) { fuse_reply_err(req, EROFS); }
void op_fallocate(fuse_req_t req, fuse_ino_t, int, off_t, off_t, fuse_file_info*) { fuse_reply_err(req, EROFS); }

fuse_lowlevel_ops make_operations() {
    fuse_lowlevel_ops ops{};
    ops.init = op_init;
    ops.lookup = op_lookup;
    ops.forget = op_forget;
    ops.forget_multi = op_forget_multi;
    ops.getattr = op_getattr;
    ops.opendir = op_opendir;
    ops.readdir = op_readdir;
    ops.releasedir = op_releasedir;
    ops.open = op_open;
    ops.read = op_read;
    ops.release = op_release;
    ops.statfs = op_statfs;
    ops.access = op_access;
    ops.setattr = op_setattr;
    ops.mknod = op_mknod;
    ops.mkdir = op_mkdir;
    ops.unlink = op_unlink;
    ops.rmdir = op_rmdir;
    ops.symlink = op_symlink;
    ops.rename = op_rename;
    ops.link = op_link;
    ops.write = op_write;
    ops.create = op_create;
    ops.setxattr = op_setxattr;
    ops.removexattr = op_removexattr;
    ops.fallocate = op_fallocate;
    return ops;
}

}  // namespace

Filesystem::Filesystem(Catalog& catalog, bool check_callers)
    : catalog_(catalog),
      access_(check_callers ? std::make_unique<CallerAccess>(catalog.allowed_roots()) : nullptr),
      watch_([this](const std::vector<fuse_ino_t>& inodes) { partitions_changed(inodes); },
             [this] {
                 if (access_) access_->forget_all();
                 catalog_.dataset_cache().paths_may_have_changed();  // a mode change: open (and check) again
             }) {}

namespace {

// The caller whole, or nothing: groups that cannot be read (the caller is
// gone, its thread changed identity, the list was cut) refuse the request.
std::optional<Caller> caller_of(fuse_req_t req) {
    const fuse_ctx* ctx = fuse_req_ctx(req);
    std::optional<std::vector<gid_t>> groups = caller_groups(req);
    if (!groups) return std::nullopt;
    std::sort(groups->begin(), groups->end());
    groups->erase(std::unique(groups->begin(), groups->end()), groups->end());
    return Caller{ctx->uid, ctx->gid, std::move(*groups)};
}

}  // namespace

int Filesystem::caller_may_open(fuse_req_t req, fuse_ino_t ino, const Entry& entry,
                                std::unique_ptr<AccessGrant>& grant) {
    if (!access_) return 0;
    std::optional<Caller> caller = caller_of(req);
    if (!caller) {
        const fuse_ctx* ctx = fuse_req_ctx(req);
        log_rate_limited(LogLevel::Warning, "open of " + entry.real_path + " refused for uid " +
                                                std::to_string(ctx->uid) + " gid " + std::to_string(ctx->gid) +
                                                ": its supplementary groups cannot be read whole");
        return EACCES;
    }
    grant = std::make_unique<AccessGrant>();
    grant->caller = std::move(*caller);
    grant->subject = entry.real_path;
    grant->subject_st = entry.st;
    grant->files = catalog_.source_files(entry);
    const bool draws_on_others = entry.aggregation || S_ISDIR(entry.st.st_mode);  // partitions, *.vds/ members
    grant->watched = entry.kind == EntryKind::View && draws_on_others && watch_.track(ino, grant->files);
    if (int refused = judge(*grant, "open")) return refused;
    // The file opened must be the one the entry was resolved (and its view built) from.
    auto pin = FilePins::shared().pinned(entry.real_path);
    if (pin && (pin->absent || pin->device != entry.st.st_dev || pin->inode != entry.st.st_ino)) {
        log_rate_limited(LogLevel::Warning, entry.real_path + ": changed while it was being opened: EIO (open it again)");
        return EIO;
    }
    return 0;
}

int Filesystem::grant_holds(AccessGrant& grant) {
    if (grant.generation.load() == access_->generation()) return 0;
    return judge(grant, "read");
}

int Filesystem::judge(AccessGrant& grant, const char* what) {
    uint64_t generation = access_->generation();  // before: a change during the check is judged again
    const uint64_t pins = FilePins::shared().generation();
    AccessVerdict verdict = access_->check(grant.caller, grant.subject, grant.subject_st, grant.files, grant.watched);
    if (verdict.allowed) {
        // The check's own pins moved the generations on: it judged those later
        // ones, unless some other change came between (then judged again).
        const uint64_t now = access_->generation(), pins_now = FilePins::shared().generation();
        const bool only_its_own = now == generation + verdict.pins_moved && pins_now == pins + verdict.pins_moved;
        grant.pins_generation = only_its_own ? pins_now : pins;
        grant.generation = only_its_own ? now : generation;
        return 0;
    }
    log_rate_limited(LogLevel::Warning, std::string(what) + " of " + grant.subject + " refused for " +
                                            grant.caller.describe() + ": cannot read " + verdict.file + " (" +
                                            std::strerror(verdict.error) + ")");
    return EACCES;
}

bool Filesystem::refresh_partitions(fuse_ino_t ino, const Entry& entry) {
    if (entry.kind != EntryKind::View || !entry.aggregation) return false;
    watch_.track(ino, catalog_.source_files(entry));
    if (!watch_.unwatched_changed(ino)) return false;
    partitions_changed({ino});
    return true;
}

void Filesystem::partitions_changed(const std::vector<fuse_ino_t>& inodes) {
    block_cache_.clear();  // computed bytes of any view may hold the old values
    catalog_.dataset_cache().paths_may_have_changed();  // partitions kept open: open their paths again
    for (fuse_ino_t ino : inodes) {
        inodes_.forget_read_failure(ino);  // the damaged partition may be mended
        invalidate(ino);
    }
}

Filesystem::~Filesystem() { stop(); }

const fuse_lowlevel_ops& Filesystem::operations() {
    static const fuse_lowlevel_ops ops = make_operations();
    return ops;
}

void Filesystem::start(fuse_session* session) {
    session_ = session;
    remote_workers_.start();
    worker_ = std::thread([this] { invalidation_loop(); });
    watch_.start();
}

void Filesystem::stop() {
    agg::cancel_remote_requests();  // the remote jobs end at once, then their threads
    remote_workers_.stop();
    // The reads' kept threads (started by the first read after daemonizing) end with the mount.
    if (session_) WorkerPool::shared().stop();
    watch_.stop();
    {
        MutexLock lock(queue_mutex_);
        stopping_ = true;
    }
    queue_cv_.notify_all();
    if (worker_.joinable()) worker_.join();
}

void Filesystem::invalidate(fuse_ino_t ino) {
    {
        MutexLock lock(queue_mutex_);
        if (stopping_ || !session_) return;
        queue_.push_back(ino);
    }
    queue_cv_.notify_one();
}

void Filesystem::invalidation_loop() {
    MutexLock lock(queue_mutex_);
    for (;;) {
        while (!stopping_ && queue_.empty()) lock.wait(queue_cv_);
        if (stopping_) return;
        fuse_ino_t ino = queue_.front();
        queue_.pop_front();
        lock.unlock();
        int r = fuse_lowlevel_notify_inval_inode(session_, ino, 0, 0);
        if (r != 0 && r != -ENOENT)
            log_rate_limited(LogLevel::Warning, "cache invalidation of inode " + std::to_string(ino) +
                                                    " failed: " + std::strerror(-r));
        lock.lock();
    }
}

}  // namespace ncafs::fs
