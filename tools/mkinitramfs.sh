#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Build the tiny busybox initramfs that the network benchmark boots Debian's
# Linux with (tests/bench/net_vs_linux.py):
#
#   tools/mkinitramfs.sh KROOT OUT.cpio.gz [MODULE ...]
#
# KROOT is an extracted linux-image package (holds boot/vmlinuz-VER and
# lib/modules/VER/); MODULE names (default: e1000) are copied from it, with
# the modules they depend on (each .ko's own depends= list, the same as the
# package's modules.dep: virtio_net pulls in net_failover, failover, virtio,
# virtio_ring; virtio_pci pulls in virtio_pci_modern_dev and
# virtio_pci_legacy_dev; pvpanic_pci, the file pvpanic-pci.ko, pulls in
# pvpanic), and loaded by /init in dependency order: in the
# shell mode silently, each one that is there (a guest without the device
# loads the driver and it finds nothing).
# Beside busybox it carries rtcwait (guest/linux/rtcwait.c, built here,
# static, with the host's C library), which waits for the RTC's interrupts
# as hwclock does.
# Needs busybox-static (/bin/busybox), cpio, and gcc with libc6-dev.  /init reads its orders from
# the kernel command line:
#   bench.ip=A.B.C.D/N  bench.dst=A.B.C.D  bench.port=P  bench.mb=M
#   bench.mode=file|pipe   (send M MiB of zeros to DST:P; file: `cat` a tmpfs
#                           file into the socket, which busybox does with
#                           sendfile; pipe: dd | nc)
#   bench.mode=recv        (only bench.ip and bench.port needed: accept one
#                           connection on P, store the stream in tmpfs; prints
#                           "BENCH: listening on P" once the socket listens,
#                           then "BENCH: received N bytes uptime T0 T1 md5 HEX",
#                           T0 the uptime at the first byte, T1 at the end)
# and prints "BENCH: ..." lines on the console, then powers off.  Without
# any bench.* option /init is a Linux guest's shell on the console instead
# (prompt "linux# "), which is what ferry's Linux-guest tests talk to.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
kroot=$1 out=$2
shift 2
[ $# -gt 0 ] || set -- e1000
bb=/bin/busybox
if ! [ -x "$bb" ] || ! "$bb" --list | grep -qx nc; then
	echo "mkinitramfs: need busybox-static" >&2
	exit 1
fi
file -L "$bb" 2>/dev/null | grep -q "dynamically linked" && { echo "mkinitramfs: $bb is not static" >&2; exit 1; }
command -v cpio >/dev/null || { echo "mkinitramfs: need cpio" >&2; exit 1; }
# one kernel's modules: with two, the kernel and the modules could differ
n=$(find "$kroot/lib/modules" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l)
[ "$n" -le 1 ] || { echo "mkinitramfs: $kroot/lib/modules holds $n kernels' modules, not one" >&2; exit 1; }
moddir=$(find "$kroot/lib/modules" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | head -n 1)
[ -d "$moddir/kernel" ] || { echo "mkinitramfs: no modules under $kroot/lib/modules" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
trap 'exit 130' INT TERM HUP	# dash runs no EXIT trap on a signal it has none for
mkdir -p "$stage/bin" "$stage/dev" "$stage/proc" "$stage/sys" "$stage/tmp" "$stage/lib/modules"
cp "$bb" "$stage/bin/busybox"
cc -static -Os -s -std=gnu11 -Wall -Wextra -Werror -o "$stage/bin/rtcwait" "$top/guest/linux/rtcwait.c"
[ "$(id -u)" = 0 ] && mknod "$stage/dev/console" c 5 1

# find_module NAME: the path of NAME.ko[.xz|.gz|.zst] in the kernel tree
find_module() {
	n1=$1 n2=$(echo "$1" | tr _ -) n3=$(echo "$1" | tr - _)
	find "$moddir/kernel" \( -name "$n1.ko*" -o -name "$n2.ko*" -o -name "$n3.ko*" \) | head -n 1
}

# add_module NAME: copy NAME (uncompressed) after its dependencies; the
# order is recorded in /etc/modules
add_module() {
	grep -qx "$1" "$stage/etc/modules" 2>/dev/null && return 0
	src=$(find_module "$1")
	[ -n "$src" ] || { echo "mkinitramfs: module $1 not found in $moddir" >&2; exit 1; }
	ko="$stage/lib/modules/$1.ko"
	case $src in
	*.xz) xz -dc "$src" > "$ko" ;;
	*.gz) gzip -dc "$src" > "$ko" ;;
	*.zst) zstd -qdc "$src" > "$ko" ;;
	*) cp "$src" "$ko" ;;
	esac
	deps=$(tr '\0' '\n' < "$ko" | sed -n 's/^depends=//p' | head -n 1 | tr , ' ')
	for d in $deps; do
		add_module "$d"
	done
	mkdir -p "$stage/etc"
	echo "$1" >> "$stage/etc/modules"
}
mkdir -p "$stage/etc"
: > "$stage/etc/modules"
for m in "$@"; do
	add_module "$m"
done

cat > "$stage/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t devtmpfs dev /dev
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t tmpfs -o size=200m tmp /tmp

fail() {
	echo "BENCH: error: $*"
	poweroff -f
}
for w in $(cat /proc/cmdline); do
	case $w in
	bench.ip=*) ip=${w#*=} ;;
	bench.dst=*) dst=${w#*=} ;;
	bench.port=*) port=${w#*=} ;;
	bench.mb=*) mb=${w#*=} ;;
	bench.mode=*) mode=${w#*=} ;;
	esac
done
if [ -z "${ip:-}${dst:-}${port:-}${mb:-}${mode:-}" ]; then
	for m in $(cat /etc/modules); do
		[ -e /lib/modules/$m.ko ] && insmod /lib/modules/$m.ko >/dev/null 2>&1
	done
	echo "FERRY-LINUX: init ready, shell on the console"
	export PS1='linux# ' HOME=/ TERM=vt100
	exec setsid cttyhack sh
fi
if [ "${mode:-file}" = recv ]; then
	[ -n "${ip:-}" ] && [ -n "${port:-}" ] || fail "missing bench.ip/port on the command line"
else
	[ -n "${ip:-}" ] && [ -n "${dst:-}" ] && [ -n "${port:-}" ] && [ -n "${mb:-}" ] ||
		fail "missing bench.ip/dst/port/mb on the command line"
fi
for m in $(cat /etc/modules); do
	insmod /lib/modules/$m.ko || fail "insmod $m"
done
i=0
while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
ip addr add "$ip" dev eth0 || fail "no eth0"
ip link set eth0 up
i=0
while [ "$(cat /sys/class/net/eth0/operstate)" != up ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
echo "BENCH: eth0 $(cat /sys/class/net/eth0/operstate) $ip"
if [ "${mode:-file}" = recv ]; then
	# nc runs the script on the accepted socket (its stdin): the first byte
	# dates the start, cat (sendfile where it can) stores the rest; nc's own
	# copy loop would write 1 KiB at a time and shut down its sending half
	# at once (its stdin is empty)
	nc -l -p "$port" -e sh -c 'dd bs=1 count=1 of=/tmp/rx 2>/dev/null
		cut -d" " -f1 /proc/uptime > /tmp/t0
		cat >> /tmp/rx' &
	pid=$!
	hex=$(printf '%04X' "$port")
	i=0
	# a listening socket (state 0A) on the port, IPv4 or (busybox nc's
	# default) IPv6
	until cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | grep -q ":$hex 0*:0000 0A"; do
		[ $i -lt 100 ] || fail "nc does not listen on $port"
		sleep 0.1
		i=$((i + 1))
	done
	echo "BENCH: listening on $port"
	wait $pid
	rc=$?
	t1=$(cut -d' ' -f1 /proc/uptime)
	echo "BENCH: received $(wc -c < /tmp/rx) bytes uptime $(cat /tmp/t0 2>/dev/null) $t1" \
		"md5 $(md5sum < /tmp/rx | cut -d' ' -f1)"
	echo "BENCH: done rc=$rc"
	poweroff -f
fi
if [ "${mode:-file}" = file ]; then
	dd if=/dev/zero of=/tmp/data bs=1M count="$mb" 2>/dev/null || fail "cannot fill /tmp/data"
fi
echo "BENCH: sending $mb MiB to $dst:$port mode ${mode:-file}"
t0=$(cut -d' ' -f1 /proc/uptime)
if [ "${mode:-file}" = file ]; then
	nc "$dst" "$port" -e cat /tmp/data
else
	dd if=/dev/zero bs=64k count=$((mb * 16)) 2>/dev/null | nc "$dst" "$port"
fi
rc=$?
t1=$(cut -d' ' -f1 /proc/uptime)
echo "BENCH: done rc=$rc uptime $t0 $t1"
poweroff -f
INIT
chmod 755 "$stage/init"

mkdir -p "$(dirname "$out")"
(cd "$stage" && find . | cpio -o -H newc --owner=0:0 --quiet) | gzip -9 > "$out.tmp"
mv "$out.tmp" "$out"
echo "mkinitramfs: $out ($(wc -c < "$out") bytes; modules: $(tr '\n' ' ' < "$stage/etc/modules"))"
