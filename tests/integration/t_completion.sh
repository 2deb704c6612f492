#!/bin/bash
# SPDX-License-Identifier: MIT
# Shell completions (packaging/): bash through COMP_WORDS/COMP_CWORD and the
# completion function; fish through `complete -C`; zsh for syntax. Every
# command of main.c's table and every option of each cmd_*.c is offered;
# installed versions, catalogue versions and the toolkits' CUDA versions come
# from the store and root named on the line; files and folders where wanted.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

TOP=$(cd "$TESTS_DIR/.." && pwd)
PKG=$TOP/packaging
act_root
inst 8.9.7.29 11.8
inst 9.1.1.17 12.4

# shellcheck source=../../packaging/cudnnvm.bash
. "$PKG/cudnnvm.bash"

# comp WORD...: what bash completes for the last WORD; one candidate a line in $C.
comp() {
	COMP_WORDS=("$CUDNNVM" "$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE="${COMP_WORDS[*]}"
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	_cudnnvm 2>"$TEST_TMP/comp.err"
	C=$(printf '%s\n' "${COMPREPLY[@]}" | LC_ALL=C sort)
}
has() { printf '%s\n' "$C" | grep -qxF -- "$1"; }
lacks() { ! has "$1"; }
both() { has "$1" && has "$2"; }
# expect NAME WORD...: exactly these candidates (sorted); the words after "=" are wanted.
expect() {
	local name=$1 want
	shift
	want=$(printf '%s\n' "$@" | LC_ALL=C sort)
	if [ "$C" = "$want" ]; then ok "$name"; else
		not_ok "$name" "got: $(printf '%s' "$C" | tr '\n' ' ')" "want: $(printf '%s' "$want" | tr '\n' ' ')"
	fi
}

# ------------------------------------- every command and every option
cmds=$(sed -n 's/^\t{ "\([a-z-]*\)", cvm_cmd_[a-z_]*,.*/\1/p' "$TOP/src/main.c")
check "main.c's command table was read" test "$(printf '%s\n' "$cmds" | grep -c .)" -ge 16
comp ""
missing=
for c in $cmds; do has "$c" || missing="$missing $c"; done
if [ -z "$missing" ]; then ok "bash offers every command of main.c's table"; else
	not_ok "bash offers every command of main.c's table" "missing:$missing"
fi
comp --
for o in --root --store --manifests --mirror --user --no-wait --lock-timeout --json --help --version; do
	has "$o" || missing="$missing $o"
done
if [ -z "$missing" ]; then ok "bash offers every global option"; else not_ok "bash offers every global option" "missing:$missing"; fi
for c in $cmds; do
	f=$TOP/src/cmd_$c.c
	[ -f "$f" ] || continue
	comp "$c" --
	missing=
	for o in $(sed -n 's/^[[:space:]]*{ "\([a-z0-9-]*\)", [a-z_]*_argument,.*/\1/p' "$f"); do
		has "--$o" || missing="$missing --$o"
	done
	if [ -z "$missing" ]; then ok "bash offers every option of $c (src/cmd_$c.c)"; else
		not_ok "bash offers every option of $c (src/cmd_$c.c)" "missing:$missing"
	fi
done
comp install --c
expect "install --c: its options starting with --c" --connect-timeout --cuda

# ------------------------------------- versions from the store and the catalogue
comp --root "$ROOT" use ""
expect "use: the installed ids and versions" "$ID897" "$ID911" 8.9.7.29 9.1.1.17
comp --root "$ROOT" uninstall 8
expect "uninstall 8: the installed ones starting with 8" "$ID897" 8.9.7.29
for c in env exec prefix verify; do
	comp --root "$ROOT" "$c" 9
	expect "$c 9: installed versions" "$ID911" 9.1.1.17
done
comp --root "$ROOT" use 8.9.7.29 ""
expect "use VERSION <tab>: nothing more to offer" ""
comp --root "$ROOT" exec 8.9.7.29 ""
expect "exec VERSION <tab>: --" --
comp --root "$ROOT" exec 8.9.7.29 -- bas
check "exec VERSION -- bas<tab>: commands (bash)" has bash
comp --root "$ROOT" install 8.9.7
check "install 8.9.7<tab>: the catalogue's 8.9.7" has 8.9.7
check "... and its full version 8.9.7.29" has 8.9.7.29
lacks 9.1.1.17 && ok "install 8.9.7<tab>: nothing else" || not_ok "install 8.9.7<tab>: nothing else" "$C"
comp --root "$ROOT" fetch 9.1.
check "fetch 9.1.<tab>: the catalogue's 9.1.0 and 9.1.1" both 9.1.0 9.1.1
comp --root "$ROOT" install --cuda 11.8 9.1.
check "install --cuda 11.8 9.1.<tab>: the catalogue for CUDA 11 (9.1.1 has a cuda11 build)" has 9.1.1
comp --root "$ROOT" --store "$STORE" use 9
expect "--store on the line is used too" "$ID911" 9.1.1.17
comp --root "$ROOT" --store "$TEST_TMP/empty-store" use ""
expect "an empty store: no versions" ""
comp --root "$ROOT" modulefiles --default 8
expect "modulefiles --default: installed versions" "$ID897" 8.9.7.29

# ------------------------------------- --cuda: the toolkits' versions
for c in use install env which smoke; do
	comp --root "$ROOT" "$c" --cuda ""
	expect "$c --cuda <tab>: the toolkits' CUDA versions" 11.8 12.4
done
comp --root "$ROOT" use --cuda 1
expect "use --cuda 1<tab>" 11.8 12.4
comp --root "$ROOT" use --cuda 11.8 ""
expect "use --cuda 11.8 <tab>: installed versions" "$ID897" "$ID911" 8.9.7.29 9.1.1.17

# ------------------------------------- fixed values, files, folders
comp env --shell ""
expect "env --shell: the shells" sh bash zsh fish pwsh
comp modulefiles --format ""
expect "modulefiles --format: lua tcl" lua tcl
comp cache ""
expect "cache <tab>: list clean" list clean
comp install --platform linux-
expect "install --platform linux-" linux-x86_64 linux-sbsa linux-aarch64 linux-ppc64le
F=$TEST_TMP/files
mkdir -p "$F/sub.d"
: >"$F/a.tar.xz"
: >"$F/b.tgz"
comp install --archive "$F/"
expect "install --archive DIR/: files and folders there" "$F/a.tar.xz" "$F/b.tgz" "$F/sub.d"
for o in --root --store --manifests; do
	comp "$o" "$F/"
	expect "$o DIR/: folders only" "$F/sub.d"
done
comp modulefiles "$F/"
expect "modulefiles DIR/: folders only" "$F/sub.d"
comp --root "$F/" use ""
check "a --root without a store: no error on the terminal" test ! -s "$TEST_TMP/comp.err"

# ------------------------------------- zsh and fish
mkdir -p "$TEST_TMP/fbin"
ln -sf "$CUDNNVM" "$TEST_TMP/fbin/cudnnvm"
if command -v zsh >/dev/null 2>&1; then
	if r=$(zsh -n "$PKG/_cudnnvm" 2>&1); then ok "zsh -n packaging/_cudnnvm"; else not_ok "zsh -n packaging/_cudnnvm" "$r"; fi
	check "the zsh file starts with #compdef cudnnvm" test "$(head -n 1 "$PKG/_cudnnvm")" = "#compdef cudnnvm"
	missing=
	for c in $cmds; do grep -q "^[[:space:]]*'$c:" "$PKG/_cudnnvm" || missing="$missing $c"; done
	if [ -z "$missing" ]; then ok "zsh lists every command"; else not_ok "zsh lists every command" "missing:$missing"; fi
	# Real completion: an interactive zsh on a pty (zsh/zpty) with compinit and
	# packaging/ on fpath; for each line, TAB, then a widget that writes the
	# buffer to a file and a marker to the terminal, which is waited for.
	cat >"$TEST_TMP/zcomp.zsh" <<'EOF_ZSH'
zmodload zsh/zpty || exit 3
fdir=$1 outf=$2
shift 2
: >$outf
zpty -b z zsh -f -i
zpty -w z "PS1='' PROMPT='' RPROMPT=''; fpath=($fdir \$fpath); autoload -Uz compinit; compinit -u -D; unsetopt beep"
zpty -w z 'showbuf() { print -r -- "$BUFFER" >>'$outf'; BUFFER=; print -n "cvm""done" >/dev/tty; }; zle -N showbuf; bindkey "^T" showbuf; echo cvm""ready'
zpty -r z l '*cvmready*'
for line; do
	zpty -w -n z "$line"$'\t\C-t'
	zpty -r z l '*cvmdone*'
done
zpty -d z
EOF_ZSH
	zlines=("cudnnvm modulef" "cudnnvm prefi" "cudnnvm modulefiles --format t" "cudnnvm env --shell fi"
		"cudnnvm --root $ROOT use 9.1.1.17-c" "cudnnvm --root $ROOT uninstall 8.9.7.29-"
		"cudnnvm --root $ROOT use --cuda 12" "cudnnvm --root $ROOT install 8.9.7.2"
		"cudnnvm install --archive $F/a.t" "cudnnvm --root $F/su")
	zwant=("cudnnvm modulefiles " "cudnnvm prefix " "cudnnvm modulefiles --format tcl " "cudnnvm env --shell fish "
		"cudnnvm --root $ROOT use $ID911 " "cudnnvm --root $ROOT uninstall $ID897 "
		"cudnnvm --root $ROOT use --cuda 12.4 " "cudnnvm --root $ROOT install 8.9.7.29 "
		"cudnnvm install --archive $F/a.tar.xz " "cudnnvm --root $F/sub.d/")
	PATH="$TEST_TMP/fbin:$PATH" timeout -k 5 120 zsh -f "$TEST_TMP/zcomp.zsh" "$PKG" "$TEST_TMP/zout" \
		"${zlines[@]}" >/dev/null 2>"$TEST_TMP/zsh.err"
	zrc=$?
	if [ "$zrc" = 3 ]; then
		skip "zsh: real completion" "zsh has no zsh/zpty module"
	else
		mapfile -t zgot <"$TEST_TMP/zout"
		for i in "${!zlines[@]}"; do
			if [ "${zgot[$i]-}" = "${zwant[$i]}" ]; then ok "zsh: '${zlines[$i]}<TAB>' gives '${zwant[$i]}'"; else
				not_ok "zsh: '${zlines[$i]}<TAB>' gives '${zwant[$i]}'" "got '${zgot[$i]-<nothing>}' (zsh exit $zrc)" "$(head -n 3 "$TEST_TMP/zsh.err")"
			fi
		done
	fi
else
	skip "zsh completion" "zsh is not installed (Debian: apt-get install zsh)"
fi
if command -v fish >/dev/null 2>&1; then
	if r=$(fish -n "$PKG/cudnnvm.fish" 2>&1); then ok "fish -n packaging/cudnnvm.fish"; else not_ok "fish -n packaging/cudnnvm.fish" "$r"; fi
	# fcomp LINE: what fish completes (candidates only) in $C.
	fcomp() {
		C=$(PATH="$TEST_TMP/fbin:$PATH" XDG_CONFIG_HOME=$TEST_TMP/fcfg XDG_DATA_HOME=$TEST_TMP/fdata \
			fish --no-config -c "source '$PKG/cudnnvm.fish'; complete -C \"\$argv[1]\"" "$1" 2>"$TEST_TMP/fish.err" |
			cut -f1 | LC_ALL=C sort)
	}
	fcomp "cudnnvm "
	missing=
	for c in $cmds; do has "$c" || missing="$missing $c"; done
	if [ -z "$missing" ]; then ok "fish offers every command"; else not_ok "fish offers every command" "missing:$missing" "$(head -n 3 "$TEST_TMP/fish.err")"; fi
	fcomp "cudnnvm --root $ROOT use "
	expect "fish: use <tab>: the installed versions" "$ID897" "$ID911" 8.9.7.29 9.1.1.17
	fcomp "cudnnvm --root $ROOT use --cuda "
	expect "fish: use --cuda <tab>: the toolkits' CUDA versions" 11.8 12.4
	fcomp "cudnnvm --root $ROOT install 8.9.7"
	check "fish: install 8.9.7<tab>: the catalogue's 8.9.7.29" has 8.9.7.29
	fcomp "cudnnvm modulefiles --format "
	expect "fish: modulefiles --format" lua tcl
	fcomp "cudnnvm install --archive $F/"
	check "fish: install --archive DIR/: its files" has "$F/a.tar.xz"
	fcomp "cudnnvm smoke --"
	check "fish: smoke --<tab> offers --all-devices" has --all-devices
else
	skip "fish completion" "fish is not installed (Debian: apt-get install fish)"
fi

finish
