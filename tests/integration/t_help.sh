#!/bin/bash
# SPDX-License-Identifier: MIT
# Every command explains itself: COMMAND --help and help COMMAND (usage line,
# options, an example; exit 0, stdout, no store touched), --help lists every
# command; the man page names every command, every --option and every
# CUDNNVM_* variable the source has, the config file's keys and every exit
# code; comments point only at files the repository has.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# shellcheck disable=SC2317  # called through check
# has_line TEXT ERE: a line of TEXT matches ERE.
has_line() { printf '%s\n' "$1" | grep -Eq "$2"; }
# lacks FILE ERE: no line of FILE matches.
# shellcheck disable=SC2317
lacks() { ! grep -Eq -e "$2" "$1"; }

SRC=$TESTS_DIR/../src
LIB=$TESTS_DIR/../lib
COMPAT=$TESTS_DIR/../compat
MANPAGE=$TESTS_DIR/../packaging/cudnnvm.1
REPO=$TESTS_DIR/..

# The commands of main.c's table: { "name", cvm_cmd_name | NULL, ...
mapfile -t COMMANDS < <(sed -n -E 's/^\t\{ "([a-z]+)", (cvm_cmd_[a-z]+|NULL), .*/\1/p' "$SRC/main.c")
check "main.c's command table lists at least 15 commands (found ${#COMMANDS[@]})" test "${#COMMANDS[@]}" -ge 15

# The man page as text: \- is a plain hyphen, font escapes dropped.
MANTXT=$TEST_TMP/man.txt
sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' "$MANPAGE" >"$MANTXT"

cvm --help
assert_rc 0 "--help exits 0"
assert_out_contains "usage: cudnnvm" "--help: a usage line on stdout"
cvm help
assert_rc 0 "help exits 0"
HELP_ALL=$OUT

for c in "${COMMANDS[@]}"; do
	cvm "$c" --help
	assert_rc 0 "$c --help exits 0"
	check "$c --help: stdout starts with 'usage: cudnnvm ... $c'" \
		has_line "$(head -n 1 "$CVM_OUTF")" "^usage: cudnnvm .*\\b$c\\b"
	assert_out_contains "example:" "$c --help: has an example"
	assert_out_contains "options:" "$c --help: has its options"
	check "$c --help: nothing on stderr" test ! -s "$CVM_ERRF"
	want=$OUT
	cvm help "$c"
	assert_rc 0 "help $c exits 0"
	check "help $c prints what $c --help prints" test "$OUT" = "$want"
	cvm "$c" -h
	check "$c -h prints what $c --help prints" test "$OUT" = "$want"
	check "help lists $c" has_line "$HELP_ALL" "^  $c +[a-z]"
	check "the man page has an entry for $c" grep -Eq "^(\\.TP|\\.B)?[^a-z]*$c\\b" <(grep -A1 '^\.TP' "$MANTXT")
done

# The bash completion knows every command, and each command's options (offered
# on a word that starts with '-'; an empty word gets versions or files).
COMPL=$TESTS_DIR/../packaging/cudnnvm.bash
for c in "${COMMANDS[@]}"; do
	# shellcheck disable=SC1090
	words=$(bash -c '. "$1"; COMP_WORDS=(cudnnvm "$2" "-"); COMP_CWORD=2; _cudnnvm; printf "%s\n" "${COMPREPLY[@]}"' \
		sh "$COMPL" "$c")
	top=$(bash -c '. "$1"; COMP_WORDS=(cudnnvm ""); COMP_CWORD=1; _cudnnvm; printf "%s\n" "${COMPREPLY[@]}"' sh "$COMPL")
	check "the bash completion offers $c" has_line "$top" "^$c\$"
	cvm "$c" --help
	mapfile -t copts < <(grep -oE -- '^  --[a-z0-9-]+' "$CVM_OUTF" | sed 's/^  //' | sort -u)
	for o in "${copts[@]}"; do
		check "the bash completion offers $c $o" has_line "$words" "^$o\$"
	done
done

# Help never needs a store, a lock or root: nothing is created.
new_root
cvm install --help
cvm use --help
cvm uninstall 9.1 --force --help
assert_rc 0 "uninstall 9.1 --force --help exits 0 (help wins)"
assert_absent "$STORE" "help created no store"
cvm exec 9.1 -- sh -c 'echo ran' --help
check "exec: a --help after '--' is the command's, not exec's" lacks "$CVM_OUTF" "^usage:"

cvm --json install --help
check "--json install --help: the help text only (no JSON document after it)" lacks "$CVM_OUTF" "^[{}]"
cvm --json --help
check "--json --help: the help text only" lacks "$CVM_OUTF" "^[{}]"

cvm install --no-such-option
assert_rc 2 "install --no-such-option: exit 2"
assert_err_contains "see 'cudnnvm install --help'" "a command's usage error points at that command's --help"
cvm --no-such-option list
assert_err_contains "see 'cudnnvm --help'" "a global usage error points at 'cudnnvm --help'"

cvm
assert_rc 2 "no command: exit 2"
assert_err_contains "a COMMAND is needed" "no command: says a COMMAND is needed"
assert_err_contains "commands:" "no command: the list of commands on stderr"

cvm help no-such-command
assert_rc 2 "help of an unknown command: exit 2"
assert_err_contains "no-such-command" "help of an unknown command names it"

# Every long option in an option table of the source is in the man page.
mapfile -t OPTS < <(grep -ohE '\{ "[a-z0-9-]+", (no|required|optional)_argument' "$SRC"/*.[ch] "$LIB"/*.[ch] "$COMPAT"/*.[ch] |
	sed -E 's/\{ "([a-z0-9-]+)".*/\1/' | sort -u)
check "the source has at least 30 long options (found ${#OPTS[@]})" test "${#OPTS[@]}" -ge 30
for o in "${OPTS[@]}"; do
	check "the man page documents --$o" grep -q -e "--$o\\b" "$MANTXT"
done

# Every CUDNNVM_* variable the source reads (getenv, or config.c's checked numbers) is in the man page.
mapfile -t VARS < <(grep -ohE '(getenv\(|cvm_config_env_number\(|\{ )"CUDNNVM_[A-Z_]+"' "$SRC"/*.c "$LIB"/*.c "$COMPAT"/*.c |
	sed -E 's/.*"([A-Z_]+)"$/\1/' | sort -u)
check "the source reads at least 8 CUDNNVM_* variables (found ${#VARS[@]})" test "${#VARS[@]}" -ge 8
for v in "${VARS[@]}"; do
	check "the man page documents $v" grep -q "\\b$v\\b" "$MANTXT"
done

# The configuration file and each key the source asks it for.
check "the man page documents ROOT/etc/cudnnvm.conf" grep -q "etc/cudnnvm.conf" "$MANTXT"
mapfile -t KEYS < <(grep -ohE 'cvm_config_get\([^,]+, "[a-z_]+"' "$SRC"/*.c "$LIB"/*.c | sed -E 's/.*"([a-z_]+)"$/\1/' | sort -u)
check "the source reads at least one config key" test "${#KEYS[@]}" -ge 1
for k in "${KEYS[@]}"; do
	check "the man page documents the config key '$k'" grep -Eq "Known keys:.*\\b$k\\b" "$MANTXT"
	check "config.c knows the key '$k' (no warning for it)" grep -q "\"$k\"" "$LIB/config.c"
done

# Every exit code, in the man page's EXIT STATUS and in --help.
EXITS=$(sed -n '/^\.SH EXIT STATUS/,/^\.SH /p' "$MANTXT")
for e in 0 1 2 3 4 5 77 126 127 130; do
	check "the man page's EXIT STATUS has $e" has_line "$EXITS" "^\\.B .*\\b$e\\b"
done
for e in 0 1 2 3 4 5 77; do
	check "--help names exit code $e" has_line "$HELP_ALL" "exit codes:.*\\b$e\\b"
done

# Comments and messages point only at documents the repository has.
mapfile -t DOCS < <(grep -ohE '\b[a-z][a-z0-9_/-]*\.md\b' "$SRC"/*.[ch] "$LIB"/*.[ch] "$COMPAT"/*.[ch] | sort -u)
for d in "${DOCS[@]}"; do
	check "'$d', named in the source, is in the repository" test -f "$REPO/$d"
done
check "docs/cli.md is in the repository" test -f "$REPO/docs/cli.md"

finish
