#!/bin/sh
# Install the Debian 12 packages ferry's build, run and tests need; does
# nothing when all are there.  Needs root (or sudo) only when something is missing.
set -eu
PKGS="gcc make binutils git qemu-system-x86 bochs bochsbios vgabios grub-pc-bin grub-efi-amd64-bin grub-common
xorriso mtools ovmf newlib-source xz-utils file libcmocka-dev python3 python3-pytest python3-pytest-xdist python3-pexpect
iproute2 socat netcat-openbsd python3-scapy iputils-ping tcpdump busybox-static cpio
libbearssl-dev python3-cryptography clang libclang-rt-14-dev"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing:$missing"
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $missing
