#!/usr/bin/env bash
# Rebuilds the sysfs fixture trees in this directory. Each tree holds only
# the files pin.Discover reads, with the kernel's layout and values modeled
# on real machines. dgx/ uses the kernel's relative symbolic links
# (bus/pci/devices/*, class/nvme/*, device); the others use plain
# directories and the controller's address file, the layout pin also
# accepts where symlinks cannot be kept.
set -euo pipefail
cd "$(dirname "$0")"

w() { # w FILE CONTENT: write CONTENT and a newline, as sysfs does
	mkdir -p "$(dirname "$1")"
	printf '%s\n' "$2" >"$1"
}
siblings() { # siblings ROOT FIRST LAST OFFSET: cpu i and i+OFFSET are one core
	local r=$1 i
	for ((i = $2; i <= $3; i++)); do
		w "$r/devices/system/cpu/cpu$i/topology/thread_siblings_list" "$i,$((i + $4))"
		w "$r/devices/system/cpu/cpu$((i + $4))/topology/thread_siblings_list" "$i,$((i + $4))"
	done
}
pcidev() { # pcidev ROOT REALPATH VENDOR CLASS NODE LOCAL [link]
	local r=$1 p=$1/$2
	w "$p/vendor" "$3"
	w "$p/class" "$4"
	w "$p/numa_node" "$5"
	w "$p/local_cpulist" "$6"
	local a
	a=$(basename "$2")
	mkdir -p "$r/bus/pci/devices"
	if [[ ${7:-} == link ]]; then
		ln -sfn "../../../$2" "$r/bus/pci/devices/$a"
	else
		mkdir -p "$r/bus/pci/devices/$a"
		cp "$p"/* "$r/bus/pci/devices/$a/"
	fi
}
nvme_link() { # nvme_link ROOT PCIREALPATH CTRL NS...: kernel layout with symlinks
	local r=$1 pci=$2 c=$3
	shift 3
	local cd=$r/$pci/nvme/$c
	mkdir -p "$cd" "$r/class/nvme"
	ln -sfn ../../../$(basename "$pci") "$cd/device"
	w "$cd/address" "$(basename "$pci")"
	w "$cd/transport" pcie
	for ns in "$@"; do mkdir -p "$cd/$ns"; w "$cd/$ns/size" 7501476528; done
	ln -sfn "../../$pci/nvme/$c" "$r/class/nvme/$c"
}
nvme_plain() { # nvme_plain ROOT ADDR NODE CTRL NS...: no symlinks
	local r=$1 addr=$2 node=$3 c=$4
	shift 4
	local cd=$r/class/nvme/$c
	w "$cd/address" "$addr"
	w "$cd/transport" pcie
	w "$cd/device/numa_node" "$node"
	for ns in "$@"; do mkdir -p "$cd/$ns"; w "$cd/$ns/size" 3907029168; done
}

# dgx: two-socket 8-GPU server (DGX H100-like): 2 x 56 cores with HT
# siblings (cpu i and i+112), 4 H100 (3D controller) per node, one
# NVSwitch (NVIDIA bridge, not a GPU), an ASPEED BMC VGA (not a GPU) and
# 8 NVMe, 4 per node; nvme3 shows native multipath's hidden nvme3c3n1.
r=dgx
rm -rf "$r"
n0=0-55,112-167
n1=56-111,168-223
w $r/devices/system/cpu/online 0-223
siblings $r 0 111 112
w $r/devices/system/node/node0/cpulist $n0
w $r/devices/system/node/node0/distance "10 21"
w $r/devices/system/node/node1/cpulist $n1
w $r/devices/system/node/node1/distance "21 10"
for gpu in 15:1b 3d:43 4c:52 5b:61; do
	rp=${gpu%%:*} b=${gpu##*:}
	pcidev $r devices/pci0000:$rp/0000:$rp:01.0/0000:$b:00.0 0x10de 0x030200 0 $n0 link
done
for gpu in 97:9d bd:c3 cb:d1 d9:df; do
	rp=${gpu%%:*} b=${gpu##*:}
	pcidev $r devices/pci0000:$rp/0000:$rp:01.0/0000:$b:00.0 0x10de 0x030200 1 $n1 link
done
pcidev $r devices/pci0000:00/0000:00:1c.0/0000:05:00.0 0x10de 0x068000 0 $n0 link # NVSwitch
pcidev $r devices/pci0000:00/0000:00:1c.4/0000:03:00.0 0x1a03 0x030000 0 $n0 link # ASPEED
k=0
for nv in 15:24:0 15:25:0 3d:4c:0 3d:4d:0 97:a7:1 97:a8:1 bd:ce:1 bd:cf:1; do
	IFS=: read -r rp b node <<<"$nv"
	pci=devices/pci0000:$rp/0000:$rp:02.0/0000:$b:00.0
	if [[ $node == 0 ]]; then l=$n0; else l=$n1; fi
	pcidev $r $pci 0x144d 0x010802 "$node" "$l" link
	if [[ $k == 3 ]]; then ns=nvme3c3n1; else ns=nvme${k}n1; fi
	nvme_link $r $pci nvme$k $ns
	k=$((k + 1))
done

# workstation: one socket, 16 cores with HT (cpu i and i+16), one GeForce
# (VGA) plus its HDMI audio function, one NVMe; numa_node is -1 as on
# most desktops. No symlinks.
r=workstation
rm -rf "$r"
w $r/devices/system/cpu/online 0-31
siblings $r 0 15 16
w $r/devices/system/node/node0/cpulist 0-31
w $r/devices/system/node/node0/distance 10
pcidev $r devices/pci0000:00/0000:00:01.0/0000:01:00.0 0x10de 0x030000 -1 0-31
pcidev $r devices/pci0000:00/0000:00:01.0/0000:01:00.1 0x10de 0x040300 -1 0-31
pcidev $r devices/pci0000:00/0000:00:1b.0/0000:02:00.0 0x144d 0x010802 -1 0-31
nvme_plain $r 0000:02:00.0 -1 nvme0 nvme0n1
rm -rf "$r/devices/pci0000:00"

# nogpu: two sockets of 8 cores, no HT and no sibling files, an ASPEED VGA
# and a NIC but no GPU, one NVMe per node (nvme1 on node 1 probed first).
r=nogpu
rm -rf "$r"
w $r/devices/system/cpu/online 0-15
w $r/devices/system/node/node0/cpulist 0-7
w $r/devices/system/node/node0/distance "10 20"
w $r/devices/system/node/node1/cpulist 8-15
w $r/devices/system/node/node1/distance "20 10"
pcidev $r devices/pci0000:00/0000:00:1c.4/0000:03:00.0 0x1a03 0x030000 0 0-7
pcidev $r devices/pci0000:5d/0000:5d:00.0/0000:5e:00.0 0x8086 0x020000 0 0-7
nvme_plain $r 0000:18:00.0 0 nvme1 nvme1n1 nvme1n2
nvme_plain $r 0000:af:00.0 1 nvme0 nvme0n1
rm -rf "$r/devices/pci0000:00" "$r/devices/pci0000:5d"

# cxl: two sockets of 16 CPUs and a CPU-less memory node (CXL expander)
# nearer to node 0; no GPU, no NVMe, no PCI directory at all.
r=cxl
rm -rf "$r"
w $r/devices/system/cpu/online 0-31
w $r/devices/system/node/node0/cpulist 0-15
w $r/devices/system/node/node0/distance "10 21 14"
w $r/devices/system/node/node1/cpulist 16-31
w $r/devices/system/node/node1/distance "21 10 24"
w $r/devices/system/node/node2/cpulist ""
w $r/devices/system/node/node2/distance "14 24 10"

# offline: one node of 8 CPUs with cpu 6 taken offline; one AMD Instinct
# (display controller 0x0380) on node 0.
r=offline
rm -rf "$r"
w $r/devices/system/cpu/online 0-5,7
w $r/devices/system/node/node0/cpulist 0-7
w $r/devices/system/node/node0/distance 10
pcidev $r devices/pci0000:00/0000:00:01.1/0000:c1:00.0 0x1002 0x038000 0 0-7
rm -rf "$r/devices/pci0000:00"
