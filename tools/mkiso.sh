#!/bin/sh
# Build a GRUB2 ISO: mkiso.sh OUT.iso ferry.elf "guest.elf ..." [ferry.rc] [ferry cmdline]
#                   [ferry.key]
# Each guest becomes a module2 named after its file name without extension;
# the boot script (if any) becomes the module named ferry.rc, the host key
# (tools/ferry-keygen) the module named ferry.key.
# grub-mkrescue puts in a boot path for every GRUB platform installed:
# with grub-pc-bin and grub-efi-amd64-bin the one image boots from BIOS
# and from UEFI, with the same grub.cfg.
set -eu
out=$1 elf=$2 guests=$3 script=${4:-} cmdline=${5:-} key=${6:-}
# An ISO with the host's private key in it is as secret as the key: made
# mode 0600 from the start (a new file: an old one keeps its mode).
if [ -n "$key" ]; then
	umask 077
	rm -f "$out"
fi
# A private staging tree: OUT may be anywhere (make iso ISO=...), and two
# builds at once must not share one.
dir=$(mktemp -d "${TMPDIR:-/tmp}/ferry-iso.XXXXXX")
trap 'rm -rf "$dir"' EXIT
trap 'exit 130' INT TERM HUP	# dash runs no EXIT trap on a signal it has none for
mkdir -p "$dir/boot/grub" "$dir/boot/guests"
cp "$elf" "$dir/boot/ferry.elf"
cfg="$dir/boot/grub/grub.cfg"
cat > "$cfg" <<CFG
set timeout=0
set default=0
serial --unit=0 --speed=115200
terminal_input serial console
terminal_output serial console
menuentry "ferry" {
	multiboot2 /boot/ferry.elf console=com1,115200 ${cmdline}
CFG
for g in $guests; do
	name=$(basename "$g"); name=${name%.*}
	cp "$g" "$dir/boot/guests/$name"
	echo "	module2 /boot/guests/$name $name" >> "$cfg"
done
if [ -n "$script" ]; then
	cp "$script" "$dir/boot/ferry.rc"
	echo "	module2 /boot/ferry.rc ferry.rc" >> "$cfg"
fi
if [ -n "$key" ]; then
	cp "$key" "$dir/boot/ferry.key"
	echo "	module2 /boot/ferry.key ferry.key" >> "$cfg"
fi
echo "}" >> "$cfg"
[ -d /usr/lib/grub/x86_64-efi ] ||
	echo "mkiso: grub-efi-amd64-bin missing: $out boots from BIOS only" >&2
grub-mkrescue -o "$out" "$dir" >/dev/null 2>&1 || { grub-mkrescue -o "$out" "$dir"; exit 1; }
[ -z "$key" ] || chmod 600 "$out"
