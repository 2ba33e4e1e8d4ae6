#!/usr/bin/env bash
# The demo: installs dependencies, builds ncafs (release), and shows it at work:
# twelve monthly partition files and their NCA aggregation file are generated
# in /tmp/ncafs-demo/source, the tree is mounted at /tmp/ncafs-demo/mnt, and
# the aggregation is read there as one ordinary netCDF file.
set -euo pipefail
cd "$(dirname "$0")/.."
packaging/install-deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DNCAFS_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j2
echo "ncafs built in build/release"
ncafs=$PWD/build/release/cli/ncafs

demo=${NCAFS_DEMO_DIR:-/tmp/ncafs-demo}
source_dir=$demo/source
mnt=$demo/mnt
if mountpoint -q "$mnt" 2>/dev/null; then fusermount3 -u "$mnt"; fi
rm -rf "$source_dir"
mkdir -p "$source_dir/climate" "$mnt"

# Twelve monthly partitions (time split, 2 steps each) + climate/monthly.nca,
# written with netCDF4-python by the generator the end-to-end tests use.
/usr/bin/python3 tests/e2e/make_aggregations.py "$source_dir/climate" monthly >/dev/null

show() { printf '\n$ %s\n' "$*"; "$@"; }
show ls -l "$source_dir/climate"
"$ncafs" "$source_dir" "$mnt"        # returns once mounted; the daemon logs to syslog
show ls -l "$mnt/climate"
show ncdump -h "$mnt/climate/monthly.nc"
show ncdump -v time "$mnt/climate/monthly.nc"
echo
echo '$ ncks -H -C -v tas -d lat,0 -d lon,0 -d time,0,23,6 (a point time series)'
ncks -H -C -v tas -d lat,0 -d lon,0 -d time,0,23,6 "$mnt/climate/monthly.nc"
echo
echo '$ head -2 monthly.ds (the same dataset as ds-1.0: one JSON header line, then the values)'
head -2 "$mnt/climate/monthly.ds" | cut -c1-300

cat <<MSG

ncafs is still mounted: $source_dir is served at $mnt
(monthly.nca appears as monthly.nc, one netCDF classic file built on demand
from the twelve part_*.nc files; every dataset also appears as NAME.ds,
NAME.ncs, NAME.vds and the Zarr store NAME.zarr/: ds-1.0, ncstream, OpenVDS
and Zarr v2). Explore it with ncdump, ncks, Python, zarr...
Export the virtual file without FUSE: $ncafs export $source_dir/climate/monthly.nca -o /tmp/monthly.nc
  (or --format ds|ncs, --deflate for compressed ncstream)
Unmount with:  fusermount3 -u $mnt
MSG
