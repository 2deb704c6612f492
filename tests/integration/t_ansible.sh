#!/bin/bash
# SPDX-License-Identifier: MIT
# The Ansible module (packaging/ansible/library/cudnnvm.py) with the real
# ansible-playbook: an inventory of three hosts on the local connection, each
# with its own --root. First run changed, second unchanged, check mode changes
# nothing, state: absent refused while active, a wrong sha256 fails that host
# only. Results are read from Ansible's json callback, never from its text.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

if ! command -v ansible-playbook >/dev/null 2>&1; then
	skip "the Ansible module" "ansible-playbook is not installed (Debian: ansible-core)"
	finish
fi

A897=$(archive 8.9.7.29 11)
A896=$(archive 8.9.6.50 11)
HOSTS="node1 node2 node3"
for h in $HOSTS; do
	new_root
	make_toolkits
	eval "ROOT_$h=\$ROOT"
done
AN=$TEST_TMP/ansible
mkdir -p "$AN/tmp"
{
	echo "[nodes]"
	for h in $HOSTS; do
		eval "r=\$ROOT_$h"
		echo "$h ansible_connection=local ansible_python_interpreter=$(command -v python3) root=$r"
	done
} >"$AN/hosts"
cat >"$AN/play.yml" <<'YML'
- hosts: nodes
  gather_facts: false
  tasks:
    - name: cuDNN
      cudnnvm:
        name: "{{ want }}"
        cuda: "11.8"
        state: "{{ state }}"
        archive: "{{ archives[want] if state != 'absent' else omit }}"
        sha256: "{{ bad_sha if (bad_sha is defined and inventory_hostname == 'node3') else omit }}"
        manifests: "{{ man }}"
        root: "{{ root }}"
        binary: "{{ bin }}"
      register: res
YML
export ANSIBLE_LIBRARY=$TESTS_DIR/../packaging/ansible/library ANSIBLE_STDOUT_CALLBACK=results_json ANSIBLE_CALLBACK_PLUGINS=$FIXTURES/ansible \
	ANSIBLE_LOCAL_TEMP=$AN/tmp ANSIBLE_REMOTE_TEMP=$AN/tmp ANSIBLE_HOST_KEY_CHECKING=False \
	ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=False ANSIBLE_DEPRECATION_WARNINGS=False \
	ANSIBLE_PYTHON_INTERPRETER=auto_silent
N=0
# play [--check] want=V state=S [k=v...]: runs the play; its json in $AN/out.N, PLAY_RC
play() {
	local check=
	if [ "$1" = --check ]; then
		check=--check
		shift
	fi
	N=$((N + 1))
	PLAY_OUT=$AN/out.$N
	printf '{"man": "%s", "bin": "%s", "archives": {"8.9.7": "%s", "8.9.6": "%s"}}\n' \
		"$MAN" "$CUDNNVM" "$A897" "$A896" >"$AN/vars.json"
	LC_ALL=C.UTF-8 timeout -k 5 300 ansible-playbook -i "$AN/hosts" $check -e @"$AN/vars.json" \
		$(printf -- '-e %s ' "$@") "$AN/play.yml" >"$PLAY_OUT" 2>"$AN/err.$N"
	PLAY_RC=$?
}
# result HOST PYEXPR: the task result of HOST (as r) and the stats (as s) satisfy PYEXPR
result() {
	python3 - "$PLAY_OUT" "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["plays"][0]["tasks"][0]["hosts"][sys.argv[2]]
s = d["stats"][sys.argv[2]]
sys.exit(0 if eval(sys.argv[3]) else 1)
PY
}
assert_hosts() { # PYEXPR NAME [HOSTS]
	local h bad=
	for h in ${3:-$HOSTS}; do
		result "$h" "$1" || bad="$bad $h"
	done
	if [ -z "$bad" ]; then
		ok "$2"
	else
		not_ok "$2" "not true for:$bad" "$(head -c 3000 "$PLAY_OUT")" "$(tail -n 5 "$AN/err.$N")"
	fi
}
active_in() { # HOST: the id active for 11.8 in that host's root
	local r
	eval "r=\$ROOT_$1"
	"$CUDNNVM" --root "$r" --json current --cuda 11.8 |
		python3 -c 'import json,sys; a=json.load(sys.stdin)["active"]; print(a[0]["id"] if a else "")'
}
ids_in() { # HOST: the installed ids, space-separated
	local r
	eval "r=\$ROOT_$1"
	_entries "$r/opt/cudnnvm/versions" | tr '\n' ' '
}
assert_active() { # ID NAME
	local h bad=
	for h in $HOSTS; do
		[ "$(active_in "$h")" = "$1" ] || bad="$bad $h:$(active_in "$h")"
	done
	if [ -z "$bad" ]; then ok "$2"; else not_ok "$2" "active instead:$bad"; fi
}

# 1. first run: installed and activated on every host, changed
play want=8.9.7 state=active
check "first run: ansible-playbook exits 0" test "$PLAY_RC" = 0
assert_hosts 's["changed"] == 1 and s["failures"] == 0' "first run: changed on every host"
assert_hosts 'r["id"] == "'"$ID897"'" and r["previous"] is None and r["active_for"] == ["11.8"] and r["rc"] == 0' \
	"first run: id, previous (none), active_for and rc are returned"
assert_active "$ID897" "first run: 8.9.7 is active for 11.8 on every host"

# 2. second run: nothing changes
play want=8.9.7 state=active
check "second run: exits 0" test "$PLAY_RC" = 0
assert_hosts 's["changed"] == 0 and s["failures"] == 0 and s["ok"] == 1' "second run: unchanged on every host"

# 3. check mode: reports the change, makes none
for h in $HOSTS; do eval "snapshot \"\$ROOT_$h\" >\"$AN/before.$h\""; done
play --check want=8.9.6 state=active
check "check mode: exits 0" test "$PLAY_RC" = 0
assert_hosts 's["changed"] == 1 and s["failures"] == 0' "check mode: a change is reported on every host"
assert_hosts 'any(c.startswith("would create /opt/cudnnvm/versions/'"$ID896"' ") for c in r["changes"])' \
	"check mode: the changes are what cudnnvm's --dry-run says (the version it would install)"
for h in $HOSTS; do
	eval "snapshot \"\$ROOT_$h\" >\"$AN/after.$h\""
	assert_same_snapshot "$AN/before.$h" "$AN/after.$h" "check mode: $h's root is unchanged"
done
assert_active "$ID897" "check mode: 8.9.7 is still active"

# 4. the switch for real: previous is returned
play want=8.9.6 state=active
assert_hosts 's["changed"] == 1 and r["id"] == "'"$ID896"'" and r["previous"] == "'"$ID897"'"' \
	"switch to 8.9.6: changed, previous is 8.9.7"
assert_active "$ID896" "switch to 8.9.6: active on every host"

# 4b. check mode of a switch between installed versions: use --dry-run's changes, none made
for h in $HOSTS; do eval "snapshot \"\$ROOT_$h\" >\"$AN/before.$h\""; done
play --check want=8.9.7 state=active
assert_hosts 's["changed"] == 1 and s["failures"] == 0 and any(c.startswith("would replace link /opt/cudnnvm/active/cuda-11.8 -> ../versions/'"$ID897"'") for c in r["changes"])' \
	"check mode of a switch: the changes are cudnnvm's use --dry-run"
for h in $HOSTS; do
	eval "snapshot \"\$ROOT_$h\" >\"$AN/after.$h\""
	assert_same_snapshot "$AN/before.$h" "$AN/after.$h" "check mode of a switch: $h's root is unchanged"
done

# 5. absent of the active version: refused (also in check mode), nothing removed
play --check want=8.9.6 state=absent
assert_hosts 's["failures"] == 1 and "is active" in r["msg"] and r["rc"] == 1' \
	"check mode: absent of the active version fails as the real run would"
play want=8.9.6 state=absent
check "absent of the active version: ansible-playbook fails" test "$PLAY_RC" != 0
assert_hosts 's["failures"] == 1 and "is active" in r["msg"] and r["rc"] == 1' \
	"absent of the active version: refused with cudnnvm's message and exit code 1"
for h in $HOSTS; do
	check "absent refused: $h keeps both versions" test "$(ids_in "$h")" = "$ID896 $ID897 "
done

# 6. absent of an inactive version: removed, changed; again: unchanged
play want=8.9.7 state=absent
assert_hosts 's["changed"] == 1 and s["failures"] == 0' "absent of 8.9.7: changed"
for h in $HOSTS; do
	check "absent: $h has only 8.9.6" test "$(ids_in "$h")" = "$ID896 "
done
play want=8.9.7 state=absent
assert_hosts 's["changed"] == 0 and s["failures"] == 0' "absent again: unchanged"

# 7. a wrong sha256 on node3 fails node3 only, which is left as it was
eval "snapshot \"\$ROOT_node3\" >\"$AN/before.node3\""
play want=8.9.7 state=present bad_sha=0000000000000000000000000000000000000000000000000000000000000000
assert_hosts 's["changed"] == 1 and s["failures"] == 0' "wrong sha256 on node3: node1 and node2 install" "node1 node2"
assert_hosts 's["failures"] == 1 and r["rc"] == 3 and "SHA-256" in r["msg"]' \
	"wrong sha256 on node3: node3 fails with exit code 3 and the hash message" node3
eval "snapshot \"\$ROOT_node3\" >\"$AN/after.node3\""
assert_same_snapshot "$AN/before.node3" "$AN/after.node3" "wrong sha256: node3's root is unchanged"

# 8. an active link that names no installed version (current exits 1, "broken"): state=active puts it right
ln -sfn ../versions/gone-cuda11-linux-x86_64 "$ROOT_node1/opt/cudnnvm/active/cuda-11.8"
play want=8.9.6 state=active
assert_hosts 's["changed"] == 1 and s["failures"] == 0 and r["id"] == "'"$ID896"'" and r["previous"] == "gone-cuda11-linux-x86_64"' \
	"broken active link: state=active activates the version again, changed, previous named as the link had it" node1
check "broken active link: 8.9.6 is active on node1 again" test "$(active_in node1)" = "$ID896"

# The module's documentation parses (ansible-doc), the example playbook and role are valid.
if LC_ALL=C.UTF-8 ANSIBLE_STDOUT_CALLBACK=default ansible-doc -t module cudnnvm >"$AN/doc" 2>&1 &&
	grep -q "state" "$AN/doc" && grep -q "EXAMPLES" "$AN/doc"; then
	ok "ansible-doc reads the module's DOCUMENTATION and EXAMPLES"
else
	not_ok "ansible-doc reads the module's DOCUMENTATION and EXAMPLES" "$(head -n 20 "$AN/doc")"
fi
if LC_ALL=C.UTF-8 ANSIBLE_STDOUT_CALLBACK=default ANSIBLE_ROLES_PATH=$TESTS_DIR/../packaging/ansible/roles \
	ansible-playbook --syntax-check -i localhost, "$TESTS_DIR/../packaging/ansible/playbook.yml" >"$AN/syn" 2>&1; then
	ok "the example playbook and role pass --syntax-check"
else
	not_ok "the example playbook and role pass --syntax-check" "$(tail -n 10 "$AN/syn")"
fi
finish
