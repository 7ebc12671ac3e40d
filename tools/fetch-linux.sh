#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Debian 12's stock kernel and a busybox initramfs for Linux guests, cached
# under build/linux/ (nothing is installed on this machine):
#
#   tools/fetch-linux.sh [DIR]     default DIR: build/linux
#
# DIR/vmlinuz     the kernel of the package linux-image-amd64 depends on,
#                 as the .deb ships it (downloaded with apt-get download)
# DIR/vmlinux     the kernel inside vmlinuz, unpacked, for ferry's PVH entry
#                 (tools/vmlinux-from-bzimage.py): it boots without the
#                 decompressor, which is most of a boot under Bochs
# DIR/initrd      busybox (from busybox-static) whose /init gives a shell on
#                 the console (tools/mkinitramfs.sh), with the e1000,
#                 virtio-net (PCI) and pvpanic (PCI) drivers, which Debian
#                 builds as modules
# Does nothing when all three are there and the initrd was made with today's
# module list (DIR/initrd.modules).  Needs apt; root or sudo when the lists
# are stale (apt-get update: when they name no kernel, or one the mirror no
# longer has).
set -eu
dir=${1:-build/linux}
top=$(cd "$(dirname "$0")/.." && pwd)
mods="e1000 virtio_pci virtio_net pvpanic_pci"
# what the initrd is made of: the modules, and the scripts and sources that
# make it (an edited /init or guest tool makes a new one)
made="$mods $(cat "$top/tools/mkinitramfs.sh" "$top"/guest/linux/*.c | sha256sum | cut -c1-16)"
[ -s "$dir/vmlinuz" ] && [ -s "$dir/vmlinux" ] && [ -s "$dir/initrd" ] &&
	[ "$(cat "$dir/initrd.modules" 2>/dev/null)" = "$made" ] && exit 0
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo	# as tools/deps.sh

# the kernel package linux-image-amd64 depends on, in the local apt lists
kernel_pkg() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n 1
}
# fresh lists, their signatures checked as always
apt_update() {
	echo "fetch-linux: apt-get update"
	$SUDO apt-get update -qq
}
# one_kernel: the version of the kernel in $dir/root when it holds exactly
# one, whole (vmlinuz and the module trees the initrd takes), else nothing
one_kernel() {
	set -- "$dir"/root/lib/modules/*
	[ $# = 1 ] && [ -d "$1/kernel/drivers/virtio" ] && [ -d "$1/kernel/drivers/misc/pvpanic" ] &&
		[ -s "$dir/root/boot/vmlinuz-${1##*/}" ] && [ "$(ls "$dir"/root/boot/vmlinuz-*)" = \
		"$dir/root/boot/vmlinuz-${1##*/}" ] && echo "${1##*/}"
	return 0
}

kver=$(one_kernel)
if [ -z "$kver" ]; then
	pkg=$(kernel_pkg)
	[ -n "$pkg" ] || { apt_update; pkg=$(kernel_pkg); }
	[ -n "$pkg" ] || { echo "fetch-linux: apt-cache names no kernel for linux-image-amd64" >&2; exit 1; }
	echo "fetch-linux: downloading $pkg into $dir (not installed)"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	trap 'exit 130' INT TERM HUP	# dash runs no EXIT trap on a signal it has none for
	if ! (cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root "$pkg"); then
		# the mirror drops a kernel's .deb once a newer one is out (a point
		# release, a security update) while the local lists still name it
		echo "fetch-linux: $pkg not downloaded: updating the lists and trying once more" >&2
		apt_update
		pkg=$(kernel_pkg)
		[ -n "$pkg" ] || { echo "fetch-linux: apt-cache names no kernel for linux-image-amd64" >&2; exit 1; }
		rm -f "$tmp"/*.deb
		(cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root "$pkg") ||
			{ echo "fetch-linux: apt-get download $pkg failed" >&2; exit 1; }
	fi
	# an empty tree each time: one kernel and its own modules, never a mix
	# with an older package's
	rm -rf "$dir/root" "$dir/root.new"
	mkdir -p "$dir/root.new"
	dpkg-deb --fsys-tarfile "$tmp"/*.deb |
		tar -x -C "$dir/root.new" --wildcards './boot/*' './lib/modules/*/kernel/drivers/net/*' \
		'./lib/modules/*/kernel/drivers/virtio/*' './lib/modules/*/kernel/net/core/*' \
		'./lib/modules/*/kernel/drivers/misc/pvpanic/*'
	mv "$dir/root.new" "$dir/root"
	kver=$(one_kernel)
	[ -n "$kver" ] || { echo "fetch-linux: $pkg holds no kernel with virtio and pvpanic modules" >&2; exit 1; }
fi
cp "$dir/root/boot/vmlinuz-$kver" "$dir/vmlinuz.tmp"
mv "$dir/vmlinuz.tmp" "$dir/vmlinuz"
"${PYTHON:-python3}" "$top/tools/vmlinux-from-bzimage.py" "$dir/vmlinuz" "$dir/vmlinux"
"$top/tools/mkinitramfs.sh" "$dir/root" "$dir/initrd" $mods
echo "$made" > "$dir/initrd.modules"
