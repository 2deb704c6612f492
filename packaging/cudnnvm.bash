# SPDX-License-Identifier: MIT
# bash completion for cudnnvm: every command and option; installed versions,
# catalogue versions and toolkit CUDA versions are asked of cudnnvm itself
# (with the --root/--store/--manifests/--user given on the line), through its
# --json output.

_cudnnvm_commands="install fetch update mirror cache list verify uninstall use current rollback history env exec local adopt smoke doctor toolkits export which ps prefix modulefiles help"
_cudnnvm_globals="--root --store --manifests --mirror --user --no-wait --lock-timeout --json --quiet --verbose -q -v --help --version"
_cudnnvm_platforms="linux-x86_64 linux-sbsa linux-aarch64 linux-ppc64le windows-x86_64 windows-arm64"

# _cudnnvm_options CMD: the options of one command (the output options included).
_cudnnvm_options() {
	local o
	case $1 in
	install) o="--cuda --archive --bundle --prefer-bundles --sha256 --platform --force --jobs --verify-first --offline --connect-timeout --low-speed-time --retries --use --no-smoke --no-ldconfig --for --dry-run" ;;
	fetch) o="--cuda --platform --connect-timeout --low-speed-time --retries" ;;
	mirror) o="--cuda --platform --connect-timeout --low-speed-time --retries" ;;
	update) o="--offline --dry-run --connect-timeout --low-speed-time --retries" ;;
	cache) o="--all" ;;
	list) o="--available --cuda --platform" ;;
	uninstall) o="--cuda --platform --force --dry-run" ;;
	use) o="--cuda --no-smoke --no-ldconfig --for --force --dry-run" ;;
	rollback) o="--cuda --no-smoke --no-ldconfig --dry-run" ;;
	adopt) o="--cuda --no-ldconfig --dry-run" ;;
	env) o="--cuda --shell --force" ;;
	exec) o="--cuda --force" ;;
	smoke) o="--cuda --no-gpu --device --all-devices" ;;
	modulefiles) o="--format --default" ;;
	local) o="--unset" ;;
	export) o="--cuda --format" ;;
	verify | current | history | which | prefix) o="--cuda" ;;
	doctor) o="--python" ;;
	*) o="" ;;
	esac
	echo "$o --json --quiet --verbose"
}

# _cudnnvm_json KEY ARGS...: the string values of KEY in `cudnnvm GLOBALS --json ARGS`.
_cudnnvm_json() {
	local key=$1
	shift
	command "$_cudnnvm_bin" "${_cudnnvm_g[@]}" --json "$@" 2>/dev/null </dev/null |
		sed -n 's/^ *"'"$key"'": "\([^"]*\)",\{0,1\}$/\1/p'
}

_cudnnvm_installed() { { _cudnnvm_json id list; _cudnnvm_json version list; } | sort -u; }
_cudnnvm_available() {
	local a=(list --available)
	[ -n "$_cudnnvm_cuda" ] && a+=(--cuda "$_cudnnvm_cuda")
	{ _cudnnvm_json release "${a[@]}"; _cudnnvm_json version "${a[@]}"; } | sort -u
}
_cudnnvm_cudas() { _cudnnvm_json version toolkits | sort -u; }

_cudnnvm() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev='' cmd='' i w words='' dashes=0 nargs=0
	[ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD - 1]}
	_cudnnvm_bin=${COMP_WORDS[0]}
	_cudnnvm_g=()
	_cudnnvm_cuda=
	# The global options before the command, and the command.
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if [ -z "$cmd" ]; then
			case $w in
			--root | --store | --manifests | --mirror)
				_cudnnvm_g+=("$w" "${COMP_WORDS[i + 1]}")
				((i++))
				;;
			--lock-timeout) ((i++)) ;;
			--user) _cudnnvm_g+=("$w") ;;
			-*) ;;
			*) cmd=$w ;;
			esac
			continue
		fi
		# After the command: its --cuda, its positional arguments, exec's "--".
		case $w in
		--) [ "$cmd" = exec ] && dashes=$i ;;
		--cuda) _cudnnvm_cuda=${COMP_WORDS[i + 1]}; ((i++)) ;;
		--archive | --bundle | --sha256 | --platform | --jobs | --connect-timeout | --low-speed-time | \
			--retries | --shell | --device | --format | --default) ((i++)) ;;
		-*) ;;
		*) [ "$dashes" = 0 ] && ((nargs++)) ;;
		esac
	done
	COMPREPLY=()
	# exec VERSION -- CMD ...: a command, then its own arguments (files).
	if [ "$dashes" -gt 0 ]; then
		if [ $((COMP_CWORD - dashes)) = 1 ]; then
			mapfile -t COMPREPLY < <(compgen -c -- "$cur")
		else
			compopt -o filenames 2>/dev/null
			mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		fi
		return 0
	fi
	# The value of an option.
	case $prev in
	--root | --store | --manifests)
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -d -- "$cur")
		return 0
		;;
	--archive | --bundle)
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		return 0
		;;
	--cuda) words=$(_cudnnvm_cudas) ;;
	--platform) words=$_cudnnvm_platforms ;;
	--shell) words="sh bash zsh fish pwsh" ;;
	--format) words="lua tcl"; [ "$cmd" = export ] && words="tar tar.zst" ;;
	--default) words=$(_cudnnvm_installed) ;;
	--mirror | --lock-timeout | --sha256 | --jobs | --connect-timeout | --low-speed-time | --retries | --device)
		return 0
		;;
	esac
	if [ -z "$words" ]; then
		if [ -z "$cmd" ]; then
			words="$_cudnnvm_commands $_cudnnvm_globals"
		elif [[ $cur == -* ]]; then
			words=$(_cudnnvm_options "$cmd")
		else
			case $cmd in
			use | uninstall | env | exec | prefix | verify)
				[ "$nargs" = 0 ] && words=$(_cudnnvm_installed)
				[ "$cmd" = exec ] && [ "$nargs" = 1 ] && words=--
				;;
			install | fetch) [ "$nargs" = 0 ] && words=$(_cudnnvm_available) ;;
			cache) [ "$nargs" = 0 ] && words="list clean" ;;
			help) [ "$nargs" = 0 ] && words=$_cudnnvm_commands ;;
			local) [ "$nargs" = 0 ] && words="$(_cudnnvm_installed) $(_cudnnvm_available)" ;;
			export)
				if [ "$nargs" = 0 ]; then
					words=$(_cudnnvm_installed)
				elif [ "$nargs" = 1 ]; then
					compopt -o filenames 2>/dev/null
					mapfile -t COMPREPLY < <(compgen -f -- "$cur")
					return 0
				fi
				;;
			modulefiles)
				if [ "$nargs" = 0 ]; then
					compopt -o filenames 2>/dev/null
					mapfile -t COMPREPLY < <(compgen -d -- "$cur")
				fi
				return 0
				;;
			esac
		fi
	fi
	# shellcheck disable=SC2207  # words are single tokens without blanks
	COMPREPLY=($(compgen -W "$words" -- "$cur"))
	return 0
}
complete -F _cudnnvm cudnnvm
