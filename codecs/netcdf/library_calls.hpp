// The gateway's declarations: netcdf-c's and HDF5's headers, and every
// function of theirs ncafs calls declared again as requiring the library
// lock (netcdf_library.hpp). Included by the .cpp files of codecs/netcdf/
// only (tests/layering_check.py: no call into either library elsewhere,
// and every function called here is listed below). With clang, a call made without LibraryLock held, or outside a
// function declared NCAFS_REQUIRES(library_mutex), does not compile.
#pragma once

#include <hdf5.h>
#include <string>
#include <netcdf.h>
#include <netcdf_filter.h>
#include <netcdf_mem.h>

#include "codecs/netcdf/netcdf_library.hpp"

#define NCAFS_LIBRARY_CALL(function) extern "C" decltype(function) function NCAFS_REQUIRES(ncafs::library_mutex);

// HDF5 (H5open and H5check_version are called by macros such as H5P_FILE_ACCESS and H5F_ACC_RDONLY).
NCAFS_LIBRARY_CALL(H5open)
NCAFS_LIBRARY_CALL(H5check_version)
NCAFS_LIBRARY_CALL(H5Dclose)
NCAFS_LIBRARY_CALL(H5Dget_chunk_info_by_coord)
NCAFS_LIBRARY_CALL(H5Dget_create_plist)
NCAFS_LIBRARY_CALL(H5Dget_offset)
NCAFS_LIBRARY_CALL(H5Dget_space)
NCAFS_LIBRARY_CALL(H5Dget_storage_size)
NCAFS_LIBRARY_CALL(H5Dget_type)
NCAFS_LIBRARY_CALL(H5Dopen2)
NCAFS_LIBRARY_CALL(H5Eset_auto2)
NCAFS_LIBRARY_CALL(H5Fclose)
NCAFS_LIBRARY_CALL(H5Fcreate)
NCAFS_LIBRARY_CALL(H5Fget_create_plist)
NCAFS_LIBRARY_CALL(H5Fis_hdf5)
NCAFS_LIBRARY_CALL(H5Fopen)
NCAFS_LIBRARY_CALL(H5Gclose)
NCAFS_LIBRARY_CALL(H5Gopen2)
NCAFS_LIBRARY_CALL(H5Lexists)
NCAFS_LIBRARY_CALL(H5Lget_val)
NCAFS_LIBRARY_CALL(H5Literate)
NCAFS_LIBRARY_CALL(H5Lregister)
NCAFS_LIBRARY_CALL(H5Lunpack_elink_val)
NCAFS_LIBRARY_CALL(H5Lunregister)
NCAFS_LIBRARY_CALL(H5Oget_info_by_name2)
NCAFS_LIBRARY_CALL(H5Pclose)
NCAFS_LIBRARY_CALL(H5Pcreate)
NCAFS_LIBRARY_CALL(H5Pget_chunk)
NCAFS_LIBRARY_CALL(H5Pget_external)
NCAFS_LIBRARY_CALL(H5Pget_external_count)
NCAFS_LIBRARY_CALL(H5Pget_filter2)
NCAFS_LIBRARY_CALL(H5Pget_layout)
NCAFS_LIBRARY_CALL(H5Pget_nfilters)
NCAFS_LIBRARY_CALL(H5Pget_userblock)
NCAFS_LIBRARY_CALL(H5Pget_virtual_count)
NCAFS_LIBRARY_CALL(H5Pget_virtual_filename)
NCAFS_LIBRARY_CALL(H5Pset_fapl_core)
NCAFS_LIBRARY_CALL(H5Pset_file_image)
NCAFS_LIBRARY_CALL(H5Sclose)
NCAFS_LIBRARY_CALL(H5Sget_simple_extent_dims)
NCAFS_LIBRARY_CALL(H5Sget_simple_extent_ndims)
NCAFS_LIBRARY_CALL(H5Tclose)
NCAFS_LIBRARY_CALL(H5Tget_class)
NCAFS_LIBRARY_CALL(H5Tget_order)
NCAFS_LIBRARY_CALL(H5Tget_size)

// netcdf-c (nc_strerror alone is left out: it only maps a number to a constant text).
NCAFS_LIBRARY_CALL(nc_close)
NCAFS_LIBRARY_CALL(nc_create)
NCAFS_LIBRARY_CALL(nc_def_dim)
NCAFS_LIBRARY_CALL(nc_def_var)
NCAFS_LIBRARY_CALL(nc_enddef)
NCAFS_LIBRARY_CALL(nc_free_string)
NCAFS_LIBRARY_CALL(nc_get_att)
NCAFS_LIBRARY_CALL(nc_get_att_string)
NCAFS_LIBRARY_CALL(nc_get_vara)
NCAFS_LIBRARY_CALL(nc_get_vara_string)
NCAFS_LIBRARY_CALL(nc_initialize)
NCAFS_LIBRARY_CALL(nc_inq_att)
NCAFS_LIBRARY_CALL(nc_inq_attname)
NCAFS_LIBRARY_CALL(nc_inq_dim)
NCAFS_LIBRARY_CALL(nc_inq_dimid)
NCAFS_LIBRARY_CALL(nc_inq_dimids)
NCAFS_LIBRARY_CALL(nc_inq_grp_full_ncid)
NCAFS_LIBRARY_CALL(nc_inq_grp_parent)
NCAFS_LIBRARY_CALL(nc_inq_grpname)
NCAFS_LIBRARY_CALL(nc_inq_grpname_full)
NCAFS_LIBRARY_CALL(nc_inq_grps)
NCAFS_LIBRARY_CALL(nc_inq_nvars)
NCAFS_LIBRARY_CALL(nc_inq_unlimdims)
NCAFS_LIBRARY_CALL(nc_inq_var)
NCAFS_LIBRARY_CALL(nc_inq_var_chunking)
NCAFS_LIBRARY_CALL(nc_inq_var_deflate)
NCAFS_LIBRARY_CALL(nc_inq_var_fill)
NCAFS_LIBRARY_CALL(nc_inq_var_filter_ids)
NCAFS_LIBRARY_CALL(nc_inq_vardimid)
NCAFS_LIBRARY_CALL(nc_inq_varid)
NCAFS_LIBRARY_CALL(nc_inq_varids)
NCAFS_LIBRARY_CALL(nc_inq_varname)
NCAFS_LIBRARY_CALL(nc_inq_varnatts)
NCAFS_LIBRARY_CALL(nc_inq_varndims)
NCAFS_LIBRARY_CALL(nc_open)
NCAFS_LIBRARY_CALL(nc_open_mem)
NCAFS_LIBRARY_CALL(nc_put_att)
NCAFS_LIBRARY_CALL(nc_put_att_text)
NCAFS_LIBRARY_CALL(nc_put_var)
NCAFS_LIBRARY_CALL(nc_put_var_longlong)
NCAFS_LIBRARY_CALL(nc_put_var_string)
NCAFS_LIBRARY_CALL(nc_put_var_text)
NCAFS_LIBRARY_CALL(nc_set_var_chunk_cache)

#undef NCAFS_LIBRARY_CALL

namespace ncafs::netcdf {
// netcdf-c's text for a status (a constant string: no lock needed).
inline std::string nc_message(int status) { return nc_strerror(status); }
}  // namespace ncafs::netcdf
