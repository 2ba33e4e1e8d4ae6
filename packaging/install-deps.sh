#!/usr/bin/env bash
# Installs (idempotently) every Debian 12 package that building, testing and
# the demo need. Run as root; does nothing when all are present.
set -euo pipefail

packages=(
  # build
  cmake g++ make pkg-config
  git  # packaging/CMakeLists.txt: the .deb's Maintainer and changelog date from the last commit
  ccache  # tests/run.sh compiles through it when present: later runs reuse objects
  libseccomp-dev  # fs/syscall_filter: the serving daemon's system-call filter
  libfuse3-dev fuse3 libnetcdf-dev nlohmann-json3-dev zlib1g-dev
  libsimdjson-dev  # the aggregation JSON (a million partitions) read by simdjson
  libgtest-dev libudunits2-dev udunits-bin libprotobuf-dev protobuf-compiler
  # tests and demo: independent netCDF readers and writers
  netcdf-bin nco python3 python3-netcdf4 python3-numpy python3-scipy python3-protobuf
  pnetcdf-bin
  # client tests of the views (tests/e2e/test_exact.py): CDO's diffn, xarray's
  # unlimited dimensions; libhdf5-dev to switch HDF5 error printing off per thread
  cdo python3-xarray libhdf5-dev
  python3-h5py  # tests write HDF5 files netCDF4-python cannot (external storage, virtual datasets, links)
  python3-h5netcdf  # tests/security/test_field_corpus.py: netCDF-4 files as h5netcdf writes them (dimension scales)
  libzstd-dev liblz4-dev libblosc-dev  # codecs/zarr: the Zarr codecs of reference sets
  libbz2-dev  # codecs/zarr: numcodecs BZ2 chunks of reference sets
  liblzma-dev  # codecs/zarr: numcodecs LZMA chunks of reference sets
  libdeflate-dev  # codecs/inflate: zlib/gzip chunks of netCDF-4 and Zarr
  python3-numcodecs python3-zarr  # tests/reference_set: chunks encoded by numcodecs, read by zarr
  python3-zstandard  # tests/reference_set: zstd frames written independently of numcodecs
  libssl-dev  # remote/: HMAC-SHA-256 names of the disk cache; tests/vds: SHA-1 of decoded VDS arrays
  strace  # tests/e2e/test_many_partitions.py: system calls per partition of a read
  gdb  # tests/bench/read_route_stacks.py: the read route's stacks (docs/design.md)
  # packaging: .deb, man page checks, systemd unit checks
  dpkg-dev groff-base systemd
  # the package under a real systemd (tests/packaging/nspawn_systemd.py: a
  # debootstrapped Debian 12 booted by systemd-nspawn), and lintian on the .deb
  debootstrap systemd-container lintian
  # fuzzing; tests/run.sh links its clang tree with lld. libclang-rt-14-dev holds
  # the ASan/UBSan runtimes and libFuzzer, only recommended by clang (which
  # --no-install-recommends leaves out)
  clang lld libclang-rt-14-dev
  # remote/: libcurl, OpenSSL flavour (libnetcdf-dev accepts it in place of the
  # GnuTLS one); tests/remote: nginx, botocore's signer, openssl for a
  # self-signed HTTPS certificate
  libcurl4-openssl-dev nginx-light python3-botocore openssl
  # tests/bench/remote_bench.py: xarray over the same URLs (fsspec's HTTP), curl
  python3-fsspec python3-aiohttp curl
  # tests/kerchunk: reference sets read by fsspec + zarr (and xarray's zarr engine);
  # tests/bench/kerchunk_bench.py: xarray + Dask over them
  python3-zarr python3-numcodecs python3-dask
  # tests/zarr_view: GDAL's Zarr driver (gdalmdiminfo, gdal_translate, gdalmdimtranslate) reads the
  # .zarr views; Dask's distributed scheduler (worker processes) reads them over HTTP
  gdal-bin python3-distributed
)
# tests/remote installs the npm package s3rver at test time: npm unless some
# node distribution already brings its own.
command -v npm >/dev/null || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}; run as root to install them" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
