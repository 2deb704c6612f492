# SPDX-License-Identifier: MIT
# bash completion for cudnnvm
_cudnnvm() {
	local cur=${COMP_WORDS[COMP_CWORD]} cmd="" i
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--root|--store|--manifests|--mirror|--lock-timeout) ((i++)) ;;
		-*) ;;
		*) cmd=${COMP_WORDS[i]}; break ;;
		esac
	done
	case $cmd in
	"") COMPREPLY=($(compgen -W "install list verify uninstall toolkits --root --store --manifests --json -q -v --no-wait --lock-timeout --help --version" -- "$cur")) ;;
	install) COMPREPLY=($(compgen -W "--cuda --archive --sha256 --platform --force" -- "$cur")) ;;
	list) COMPREPLY=($(compgen -W "--available --cuda --platform" -- "$cur")) ;;
	verify|uninstall) COMPREPLY=($(compgen -W "--cuda --force" -- "$cur")) ;;
	esac
}
complete -o default -F _cudnnvm cudnnvm
