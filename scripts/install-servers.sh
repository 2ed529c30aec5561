#!/usr/bin/env bash
# install-servers.sh DEST SPEC...: newer Redis and Valkey servers than this
# Debian release has, from the newer suites of the archive the machine's
# apt already uses, without touching the system: no package is installed,
# no libc upgraded.
#
# SPEC is KIND-VERSION@SUITE, e.g. valkey-9.1.2@forky or
# redis-8.6.3@experimental: KIND's server, tools and sentinel packages at an
# upstream VERSION (or one starting with it) from SUITE (experimental is
# resolved with sid beside it, since it only carries what differs).
#
# For each SPEC, in DEST/KIND-VERSION/:
#   - a private apt state per suite in DEST/.apt/SUITE (own sources list,
#     lists, cache and an empty dpkg status), checked against the
#     machine's Debian keyring (debian-archive-keyring);
#   - the packages and the closure of their library Depends (lib*, zlib1g),
#     unpacked with dpkg-deb -x into root/;
#   - bin/KIND-server, bin/KIND-sentinel and bin/KIND-cli: wrappers that exec
#     root's own dynamic loader on root's binary, so the binary runs on
#     root's libc and libraries (exec keeps the pid, which redistest checks).
# A SPEC whose bin/ is complete and runs is skipped: a second run needs no network.
# The apt states are removed at the end (about 100 MB a suite), so a later
# install starts from fresh lists.
# Anything missing (a suite, a package, a version) fails loudly.
set -euo pipefail

die() { echo "install-servers: $*" >&2; exit 1; }
[ $# -ge 2 ] || die "usage: $0 DEST KIND-VERSION@SUITE..."
dest=$(mkdir -p "$1" && cd "$1" && pwd); shift
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -r "$keyring" ] || die "no $keyring (Debian: apt-get install debian-archive-keyring)"
for tool in apt-get apt-cache dpkg-deb; do
	command -v "$tool" >/dev/null || die "$tool is missing: this needs a Debian machine"
done

# The archive the machine's apt uses: the first non-security URI, as the
# Makefile's deps target finds it for bookworm-backports.
uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | sed -n 's/^URIs: *//p' | tr ' ' '\n' | grep -v security | head -n 1 || true)
[ -n "$uri" ] || uri=$(grep -h '^deb ' /etc/apt/sources.list 2>/dev/null | grep -v security | awk '{print $2}' | head -n 1 || true)
[ -n "$uri" ] || die "no Debian archive URI in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list"
trap 'rm -rf "$dest/.apt"' EXIT

# aptopts SUITE: the options that point apt-get and apt-cache at SUITE's
# private state, set up (and updated) on first use.
aptopts() {
	local st="$dest/.apt/$1"
	opts=(-o "Dir::Etc::sourcelist=$st/sources.list" -o "Dir::Etc::sourceparts=$st/empty"
		-o "Dir::Etc::preferences=$st/empty/none" -o "Dir::Etc::preferencesparts=$st/empty"
		-o "Dir::State::Lists=$st/lists" -o "Dir::State::status=$st/status"
		-o "Dir::Cache=$st/cache" -o "Dir::Cache::pkgcache=pkgcache.bin"
		-o "Dir::Cache::srcpkgcache=srcpkgcache.bin" -o "Acquire::Languages=none"
		-o "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false"
		-o "Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false"
		-o "Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false"
		-o "Acquire::IndexTargets::deb::DEP-11-icons-hidpi::DefaultEnabled=false"
		-o "APT::Get::List-Cleanup=false" -o "APT::Sandbox::User=root")
	[ -f "$st/updated" ] && return
	mkdir -p "$st/lists/partial" "$st/cache/archives/partial" "$st/empty"
	: > "$st/status"
	local suites=$1
	[ "$1" = experimental ] && suites="sid experimental"
	for s in $suites; do echo "deb [signed-by=$keyring] $uri $s main"; done > "$st/sources.list"
	echo "install-servers: apt-get update for $suites (private state in $st)"
	# An unsigned or badly signed Release is an error, not a warning.
	apt-get "${opts[@]}" -o APT::Update::Error-Mode=any -qq update || die "apt-get update of $suites from $uri failed"
	touch "$st/updated"
}

# candidate PKG SUITE: the version of PKG that SUITE serves, empty if none.
candidate() {
	apt-cache "${opts[@]}" show "$1/$2" 2>/dev/null | sed -n 's/^Version: //p' | head -n 1
}

# libdeps PKG...: the closure of PKG's Depends and Pre-Depends restricted
# to shared libraries (lib*, zlib1g): the first of each set of
# alternatives, the suite's candidate version of each.
libdeps() {
	local -A seen=()
	local queue=("$@") p d
	while [ ${#queue[@]} -gt 0 ]; do
		p=${queue[0]}; queue=("${queue[@]:1}")
		for d in $(apt-cache "${opts[@]}" show --no-all-versions "$p" |
			sed -n 's/^\(Pre-\)\{0,1\}Depends: //p' | tr ',' '\n' |
			sed 's/|.*//; s/(.*)//; s/:any//; s/ //g' | grep -E '^(lib|zlib1g)' || true); do
			[ -n "${seen[$d]:-}" ] && continue
			seen[$d]=1; queue+=("$d"); echo "$d"
		done
	done
}

for spec in "$@"; do
	[[ $spec =~ ^(redis|valkey)-([0-9][0-9.]*)@([a-z]+)$ ]] || die "bad spec $spec: want KIND-VERSION@SUITE, KIND redis or valkey"
	kind=${BASH_REMATCH[1]} want=${BASH_REMATCH[2]} suite=${BASH_REMATCH[3]}
	dir="$dest/$kind-$want"
	# Installed, and its wrappers still point at it (the checkout may have moved).
	if [ -x "$dir/bin/$kind-sentinel" ] && [ -x "$dir/bin/$kind-cli" ] && "$dir/bin/$kind-server" --version >/dev/null 2>&1; then
		echo "install-servers: $kind-$want: $("$dir/bin/$kind-server" --version)"
		continue
	fi
	aptopts "$suite"
	pkgs=("$kind-server" "$kind-tools" "$kind-sentinel")
	for p in "${pkgs[@]}"; do
		v=$(candidate "$p" "$suite")
		[ -n "$v" ] || die "$suite serves no $p (from $uri)"
		up=${v#*:}; up=${up%-*}; up=${up%%[+~]*} # 5:8.0.2-1, 8.1.1+dfsg1-3
		[[ $up == "$want" || $up == "$want".* ]] || die "$suite serves $p $v, not $want: change the spec ($spec)"
	done
	rm -rf "$dir"; mkdir -p "$dir/debs" "$dir/root" "$dir/bin"
	libs=$(libdeps "${pkgs[@]/%//$suite}")
	echo "install-servers: $kind-$want: downloading ${pkgs[*]} from $suite and" $libs
	# shellcheck disable=SC2086 # libs is a list of package names
	(cd "$dir/debs" && apt-get "${opts[@]}" -qq download "${pkgs[@]/%//$suite}" $libs) ||
		die "apt-get download from $suite failed"
	for deb in "$dir"/debs/*.deb; do dpkg-deb -x "$deb" "$dir/root"; done
	rm -rf "$dir/debs"
	# The loader: the regular file, not the /lib64 symlink, which points
	# outside root.
	ld=$(find "$dir/root" -name 'ld-linux-x86-64.so.2' -type f | head -n 1)
	[ -n "$ld" ] || die "no ld-linux-x86-64.so.2 in $kind-$want's libc6"
	libpath=
	for d in "$dir"/root/{,usr/}lib/x86_64-linux-gnu; do
		if [ -d "$d" ]; then libpath="$libpath${libpath:+:}$d"; fi
	done
	for b in server sentinel cli; do
		real="$dir/root/usr/bin/$kind-$b"
		[ -e "$real" ] || die "$kind-$want has no usr/bin/$kind-$b"
		printf '#!/bin/sh\nexec '"'%s' --library-path '%s' --argv0 \"\$0\" '%s'"' "$@"\n' "$ld" "$libpath" "$real" > "$dir/bin/$kind-$b"
		chmod +x "$dir/bin/$kind-$b"
	done
	echo "install-servers: $kind-$want: $("$dir/bin/$kind-server" --version)"
done
