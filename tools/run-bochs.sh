#!/bin/sh
# Boot a ferry ISO in Bochs (Intel VMX with EPT), COM1 on this terminal.
# Usage: run-bochs.sh ISO [CPUS] [MEGS]
set -eu
iso=$(realpath "$1") cpus=${2:-2} megs=${3:-256}
dir=$(mktemp -d)
bpid=""
# dash runs no EXIT trap on a signal it has no trap for: INT, TERM and HUP
# exit through it too, so that Bochs is stopped and the directory removed
cleanup() {
	if [ -n "$bpid" ]; then
		kill "$bpid" 2>/dev/null || :
		wait "$bpid" 2>/dev/null || :
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
# ips: Bochs's emulated second is this many instructions; 50M, not 200M,
# boots faster and receives faster (its NIC polls once per emulated ms), as
# measured for the tests (tests/integration/ferry_harness.py)
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$dir/bochsrc" <<RC
megs: $megs
cpu: model=corei7_skylake_x, count=$cpus, ips=${FERRY_BOCHS_IPS:-50000000}
romimage: file=/usr/share/bochs/BIOS-bochs-latest
vgaromimage: file=/usr/share/vgabios/vgabios.bin
ata0-master: type=cdrom, path=$iso, status=inserted
boot: cdrom
display_library: rfb, options="timeout=0"
com1: enabled=1, mode=socket-server, dev=localhost:$port
log: $dir/bochs.log
sound: waveoutdrv=dummy, waveindrv=dummy, midioutdrv=dummy
panic: action=fatal
RC
echo "run-bochs: Bochs is slow; the prompt takes a minute or two. Ctrl-] ends the session."
# Bochs asks whether to start ("c" continues) and must not see its input
# end: a FIFO this script holds open for writing, which no process outlives
mkfifo "$dir/in"
bochs -q -f "$dir/bochsrc" <"$dir/in" >"$dir/bochs.out" 2>&1 &
bpid=$!
exec 3>"$dir/in"
echo c >&3
sleep 2
# socat gives a raw terminal on the serial socket; Ctrl-] ends it at once
socat -,raw,echo=0,escape=0x1d TCP:localhost:"$port",retry=20,interval=0.5 || true
