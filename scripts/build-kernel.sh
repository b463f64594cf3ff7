#!/usr/bin/env bash
# Build the lab kernel: Debian's linux-source-6.12 (or KSRC), our quilt
# series on top, config/lab.config and config/variants/$VARIANT.config
# merged onto tinyconfig, ccache outside the repository.
# Output: $KOBJ/arch/x86/boot/bzImage (build/obj for stock, build/obj-VARIANT
# for the others; every variant shares the patched source and ccache).
#
#   VARIANT=stock|nohook|rt   which kernel (default stock)
#   KSRC=/path/to/linux-6.12  use an existing tree instead of unpacking one
#   JOBS=N                    parallel jobs (default: nproc)
#   --source-only             only unpack linux-source-6.12 into build/src/
#                             (make here: grep's tree, no kernel build)
#   --deb                     also package it (bindeb-pkg) with the lab's
#                             modules in lib/modules/<release>/extra/,
#                             into build/deb/VARIANT/ (make deb)
#   KDEB_COMPRESS=gzip|xz|zstd|none  the packages' compression (default
#                             gzip: xz took 70 of the packaging's 120 CPU
#                             seconds for a quarter smaller files)
#   Example:  VARIANT=rt scripts/build-kernel.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"
lab_help "$@"
deb=0 source_only=0
case ${1:-} in
'') ;;
--deb) deb=1 ;;
--source-only) source_only=1 ;;
*) bad_arg "unknown argument '$1' (see --help)" ;;
esac
compress=${KDEB_COMPRESS:-gzip}
case $compress in
gzip | xz | zstd | none) ;;
*) bad_arg "KDEB_COMPRESS must be gzip, xz, zstd or none, not '$compress'" ;;
esac

JOBS=${JOBS:-$(nproc)}
# Kbuild reads W (warnings) and V; an outer make's W=<workload> must not
# reach it (see the Makefile), and its MAKEFLAGS carry such overrides too.
unset W MAKEFLAGS MFLAGS MAKEOVERRIDES
check_variant "$VARIANT"
BASE_FRAGMENT=$LAB_ROOT/config/lab.config
VARIANT_FRAGMENT=$LAB_ROOT/config/variants/$VARIANT.config
SRC_TARBALL=/usr/src/linux-source-6.12.tar.xz

[ "$source_only" -eq 1 ] || for tool in quilt flex bison bc ccache; do
	command -v "$tool" >/dev/null || die "$tool is missing; run 'make deps' first"
done

# --- 1. The source tree ------------------------------------------------------
if [ -n "${KSRC:-}" ]; then
	[ -f "$KSRC/Makefile" ] || die "KSRC=$KSRC is not a kernel tree"
	KSRC=$(cd "$KSRC" && pwd)
else
	if [ ! -f "$SRC_TARBALL" ]; then
		log "installing linux-source-6.12"
		as_root apt-get install -y --no-install-recommends linux-source-6.12
	fi
	KSRC=$LAB_BUILD/src/linux-source-6.12
	if [ ! -f "$KSRC/.lab-unpacked" ]; then
		log "unpacking $SRC_TARBALL"
		rm -rf "$LAB_BUILD/src"
		mkdir -p "$LAB_BUILD/src"
		tar -C "$LAB_BUILD/src" -xf "$SRC_TARBALL"
		touch "$KSRC/.lab-unpacked"
	fi
fi
kver=$(make -s -C "$KSRC" kernelversion)
case $kver in
6.12.*) ;;
*) die "$KSRC is Linux $kver; the series is for 6.12" ;;
esac
if [ "$source_only" -eq 1 ]; then
	log "Linux $kver's source in $KSRC"
	exit 0
fi

# --- 2. The series -------------------------------------------------------------
# quilt finds 'series' and 'patches' at the top of the tree; point both at
# ours so 'quilt' works in the tree as it would in a real patch queue.
ln -sfn "$LAB_ROOT/patches" "$KSRC/patches"
ln -sfn "$LAB_ROOT/series" "$KSRC/series"
stamp=$KSRC/.pc/.lab-applied
if [ -d "$KSRC/.pc" ] && [ -f "$stamp" ] &&
	[ -z "$(find "$LAB_ROOT/series" "$LAB_ROOT/patches" -newer "$stamp" -print -quit)" ]; then
	log "series already applied to $KSRC"
else
	if [ -d "$KSRC/.pc" ] && (cd "$KSRC" && quilt applied >/dev/null 2>&1); then
		log "series changed: popping the applied patches"
		(cd "$KSRC" && quilt pop -a -f -q >/dev/null)
	fi
	log "applying the series with quilt (no fuzz allowed)"
	if ! (cd "$KSRC" && quilt push -a -q --fuzz=0); then
		die "the series does not apply cleanly to $KSRC (see quilt's message above)"
	fi
	touch "$stamp"
fi

# --- 3. The configuration ----------------------------------------------------
mkdir -p "$LAB_CACHE/ccache"
export CCACHE_DIR=${CCACHE_DIR:-$LAB_CACHE/ccache}
export CCACHE_BASEDIR=$LAB_ROOT CCACHE_NOHASHDIR=true CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
# Fixed build identity so rebuilds hit the cache and kernels compare equal.
export KBUILD_BUILD_USER=lab KBUILD_BUILD_HOST=kernel-lab
export KBUILD_BUILD_TIMESTAMP='2024-11-17 00:00:00 UTC'
# The build number bindeb-pkg gives (KDEB_PKGVERSION ends with it, below):
# with another one, make deb relinked vmlinux and rewrote the bzImage of
# build/obj while make test's VMs booted it ('#lab1' in uname -v of a
# boot after the host tests' make deb).
export KBUILD_BUILD_VERSION=lab1
# The same objects from the same commit, whoever builds them: a second
# tree of one commit missed ccache whole when built from a login shell
# after a build from CI's bare environment, for two reasons.
# Kconfig records the version of any rustc on PATH (RUSTC_VERSION, in
# autoconf.h): the lab's configs use no Rust, and RUSTC=false makes it 0
# everywhere.  And ccache hashes the locale (LANG, LC_*): the compiler
# runs in the C locale, as from an empty environment.
kmake() {
	env -u LANG -u LC_ALL -u LC_CTYPE -u LC_MESSAGES make -s -C "$KSRC" O="$KOBJ" \
		CC="ccache gcc" HOSTCC="ccache gcc" RUSTC=false "$@"
}

mkdir -p "$KOBJ"
# One build of an object tree at a time: make test and make sweep started
# together each built the stock kernel in build/obj, and each removed the
# other's temporary files.  The second waits for the first.
exec 7>"$KOBJ.lock"
if ! flock -n 7; then
	log "another build of ${KOBJ#"$LAB_ROOT"/} is running; waiting for it"
	flock 7
fi

# The fragment this variant is built from: the base, then the variant's lines.
FRAGMENT=$KOBJ/lab-fragment.config
cat "$BASE_FRAGMENT" "$VARIANT_FRAGMENT" >"$FRAGMENT.new"
if cmp -s "$FRAGMENT.new" "$FRAGMENT"; then
	rm "$FRAGMENT.new"
else
	mv "$FRAGMENT.new" "$FRAGMENT"
fi
cfg_stamp=$KOBJ/.lab-config
if [ ! -f "$KOBJ/.config" ] || [ ! -f "$cfg_stamp" ] || [ "$FRAGMENT" -nt "$cfg_stamp" ]; then
	log "configuring $VARIANT: tinyconfig + config/lab.config + config/variants/$VARIANT.config"
	kmake tinyconfig >/dev/null
	KCONFIG_CONFIG="$KOBJ/.config" "$KSRC/scripts/kconfig/merge_config.sh" \
		-m -O "$KOBJ" "$KOBJ/.config" "$FRAGMENT" >"$KOBJ/merge_config.log"
	kmake olddefconfig >/dev/null
	# merge_config only warns; a line that did not survive is an error here.
	# A later line for the same option (the variant's) overrides an earlier one.
	declare -A want=()
	while IFS= read -r line; do
		case $line in
		CONFIG_*=*) opt=${line%%=*} ;;
		"# CONFIG_"*" is not set") opt=${line#"# "}; opt=${opt%% *} ;;
		*) continue ;;
		esac
		want[$opt]=$line
	done <"$FRAGMENT"
	missing=0
	for opt in "${!want[@]}"; do
		line=${want[$opt]}
		if [[ $line == "#"* ]]; then
			if grep -q "^$opt=" "$KOBJ/.config"; then
				log "config: $opt should be off but is $(grep "^$opt=" "$KOBJ/.config")"
				missing=1
			fi
		elif ! grep -qxF "$line" "$KOBJ/.config"; then
			log "config: wanted $line, got: $(grep "^${opt}[= ]" "$KOBJ/.config" || echo unset)"
			missing=1
		fi
	done
	[ "$missing" -eq 0 ] || die "the config fragments did not apply (see above)"
	touch "$cfg_stamp"
fi

# --- 4. Build --------------------------------------------------------------------
log "building Linux $kver ($VARIANT) in ${KOBJ#"$LAB_ROOT"/} with $JOBS jobs (ccache: $CCACHE_DIR)"
start=$(date +%s)
kmake -j"$JOBS"
# The uapi headers (<linux/irqhook.h>) for userspace/, in $KOBJ/usr/include.
kmake headers
log "built $(kmake -s kernelrelease) in $(($(date +%s) - start)) s: $KOBJ/arch/x86/boot/bzImage"

# --- 5. Debian packages (make deb) ---------------------------------------------
if [ "$deb" -eq 1 ]; then
	command -v dpkg-buildpackage >/dev/null || die "dpkg-buildpackage is missing; run 'make deps'"
	rel=$(kmake -s kernelrelease)
	make -s -C "$LAB_ROOT/modules" KDIR="$KOBJ"
	out=$LAB_BUILD/deb/$VARIANT
	rm -rf "$out"
	mkdir -p "$out"
	log "packaging $rel with bindeb-pkg into ${out#"$LAB_ROOT"/}"
	# dpkg-buildpackage leaves its files beside the object tree; collect them.
	stale=$(dirname "$KOBJ")
	rm -f "$stale"/linux-*_"$kver"-lab*.deb "$stale"/linux-upstream_"$kver"-lab*
	kmake -j"$JOBS" bindeb-pkg KDEB_PKGVERSION="$kver-$KBUILD_BUILD_VERSION" KDEB_COMPRESS="$compress" >"$out/bindeb-pkg.log" 2>&1 ||
		die "bindeb-pkg failed (see $out/bindeb-pkg.log)"
	mv "$stale"/linux-*_"$kver"-"$KBUILD_BUILD_VERSION"_*.deb "$out"/
	rm -f "$stale"/linux-upstream_"$kver"-"$KBUILD_BUILD_VERSION"*
	# The lab's own modules go into the image package, where lab_ko finds
	# them on a machine booted into it.
	image=$(find "$out" -name "linux-image-${rel}_*.deb" ! -name '*-dbg_*' | head -1)
	[ -n "$image" ] || die "bindeb-pkg made no linux-image-$rel package (see $out/bindeb-pkg.log)"
	root=$(mktemp -d)
	trap 'rm -rf "$root"' EXIT
	dpkg-deb -R "$image" "$root"
	moddir=$(find "$root" -maxdepth 3 -type d -path "*/modules/$rel" | head -1)
	[ -n "$moddir" ] || die "$image has no modules/$rel folder"
	mkdir -p "$moddir/extra"
	cp "$LAB_BUILD/modules/$rel"/*.ko "$moddir/extra/"
	# depmod's base is what holds lib/modules: the package root, or its usr/.
	depmod -b "${moddir%/lib/modules/*}" "$rel"
	if [ -f "$root/DEBIAN/md5sums" ]; then
		(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' |
			xargs -0r md5sum >DEBIAN/md5sums)
	fi
	dpkg-deb -b -Z"$compress" "$root" "$image" >/dev/null
	log "packages: $(find "$out" -name '*.deb' -printf '%f ')"
	log "install on a machine with: dpkg -i $out/linux-image-${rel}_*.deb; then boot it and run userspace/rtcompare/run.sh --here"
fi
