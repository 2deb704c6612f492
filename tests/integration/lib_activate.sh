# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# shellcheck disable=SC2034  # TK11, LIB12, ID897... are for the sourcing scripts
#
# Helpers for the activation tests (t_use, t_rollback, t_uninstall_active,
# t_env_user, t_adopt, t_use_crash, t_switch_reader), sourced after lib.sh.
#
# act_root: a fresh --root holding two fake CUDA toolkits:
#   TK11 = ROOT/usr/local/cuda-11.8  version from version.json, lib64/ a folder
#   TK12 = ROOT/usr/local/cuda-12.4  no version.json (CUDART_VERSION in
#          include/cuda_runtime_api.h), lib64 -> targets/x86_64-linux/lib
#   ROOT/usr/local/cuda -> /usr/local/cuda-11.8 (absolute: the default toolkit)
# LIB11 and LIB12 are the real library folders of each.
#
# Every activation test runs with CUDNNVM_LDCONFIG set and empty (ldconfig is
# never run) unless it sets it for one command.

export CUDNNVM_LDCONFIG=
unset CUDNNVM_SMOKE_TIMEOUT XDG_DATA_HOME LD_LIBRARY_PATH LIBRARY_PATH CPATH CUDNN_PATH CUDNN_HOME

MAN=$TEST_TMP/manifests
ID897=$(id_of 8.9.7.29 11)
ID896=$(id_of 8.9.6.50 11)
ID911_11=$(id_of 9.1.1.17 11)
ID911=$(id_of 9.1.1.17 12)
ID910=$(id_of 9.1.0.70 12)

# archive VERSION CUDA_MAJOR: the fake archive (built once per script, from
# the run's fixture cache), listed in $MAN; prints its path.
archive() {
	local p=$TEST_TMP/archives/cudnn-linux-x86_64-$1_cuda$2-archive.tar.xz
	local v=$1
	local m=$MAN/redistrib_${v%.*}.json
	if [ -f "$p" ] && [ -f "$m" ] && grep -q "_cuda$2-archive" "$m"; then
		echo "$p"
	else
		mkcudnn "$1" "$2" --manifest "$MAN"
	fi
}

make_toolkits() {
	TK11=$ROOT/usr/local/cuda-11.8
	TK12=$ROOT/usr/local/cuda-12.4
	LIB11=$TK11/lib64
	LIB12=$TK12/targets/x86_64-linux/lib
	mkdir -p "$TK11/include" "$LIB11" "$TK11/bin" "$TK12/include" "$LIB12" "$TK12/bin"
	printf '{"cuda":{"name":"CUDA SDK","version":"11.8.0"}}\n' >"$TK11/version.json"
	printf '#define CUDART_VERSION 11080\n' >"$TK11/include/cuda_runtime_api.h"
	printf '#define CUDART_VERSION 12040\n' >"$TK12/include/cuda_runtime_api.h"
	ln -s targets/x86_64-linux/lib "$TK12/lib64"
	ln -s /usr/local/cuda-11.8 "$ROOT/usr/local/cuda"
	# files of the toolkit itself, which cudnnvm must leave alone
	printf 'not cudnn\n' >"$LIB11/libcufft.so.10"
	printf 'not cudnn\n' >"$LIB12/libcufft.so.11"
	printf '/* not cudnn */\n' >"$TK11/include/cufft.h"
}

act_root() {
	new_root
	make_toolkits
}

# must NAME: reports only when the last cvm failed (set-up steps).
must() {
	if [ "$RC" != 0 ]; then
		not_ok "set-up: $1"
		_cvm_ctx
	fi
}

# inst VERSION CUDA(X.Y): install the fake archive of VERSION (4 parts) for
# the toolkit X.Y; reports only a failure.
inst() {
	local a
	a=$(archive "$1" "${2%%.*}")
	cvm --manifests "$MAN" install "$1" --cuda "$2" --archive "$a"
	must "install $1 --cuda $2"
}

# use_ok ARGS...: cvm use ARGS; reports only a failure.
use_ok() {
	cvm use "$@"
	must "use $*"
}

# The checks below are done by one Python helper (a fork per file would make
# them slow): act NAMES..., see the commands in it.
PY=python3
if [ -x /usr/bin/python3 ]; then
	PY=/usr/bin/python3
	# lib.sh's JSON checks call "python3": a version manager's shim in front
	# of it costs a good part of a second a call, so the system one comes first.
	if [ "$(command -v python3)" != /usr/bin/python3 ]; then
		mkdir -p "$TEST_TMP/bin"
		ln -sf /usr/bin/python3 "$TEST_TMP/bin/python3"
		PATH=$TEST_TMP/bin:$PATH
	fi
fi
cat >"$TEST_TMP/act.py" <<'EOF_PY'
import hashlib, os, sys

def names(tk):
    """The cuDNN entries of a toolkit: include/cudnn*.h, lib/libcudnn* (sorted)."""
    out = []
    lib = os.path.realpath(os.path.join(tk, "lib64"))
    for sub, d, pre, suf in (("include", os.path.join(tk, "include"), "cudnn", ".h"), ("lib", lib, "libcudnn", "")):
        try:
            for n in os.listdir(d):
                if n.startswith(pre) and n.endswith(suf):
                    out.append(sub + "/" + n)
        except FileNotFoundError:
            pass
    return sorted(out)

def vnames(vdir):
    """The cuDNN names a version puts in a toolkit."""
    out = []
    for sub, pre, suf in (("include", "cudnn", ".h"), ("lib", "libcudnn", "")):
        try:
            for n in os.listdir(os.path.join(vdir, sub)):
                if n.startswith(pre) and n.endswith(suf):
                    out.append(sub + "/" + n)
        except FileNotFoundError:
            pass
    return sorted(out)

def path(tk, n):
    sub, name = n.split("/", 1)
    if sub == "include":
        return os.path.join(tk, "include", name)
    return os.path.join(os.path.realpath(os.path.join(tk, "lib64")), name)

def problems(root, store, tk, cuda, vid):
    vdir = os.path.join(store, "versions", vid)
    if not os.path.isdir(vdir):
        print("no version folder " + vdir)
        return
    want, have = vnames(vdir), names(tk)
    for n in sorted(set(want) - set(have)):
        print("missing in the toolkit: " + n)
    for n in sorted(set(have) - set(want)):
        print("not of the version (stale or foreign): " + n)
    for n in have:
        p = path(tk, n)
        if not os.path.islink(p):
            print("not a symlink: " + p)
            continue
        t = os.readlink(p)
        sub, name = n.split("/", 1)
        w = os.path.relpath(os.path.join(store, "active", "cuda-" + cuda, sub, name), os.path.dirname(p))
        if t.startswith("/"):
            print("absolute target: %s -> %s" % (p, t))
        elif t != w:
            print("target not through the active link: %s -> %s (want %s)" % (p, t, w))
        if not os.path.exists(p) or os.path.realpath(p) != os.path.realpath(os.path.join(vdir, n)):
            print("does not resolve into %s: %s -> %s" % (vid, p, os.path.realpath(p)))
    lf = os.path.join(store, "toolkits", "cuda-%s.links" % cuda)
    try:
        lines = [l for l in open(lf).read().split("\n") if l]
    except FileNotFoundError:
        print("no " + lf)
        return
    entries = [l.split("\t") for l in lines]
    for e in entries:
        if len(e) != 2:
            print("%s: a line is not '<path>TAB<body>': %r" % (lf, e))
            continue
        p = os.path.join(os.path.realpath(root + os.path.dirname(e[0])), os.path.basename(e[0]))
        if os.path.islink(p) and os.readlink(p) != e[1]:
            print("%s records %s -> %s, but the link is -> %s" % (lf, e[0], e[1], os.readlink(p)))
    listed = sorted(os.path.join(os.path.realpath(root + os.path.dirname(e[0])), os.path.basename(e[0])) for e in entries)
    made = sorted(path(tk, n) for n in have)
    for x in sorted(set(listed) - set(made)):
        print("%s lists what is not in the toolkit: %s" % (lf, x))
    for x in sorted(set(made) - set(listed)):
        print("%s does not list: %s" % (lf, x))
    if len(listed) != len(set(listed)):
        print("%s lists a link twice" % lf)

def one(store, tk):
    vroot = os.path.realpath(os.path.join(store, "versions"))
    ids = set()
    for n in names(tk):
        p = path(tk, n)
        if not os.path.exists(p):
            continue
        r = os.path.realpath(p)
        if r.startswith(vroot + "/") and "/" in r[len(vroot) + 1:]:
            ids.add(r[len(vroot) + 1:].split("/", 1)[0])
        else:
            ids.add("(outside the store: %s -> %s)" % (p, r))
    for i in sorted(ids):
        print(i)

def complete(store, tk, cuda):
    """Every name of the active version is in the toolkit and resolves into it."""
    a = os.path.join(store, "active", "cuda-" + cuda)
    if not os.path.islink(a) or not os.path.isdir(a):
        print("no valid active link " + a)
        return
    vdir = os.path.realpath(a)
    for n in vnames(vdir):
        p = path(tk, n)
        if not os.path.exists(p):
            print("missing or dangling: " + p)
        elif os.path.realpath(p) != os.path.realpath(os.path.join(vdir, n)):
            print("%s resolves to %s, not into the active %s" % (p, os.path.realpath(p), vdir))

def bytes_(root, tk):
    for n in names(tk):
        sub, name = n.split("/", 1)
        p = os.path.join(tk, "include" if sub == "include" else "lib64", name)
        try:
            with open(p, "rb") as f:
                h = hashlib.sha256(f.read()).hexdigest()
        except OSError as e:
            h = "unreadable (%s)" % e.strerror
        print(p[len(root):], h)

cmd, args = sys.argv[1], sys.argv[2:]
if cmd == "names":
    print("\n".join(names(args[0])))
elif cmd == "vnames":
    print("\n".join(vnames(args[0])))
elif cmd == "problems":
    problems(*args)
elif cmd == "one":
    one(*args)
elif cmd == "complete":
    complete(*args)
elif cmd == "bytes":
    bytes_(*args)
EOF_PY
act() { "$PY" "$TEST_TMP/act.py" "$@" | sed -e '/^$/d'; }

# The toolkit's real library folder.
libdir_of() { readlink -f "$1/lib64"; }

# The cuDNN names a version puts in a toolkit: include/cudnn*.h, lib/libcudnn*.
version_names() { act vnames "$STORE/versions/$1"; }

# The cuDNN entries in a toolkit, as include/NAME and lib/NAME.
toolkit_names() { act names "$1"; }

# The path in the toolkit of include/NAME or lib/NAME.
tk_path() { # TK include/NAME|lib/NAME
	case $2 in
	include/*) echo "$1/$2" ;;
	lib/*) echo "$(libdir_of "$1")/${2#lib/}" ;;
	esac
}

# Problems (one a line) with the toolkit's cuDNN links for CUDA X.Y with ID
# active (the names, each link's target and what it resolves to, the links
# file); nothing when all is right.
toolkit_problems() { act problems "$ROOT" "$STORE" "$@"; }

# assert_uses TK CUDA ID NAME: ID is active for CUDA (the store's link) and
# the toolkit holds exactly ID's cuDNN names, each a relative link through
# STORE/active/cuda-X.Y that resolves into versions/ID; the links file and the
# loader configuration match.
assert_uses() {
	local tk=$1 cuda=$2 id=$3 name=$4 probs a
	a=$(readlink "$STORE/active/cuda-$cuda" 2>/dev/null)
	probs=$(
		if [ "$a" != "../versions/$id" ]; then
			echo "active/cuda-$cuda -> '$a', want ../versions/$id"
		fi
		toolkit_problems "$tk" "$cuda" "$id"
		local conf=$ROOT/etc/ld.so.conf.d/cudnnvm-cuda-$cuda.conf
		if ! grep -qx "/opt/cudnnvm/active/cuda-$cuda/lib" "$conf" 2>/dev/null; then
			echo "$conf does not name /opt/cudnnvm/active/cuda-$cuda/lib: $(head -n 3 "$conf" 2>&1)"
		fi
	)
	if [ -z "$probs" ]; then ok "$name"; else
		not_ok "$name" "$(printf '%s\n' "$probs" | head -n 12)"
	fi
}

# assert_unmanaged TK CUDA NAME: nothing active for CUDA: no active link, no
# cuDNN name in the toolkit, no loader configuration for it.
assert_unmanaged() {
	local tk=$1 cuda=$2 probs
	probs=$(
		if [ -e "$STORE/active/cuda-$cuda" ] || [ -L "$STORE/active/cuda-$cuda" ]; then
			echo "active/cuda-$cuda exists -> $(readlink "$STORE/active/cuda-$cuda")"
		fi
		toolkit_names "$tk" | sed -e 's/^/left in the toolkit: /'
		if [ -e "$ROOT/etc/ld.so.conf.d/cudnnvm-cuda-$cuda.conf" ]; then
			echo "cudnnvm-cuda-$cuda.conf still exists"
		fi
	)
	if [ -z "$probs" ]; then ok "$3"; else
		not_ok "$3" "$(printf '%s\n' "$probs" | head -n 12)"
	fi
}

# assert_no_dangling TK NAME: no symlink anywhere in the toolkit fails to resolve.
assert_no_dangling() {
	local d
	d=$(find "$1" -xtype l -printf '%p -> %l\n' 2>&1)
	if [ -z "$d" ]; then ok "$2"; else
		not_ok "$2" "dangling links:" "$(printf '%s\n' "$d" | head -n 10)"
	fi
}

# assert_one_version TK NAME: every cuDNN link of the toolkit that resolves
# resolves into one and the same versions/<id>/ folder, and at least one does;
# sets ONE_ID to that id.
assert_one_version() {
	local ids
	ids=$(act one "$STORE" "$1")
	ONE_ID=$ids
	if [ -n "$ids" ] && [ "$(printf '%s\n' "$ids" | wc -l)" = 1 ] && [ -d "$STORE/versions/$ids" ]; then
		ok "$2"
	else
		not_ok "$2" "the links resolve into: $(printf '%s' "$ids" | tr '\n' ' ')"
	fi
}

# assert_at_most_one_version TK NAME: like assert_one_version, but no link
# resolving at all is also right (a first activation cut short).
assert_at_most_one_version() {
	local ids
	ids=$(act one "$STORE" "$1")
	ONE_ID=$ids
	if [ -z "$ids" ] || { [ "$(printf '%s\n' "$ids" | wc -l)" = 1 ] && [ -d "$STORE/versions/$ids" ]; }; then
		ok "$2"
	else
		not_ok "$2" "the links resolve into: $(printf '%s' "$ids" | tr '\n' ' ')"
	fi
}

# assert_active_complete TK CUDA NAME: the active link is valid, and every
# name of the version it points to is in the toolkit and resolves into it.
assert_active_complete() {
	local probs
	probs=$(act complete "$STORE" "$1" "$2")
	if [ -z "$probs" ]; then ok "$3"; else not_ok "$3" "$(printf '%s\n' "$probs" | head -n 10)"; fi
}

# assert_journal NAME: `history --json` parses, every entry has the fields,
# and each history/cuda-X.Y.log has one line per entry of its toolkit; the
# document is left in the file JOURNAL_JSON.
assert_journal() {
	local f r
	f=$TEST_TMP/journal.$CVM_N.json
	JOURNAL_JSON=$f
	CUDNNVM_NO_PROGRESS=1 "$CUDNNVM" --root "$ROOT" --json history >"$f" 2>"$f.err" </dev/null
	r=$?
	if [ "$r" != 0 ]; then
		not_ok "$1" "history --json exited $r" "$(head -n 3 "$f.err")"
		return
	fi
	if r=$("$PY" - "$f" "$STORE/history" <<'EOF' 2>&1
import json, os, sys
d = json.load(open(sys.argv[1]))
h = d["history"]
assert isinstance(h, list), "history is not a list"
keys = {"time", "user", "cuda", "kind", "from", "to", "command"}
count = {}
for e in h:
    miss = keys - set(e)
    assert not miss, "entry lacks %s: %r" % (sorted(miss), e)
    assert e["kind"] in ("use", "rollback", "adopt", "deactivate"), "kind %r" % e["kind"]
    assert isinstance(e["time"], int), "time %r" % e["time"]
    count[e["cuda"]] = count.get(e["cuda"], 0) + 1
logs = {}
if os.path.isdir(sys.argv[2]):
    for n in os.listdir(sys.argv[2]):
        if n.startswith("cuda-") and n.endswith(".log"):
            with open(os.path.join(sys.argv[2], n), "rb") as fh:
                data = fh.read()
            assert not data or data.endswith(b"\n"), "%s: last line incomplete" % n
            logs[n[5:-4]] = data.count(b"\n")
assert logs == count, "log lines %r, history entries %r" % (logs, count)
EOF
	); then ok "$1"; else
		not_ok "$1" "$r"
	fi
}

# Journal entries (history --json) of CUDA X.Y, one "kind from to" a line
# ("-" for null).
journal() { # CUDA
	CUDNNVM_NO_PROGRESS=1 "$CUDNNVM" --root "$ROOT" --json history --cuda "$1" 2>/dev/null </dev/null |
		"$PY" -c '
import json, sys
for e in json.load(sys.stdin)["history"]:
    print(e["kind"], e["from"] or "-", e["to"] or "-")' 2>/dev/null
}

# ends_with STRING SUFFIX
ends_with() { [[ "$1" == *"$2" ]]; }

hist_lines() { # CUDA: lines in its journal file
	if [ -f "$STORE/history/cuda-$1.log" ]; then wc -l <"$STORE/history/cuda-$1.log"; else echo 0; fi
}

# ldconfig_counter: writes an ldconfig stand-in that appends its arguments to
# $LDCALLS; sets LDCONFIG_PROG.
ldconfig_counter() {
	LDCONFIG_PROG=$TEST_TMP/fake-ldconfig
	LDCALLS=$TEST_TMP/ldconfig.calls
	printf '#!/bin/sh\necho "$*" >>"%s"\n' "$LDCALLS" >"$LDCONFIG_PROG"
	chmod 755 "$LDCONFIG_PROG"
	: >"$LDCALLS"
}
ld_calls() { grep -c . "$LDCALLS"; }

# make_stub OUT SONAME VERSION_NUMBER [hang|abort]: a stub libcudnn whose
# cudnnGetVersion returns VERSION_NUMBER; "hang" makes loading it sleep,
# "abort" makes loading it kill the process (SIGABRT).
make_stub() {
	local src=$TEST_TMP/stub.$$.$RANDOM.c
	{
		echo '#include <stddef.h>'
		echo '#include <unistd.h>'
		echo "size_t cudnnGetVersion(void) { return ${3}u; }"
		echo 'size_t cudnnGetCudartVersion(void) { return 12040u; }'
		if [ "${4:-}" = hang ]; then
			echo '__attribute__((constructor)) static void hang(void) { sleep(600); }'
		elif [ "${4:-}" = abort ]; then
			echo '#include <stdlib.h>'
			echo '__attribute__((constructor)) static void die(void) { abort(); }'
		fi
	} >"$src"
	${CC:-cc} -shared -fPIC "-Wl,-soname,$2" -o "$1.tmp" "$src" && mv -f "$1.tmp" "$1"
}

# hand_copy ARCHIVE TK: extract ARCHIVE and copy its include/* and lib/* into
# the toolkit by hand (cp -a), as people do.
hand_copy() {
	local x=$TEST_TMP/handcopy.$RANDOM
	mkdir -p "$x"
	tar -xJf "$1" -C "$x"
	cp -a "$x"/*/include/. "$2/include/"
	cp -a "$x"/*/lib/. "$(libdir_of "$2")/"
	rm -rf "$x"
}

# bytes TK: "path sha256" of what reading each cuDNN name gives, through
# include/ and lib64/ (sorted).
bytes() { act bytes "$ROOT" "$1"; }

# hold_lib FILE: a background process that maps FILE (dlopen) until killed
# (or 600 s); sets HOLD_PID; returns once it has mapped it.
hold_lib() {
	local ready=$TEST_TMP/hold.$RANDOM
	"$PY" -c '
import ctypes, sys, time
ctypes.CDLL(sys.argv[1])
open(sys.argv[2], "w").close()
time.sleep(600)' "$1" "$ready" &
	HOLD_PID=$!
	CVM_BG_PIDS+=("$HOLD_PID")
	wait_until test -e "$ready"
}

# assert_smoke NUMBER NAME: the last command ran the smoke test and it saw the
# library report NUMBER ("smoke test: ... loads and reports N", or the
# detailed report's "cuDNN N").
assert_smoke() {
	if grep -qi 'smoke test' "$CVM_OUTF" "$CVM_ERRF" &&
		grep -Eq "(reports|cuDNN) $1([^0-9]|\$)" "$CVM_OUTF" "$CVM_ERRF"; then
		ok "$2"
	else
		not_ok "$2" "no smoke test report of $1"
		_cvm_ctx
	fi
}
