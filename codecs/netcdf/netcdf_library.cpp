#include "codecs/netcdf/netcdf_library.hpp"

namespace ncafs {

std::mutex& netcdf_library_mutex() {
    // Function-local static: constructed on first use, thread-safe since C++11,
    // and usable from other static initialisers.
    static std::mutex m;
    return m;
}

}  // namespace ncafs
