# SPDX-License-Identifier: MIT
# bash completion for cudnnvm (the commands and options of 'cudnnvm COMMAND --help')
_cudnnvm() {
	local cur=${COMP_WORDS[COMP_CWORD]} cmd="" i opts
	local common="--json -q -v --help"
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--root|--store|--manifests|--mirror|--lock-timeout) ((i++)) ;;
		-*) ;;
		*) cmd=${COMP_WORDS[i]}; break ;;
		esac
	done
	case $cmd in
	"") opts="install fetch cache list verify uninstall use current rollback history env exec local
		adopt smoke doctor toolkits help --root --store --user --manifests --mirror --json -q -v
		--no-wait --lock-timeout --help --version" ;;
	install) opts="--cuda --archive --sha256 --platform --force --use --jobs --verify-first
		--offline --connect-timeout --low-speed-time --retries" ;;
	fetch) opts="--cuda --platform --connect-timeout --low-speed-time --retries" ;;
	cache) opts="list clean --all" ;;
	list) opts="--available --cuda --platform" ;;
	verify|current|history) opts="--cuda" ;;
	uninstall) opts="--cuda --platform --force" ;;
	use|rollback) opts="--cuda --no-smoke --no-ldconfig" ;;
	env) opts="--cuda --shell" ;;
	exec) opts="--cuda --" ;;
	adopt) opts="--cuda --no-ldconfig" ;;
	smoke) opts="--cuda --no-gpu --device --all-devices" ;;
	help) opts="install fetch cache list verify uninstall use current rollback history env exec
		local adopt smoke doctor toolkits help" ;;
	*) opts="" ;;
	esac
	[ -n "$cmd" ] && opts="$opts $common"
	# shellcheck disable=SC2207  # words without spaces
	COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -o default -F _cudnnvm cudnnvm
