# tmpfs-lib.sh - sourced by the tests that need a real small filesystem.
# tmpfs_setup NAME SIZE: a temp dir $T with a tmpfs of SIZE mounted on $M
# (needs root: without it the test FAILS, never skips), and an EXIT trap
# that kills every pid in $pids, unmounts and removes $T on every path.
# The caller defines fail() (it is only called after the trap is set).
tmpfs_setup() {
	T=$(mktemp -d "/tmp/railmon-test-$1.XXXXXX")
	M=$T/fs
	pids=()
	trap tmpfs_cleanup EXIT
	mkdir "$M"
	mount -t tmpfs -o "size=$2" tmpfs "$M" || fail "cannot mount a $2 tmpfs on $M: this test needs root"
}

tmpfs_cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	umount -l "$M" 2>/dev/null || true
	rm -rf "$T"
}
