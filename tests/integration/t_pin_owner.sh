#!/bin/bash
# SPDX-License-Identifier: MIT
# A .cudnn-version or an /etc/cudnnvm.conf that another user could have
# written never decides: owned by someone other than root or the caller,
# writable by others (or by another group), or in a folder on the way that
# others can change (writable and not sticky; sticky and the pin not
# theirs to rename) is ignored with one warning naming it, its owner and
# mode, and the command goes on as if it were not there (trust.h's rule).
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

act_root
inst 9.1.1.17 12.4
inst 9.1.0.70 12.4
use_ok 9.1.1 --cuda 12.4 --no-smoke
V911=$STORE/versions/$ID911
V910=$STORE/versions/$ID910
ME=$(id -u)
AS_ROOT=0
[ "$ME" = 0 ] && id nobody >/dev/null 2>&1 && AS_ROOT=1
RULE="a .cudnn-version is obeyed only when root or you own it and no one else can write it"
RULE_UP="a .cudnn-version is obeyed only when it and the folders above it can be changed by no one but root and you"

assert_warn_line() { # TEXT NAME: stderr has the line "cudnnvm: warning: TEXT", once
	local n
	n=$(grep -cxF "cudnnvm: warning: $1" "$CVM_ERRF")
	if [ "$n" = 1 ]; then ok "$2"; else
		not_ok "$2" "want once (got $n): cudnnvm: warning: $1"
		_cvm_ctx
	fi
}

# ignored WHAT DIR WARNING: in DIR, use and env act as if DIR's pin were not there.
ignored() {
	local what=$1 dir=$2 warning=$3
	cd "$dir" || exit 1
	cvm use --cuda 12.4 --no-smoke
	assert_rc 2 "$what: use without VERSION is exit 2 (no pin obeyed)"
	assert_warn_line "$warning" "$what: use says which pin it ignored and why"
	assert_err_contains "a VERSION is needed" "$what: and that a VERSION is needed"
	assert_symlink "$STORE/active/cuda-12.4" "../versions/$ID911" "$what: 9.1.1 is still active"
	cvm env --cuda 12.4
	assert_rc 0 "$what: env exits 0"
	assert_out_contains "CUDNN_PATH='$V911'" "$what: env gives the active 9.1.1, not the pin's 9.1.0"
	assert_warn_line "$warning" "$what: env says it too"
	cd "$TEST_TMP/cwd/here" || exit 1
}

# ------------------------------------------------ a pin we may obey
P=$TEST_TMP/proj
mkdir -p "$P"
printf '9.1.0\n' >"$P/.cudnn-version"
chmod 0644 "$P/.cudnn-version"
cd "$P" || exit 1
cvm env --cuda 12.4
assert_out_contains "CUDNN_PATH='$V910'" "a pin of ours, 0644: obeyed"
check "a pin of ours: no warning" test ! -s "$CVM_ERRF"
cd "$TEST_TMP/cwd/here" || exit 1

# ---------------------------------------------- writable by every user
chmod 0666 "$P/.cudnn-version"
ignored "a 0666 pin" "$P" "ignoring '$P/.cudnn-version' (owner uid $ME, mode 0666): every user can write it; $RULE"
chmod 0644 "$P/.cudnn-version"

# ----------------------- an ignored pin below a good one: the good one
mkdir -p "$P/sub"
printf '9.1.1\n' >"$P/sub/.cudnn-version"
chmod 0646 "$P/sub/.cudnn-version"
cd "$P/sub" || exit 1
cvm env --cuda 12.4
assert_rc 0 "an ignored pin below a good one: env exits 0"
assert_out_contains "CUDNN_PATH='$V910'" "the parent's pin decides, as if the ignored one were not there"
assert_warn_line "ignoring '$P/sub/.cudnn-version' (owner uid $ME, mode 0646): every user can write it; $RULE" \
	"the ignored one is named"
cd "$TEST_TMP/cwd/here" || exit 1
rm -rf "$P/sub"

# -------------------- a folder on the way that others can write, not sticky
W=$TEST_TMP/open
mkdir -p "$W/proj"
chmod 0777 "$W"
printf '9.1.0\n' >"$W/proj/.cudnn-version"
ignored "a pin below a 0777 folder" "$W/proj" \
	"ignoring '$W/proj/.cudnn-version' (owner uid $ME, mode 0644): '$W' on the way to it: every user can write it (mode 0777); $RULE_UP"

# --------------------------------------------------- another user's pin
if [ "$AS_ROOT" = 1 ]; then
	NB=$(id -u nobody)
	NG=$(id -g nobody)
	# In a sticky world-writable folder (/tmp-like), owned by nobody.
	S=$TEST_TMP/sticky
	mkdir -p "$S"
	chmod 1777 "$S"
	printf '9.1.0\n' >"$S/.cudnn-version"
	chown "$NB:$NG" "$S/.cudnn-version"
	ignored "nobody's pin in a sticky folder" "$S" \
		"ignoring '$S/.cudnn-version' (owner uid $NB, mode 0644): it belongs to another user; $RULE"
	# Root's own pin there is fine: no one else can rename or remove it.
	chown 0:0 "$S/.cudnn-version"
	cd "$S" || exit 1
	cvm env --cuda 12.4
	assert_out_contains "CUDNN_PATH='$V910'" "root's pin in a sticky folder: obeyed"
	check "root's pin in a sticky folder: no warning" test ! -s "$CVM_ERRF"
	cd "$TEST_TMP/cwd/here" || exit 1
	# Writable by another group (not root's).
	chgrp "$NG" "$P/.cudnn-version"
	chmod 0664 "$P/.cudnn-version"
	ignored "a pin another group can write" "$P" \
		"ignoring '$P/.cudnn-version' (owner uid 0, mode 0664): another group can write it; $RULE"
	chgrp 0 "$P/.cudnn-version"
	chmod 0644 "$P/.cudnn-version"
	# Root's pin in a folder nobody owns: nobody could replace it.
	N=$TEST_TMP/nobodys
	mkdir -p "$N"
	chown "$NB:$NG" "$N"
	printf '9.1.0\n' >"$N/.cudnn-version"
	ignored "root's pin in nobody's folder" "$N" \
		"ignoring '$N/.cudnn-version' (owner uid 0, mode 0644): '$N' on the way to it: it belongs to another user (uid $NB); $RULE_UP"
else
	skip "another user's pin" "needs root and a user nobody"
fi

# -------------------------------------------------- the configuration
mkdir -p "$ROOT/etc"
CONF=$ROOT/etc/cudnnvm.conf
CRULE="the configuration file is obeyed only when root or you own it and no one else can write it"
printf 'store = /srv/elsewhere\n' >"$CONF"
chmod 0666 "$CONF"
cvm --json list
assert_rc 0 "a 0666 cudnnvm.conf: list exits 0"
assert_json 'sorted(v["id"] for v in d["installed"]) == sorted(["'"$ID911"'", "'"$ID910"'"])' \
	"a 0666 cudnnvm.conf: its 'store =' is not obeyed (the default store)"
assert_warn_line "ignoring '/etc/cudnnvm.conf' (owner uid $ME, mode 0666): every user can write it; $CRULE" \
	"a 0666 cudnnvm.conf: one warning, naming it, its owner and mode"
assert_absent "$ROOT/srv/elsewhere" "a 0666 cudnnvm.conf: its store is not made"
printf 'user = yes\n' >"$CONF"
cvm use 9.1.0 --cuda 12.4 --no-smoke
assert_rc 0 "a 0666 cudnnvm.conf: its 'user = yes' is not obeyed either (use works)"
use_ok 9.1.1 --cuda 12.4 --no-smoke
if [ "$AS_ROOT" = 1 ]; then
	chmod 0644 "$CONF"
	chown "$NB:$NG" "$CONF"
	printf 'store = /srv/elsewhere\n' >"$CONF"
	cvm --json list
	assert_json 'len(d["installed"]) == 2' "nobody's cudnnvm.conf: not obeyed"
	assert_warn_line "ignoring '/etc/cudnnvm.conf' (owner uid $NB, mode 0644): it belongs to another user; $CRULE" \
		"nobody's cudnnvm.conf: the warning names the owner"
	chown 0:0 "$CONF"
	cvm --json list
	assert_json 'd["installed"] == []' "root's 0644 cudnnvm.conf: obeyed (the configured store, empty)"
	check "root's 0644 cudnnvm.conf: no warning" test ! -s "$CVM_ERRF"
else
	skip "another user's cudnnvm.conf" "needs root and a user nobody"
fi
chmod 0644 "$CONF"
chmod 0777 "$ROOT/etc"
printf 'store = /srv/elsewhere\n' >"$CONF"
cvm --json list
assert_json 'len(d["installed"]) == 2' "cudnnvm.conf in a 0777 etc: not obeyed"
assert_err_contains "ignoring '/etc/cudnnvm.conf' (owner uid $ME, mode 0644): '$ROOT/etc' on the way to it: every user can write it (mode 0777)" \
	"cudnnvm.conf in a 0777 etc: the folder is named"
chmod 0755 "$ROOT/etc"
finish
